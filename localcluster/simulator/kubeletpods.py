"""What the node agent's kubelet API knows of the node's pods: an entry per pod (its containers,
its folder on the node, whether it runs for real), found through the node agent's caches, and
the answer a simulated pod gives when asked for logs, a shell or a port."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

RUN_IMAGE_HINT = "only pods whose every image `vcjob local up --run-image` maps run for real"


@dataclass(frozen=True)
class ContainerEntry:
    name: str
    restart_count: int
    # The process of the container's current run while it runs (the container's PID 1).
    pid: int | None = None
    # The process runs the container's own command: its namespaces, root and hostname are set.
    started: bool = False


@dataclass(frozen=True)
class PodEntry:
    namespace: str
    name: str
    uid: str
    node_name: str
    runs_for_real: bool
    # PODS_DIR/NAMESPACE_NAME_UID: the pod's volumes and `logs/CONTAINER/RESTART.log`.
    folder: Path | None = None
    containers: tuple[ContainerEntry, ...] = ()  # init containers too
    # The network namespace of the pod's sandbox while it runs (/proc/PID/ns/net).
    netns: str | None = None

    def container(self, name: str) -> ContainerEntry | None:
        return next((c for c in self.containers if c.name == name), None)

    def log_file(self, container: str, run: int) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / "logs" / container / f"{run}.log"


class PodDirectory(Protocol):
    """The pods of this node, as the kubelet API sees them."""

    def find_pod(self, namespace: str, name: str) -> PodEntry | None: ...


class RealPods(Protocol):
    """The process runtime's side (ProcessRuntime): the pods it runs, and which ones it would."""

    def find_pod(self, namespace: str, name: str) -> PodEntry | None: ...

    def handles(self, pod: Mapping[str, Any]) -> bool: ...


PodLookup = Callable[[str, str], Mapping[str, Any] | None]


def simulated_entry(pod: Mapping[str, Any], runs_for_real: bool) -> PodEntry:
    """A bound pod as its spec and status tell it (no process, folder or sandbox)."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    restarts = {
        str(s.get("name")): int(s.get("restartCount") or 0)
        for s in [
            *(status.get("initContainerStatuses") or []),
            *(status.get("containerStatuses") or []),
        ]
    }
    names = [
        str(c.get("name"))
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    ]
    return PodEntry(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        uid=str(metadata.get("uid", "")),
        node_name=str(spec.get("nodeName") or ""),
        runs_for_real=runs_for_real,
        containers=tuple(ContainerEntry(n, restarts.get(n, 0)) for n in names),
    )


class NodePods:
    """The pods of a node agent: those its process runtime runs, then the other pods bound to the
    node (`node_name`, or any node when None) that `lookup` (the agent's pod informer) knows."""

    def __init__(
        self, lookup: PodLookup, runtime: RealPods | None = None, node_name: str | None = None
    ) -> None:
        self._lookup = lookup
        self._runtime = runtime
        self._node_name = node_name

    def _on_this_node(self, node: str) -> bool:
        return bool(node) and (self._node_name is None or node == self._node_name)

    def find_pod(self, namespace: str, name: str) -> PodEntry | None:
        if self._runtime is not None:
            running = self._runtime.find_pod(namespace, name)
            if running is not None and self._on_this_node(running.node_name):
                return running
        pod = self._lookup(namespace, name)
        if pod is None:
            return None
        handled = self._runtime is not None and self._runtime.handles(pod)
        entry = simulated_entry(pod, runs_for_real=handled)
        return entry if self._on_this_node(entry.node_name) else None


def simulated_message(entry: PodEntry, what: str) -> str:
    return (
        f"pod {entry.namespace}/{entry.name} is simulated: no container runtime runs it on node "
        f"{entry.node_name}, so it has no {what} ({RUN_IMAGE_HINT})"
    )
