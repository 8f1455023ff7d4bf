"""Image → command mappings and the argv a container runs."""

from __future__ import annotations

import pytest

from localcluster.simulator.images import (
    CHART_REPOSITORY,
    ImageMapping,
    container_argv,
    image_mappings,
    mapping_for,
    parse_image_mapping,
    pod_runs_for_real,
)


def test_parse() -> None:
    assert parse_image_mapping("acme/app=app --serve") == ImageMapping(
        "acme/app", ("app", "--serve")
    )


@pytest.mark.parametrize("text", ["acme/app", "=app", "acme/app=", "acme/app:1.0@sha256:x=app"])
def test_parse_errors(text: str) -> None:
    with pytest.raises(ValueError, match=r"REPOSITORY=COMMAND|empty command|not an image"):
        parse_image_mapping(text)


def test_chart_image_is_mapped_by_default_and_tags_do_not_matter() -> None:
    mappings = image_mappings(["busybox=sh"])
    assert mapping_for(f"{CHART_REPOSITORY}:0.1.0", mappings) is not None
    assert mapping_for("docker.io/library/busybox:1.36", mappings) == ImageMapping(
        "busybox", ("sh",)
    )
    assert mapping_for("nginx", mappings) is None


def test_a_pod_runs_for_real_only_when_every_container_is_mapped() -> None:
    mappings = image_mappings([])
    ours = {"image": f"{CHART_REPOSITORY}:1"}
    assert pod_runs_for_real({"spec": {"containers": [ours]}}, mappings)
    assert not pod_runs_for_real({"spec": {"containers": [ours, {"image": "nginx"}]}}, mappings)


@pytest.mark.parametrize(
    ("container", "argv"),
    [
        ({"args": ["webhook", "--port", "9443"]}, ["vcjob", "webhook", "--port", "9443"]),
        ({"command": ["python", "-c"], "args": ["print(1)"]}, ["python", "-c", "print(1)"]),
        ({}, ["vcjob"]),
    ],
)
def test_container_argv(container: dict[str, list[str]], argv: list[str]) -> None:
    assert container_argv(container, ImageMapping("x", ("vcjob",))) == argv
