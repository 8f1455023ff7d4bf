"""`unrecoverable.find`: the errors a job can never recover from, by table."""

from __future__ import annotations

import pytest
from builders import job

from controller.job.decide import unrecoverable
from shared.models import Job

CASES = [
    ("a plain job", job("j").task("w", 3).build(), None),
    (
        "svc: a 63-character host name is fine",
        job("j" * 58).task("w", 11).plugin("svc").build(),
        None,
    ),
    (
        "svc: a 64-character host name",
        job("j" * 59).task("w", 11).plugin("svc").build(),
        "NameTooLong",
    ),
    ("svc: a Service name over 63", job("s" * 64).task("w").plugin("svc").build(), "NameTooLong"),
    ("no svc: pod names up to 253", job("p" * 200).task("w").build(), None),
    ("bad plugin flag", job("j").task("w").plugin("svc", "--nope").build(), "InvalidPluginConfig"),
    (
        "bad plugin value",
        job("j").task("w").plugin("ssh", "--ssh-port=x").build(),
        "InvalidPluginConfig",
    ),
    (
        "ray head missing",
        job("j").task("w").plugin("ray", "--head=h").build(),
        "InvalidPluginConfig",
    ),
    ("ray head present", job("j").task("head").plugin("ray").build(), None),
    ("unknown plugin: ignored", job("j").task("w").plugin("nope", "--x").build(), None),
]


@pytest.mark.parametrize(("why", "raw", "reason"), CASES, ids=[c[0] for c in CASES])
def test_find(why: str, raw: dict[str, object], reason: str | None) -> None:
    found = unrecoverable.find(Job.from_wire(raw))
    assert (found.reason if found else None) == reason
    if found is not None:
        assert found.message
