"""`GET …/pods/NAME/log` (`kubectl logs`): the output the simulated kubelet captured for a pod
that really runs, one file per container run under `PODS_DIR/NAMESPACE_NAME_UID/logs/CONTAINER/`
(`N.log` for restart N). `container`, `previous`, `tailLines`, `limitBytes` and `follow` work
as in kube-apiserver; a simulated pod has no log (404, saying why)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from localcluster.apiserver import errors
from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.storage import Store

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]

FOLLOW_POLL = 0.2
RUNTIME_PREFIX = "vcjob://"  # the containerID of a container the process runtime started
TEXT_HEADERS = [(b"content-type", b"text/plain"), (b"cache-control", b"no-cache, private")]


def is_log_request(attrs: Attributes) -> bool:
    return (
        attrs.resource_request
        and attrs.api_group == ""
        and attrs.resource == "pods"
        and attrs.subresource == "log"
        and attrs.verb == "get"
    )


def pick_container(pod: Mapping[str, Any], asked: str) -> str:
    name = str((pod.get("metadata") or {}).get("name", ""))
    spec = pod.get("spec") or {}
    names = [str(c.get("name")) for c in spec.get("containers") or []]
    init_names = [str(c.get("name")) for c in spec.get("initContainers") or []]
    if asked:
        if asked not in names + init_names:
            raise errors.bad_request(f"container {asked} is not valid for pod {name}")
        return asked
    if len(names) == 1:
        return names[0]
    raise errors.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
    )


def run_files(directory: Path) -> list[Path]:
    """The container's log files, oldest run first."""
    if not directory.is_dir():
        return []
    files = [p for p in directory.glob("*.log") if p.stem.isdigit()]
    return sorted(files, key=lambda p: int(p.stem))


def tail(data: bytes, lines: int | None, limit: int | None) -> bytes:
    if lines is not None:
        kept = data.splitlines(keepends=True)
        data = b"".join(kept[-lines:]) if lines > 0 else b""
    if limit is not None:
        data = data[:limit]
    return data


def _int(query: Mapping[str, str], key: str) -> int | None:
    raw = query.get(key)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise errors.bad_request(f'invalid {key} "{raw}"') from exc
    if value < 0:
        raise errors.bad_request(f"{key} must be non-negative")
    return value


def _no_log(pod: Mapping[str, Any], container: str, runtime: bool) -> errors.StatusError:
    name = str((pod.get("metadata") or {}).get("name", ""))
    status = pod.get("status") or {}
    entries = (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    runtime_pod = any(str(e.get("containerID", "")).startswith(RUNTIME_PREFIX) for e in entries)
    if runtime and (runtime_pod or not entries):
        waiting = next(
            (e.get("state", {}).get("waiting") for e in entries if e.get("name") == container), None
        )
        reason = (waiting or {}).get("reason", "ContainerCreating")
        return errors.bad_request(
            f'container "{container}" in pod "{name}" is waiting to start: {reason}'
        )
    return errors.StatusError(
        404,
        "NotFound",
        f"pods/log is not supported for pod {name}: it is simulated (no container runtime ran "
        "it; `vcjob local up --run-image` maps the images that run for real)",
    )


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read()
    except OSError:
        return b""


def _run_ended(pod: Mapping[str, Any], container: str, run: int) -> bool:
    """The container's run `run` has terminated, as the pod's status says."""
    status = pod.get("status") or {}
    for entry in (status.get("containerStatuses") or []) + (
        status.get("initContainerStatuses") or []
    ):
        if entry.get("name") == container and int(entry.get("restartCount") or 0) == run:
            return "terminated" in (entry.get("state") or {})
    return False


class PodLogs:
    def __init__(self, store: Store, pods_dir: Path | None) -> None:
        self.store = store
        self.pods_dir = pods_dir

    def _pod(self, attrs: Attributes) -> dict[str, Any]:
        pod = self.store.get(("", "pods"), attrs.namespace, attrs.name)
        if pod is None:
            raise errors.not_found("pods", attrs.name)
        return pod

    def _directory(self, pod: Mapping[str, Any], container: str) -> Path | None:
        if self.pods_dir is None:
            return None
        metadata = pod.get("metadata") or {}
        folder = f"{metadata.get('namespace')}_{metadata.get('name')}_{metadata.get('uid')}"
        return self.pods_dir / folder / "logs" / container

    async def serve(
        self, attrs: Attributes, query: Mapping[str, str], receive: Receive, send: Send
    ) -> None:
        pod = self._pod(attrs)
        container = pick_container(pod, query.get("container", ""))
        previous = query.get("previous", "").lower() in ("true", "1")
        follow = query.get("follow", "").lower() in ("true", "1") and not previous
        lines, limit = _int(query, "tailLines"), _int(query, "limitBytes")
        directory = self._directory(pod, container)
        files = run_files(directory) if directory is not None else []
        if previous:
            if len(files) < 2:
                raise errors.bad_request(
                    f'previous terminated container "{container}" in pod "{attrs.name}" not found'
                )
            chosen: Path | None = files[-2]
        elif files:
            chosen = files[-1]
        else:
            raise _no_log(pod, container, self.pods_dir is not None)
        data = chosen.read_bytes() if chosen is not None else b""
        await send({"type": "http.response.start", "status": 200, "headers": TEXT_HEADERS})
        await send(
            {"type": "http.response.body", "body": tail(data, lines, limit), "more_body": follow}
        )
        if not follow or chosen is None:
            if follow:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await self._follow(attrs, chosen, len(data), receive, send)

    async def _follow(
        self, attrs: Attributes, path: Path, offset: int, receive: Receive, send: Send
    ) -> None:
        disconnected = asyncio.Event()

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            disconnected.set()

        watcher = asyncio.create_task(watch_disconnect())
        uid = (self._pod(attrs).get("metadata") or {}).get("uid")
        try:
            while not disconnected.is_set():
                chunk = _read_from(path, offset)
                if chunk:
                    offset += len(chunk)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    continue
                pod = self.store.get(("", "pods"), attrs.namespace, attrs.name)
                newer = [p for p in run_files(path.parent) if int(p.stem) > int(path.stem)]
                if pod is None or (pod.get("metadata") or {}).get("uid") != uid or newer:
                    break
                if _run_ended(pod, path.parent.name, int(path.stem)):
                    break
                await asyncio.sleep(FOLLOW_POLL)
        finally:
            watcher.cancel()
        if not disconnected.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
