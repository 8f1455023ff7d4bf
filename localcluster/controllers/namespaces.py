"""The namespace controller: provisions a new namespace; empties a terminating one, then
finalizes it.

Every active namespace gets what kube-controller-manager gives it: the `default` ServiceAccount
and the `kube-root-ca.crt` ConfigMap holding the cluster's CA. A namespace with a
deletionTimestamp has every namespaced object of every resource deleted; once none remain,
`kubernetes` is removed from `spec.finalizers` through `PUT /api/v1/namespaces/<ns>/finalize`
and the server drops the namespace.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess, Resource
from localcluster.controllers.informer import ResourceWatch

logger = logging.getLogger(__name__)

FINALIZER = "kubernetes"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
SWEEP_SECONDS = 0.5
DISCOVERY_SECONDS = 10.0
NAMESPACES = Resource(
    "", "v1", "namespaces", "Namespace", False, frozenset({"list", "watch", "delete"})
)


class NamespaceController(threading.Thread):
    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        super().__init__(name="namespace-controller", daemon=True)
        self.access = access
        self.stop = stop
        self._terminating: set[str] = set()
        self._unprovisioned: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._resources: list[Resource] = []
        self._discovered_at = 0.0

    def run(self) -> None:
        watch = ResourceWatch(self.access, NAMESPACES, self._on_sync, self._on_event, self.stop)
        watch.start()
        with ApiClient(self.access) as client:
            while not self.stop.is_set():
                self._wake.wait(SWEEP_SECONDS)
                self._wake.clear()
                with self._lock:
                    names = sorted(self._terminating)
                    new = sorted(self._unprovisioned)
                for name in new:
                    self._provision(client, name)
                for name in names:
                    if self.stop.is_set():
                        return
                    try:
                        self._sweep(client, name)
                    except ApiError as exc:
                        logger.info(
                            "namespace cleanup retried",
                            extra={"namespace": name, "error": str(exc)},
                        )
                    except Exception:
                        logger.exception("namespace cleanup failed", extra={"namespace": name})

    # events --------------------------------------------------------------------------------

    def _on_sync(self, resource: Resource, items: list[dict[str, Any]]) -> None:
        with self._lock:
            self._terminating = {_name(o) for o in items if _terminating(o)}
            self._unprovisioned = {_name(o) for o in items if not _terminating(o)}
        self._wake.set()

    def _on_event(self, resource: Resource, kind: str, obj: dict[str, Any]) -> None:
        with self._lock:
            if kind != "DELETED" and _terminating(obj):
                self._terminating.add(_name(obj))
                self._unprovisioned.discard(_name(obj))
            else:
                self._terminating.discard(_name(obj))
                if kind == "ADDED":
                    self._unprovisioned.add(_name(obj))
                elif kind == "DELETED":
                    self._unprovisioned.discard(_name(obj))
        self._wake.set()

    # work ----------------------------------------------------------------------------------

    def _provision(self, client: ApiClient, namespace: str) -> None:
        """Create the default ServiceAccount and the root CA ConfigMap; what exists is kept."""
        wanted: list[tuple[str, dict[str, Any]]] = [
            (
                f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
            )
        ]
        if self.access.ca_pem:
            wanted.append(
                (
                    f"/api/v1/namespaces/{namespace}/configmaps",
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": ROOT_CA_CONFIGMAP,
                            "annotations": {
                                "kubernetes.io/description": ROOT_CA_DESCRIPTION,
                            },
                        },
                        "data": {"ca.crt": self.access.ca_pem},
                    },
                )
            )
        try:
            for path, body in wanted:
                try:
                    client.request("POST", path, body=body)
                except ApiError as exc:
                    if exc.code != 409:  # AlreadyExists: the user's own is kept
                        raise
        except ApiError as exc:
            # 403/404: the namespace is going or gone; anything else is tried again.
            if not (isinstance(exc, ApiError) and exc.code in (403, 404)):
                logger.info(
                    "namespace provisioning retried",
                    extra={"namespace": namespace, "error": str(exc)},
                )
                return
        with self._lock:
            self._unprovisioned.discard(namespace)

    def _namespaced_resources(self, client: ApiClient) -> list[Resource]:
        if time.monotonic() - self._discovered_at > DISCOVERY_SECONDS:
            self._resources = [r for r in client.discover() if r.namespaced]
            self._discovered_at = time.monotonic()
        return self._resources

    def _sweep(self, client: ApiClient, namespace: str) -> None:
        """Delete what is left in the namespace; finalize it once nothing is."""
        remaining = 0
        for resource in self._namespaced_resources(client):
            try:
                items, _ = client.list_all(resource.path(namespace))
            except ApiError as exc:
                if exc.code in (404, 405):
                    continue
                raise
            for item in items:
                remaining += 1
                meta = item.get("metadata") or {}
                if meta.get("deletionTimestamp"):
                    continue
                try:
                    client.delete(resource.path(namespace, meta.get("name", "")), "Background")
                except ApiError as exc:
                    if exc.code not in (404, 409):
                        raise
        if not remaining:
            self._finalize(client, namespace)

    def _finalize(self, client: ApiClient, namespace: str) -> None:
        try:
            current = client.get(f"/api/v1/namespaces/{namespace}")
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
        finalizers = (current.get("spec") or {}).get("finalizers") or []
        if FINALIZER not in finalizers:
            return
        current.setdefault("spec", {})["finalizers"] = [f for f in finalizers if f != FINALIZER]
        logger.info("finalizing an empty namespace", extra={"namespace": namespace})
        client.request("PUT", f"/api/v1/namespaces/{namespace}/finalize", body=current)


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _terminating(obj: dict[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))
