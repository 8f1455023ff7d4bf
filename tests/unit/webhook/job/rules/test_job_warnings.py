"""What Volcano admits but is likely a mistake: admitted with a warning that names it."""

from __future__ import annotations

from typing import Any

import pytest

from shared import plugins
from webhook.job.rules.job_warnings import job_warnings


def job(**spec: Any) -> dict[str, Any]:
    return {"spec": {"tasks": [{"name": "w", "replicas": 1}], **spec}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (job(), []),
        (job(plugins={"svc": ["--disable-network-policy"], "ssh": []}), []),
        (
            job(plugins={"svc": ["--enable-networking"]}),
            [
                "spec.plugins[svc][0]: '--enable-networking': unknown flag --enable-networking; "
                "supported flags: --publish-not-ready-addresses, --disable-network-policy, "
                "--inject-hosts-env; the flags from here on keep their defaults"
            ],
        ),
        (
            job(plugins={"svc": ["--inject-hosts-env", "false"]}),
            [
                "spec.plugins[svc][1]: 'false': positional arguments are not accepted; a boolean "
                "flag takes its value as --inject-hosts-env=false; the flags from here on keep "
                "their defaults"
            ],
        ),
        (
            job(plugins={"mpi": ["--np=4", "--port=x"]}),
            [
                "spec.plugins[mpi][0]: '--np=4': unknown flag --np; supported flags: --master, "
                "--worker, --port; the flags from here on keep their defaults",
                "spec.plugins[mpi][1]: '--port=x': invalid integer value 'x' for --port; ignored",
            ],
        ),
        (
            job(plugins={"ssh": ["--no-root"]}),
            [
                "spec.plugins[ssh][0]: '--no-root': --no-root was removed from Volcano's ssh "
                "plugin and has no effect"
            ],
        ),
        (job(plugins={"horovod": ["--x"]}), []),  # an unknown plugin is a denial, not a warning
        (
            job(policies=[{"events": ["PodFailed", "PodEvicted", "PodFailed"], "action": "X"}]),
            [
                "spec.policies[0].events[2]: 'PodFailed' is repeated in this policy and counts "
                "once; remove the repetition"
            ],
        ),
        (
            job(
                tasks=[
                    {
                        "name": "w",
                        "policies": [{"event": "PodFailed", "events": ["PodFailed"]}],
                    }
                ]
            ),
            [
                "spec.tasks[0].policies[0].events[0]: 'PodFailed' is repeated in this policy and "
                "counts once; remove the repetition"
            ],
        ),
        # Across policies it is a denial (validation), never a warning.
        (job(policies=[{"event": "PodFailed"}, {"event": "PodFailed"}]), []),
    ],
)
def test_job_warnings(raw: dict[str, Any], expected: list[str]) -> None:
    assert job_warnings(raw) == expected


def test_every_flag_of_volcanos_ssh_plugin_is_known() -> None:
    parsed = plugins.parse_arguments(
        "ssh", ["--no-root", "--ssh-key-file-path=/home/u/.ssh", "--ssh-private-key", "k"]
    )
    assert parsed.errors == []
    assert parsed.string("ssh-key-file-path") == "/home/u/.ssh"
