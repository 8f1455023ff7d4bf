"""The few API reads admission of Volcano's other objects needs, made when a request needs them:
a namespace's queue annotation (PodGroup CREATE) and the PodGroups of a queue (Queue DELETE).
Both are rare requests, so no cache is kept; a read that fails is reported to the caller, which
admits with a warning rather than blocking on the API server."""

from __future__ import annotations

from typing import Any, Final, Protocol

from kubeio.client import PODGROUPS, Kube, Resource
from kubeio.errors import KubeError, NotFoundError
from shared.objectkeys import object_key

NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
# A namespace's queue for its PodGroups (`webhook.podgroup.defaulting`), as in Volcano.
QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
# Admission calls time out after 10 s by default; a read must leave the answer time to travel.
READ_TIMEOUT_SECONDS: Final = 3.0


class ClusterReadError(Exception):
    """The API server could not answer; the message says why."""


class ClusterLookups(Protocol):
    def namespace_queue(self, namespace: str) -> str | None:
        """The namespace's `scheduling.volcano.sh/queue-name` annotation, or None."""
        ...

    def queue_podgroups(self, queue: str) -> list[str]:
        """`<namespace>/<name>` of every PodGroup whose spec.queue is `queue`, sorted."""
        ...


class KubeClusterLookups:
    def __init__(self, api_client: Any) -> None:
        self._kube = Kube(api_client, qps=0, request_timeout=READ_TIMEOUT_SECONDS)

    def namespace_queue(self, namespace: str) -> str | None:
        try:
            found = self._kube.get(NAMESPACES, None, namespace)
        except NotFoundError:
            return None
        except (KubeError, OSError) as exc:
            raise ClusterReadError(f"reading namespace {namespace} failed: {exc}") from exc
        annotations = (found.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(QUEUE_ANNOTATION)
        return str(value) if value else None

    def queue_podgroups(self, queue: str) -> list[str]:
        try:
            items, _ = self._kube.list(PODGROUPS)
        except NotFoundError:
            return []
        except (KubeError, OSError) as exc:
            raise ClusterReadError(f"listing PodGroups failed: {exc}") from exc
        out = []
        for item in items:
            spec = item.get("spec") or {}
            if (spec.get("queue") or "default") == queue:
                out.append(object_key(item))
        return sorted(out)
