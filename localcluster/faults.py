"""Which API requests the fault proxy fails, and how: pure decisions, no I/O.

`vcjob local up --fault-rate R --fault-seed S` puts `localcluster.faultproxy` between vcjob's own
processes and kube-apiserver. For every request that names a resource (discovery, OpenAPI,
health and version paths and protocol upgrades always pass), `FaultPicker.pick` draws from a
seeded generator: with probability R a fault, otherwise None. The faults are what clients see
from an overloaded or flaky kube-apiserver:

- `InternalError`: 500 with a `metav1.Status` body.
- `TooManyRequests`: 429 with `Retry-After: 1` and `details.retryAfterSeconds: 1`, as
  kube-apiserver's priority-and-fairness filter answers.
- `Conflict`: 409 on writes (POST, PUT, PATCH, DELETE), worded like an optimistic-concurrency
  conflict.
- `Timeout`: the proxy holds the request, then answers 504 with reason `Timeout`, worded like
  kube-apiserver's request-timeout filter. The hold is the proxy's hold time, shortened to the
  request's own `?timeout=` when that is shorter (kube-apiserver also honours it); a client with a
  shorter deadline of its own gives up first and sees its own timeout. As in kube-apiserver,
  whose handler keeps running after the filter answered, half of the timed-out writes still reach
  kube-apiserver (`TimeoutFault.applied`): the client cannot tell whether its write happened.
- `WatchCut`: on a watch, the stream is cut after 1 to 5 events, either cleanly (the response
  ends as if the server closed the watch) or abruptly (the connection closes mid-response).

A watch can also fail at once with 500 or 429. The same seed and the same sequence of requests
give the same faults.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, NotRequired, TypedDict
from urllib.parse import parse_qs

from shared.duration import parse_duration

WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
RETRY_AFTER_SECONDS: Final = 1
WATCH_CUT_EVENTS: Final = (1, 5)  # inclusive range of events delivered before a cut
# Share of timed-out writes that still reach kube-apiserver.
TIMEOUT_APPLIED_SHARE: Final = 0.5
# Namespace subresources: /api/v1/namespaces/NS/status is the namespace's own status.
_NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})


class FaultKind(StrEnum):
    INTERNAL_ERROR = "InternalError"
    TOO_MANY_REQUESTS = "TooManyRequests"
    CONFLICT = "Conflict"
    TIMEOUT = "Timeout"
    WATCH_CUT = "WatchCut"


@dataclass(frozen=True)
class StatusFault:
    """Answered at once with a Status; the request never reaches kube-apiserver."""

    kind: FaultKind  # INTERNAL_ERROR, TOO_MANY_REQUESTS or CONFLICT


@dataclass(frozen=True)
class TimeoutFault:
    """Held, then answered 504. `applied`: the request is still sent to kube-apiserver (its
    answer is dropped), as a write whose client timed out may still have happened."""

    applied: bool

    @property
    def kind(self) -> FaultKind:
        return FaultKind.TIMEOUT


@dataclass(frozen=True)
class WatchCut:
    """The watch is forwarded; after `after_events` events its response ends (`abrupt=False`:
    properly terminated; `abrupt=True`: the connection closes mid-response)."""

    after_events: int
    abrupt: bool

    @property
    def kind(self) -> FaultKind:
        return FaultKind.WATCH_CUT


Fault = StatusFault | TimeoutFault | WatchCut

# Relative weights of the kinds, by request shape. Timeouts are rarer: each costs a client its
# whole deadline.
READ_WEIGHTS: Final[Mapping[FaultKind, int]] = {
    FaultKind.INTERNAL_ERROR: 4,
    FaultKind.TOO_MANY_REQUESTS: 4,
    FaultKind.TIMEOUT: 1,
}
WRITE_WEIGHTS: Final[Mapping[FaultKind, int]] = {
    FaultKind.INTERNAL_ERROR: 3,
    FaultKind.TOO_MANY_REQUESTS: 3,
    FaultKind.CONFLICT: 3,
    FaultKind.TIMEOUT: 1,
}
WATCH_WEIGHTS: Final[Mapping[FaultKind, int]] = {
    FaultKind.WATCH_CUT: 6,
    FaultKind.INTERNAL_ERROR: 2,
    FaultKind.TOO_MANY_REQUESTS: 2,
}


def is_write(method: str) -> bool:
    return method.upper() in WRITE_METHODS


class FaultPicker:
    """Seeded fault decisions at `rate` (0 = never, 1 = every request); `seed=None` is unseeded."""

    def __init__(self, rate: float, seed: int | None = None) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be between 0.0 and 1.0, got {rate}")
        self.rate = rate
        self._random = random.Random(seed)

    def pick(self, method: str, is_watch: bool) -> Fault | None:
        # Rate 0 draws nothing, so a pass-through proxy never touches the generator.
        if self.rate <= 0.0 or self._random.random() >= self.rate:
            return None
        weights = WATCH_WEIGHTS if is_watch else WRITE_WEIGHTS if is_write(method) else READ_WEIGHTS
        kinds = list(weights)
        kind = self._random.choices(kinds, weights=[weights[k] for k in kinds])[0]
        if kind is FaultKind.TIMEOUT:
            applied = is_write(method) and self._random.random() < TIMEOUT_APPLIED_SHARE
            return TimeoutFault(applied=applied)
        if kind is FaultKind.WATCH_CUT:
            low, high = WATCH_CUT_EVENTS
            return WatchCut(self._random.randint(low, high), abrupt=self._random.random() < 0.5)
        return StatusFault(kind)


# -- what a request is ------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceRef:
    """The resource a request path names, as kube-apiserver's RequestInfo reads it."""

    group: str  # "" for the core group
    version: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def qualified(self) -> str:
        """`configmaps`, `jobs.batch.volcano.sh`: how Status messages name a resource."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str
    resource: ResourceRef | None  # None: discovery, OpenAPI, health, version, anything else
    is_watch: bool
    timeout: str | None  # the `?timeout=` query parameter, a Go duration


def parse_resource_path(path: str) -> tuple[ResourceRef | None, bool]:
    """(the resource named by `path`, whether it is a legacy `/watch/` path)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None, False
    legacy_watch = bool(rest) and rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    if not rest:
        return None, False  # a discovery document
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = "/".join(rest[2:])
    if resource == "namespaces":
        namespace = ""  # a Namespace object is itself cluster-scoped
    return ResourceRef(group, version, resource, namespace, name, subresource), legacy_watch


def parse_request(method: str, target: str) -> ApiRequest:
    """Read a request line's method and target (`/path?query`)."""
    path, _, query_text = target.partition("?")
    query = parse_qs(query_text)
    resource, legacy_watch = parse_resource_path(path)
    watch_param = (query.get("watch") or [""])[0].lower() in ("true", "1")
    is_watch = (
        method.upper() == "GET"
        and resource is not None
        and not resource.subresource
        and (legacy_watch or watch_param)
    )
    timeouts = query.get("timeout")
    timeout = timeouts[0] if timeouts else None
    return ApiRequest(method.upper(), path, resource, is_watch, timeout)


def is_upgrade(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """`Connection: Upgrade` (exec, attach, port-forward over SPDY or WebSocket)."""
    for name, value in headers:
        tokens = value.split(b",") if name.lower() == b"connection" else []
        if any(token.strip().lower() == b"upgrade" for token in tokens):
            return True
    return False


def faultable(request: ApiRequest, upgrade: bool) -> bool:
    """Only resource requests fail: bootstrapping, discovery and streams that switch protocols
    pass, so a client always gets far enough to see the faults its own calls meet."""
    return request.resource is not None and not upgrade


def hold_seconds(request_timeout: str | None, default: float) -> float:
    """How long a timed-out request is held: the proxy's hold, or the request's own
    `?timeout=` when shorter (an unreadable or non-positive one is ignored, as it would be)."""
    if request_timeout:
        try:
            asked = parse_duration(request_timeout).total_seconds()
        except ValueError:
            return default
        if asked > 0:
            return min(default, asked)
    return default


# -- what a fault answers ---------------------------------------------------------------------


class StatusCause(TypedDict):
    message: str


class StatusDetails(TypedDict, total=False):
    name: str
    group: str
    kind: str
    causes: list[StatusCause]
    retryAfterSeconds: int


class ListMeta(TypedDict, total=False):
    resourceVersion: str


class Status(TypedDict):
    """metav1.Status, as kube-apiserver encodes an error."""

    kind: str
    apiVersion: str
    metadata: ListMeta
    status: str
    message: str
    reason: str
    details: NotRequired[StatusDetails]
    code: int


@dataclass(frozen=True)
class FaultAnswer:
    code: int
    reason_phrase: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


INTERNAL_ERROR_CAUSE: Final = "injected by the vcjob fault proxy"
TOO_MANY_REQUESTS_MESSAGE: Final = "Too many requests, please try again later."
CONFLICT_CAUSE: Final = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
TIMEOUT_MESSAGE: Final = (
    "Timeout: request did not complete within requested timeout - context deadline exceeded"
)
_REASON_PHRASES: Final = {
    500: "Internal Server Error",
    429: "Too Many Requests",
    409: "Conflict",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def fault_status(kind: FaultKind, resource: ResourceRef | None) -> Status:
    """The Status kube-apiserver would send for this kind of failure."""
    if kind is FaultKind.INTERNAL_ERROR:
        return _status(
            500,
            "InternalError",
            f"Internal error occurred: {INTERNAL_ERROR_CAUSE}",
            {"causes": [{"message": INTERNAL_ERROR_CAUSE}]},
        )
    if kind is FaultKind.TOO_MANY_REQUESTS:
        return _status(
            429,
            "TooManyRequests",
            TOO_MANY_REQUESTS_MESSAGE,
            {"retryAfterSeconds": RETRY_AFTER_SECONDS},
        )
    if kind is FaultKind.CONFLICT:
        ref = resource or ResourceRef("", "v1", "")
        details: StatusDetails = {"kind": ref.resource}
        if ref.name:
            details["name"] = ref.name
        if ref.group:
            details["group"] = ref.group
        message = f'Operation cannot be fulfilled on {ref.qualified} "{ref.name}": {CONFLICT_CAUSE}'
        return _status(409, "Conflict", message, details)
    if kind is FaultKind.TIMEOUT:
        return _status(504, "Timeout", TIMEOUT_MESSAGE, {})
    raise ValueError(f"{kind} is not answered with a Status")


def fault_answer(kind: FaultKind, resource: ResourceRef | None) -> FaultAnswer:
    """The whole HTTP answer: Status body, JSON headers, `Retry-After` on 429."""
    retry_after = RETRY_AFTER_SECONDS if kind is FaultKind.TOO_MANY_REQUESTS else None
    return status_answer(fault_status(kind, resource), retry_after)


def unavailable_status(message: str) -> Status:
    """What the proxy answers when it cannot reach kube-apiserver at all."""
    return _status(503, "ServiceUnavailable", message, {"retryAfterSeconds": RETRY_AFTER_SECONDS})


def status_answer(status: Status, retry_after: int | None = None) -> FaultAnswer:
    body = json.dumps(status, separators=(",", ":")).encode() + b"\n"
    headers = [
        ("Cache-Control", "no-cache, private"),
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
    ]
    if retry_after is not None:
        headers.append(("Retry-After", str(retry_after)))
    code = status["code"]
    return FaultAnswer(code, _REASON_PHRASES.get(code, ""), tuple(headers), body)


def _status(code: int, reason: str, message: str, details: StatusDetails) -> Status:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details,
        "code": code,
    }


# -- where watch events end -------------------------------------------------------------------


class WatchFraming:
    """Finds where each watch event ends in a stream of chunks, so a cut falls between events.

    JSON watches (kube-apiserver's default) end every event with a newline; protobuf watches
    (`application/vnd.kubernetes.protobuf;stream=watch`) prefix each with a 4-byte big-endian
    length.
    """

    def __init__(self, length_prefixed: bool) -> None:
        self.length_prefixed = length_prefixed
        self._header = b""  # length-prefix bytes seen so far
        self._remaining = 0  # bytes of the current frame still to come

    @classmethod
    def for_content_type(cls, content_type: str) -> WatchFraming:
        return cls(length_prefixed="protobuf" in content_type.lower())

    def feed(self, chunk: bytes) -> list[int]:
        """Offsets into `chunk` just past each event that ends in it."""
        if not self.length_prefixed:
            return [i + 1 for i, byte in enumerate(chunk) if byte == 0x0A]
        ends: list[int] = []
        pos = 0
        while pos < len(chunk):
            if self._remaining == 0:
                take = min(4 - len(self._header), len(chunk) - pos)
                self._header += chunk[pos : pos + take]
                pos += take
                if len(self._header) < 4:
                    break
                self._remaining = int.from_bytes(self._header, "big")
                self._header = b""
                if self._remaining == 0:
                    ends.append(pos)
                    continue
            take = min(self._remaining, len(chunk) - pos)
            self._remaining -= take
            pos += take
            if self._remaining == 0:
                ends.append(pos)
        return ends
