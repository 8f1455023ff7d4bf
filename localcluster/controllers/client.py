"""A small synchronous Kubernetes API client for the local controllers: kubeconfig access,
discovery, list, watch and writes, all on plain dicts."""

from __future__ import annotations

import base64
import json
import logging
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

logger = logging.getLogger(__name__)

JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    """A non-2xx answer; `status` is the server's Status object when it sent one."""

    def __init__(self, code: int, status: dict[str, Any]) -> None:
        super().__init__(f"HTTP {code}: {status.get('message', '')}")
        self.code = code
        self.status = status


@dataclass(frozen=True)
class ClusterAccess:
    server: str
    ssl_context: ssl.SSLContext | bool
    headers: dict[str, str]
    ca_pem: str = ""  # the cluster's CA (PEM) when the kubeconfig carries it


def _pick(entries: list[dict[str, Any]], name: str, what: str) -> dict[str, Any]:
    for entry in entries or []:
        if entry.get("name") == name:
            inner = entry.get(what)
            return inner if isinstance(inner, dict) else {}
    raise ValueError(f"kubeconfig: no {what} named {name!r}")


def load_kubeconfig(path: Path) -> ClusterAccess:
    """The current context's server, trust root and credentials."""
    config = yaml.safe_load(path.read_text()) or {}
    context = _pick(config.get("contexts", []), config.get("current-context", ""), "context")
    cluster = _pick(config.get("clusters", []), context.get("cluster", ""), "cluster")
    user: dict[str, Any] = {}
    if context.get("user"):
        user = _pick(config.get("users", []), context["user"], "user")
    server = str(cluster.get("server", "")).rstrip("/")
    if not server:
        raise ValueError(f"kubeconfig {path}: the current context's cluster has no server")

    verify: ssl.SSLContext | bool
    ca = ""
    if cluster.get("certificate-authority-data"):
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
    elif cluster.get("certificate-authority"):
        ca = (path.parent / cluster["certificate-authority"]).read_text()
    if cluster.get("insecure-skip-tls-verify"):
        verify = False
    elif ca:
        verify = ssl.create_default_context(cadata=ca)
    else:
        verify = ssl.create_default_context()
    if isinstance(verify, ssl.SSLContext):
        _load_client_certificate(verify, user, path.parent)

    headers = {"Accept": "application/json"}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    return ClusterAccess(server, verify, headers, ca)


def _load_client_certificate(context: ssl.SSLContext, user: dict[str, Any], base: Path) -> None:
    if user.get("client-certificate-data") and user.get("client-key-data"):
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.touch(mode=0o600)
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            context.load_cert_chain(cert, key)
    elif user.get("client-certificate") and user.get("client-key"):
        context.load_cert_chain(base / user["client-certificate"], base / user["client-key"])


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
        self._client = httpx.Client(
            base_url=access.server,
            verify=access.ssl_context,
            headers=access.headers,
            timeout=timeout,
            trust_env=False,
        )

    def close(self) -> None:
        self._client.close()

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
        content = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type} if content is not None else None
        answer = self._client.request(method, path, params=params, content=content, headers=headers)
        try:
            data = answer.json()
        except ValueError:
            data = {"message": answer.text}
        if answer.status_code >= 300:
            raise ApiError(answer.status_code, data if isinstance(data, dict) else {})
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
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        timeout = httpx.Timeout(10.0, read=timeout_seconds + 10.0)
        with self._client.stream("GET", path, params=params, timeout=timeout) as answer:
            if answer.status_code >= 300:
                answer.read()
                try:
                    status = answer.json()
                except ValueError:
                    status = {"message": answer.text}
                raise ApiError(answer.status_code, status if isinstance(status, dict) else {})
            for line in answer.iter_lines():
                if line.strip():
                    event = json.loads(line)
                    if isinstance(event, dict):
                        yield event

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
