"""The Queue controller's I/O: informers for Queues, PodGroups and Commands, a work queue keyed
by queue name, and the status writes the state machine asks for. `OpenQueue`/`CloseQueue`
Commands addressed to a Queue (in any namespace) are deleted first, then carried out."""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, Final

from controller.keyworkers import KeyWorkers
from controller.objectstore import Informer
from controller.queues.decide import (
    CLOSED,
    CLOSED_BY_PARENT,
    DEFAULT_QUEUE,
    Action,
    Cascade,
    DefaultQueueSpec,
    QueueView,
    cascade,
    default_queue,
    next_state,
    podgroup_counts,
    queue_of_podgroup,
)
from kubeio.client import COMMANDS, PODGROUPS, Resource
from kubeio.errors import AlreadyExistsError, KubeError, NotFoundError
from kubeio.events import EventRecorder
from kubeio.informer import SharedWatches
from kubeio.kubelike import KubeLike
from shared import labels
from shared.objectkeys import object_key
from shared.wire import (
    WireObject,
    annotations_of,
    deletion_timestamp,
    metadata,
    name_of,
    spec_of,
    status_of,
)

log = logging.getLogger(__name__)

QUEUES: Final = Resource(
    labels.SCHEDULING_GROUP, labels.SCHEDULING_VERSION, "queues", labels.QUEUE_KIND, False
)
MAX_REQUEUES: Final = 15
# The work-queue key of "create the default Queue if it is missing".
ENSURE_DEFAULT_KEY: Final = "ensure-default-queue"


class QueueNotSeenYetError(Exception):
    """The API has the Queue a Command targets, the watch has not delivered it yet."""


# PodGroup changes reach a queue's status after this delay: a burst of new jobs is counted
# in one status write instead of one per PodGroup (the counts are a summary, not a decision).
PODGROUP_COALESCE_SECONDS: Final = 0.5


def queue_target(command: WireObject) -> str | None:
    """The queue a Command addresses, when its target is a scheduling.volcano.sh Queue."""
    target = command.get("target") or {}
    if (
        target.get("kind") == labels.QUEUE_KIND
        and str(target.get("apiVersion") or "").split("/")[0] == labels.SCHEDULING_GROUP
        and target.get("name")
    ):
        return str(target["name"])
    return None


class QueueController(KeyWorkers):
    thread_prefix = "queue"

    def __init__(
        self,
        kube: KubeLike,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
        *,
        workers: int = 1,
        default_queue: DefaultQueueSpec | None = None,
        watches: SharedWatches | None = None,
    ) -> None:
        super().__init__(is_leader, workers, watches)
        self.kube = kube
        self._default_queue = default_queue
        self.recorder = recorder
        self._lock = threading.Lock()
        self._actions: dict[str, list[str]] = defaultdict(list)
        self.queues = self._informer(kube, QUEUES, self._on_queue)
        self.podgroups = self._informer(kube, PODGROUPS, self._on_podgroup)
        self.commands = self._informer(kube, COMMANDS, self._on_command)

    # --- events -> keys --------------------------------------------------------------------

    def _on_queue(self, old: WireObject | None, new: WireObject | None) -> None:
        # The echo of a counts write changes nothing to sync: re-syncing on it would write the
        # counts again at once, past the coalescing delay, as long as PodGroups keep changing.
        if new is not None and (old is None or _sans_counts(old) != _sans_counts(new)):
            self.queue.add(str(new["metadata"]["name"]))

    def _on_podgroup(self, old: WireObject | None, new: WireObject | None) -> None:
        for group in {queue_of_podgroup(g) for g in (old, new) if g is not None}:
            self.queue.add_after(group, PODGROUP_COALESCE_SECONDS)

    def _on_command(self, old: WireObject | None, new: WireObject | None) -> None:
        if new is not None and queue_target(new) is not None:
            # Commands are handled by the workers (only the leader acts on them).
            self.queue.add(_command_key(new))

    # --- KeyWorkers ------------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        return [self.queues, self.podgroups, self.commands]

    def resync_keys(self) -> Iterable[str]:
        names = [str(queue["metadata"]["name"]) for queue in self.queues.items()]
        return [*names, ENSURE_DEFAULT_KEY] if self._default_queue is not None else names

    def start(self) -> None:
        super().start()
        if self._default_queue is not None:
            self.queue.add(ENSURE_DEFAULT_KEY)

    def watched(self) -> tuple[list[WireObject], list[WireObject]]:
        """The Queues and PodGroups as watched (for Volcano's queue metrics)."""
        return self.queues.items(), self.podgroups.items()

    def handle(self, key: str) -> float | None:
        if key == ENSURE_DEFAULT_KEY:
            self._ensure_default_queue()
        elif key.startswith(_COMMAND_PREFIX):
            self._take_command(key)
        else:
            self.sync(key)
        return None

    def failed(self, key: str, exc: Exception) -> None:
        failures = self.queue.num_requeues(key) + 1
        if failures <= MAX_REQUEUES:
            log.warning("queue sync failed", extra={"queue": key, "error": str(exc)})
            self.queue.add_rate_limited(key)
            return
        self.queue.forget(key)
        with self._lock:
            actions = self._actions.pop(key, [])
        queue = self.queues.get(key)
        for action in actions:
            if queue is not None:
                self.recorder.record(queue, "Warning", action, f"{action} queue failed for {exc}")
        log.error("queue request dropped", extra={"queue": key, "error": str(exc)})

    def _ensure_default_queue(self) -> None:
        """Create `default` when the synced cache has none; one that exists is left as it is."""
        if self._default_queue is None or self.queues.get(DEFAULT_QUEUE) is not None:
            return
        try:
            self.kube.create(QUEUES, None, default_queue(self._default_queue))
        except AlreadyExistsError:
            return
        log.info("default queue created", extra={"queue": DEFAULT_QUEUE})

    # --- commands --------------------------------------------------------------------------

    def _take_command(self, key: str) -> None:
        namespace, name = key[len(_COMMAND_PREFIX) :].split("/", 1)
        command = self.commands.get(f"{namespace}/{name}")
        if command is None:
            return
        target = queue_target(command)
        if target is None:
            return
        # Only the delete that removes the Command carries it out: another instance (an old
        # leader) may have taken it already.
        try:
            self.kube.delete(
                COMMANDS,
                namespace,
                name,
                uid=metadata(command).get("uid"),
                missing_ok=False,
            )
        except NotFoundError:
            return
        with self._lock:
            self._actions[target].append(str(command.get("action") or ""))
        self.queue.add(target)

    # --- one sync --------------------------------------------------------------------------

    def sync(self, name: str) -> None:
        queue = self.queues.get(name)
        if queue is None:
            with self._lock:
                waiting = bool(self._actions.get(name))
            if waiting and self.kube.get_or_none(QUEUES, None, name) is not None:
                # A Command for a Queue created a moment ago can come before the Queue's own
                # watch event: keep its action for the retry instead of dropping it.
                raise QueueNotSeenYetError(f"queue {name} is not in the cache yet")
        if queue is None or deletion_timestamp(queue):
            with self._lock:
                self._actions.pop(name, None)
            return
        with self._lock:
            actions = list(self._actions.get(name, []))
        groups = [g for g in self.podgroups.items() if queue_of_podgroup(g) == name]
        parent_name = spec_of(queue).get("parent")
        parent = self.queues.get(str(parent_name)) if parent_name else None
        parent_state = status_of(parent).get("state") if parent else None
        state = status_of(queue).get("state")
        applied = 0
        follow: list[Cascade] = []
        try:
            for text in [*actions, Action.SYNC.value]:
                action = Action.of(text)
                transition = next_state(name, state, action, len(groups), parent_state)
                if action is not Action.SYNC and transition.applied:
                    verb = "Open" if action is Action.OPEN else "Close"
                    self.recorder.record(queue, "Normal", action.value, f"{verb} queue succeed")
                state = transition.state
                applied = min(applied + 1, len(actions))
                if transition.applied:
                    follow += cascade(
                        _view(queue), state, action, parent_state, self._children(name)
                    )
        finally:
            # Carried-out actions are forgotten; a refused one stays for the retry.
            with self._lock:
                del self._actions[name][:applied]
                if not self._actions[name]:
                    self._actions.pop(name, None)
            self._write(queue, state, groups)
        self._follow(follow)

    def _children(self, name: str) -> list[QueueView]:
        return [_view(q) for q in self.queues.items() if spec_of(q).get("parent") == name]

    def _follow(self, requests: list[Cascade]) -> None:
        """Mark queues closed (or no longer closed) by their parent, then queue their requests."""
        done: set[tuple[str, Action]] = set()
        for request in requests:
            if (request.queue, request.action) in done:
                continue
            done.add((request.queue, request.action))
            if request.mark is not None:
                value = "true" if request.mark else "false"
                patch = {"metadata": {"annotations": {CLOSED_BY_PARENT: value}}}
                try:
                    self.queues.put(self.kube.merge_patch(QUEUES, None, request.queue, patch))
                except NotFoundError:
                    continue
            if request.action is not Action.SYNC:
                with self._lock:
                    self._actions[request.queue].append(request.action.value)
                self.queue.add(request.queue)

    def _write(self, queue: WireObject, state: str | None, groups: list[WireObject]) -> None:
        wanted: dict[str, Any] = {"state": state or None, **podgroup_counts(groups)}
        current = status_of(queue)
        if all(current.get(k, 0 if k != "state" else None) == v for k, v in wanted.items()):
            return
        try:
            written = self.kube.merge_patch(
                QUEUES, None, queue["metadata"]["name"], {"status": wanted}, sub="status"
            )
        except NotFoundError:
            return
        except KubeError as exc:
            verb = "CloseQueue" if state == CLOSED else "OpenQueue"
            self.recorder.record(queue, "Warning", verb, f"status not written: {exc}")
            raise
        self.queues.put(written)


_COMMAND_PREFIX: Final = "command:"
_COUNTS: Final = frozenset(podgroup_counts([]))


def _sans_counts(queue: WireObject) -> WireObject:
    """A Queue without its PodGroup counts and the metadata every write changes."""
    meta = {
        k: v for k, v in metadata(queue).items() if k not in ("resourceVersion", "managedFields")
    }
    status = {k: v for k, v in status_of(queue).items() if k not in _COUNTS}
    return {**queue, "metadata": meta, "status": status}


def _view(queue: WireObject) -> QueueView:
    return QueueView(
        name=name_of(queue),
        state=status_of(queue).get("state"),
        closed_by_parent=str(annotations_of(queue).get(CLOSED_BY_PARENT, "")).lower() == "true",
    )


def _command_key(command: WireObject) -> str:
    return _COMMAND_PREFIX + object_key(command)
