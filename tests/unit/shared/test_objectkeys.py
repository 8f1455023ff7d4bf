"""Object keys: `<namespace>/<name>`, or the name of a cluster-scoped object."""

from __future__ import annotations

from typing import Any

import pytest

from shared.objectkeys import key, object_key, split_key


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param({"metadata": {"namespace": "ns", "name": "j"}}, "ns/j", id="namespaced"),
        pytest.param({"metadata": {"name": "root"}}, "root", id="cluster-scoped"),
        pytest.param({"metadata": {"namespace": "", "name": "q"}}, "q", id="empty-namespace"),
        pytest.param({}, "", id="no-metadata"),
    ],
)
def test_object_key(obj: dict[str, Any], expected: str) -> None:
    assert object_key(obj) == expected


@pytest.mark.parametrize(
    ("namespace", "name", "text"),
    [("ns", "j", "ns/j"), ("", "q", "q"), (None, "q", "q")],
)
def test_key_and_back(namespace: str | None, name: str, text: str) -> None:
    assert key(namespace, name) == text
    assert split_key(text) == (namespace or "", name)
