"""The key of a Kubernetes object in caches, queues and messages: `<namespace>/<name>`, or the
bare name of a cluster-scoped object (client-go's MetaNamespaceKeyFunc)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def object_key(obj: Mapping[str, Any]) -> str:
    """The key of a wire object (its metadata's namespace and name)."""
    meta = obj.get("metadata") or {}
    return key(meta.get("namespace") or "", str(meta.get("name") or ""))


def split_key(text: str) -> tuple[str, str]:
    """(namespace, name) of a key; the namespace is "" for a cluster-scoped object."""
    namespace, _, name = text.rpartition("/")
    return namespace, name
