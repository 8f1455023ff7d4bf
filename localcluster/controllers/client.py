"""The local controllers' synchronous view of the Kubernetes API over kubeio's client:
kubeconfig access (loaded by the `kubernetes` package), discovery, list, watch and writes, all on
plain dicts."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeio.client import Configuration, Kube, load_configuration, new_api_client
from kubeio.errors import KubeError
from localcluster.apierror import ApiError as ApiError  # the views raise it

logger = logging.getLogger(__name__)

JSON_PATCH = "application/json-patch+json"


def _api_error(exc: KubeError) -> ApiError:
    return ApiError.from_kube(exc)


@dataclass(frozen=True)
class ClusterAccess:
    server: str
    configuration: Configuration
    ca_pem: str = ""  # the cluster's CA (PEM) when the kubeconfig carries it


def load_kubeconfig(path: Path) -> ClusterAccess:
    """The current context's server, trust root and credentials (exec and OIDC included)."""
    configuration = load_configuration(str(path))
    server = str(configuration.host or "").rstrip("/")
    if not server:
        raise ValueError(f"kubeconfig {path}: the current context's cluster has no server")
    ca = ""
    if configuration.ssl_ca_cert:
        ca = Path(configuration.ssl_ca_cert).read_text()
    return ClusterAccess(server, configuration, ca)


@dataclass(frozen=True)
class Resource:
    """One listable resource, at the preferred version of its group."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    verbs: frozenset[str]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class ApiClient:
    """Blocking calls to the API server; one instance per thread."""

    def __init__(self, access: ClusterAccess, timeout: float = 30.0) -> None:
        self._api_client = new_api_client(access.configuration, pool_size=4)
        self._kube = Kube(self._api_client, qps=0, request_timeout=timeout)

    def close(self) -> None:
        self._api_client.close()  # type: ignore[no-untyped-call]

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        try:
            data = self._kube.request(
                method, path, query=params, body=body, content_type=content_type
            )
        except KubeError as exc:
            raise _api_error(exc) from exc
        return data if isinstance(data, dict) else {}

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.request("GET", path, params=params)

    def delete(self, path: str, propagation: str | None = None) -> dict[str, Any]:
        body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            body["propagationPolicy"] = propagation
        return self.request("DELETE", path, body=body)

    def json_patch(self, path: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
        return self.request("PATCH", path, body=operations, content_type=JSON_PATCH)

    def list_all(
        self, path: str, params: dict[str, Any] | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        """Every item (following `continue`) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        query = dict(params or {})
        while True:
            page = self.get(path, query)
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            if not metadata.get("continue"):
                return items, str(metadata.get("resourceVersion", ""))
            query["continue"] = metadata["continue"]

    def watch(
        self, path: str, resource_version: str, timeout_seconds: int
    ) -> Iterator[dict[str, Any]]:
        """Watch events until the server ends the watch; an ERROR event is yielded as is."""
        try:
            yield from self._kube.watch_path(
                path, resource_version=resource_version, timeout_seconds=timeout_seconds
            )
        except KubeError as exc:
            raise _api_error(exc) from exc

    def discover(self) -> list[Resource]:
        """Every top-level resource that can be listed, watched and deleted."""
        found: list[Resource] = []
        core = self.get("/api/v1")
        found.extend(_resources("", "v1", core))
        groups = self.get("/apis").get("groups") or []
        for group in groups:
            preferred = (group.get("preferredVersion") or {}).get("version")
            versions = [v.get("version") for v in group.get("versions") or []]
            version = preferred or (versions[0] if versions else None)
            if not version:
                continue
            try:
                listing = self.get(f"/apis/{group['name']}/{version}")
            except ApiError as exc:
                logger.warning(
                    "discovery failed for a group",
                    extra={"group": group.get("name"), "error": str(exc)},
                )
                continue
            found.extend(_resources(group["name"], version, listing))
        return found


def _resources(group: str, version: str, listing: dict[str, Any]) -> Iterator[Resource]:
    for entry in listing.get("resources") or []:
        name = entry.get("name", "")
        verbs = frozenset(entry.get("verbs") or [])
        if "/" in name or not {"list", "watch", "delete"} <= verbs:
            continue
        yield Resource(
            group, version, name, entry.get("kind", ""), bool(entry.get("namespaced")), verbs
        )
