"""Job volumes: a mount path each, unique, and one kind of claim."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.webhook.job.rules.jobspecs import SPEC, found, spec, task
from webhook.job.rules.volumes import validate_volumes


@pytest.mark.parametrize(
    ("volumes", "expected"),
    [
        pytest.param([{"mountPath": "/d", "volumeClaimName": "data"}], [], id="existing-claim"),
        pytest.param([{"mountPath": "/d", "volumeClaim": {}}], [], id="new-claim"),
        pytest.param(
            [{"mountPath": "", "volumeClaimName": "data"}],
            [("spec.volumes[0].mountPath", "mountPath is required")],
            id="no-mount-path",
        ),
        pytest.param(
            [{"mountPath": "/a:b", "volumeClaimName": "data"}],
            [("spec.volumes[0].mountPath", "must not contain ':'")],
            id="colon",
        ),
        pytest.param(
            [
                {"mountPath": "/d", "volumeClaimName": "a"},
                {"mountPath": "/d", "volumeClaimName": "b"},
            ],
            [("spec.volumes[1].mountPath", "duplicated mountPath: /d")],
            id="duplicate",
        ),
        pytest.param(
            [{"mountPath": "/d"}],
            [
                (
                    "spec.volumes[0].volumeClaimName",
                    "either VolumeClaim or VolumeClaimName must be specified",
                )
            ],
            id="no-claim",
        ),
        pytest.param(
            [{"mountPath": "/d", "volumeClaimName": "a", "volumeClaim": {}}],
            [
                (
                    "spec.volumes[0].volumeClaimName",
                    "must not be set together with volumeClaim: set only volumeClaimName to use an "
                    "existing PVC, or only volumeClaim to create a new one",
                )
            ],
            id="both-claims",
        ),
    ],
)
def test_validate_volumes(volumes: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    assert found(validate_volumes(spec(task(), volumes=volumes), SPEC)) == expected


def test_a_claim_name_must_be_a_subdomain() -> None:
    errors = validate_volumes(
        spec(task(), volumes=[{"mountPath": "/d", "volumeClaimName": "No"}]), SPEC
    )
    assert [e.field for e in errors] == ["spec.volumes[0].volumeClaimName"]
