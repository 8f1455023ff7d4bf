"""What `pods/portforward` may reach, and what each stream of kubectl's protocol asks for.

Pure decisions; `portforward_io` does the connecting and copying. A pod that really runs has a
loopback pod IP derived from its uid (`localcluster.simulator.podstatus.pod_ip_for`); a simulated
pod's 10.244.x.y address leads nowhere, so only the former is forwarded to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from localcluster.apiserver import errors
from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.spdy import Headers
from localcluster.simulator.podstatus import pod_ip_for

# The WebSocket subprotocol kubectl 1.31 offers first: SPDY/3.1 frames carried in binary messages.
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"

StreamType = Literal["data", "error"]


def is_portforward_request(attrs: Attributes) -> bool:
    return (
        attrs.resource_request
        and attrs.api_group == ""
        and attrs.resource == "pods"
        and attrs.subresource == "portforward"
        and bool(attrs.name)
    )


def pod_address(pod: Mapping[str, Any] | None, name: str) -> str:
    """The pod IP to forward to, or the StatusError kube-apiserver would answer."""
    if pod is None:
        raise errors.not_found("pods", name)
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    uid = str((pod.get("metadata") or {}).get("uid", ""))
    if not spec.get("nodeName"):
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    phase = status.get("phase") or "Unknown"
    if phase != "Running":
        raise errors.bad_request(
            f"unable to forward port because pod is not running. Current status={phase}"
        )
    address = str(status.get("podIP") or "")
    if not address or address != pod_ip_for(uid):
        raise errors.bad_request(
            f"pod {name} is simulated and listens nowhere: only pods that really run "
            "(`vcjob local up --run-image`) can be port-forwarded"
        )
    return address


@dataclass(frozen=True)
class StreamRequest:
    """One SYN_STREAM of the port-forward protocol: half of the pair a connection opens."""

    kind: StreamType
    request_id: str
    port: int


def stream_request(headers: Headers, stream_id: int) -> StreamRequest:
    """Read a stream's headers; a missing requestID pairs by stream id as kubelet does."""

    def one(name: str) -> str:
        values = headers.get(name) or []
        if not values or not values[0]:
            raise ValueError(f"{name} header is missing")
        return values[0]

    kind = one("streamtype")
    if kind not in ("data", "error"):
        raise ValueError(f"invalid stream type {kind!r}")
    raw_port = one("port")
    try:
        port = int(raw_port)
    except ValueError:
        raise ValueError(f"unable to parse {raw_port!r} as a port") from None
    if not 0 < port < 65536:
        raise ValueError(f"port {port} must be between 1 and 65535")
    request_id = (headers.get("requestid") or [""])[0]
    if not request_id:
        # Without requestID a client opens the error stream, then the data stream right after it.
        request_id = str(stream_id if kind == "error" else stream_id - 2)
    return StreamRequest("data" if kind == "data" else "error", request_id, port)


def forward_error(port: int, pod: str, uid: str, reason: str) -> str:
    """The text written on the error stream, which kubectl prints after its own prefix."""
    return f"error forwarding port {port} to pod {pod}, uid {uid}: {reason}"
