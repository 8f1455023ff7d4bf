"""The Kubernetes schema data kept inside vcjob: complete, current, and self-contained."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shared import kubeschema

ROOT = Path(__file__).resolve().parents[3]


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def test_pod_template_and_pvc_specs_are_whole() -> None:
    definitions = kubeschema.load_definitions()
    for root in kubeschema.ROOTS:
        assert root in definitions
    assert _refs(definitions) <= set(definitions)
    pod_spec = definitions["io.k8s.api.core.v1.PodSpec"]
    assert "containers" in pod_spec["required"]
    assert "storageClassName" in definitions[kubeschema.PVC_SPEC]["properties"]
    assert kubeschema.ref(kubeschema.PVC_SPEC) == {
        "$ref": "#/$defs/io.k8s.api.core.v1.PersistentVolumeClaimSpec"
    }


def test_the_data_file_matches_its_generator() -> None:
    """Needs the pinned k8s.io/kubernetes module in Go's module cache (`make cluster`)."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_kubeschema.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode == 2 and "make cluster" in result.stderr:
        pytest.skip(result.stderr.strip())
    assert result.returncode == 0, result.stderr
