"""Which paths of the installation a container's volumes would hide, and so are bound back."""

from __future__ import annotations

import pytest

from localcluster.simulator.launch import Mount, covered


@pytest.mark.parametrize(
    ("paths", "targets", "hidden"),
    [
        (["/tmp/ci/main/.venv", "/usr/lib/python3"], ["/tmp"], ["/tmp/ci/main/.venv"]),
        (["/tmp/ci/main", "/tmp/ci/main/.venv"], ["/tmp"], ["/tmp/ci/main"]),
        (["/work/main/.venv"], ["/tmp", "/etc/certs"], []),
        (["/tmp"], ["/tmp"], []),  # the target itself is the volume, not an ancestor
        (["/tmpfoo/x"], ["/tmp"], []),
        (["/srv/app/lib"], ["/srv/"], ["/srv/app/lib"]),
    ],
)
def test_covered(paths: list[str], targets: list[str], hidden: list[str]) -> None:
    mounts = [Mount("/src", target, False) for target in targets]
    assert covered(paths, mounts) == hidden
