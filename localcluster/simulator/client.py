"""The local cluster's JSON view of the Kubernetes REST API, over kubeio's client.

Objects stay plain dicts end to end. Transient failures (connection errors, timeouts, 5xx, 429 and
the injected 409s of a fault-injecting server) are retried with backoff, so callers see either a
result or an `ApiError` that means what it says.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from kubeio.client import Kube, load_api_client
from kubeio.errors import KubeError
from localcluster.apierror import ApiError as ApiError  # the views raise it

# Jitter has its own generator: background threads must not move the global `random`
# state that seeded code (and Hypothesis) relies on.
_JITTER = random.Random()

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
RETRYABLE_CODES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Resource:
    """Where a resource type lives in the REST API."""

    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str = ""

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = f"/api/{self.version}" if self.group == "" else f"/apis/{self.group}/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource is not None:
                base += f"/{subresource}"
        return base


PODS = Resource("", "v1", "pods", namespaced=True, kind="Pod")
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
NAMESPACES = Resource("", "v1", "namespaces", namespaced=False)
EVENTS = Resource("", "v1", "events", namespaced=True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", namespaced=True, kind="Lease")
SECRETS = Resource("", "v1", "secrets", namespaced=True, kind="Secret")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False)
PODGROUPS = Resource(
    "scheduling.volcano.sh", "v1beta1", "podgroups", namespaced=True, kind="PodGroup"
)
QUEUES = Resource("scheduling.volcano.sh", "v1beta1", "queues", namespaced=False)
MUTATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", namespaced=False
)
VALIDATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", namespaced=False
)


class WatchExpiredError(Exception):
    """The watch's resourceVersion is older than the server's history (410 Gone): re-list."""


def _api_error(exc: KubeError, method: str, path: str) -> ApiError:
    return ApiError.from_kube(exc, method, path)


class KubeClient:
    """JSON access to one API server with retries on transient failures, through kubeio's
    client (kubeconfig loading, TLS and auth by the `kubernetes` package). Every failure is
    an `ApiError` (code 0 when no answer came); a watch whose resourceVersion expired raises
    `WatchExpiredError`."""

    def __init__(
        self,
        kubeconfig: Path,
        *,
        attempts: int = 8,
        timeout: float = 5.0,
    ) -> None:
        self._api_client = load_api_client(str(kubeconfig), component="vcjob-node-agent")
        self.server = str(self._api_client.configuration.host).rstrip("/")
        self._kube = Kube(self._api_client, qps=0, request_timeout=timeout)
        self._attempts = attempts
        self._closed = threading.Event()

    @property
    def kube(self) -> Kube:
        """kubeio's client underneath (for kubeio's reflectors)."""
        return self._kube

    def close(self) -> None:
        self._closed.set()
        self._api_client.close()  # type: ignore[no-untyped-call]

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- plain requests ---------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        retry_conflicts: bool = False,
        attempts: int | None = None,
    ) -> dict[str, Any]:
        """One API call with retries on transient failures; returns the decoded JSON body."""
        attempts = attempts or self._attempts
        delay = 0.1
        for attempt in range(1, attempts + 1):
            try:
                decoded = self._kube.request(
                    method, path, query=dict(params or {}), body=body, content_type=content_type
                )
            except KubeError as err:
                retryable = (
                    err.status in RETRYABLE_CODES
                    or (err.status == 0 and not self._closed.is_set())
                    or (retry_conflicts and err.status == 409 and err.reason != "AlreadyExists")
                )
                if not retryable or attempt == attempts:
                    raise _api_error(err, method, path) from err
                log.debug("api call failed, retrying", extra={"path": path, "error": str(err)})
            else:
                return decoded if isinstance(decoded, dict) else {"items": decoded}
            time.sleep(delay * (0.5 + _JITTER.random()))
            delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.request("GET", resource.path(namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        params: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        return self.request("GET", resource.path(namespace), params=params)

    def create(
        self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        # A create has no resourceVersion to conflict on: a 409 besides AlreadyExists is transient.
        return self.request("POST", resource.path(namespace), body=body, retry_conflicts=True)

    def replace(
        self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        name = str(body["metadata"]["name"])
        return self.request("PUT", resource.path(namespace, name), body=body)

    def patch(
        self,
        resource: Resource,
        name: str,
        body: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        content_type: str = MERGE_PATCH,
    ) -> dict[str, Any]:
        """A patch without a resourceVersion precondition, so any 409 is transient."""
        return self.request(
            "PATCH",
            resource.path(namespace, name, subresource),
            body=body,
            content_type=content_type,
            retry_conflicts=True,
        )

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> dict[str, Any]:
        """DELETE with DeleteOptions; with `uid`, only the object of that UID is deleted (a 409
        says the name now belongs to another one, so it is not retried)."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if uid:
            options["preconditions"] = {"uid": uid}
        return self.request(
            "DELETE", resource.path(namespace, name), body=options, retry_conflicts=not uid
        )

    def apply(self, resource: Resource, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create the object, or replace the stored one with it (keeping its resourceVersion)."""
        namespace = body["metadata"].get("namespace") if resource.namespaced else None
        try:
            return self.create(resource, body, namespace)
        except ApiError as err:
            if not err.already_exists:
                raise
        for _ in range(self._attempts):
            current = self.get(resource, str(body["metadata"]["name"]), namespace)
            desired = json.loads(json.dumps(body))
            desired["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                return self.replace(resource, desired, namespace)
            except ApiError as err:
                if err.code != 409:
                    raise
        raise ApiError(409, {"reason": "Conflict"}, "PUT", resource.path(namespace))

    # -- watch ------------------------------------------------------------------------------

    def watch(
        self,
        resource: Resource,
        resource_version: str,
        *,
        namespace: str | None = None,
        params: Mapping[str, str] | None = None,
        timeout_seconds: int = 60,
    ) -> Iterator[dict[str, Any]]:
        """Watch events from `resource_version` until the server ends the stream.

        Raises WatchExpiredError on 410 Gone (as a status code or an ERROR event), ApiError on
        other failures (code 0 when the connection broke).
        """
        path = resource.path(namespace)
        try:
            for event in self._kube.watch_path(
                path,
                resource_version=resource_version,
                query=dict(params or {}),
                timeout_seconds=timeout_seconds,
            ):
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    if status.get("code") == 410:
                        raise WatchExpiredError(path)
                    raise ApiError(int(status.get("code") or 500), status, "WATCH", path)
                yield event
        except KubeError as err:
            if err.status == 410:
                raise WatchExpiredError(path) from err
            raise _api_error(err, "WATCH", path) from err
