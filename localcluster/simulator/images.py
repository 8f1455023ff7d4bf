"""Which pods run as real processes: an image repository mapped to the command that stands in
for the image's entrypoint (`--run-image REPOSITORY=COMMAND`), and the argv a container runs.

As with a container runtime, a container's `command` replaces the entrypoint and its `args`
follow; the chart's image maps by default to this installation's `vcjob` entry point.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster.simulator.kubelet import image_repository

CHART_REPOSITORY = "ghcr.io/vcjob/vcjob"


@dataclass(frozen=True)
class ImageMapping:
    repository: str
    entrypoint: tuple[str, ...]


def parse_image_mapping(text: str) -> ImageMapping:
    repository, sep, command = text.partition("=")
    repository = repository.strip()
    if not sep or not repository:
        raise ValueError(f'"{text}" is not REPOSITORY=COMMAND (for example ghcr.io/acme/app=app)')
    if any(c in repository for c in "@ "):
        raise ValueError(f'"{repository}" is not an image repository (no tag, digest or spaces)')
    try:
        entrypoint = tuple(shlex.split(command))
    except ValueError as err:
        raise ValueError(f'the command of "{text}" does not parse: {err}') from err
    if not entrypoint:
        raise ValueError(f'"{text}" maps {repository} to an empty command')
    return ImageMapping(repository, entrypoint)


def vcjob_entrypoint() -> tuple[str, ...]:
    script = Path(sys.executable).with_name("vcjob")
    if script.exists():
        return (str(script),)
    return (sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())")


def image_mappings(texts: Sequence[str]) -> list[ImageMapping]:
    """The configured mappings, then the chart's image (unless configured otherwise)."""
    mappings = [parse_image_mapping(t) for t in texts]
    if not any(_same(m.repository, CHART_REPOSITORY) for m in mappings):
        mappings.append(ImageMapping(CHART_REPOSITORY, vcjob_entrypoint()))
    return mappings


def _same(left: str, right: str) -> bool:
    return image_repository(left) == image_repository(right)


def mapping_for(image: str, mappings: Sequence[ImageMapping]) -> ImageMapping | None:
    return next((m for m in mappings if _same(image, m.repository)), None)


def pod_runs_for_real(pod: Mapping[str, Any], mappings: Sequence[ImageMapping]) -> bool:
    """Every container (and init container) of the pod has a mapped image."""
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    return bool(containers) and all(
        mapping_for(str(c.get("image", "")), mappings) is not None for c in containers
    )


def container_argv(container: Mapping[str, Any], mapping: ImageMapping) -> list[str]:
    command = [str(c) for c in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    return [*(command or mapping.entrypoint), *args]
