"""The kubelet API's requests, pure: which handler a path leads to (kubelet's routes), a request
read from h11, the answers, and which container of which pod a stream is for (or the refusal a
user sees)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qs, unquote, urlsplit

import h11

from localcluster.simulator import remotecommand
from localcluster.simulator.kubeletpods import PodDirectory, PodEntry, simulated_message
from localcluster.simulator.remotecommand import StreamOptions

Kind = Literal["logs", "exec", "attach", "portforward", "healthz"]


@dataclass(frozen=True)
class Route:
    kind: Kind
    namespace: str = ""
    pod: str = ""
    container: str = ""
    uid: str = ""


class RouteError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


NOT_FOUND = "404 page not found"
_SEGMENTS: Mapping[str, tuple[Kind, tuple[str, ...], tuple[int, ...]]] = {
    # first segment → (kind, methods, accepted counts of the segments after it)
    "containerLogs": ("logs", ("GET",), (3,)),
    "exec": ("exec", ("GET", "POST"), (3, 4)),
    "attach": ("attach", ("GET", "POST"), (3, 4)),
    "portForward": ("portforward", ("GET", "POST"), (2, 3)),
}


def route(method: str, path: str) -> Route:
    """The handler a request path leads to, with its path parameters (kubelet's routes)."""
    if path == "/healthz":
        if method != "GET":
            raise RouteError(405, "405: Method Not Allowed")
        return Route("healthz")
    parts = [unquote(p) for p in path.split("/")[1:]]
    known = _SEGMENTS.get(parts[0]) if parts else None
    params = parts[1:]
    if known is None or len(params) not in known[2] or not all(params):
        raise RouteError(404, NOT_FOUND)
    kind, methods, _ = known
    if method not in methods:
        raise RouteError(405, "405: Method Not Allowed")
    if kind == "portforward":
        return Route(kind, params[0], params[1], uid=params[2] if len(params) == 3 else "")
    if len(params) == 4:
        return Route(kind, params[0], params[1], container=params[3], uid=params[2])
    return Route(kind, params[0], params[1], container=params[2])


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, list[str]]

    @classmethod
    def from_h11(cls, event: h11.Request) -> Request:
        target = urlsplit(event.target.decode("latin-1"))
        headers: dict[str, list[str]] = {}
        for name, value in event.headers:
            headers.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        return cls(
            method=event.method.decode("latin-1"),
            path=target.path,
            query=parse_qs(target.query, keep_blank_values=True),
            headers=headers,
        )

    def header(self, name: str) -> str:
        return ", ".join(self.headers.get(name.lower(), []))


@dataclass(frozen=True)
class Answer:
    """A complete (not streamed) HTTP answer."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"

    @classmethod
    def text(cls, status: int, message: str) -> Answer:
        return cls(status, message.encode())

    @classmethod
    def status_json(cls, status: remotecommand.Status) -> Answer:
        """streaming.WriteError: the metav1.Status as JSON, with its code."""
        return cls(status.get("code", 500), remotecommand.encode_status(status), "application/json")


class RefusalError(Exception):
    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.body.decode(errors="replace"))
        self.answer = answer


def stream_target(
    pods: PodDirectory, target: Route, options: StreamOptions | None
) -> tuple[PodEntry, int]:
    """The pod and the live process an exec or attach goes to, or the answer kubelet gives."""
    entry = pods.find_pod(target.namespace, target.pod)
    if entry is None:
        raise RefusalError(Answer.text(404, "pod does not exist"))
    if target.uid and target.uid != entry.uid:
        raise RefusalError(Answer.text(404, "pod not found"))
    if not entry.runs_for_real:
        what = "processes to exec into" if target.kind == "exec" else "processes to attach to"
        raise RefusalError(
            Answer.status_json(
                remotecommand.failure(400, "BadRequest", simulated_message(entry, what))
            )
        )
    container = entry.container(target.container)
    if container is None:
        raise RefusalError(
            Answer.status_json(
                remotecommand.internal_error(f'container not found ("{target.container}")')
            )
        )
    if container.pid is None or not container.started:
        state = "is not running" if container.pid is None else "is still starting"
        raise RefusalError(
            Answer.status_json(
                remotecommand.failure(
                    400,
                    "BadRequest",
                    f'container "{target.container}" in pod "{target.pod}" {state}',
                )
            )
        )
    if target.kind == "attach" and options is not None and (options.stdin or options.tty):
        # Containers run with their output captured to a file and no terminal or stdin pipe.
        asked = "a terminal (tty)" if options.tty else "stdin"
        raise RefusalError(
            Answer.status_json(
                remotecommand.failure(
                    400,
                    "BadRequest",
                    f"attach with {asked} is not supported on this node: container "
                    f'"{target.container}" runs without stdin or a terminal; attach to its '
                    "output only",
                )
            )
        )
    return entry, container.pid
