"""Where the API server sends a call to a Service (webhooks): a ready endpoint of the Service,
at the target port. A Service that no pod backs (no selector, no Endpoints, or Endpoints without
any address) is taken to listen on this machine at its own port: a webhook run by hand beside
the local cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LOCAL_HOST = "127.0.0.1"


class NoEndpointsError(LookupError):
    pass


def resolve(
    service: Mapping[str, Any], endpoints: Mapping[str, Any] | None, port: int
) -> tuple[str, int]:
    spec = service.get("spec") or {}
    name = str((service.get("metadata") or {}).get("name", ""))
    service_port = next((p for p in spec.get("ports") or [] if p.get("port") == port), None)
    if not spec.get("selector") or endpoints is None:
        return LOCAL_HOST, port
    if service_port is None:
        raise NoEndpointsError(f'service "{name}" has no port {port}')
    subsets = endpoints.get("subsets") or []
    if not any(s.get("addresses") or s.get("notReadyAddresses") for s in subsets):
        # No pod backs the Service: a webhook run by hand beside the cluster may.
        return LOCAL_HOST, port
    port_name = str(service_port.get("name") or "")
    for subset in endpoints.get("subsets") or []:
        addresses = subset.get("addresses") or []
        ports = subset.get("ports") or []
        match = next((p for p in ports if str(p.get("name") or "") == port_name), None)
        if match is None and len(ports) == 1:
            match = ports[0]
        if addresses and match is not None:
            return str(addresses[0]["ip"]), int(match["port"])
    raise NoEndpointsError(f'no endpoints available for service "{name}"')
