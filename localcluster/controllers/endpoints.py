"""The endpoints controllers: every Service with a selector gets an Endpoints object and an
EndpointSlice listing the pods it selects, ready ones as addresses, the others as not ready,
at the Service's target ports (numbers, or container port names resolved per pod).

`desired_endpoints` and `desired_slice` decide (pure); `EndpointsController` lists Services and
Pods each round and writes what differs. Both objects are owned by their Service, so the garbage
collector removes them with it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from localcluster.controllers.client import ApiClient, ApiError, ClusterAccess

log = logging.getLogger(__name__)

ROUND_SECONDS = 0.5
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def selected_pods(service: Obj, pods: Sequence[Obj]) -> list[Obj]:
    selector = (service.get("spec") or {}).get("selector") or {}
    namespace = _meta(service).get("namespace")
    chosen = []
    for pod in pods:
        labels = _meta(pod).get("labels") or {}
        if _meta(pod).get("namespace") != namespace:
            continue
        if not all(labels.get(k) == v for k, v in selector.items()):
            continue
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed") or not status.get("podIP"):
            continue
        chosen.append(pod)
    return sorted(chosen, key=lambda p: str(_meta(p).get("name")))


def pod_ready(pod: Obj) -> bool:
    if _meta(pod).get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def target_port(service_port: Obj, pod: Obj) -> int | None:
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared["containerPort"])
    return None


def _owner(service: Obj) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": _meta(service).get("name"),
            "uid": _meta(service).get("uid"),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _ports(service: Obj, pod: Obj) -> tuple[tuple[str, int, str], ...]:
    ports = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = target_port(port, pod)
        if number is not None:
            ports.append((str(port.get("name") or ""), number, str(port.get("protocol") or "TCP")))
    return tuple(ports)


def _address(pod: Obj) -> dict[str, Any]:
    address: dict[str, Any] = {
        "ip": (pod.get("status") or {}).get("podIP"),
        "targetRef": {
            "kind": "Pod",
            "namespace": _meta(pod).get("namespace"),
            "name": _meta(pod).get("name"),
            "uid": _meta(pod).get("uid"),
        },
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        address["nodeName"] = node
    return address


def desired_endpoints(service: Obj, pods: Sequence[Obj]) -> dict[str, Any] | None:
    """The Endpoints of a Service with a selector (None for one without: left to its owner)."""
    if not (service.get("spec") or {}).get("selector"):
        return None
    subsets: dict[tuple[tuple[str, int, str], ...], dict[str, Any]] = {}
    for pod in selected_pods(service, pods):
        ports = _ports(service, pod)
        if not ports:
            continue
        subset = subsets.setdefault(
            ports,
            {
                "ports": [
                    {"name": n, "port": p, "protocol": t} if n else {"port": p, "protocol": t}
                    for n, p, t in ports
                ]
            },
        )
        key = "addresses" if pod_ready(pod) else "notReadyAddresses"
        subset.setdefault(key, []).append(_address(pod))
    metadata = {
        "name": _meta(service).get("name"),
        "namespace": _meta(service).get("namespace"),
        "labels": dict(_meta(service).get("labels") or {}),
        "ownerReferences": _owner(service),
    }
    endpoints: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}
    if subsets:
        endpoints["subsets"] = list(subsets.values())
    return endpoints


def slice_name(service: Obj) -> str:
    digest = hashlib.sha256(str(_meta(service).get("uid")).encode()).hexdigest()[:5]
    return f"{_meta(service).get('name')}-{digest}"


def desired_slice(service: Obj, pods: Sequence[Obj]) -> dict[str, Any] | None:
    if not (service.get("spec") or {}).get("selector"):
        return None
    chosen = [p for p in selected_pods(service, pods) if _ports(service, p)]
    ports = _ports(service, chosen[0]) if chosen else ()
    endpoints = []
    for pod in chosen:
        ready = pod_ready(pod)
        entry: dict[str, Any] = {
            "addresses": [(pod.get("status") or {}).get("podIP")],
            "conditions": {
                "ready": ready,
                "serving": ready,
                "terminating": bool(_meta(pod).get("deletionTimestamp")),
            },
            "targetRef": _address(pod)["targetRef"],
        }
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            entry["nodeName"] = node
        endpoints.append(entry)
    labels = dict(_meta(service).get("labels") or {})
    labels.update(
        {SERVICE_NAME_LABEL: str(_meta(service).get("name")), MANAGED_BY_LABEL: MANAGED_BY}
    )
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": slice_name(service),
            "namespace": _meta(service).get("namespace"),
            "labels": labels,
            "ownerReferences": _owner(service),
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": n, "port": p, "protocol": t} for n, p, t in ports],
    }


def differs(current: Obj | None, wanted: Obj) -> bool:
    if current is None:
        return True
    for key, value in wanted.items():
        if key == "metadata":
            for field in ("labels", "ownerReferences"):
                if (current.get("metadata") or {}).get(field) != value.get(field):
                    return True
        elif current.get(key) != value:
            return True
    return any(key not in wanted for key in ("subsets", "endpoints") if current.get(key))


class EndpointsController(threading.Thread):
    def __init__(self, access: ClusterAccess, stop: threading.Event) -> None:
        super().__init__(name="endpoints-controller", daemon=True)
        self.access = access
        self.stop = stop

    def run(self) -> None:
        with ApiClient(self.access) as client:
            while not self.stop.wait(ROUND_SECONDS):
                try:
                    self.reconcile(client)
                except ApiError as err:
                    log.debug("endpoints round failed", extra={"error": str(err)})
                except Exception:
                    log.exception("endpoints round crashed")

    def reconcile(self, client: ApiClient) -> None:
        services, _ = client.list_all("/api/v1/services")
        pods, _ = client.list_all("/api/v1/pods")
        endpoints = {_key(e): e for e in client.list_all("/api/v1/endpoints")[0]}
        slices = {
            _key(s): s for s in client.list_all("/apis/discovery.k8s.io/v1/endpointslices")[0]
        }
        for service in services:
            if _meta(service).get("deletionTimestamp"):
                continue
            namespace = str(_meta(service).get("namespace"))
            wanted = desired_endpoints(service, pods)
            if wanted is not None:
                self._write(
                    client,
                    f"/api/v1/namespaces/{namespace}/endpoints",
                    endpoints.get(_key(wanted)),
                    wanted,
                )
            wanted_slice = desired_slice(service, pods)
            if wanted_slice is not None:
                self._write(
                    client,
                    f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                    slices.get(_key(wanted_slice)),
                    wanted_slice,
                )

    @staticmethod
    def _write(
        client: ApiClient, collection: str, current: Obj | None, wanted: dict[str, Any]
    ) -> None:
        if not differs(current, wanted):
            return
        name = wanted["metadata"]["name"]
        try:
            if current is None:
                client.request("POST", collection, body=wanted)
            else:
                body = dict(wanted)
                body["metadata"] = {
                    **wanted["metadata"],
                    "resourceVersion": _meta(current).get("resourceVersion"),
                }
                client.request("PUT", f"{collection}/{name}", body=body)
        except ApiError as err:
            if err.code not in (404, 409):
                raise


def _key(obj: Obj) -> tuple[str, str]:
    return str(_meta(obj).get("namespace")), str(_meta(obj).get("name"))
