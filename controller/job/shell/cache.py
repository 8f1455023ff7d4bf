"""The controller's in-memory view of the cluster, fed by the watches and by its own writes.

Objects are indexed by the job they belong to (`namespace/name`), so observing one job never
scans the whole cluster. The cache is read-your-writes: an object returned by one of our own
writes is stored at once when its resourceVersion is newer than what the watch delivered.
Pod deletions seen on the watch are kept as `PodEdge`s until the job's next reconcile takes them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from controller.job.decide.model import PodEdge
from kubeio.managedfields import drop_field_sets
from shared import objectkeys
from shared.labels import DEFAULT_QUEUE, JOB_NAME_KEY, OUT_OF_SYNC_KEY
from shared.objectkeys import object_key
from shared.wire import (
    WireObject,
    annotations_of,
    labels_of,
    metadata,
    namespace_of,
    owner_references,
    spec_of,
    uid_of,
)

JOB = "Job"
POD = "Pod"
PODGROUP = "PodGroup"
COMMAND = "Command"
PRIORITY_CLASS = "PriorityClass"
WORKLOAD = "Workload"
RESOURCE_FLAVOR = "ResourceFlavor"
QUEUE = "Queue"
# Kubernetes' own PodGroup (scheduling.k8s.io), filed apart from Volcano's, and its
# CompositePodGroup.
NATIVE_PODGROUP = "NativePodGroup"
COMPOSITE_PODGROUP = "CompositePodGroup"
CHILD_KINDS = frozenset(
    {"Service", "ConfigMap", "Secret", "NetworkPolicy", "PersistentVolumeClaim"}
)
KINDS = (
    frozenset(
        {
            JOB,
            POD,
            PODGROUP,
            NATIVE_PODGROUP,
            COMPOSITE_PODGROUP,
            COMMAND,
            PRIORITY_CLASS,
            WORKLOAD,
            RESOURCE_FLAVOR,
            QUEUE,
        }
    )
    | CHILD_KINDS
)

# What the cache keeps of a pod's spec. Nothing the controller decides reads more: the pods it
# creates are built from the Job's templates, never from a cached pod, while the rest (containers,
# volumes, tolerations and the API server's defaults) is about half of a decoded pod's memory.
POD_SPEC_KEPT = frozenset(
    {
        "nodeName",
        "schedulerName",
        "priority",
        "priorityClassName",
        "restartPolicy",
        "schedulingGroup",
    }
)

# Kinds that belong to no Job.
CLUSTER_SCOPED_KINDS = frozenset({PRIORITY_CLASS, RESOURCE_FLAVOR, QUEUE})

# Edges kept per job at most; a job that is never reconciled must not grow memory forever.
MAX_EDGES_PER_JOB = 10_000
MAX_TOMBSTONES = 50_000


def _rv(obj: WireObject) -> int | None:
    text = metadata(obj).get("resourceVersion")
    if isinstance(text, str) and text.isdigit():
        return int(text)
    return None


def _same_version(a: WireObject, b: WireObject) -> bool:
    version = _rv(a)
    return version is not None and version == _rv(b)


def is_newer(candidate: WireObject, current: WireObject | None) -> bool:
    """Whether `candidate` should replace `current` (opaque versions always replace)."""
    if current is None:
        return True
    new, old = _rv(candidate), _rv(current)
    if new is None or old is None:
        return True
    return new >= old


def job_key_of(kind: str, obj: WireObject) -> str | None:
    """The `namespace/name` of the Job an object belongs to, or None."""
    namespace = namespace_of(obj)
    if kind == JOB:
        return object_key(obj)
    if kind in CLUSTER_SCOPED_KINDS:
        return None
    if kind == COMMAND:
        target = obj.get("target") or {}
        if target.get("kind") == JOB and target.get("name"):
            return f"{namespace}/{target['name']}"
    if kind in (COMMAND, PODGROUP, NATIVE_PODGROUP, COMPOSITE_PODGROUP, WORKLOAD):
        for ref in owner_references(obj):
            if ref.get("kind") == JOB and ref.get("name"):
                return f"{namespace}/{ref['name']}"
        return None
    job_name = labels_of(obj).get(JOB_NAME_KEY)
    if job_name:
        return f"{namespace}/{job_name}"
    return None


def slim_pod(pod: WireObject) -> WireObject:
    """The pod as the cache keeps it: its spec cut to `POD_SPEC_KEPT` (in place: the object is
    fresh from a decode or a write). Returns it."""
    spec = pod.get("spec")
    if isinstance(spec, dict) and not spec.keys() <= POD_SPEC_KEPT:
        pod["spec"] = {k: v for k, v in spec.items() if k in POD_SPEC_KEPT}
    return pod


def deleted_by_controller(pod: WireObject) -> bool:
    return str(annotations_of(pod).get(OUT_OF_SYNC_KEY, "")).lower() == "true"


@dataclass
class JobView:
    """One job's slice of the cache (shared objects: readers must not mutate them)."""

    job: WireObject | None
    pods: list[WireObject] = field(default_factory=list)
    pod_groups: list[WireObject] = field(default_factory=list)
    commands: list[WireObject] = field(default_factory=list)
    children: list[WireObject] = field(default_factory=list)
    workloads: list[WireObject] = field(default_factory=list)
    native_pod_groups: list[WireObject] = field(default_factory=list)
    composite_pod_groups: list[WireObject] = field(default_factory=list)

    def objects(self) -> Iterator[WireObject]:
        """The Job and everything of it the view holds."""
        if self.job is not None:
            yield self.job
        for group in (
            self.pods,
            self.pod_groups,
            self.commands,
            self.children,
            self.workloads,
            self.native_pod_groups,
            self.composite_pod_groups,
        ):
            yield from group


# The kinds every Job's reconcile reads whole (a PriorityClass's value, a flavor's taints).
CLUSTER_WIDE_KINDS = frozenset({PRIORITY_CLASS, RESOURCE_FLAVOR})


class Cache:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._objects: dict[str, dict[str, WireObject]] = {kind: {} for kind in KINDS}
        # kind -> job key -> object keys
        self._by_job: dict[str, dict[str, set[str]]] = {kind: defaultdict(set) for kind in KINDS}
        self._edges: dict[str, list[PodEdge]] = defaultdict(list)
        # UIDs seen deleted: a late copy of a deleted object (say, what one of our own writes
        # returned while the watch already delivered the deletion) must not bring it back.
        self._deleted_uids: OrderedDict[str, None] = OrderedDict()
        # Bumped on every change of a cluster-wide kind.
        self._cluster_wide_generation = 0

    # --- writes from watches -----------------------------------------------------------------

    def upsert(self, kind: str, obj: WireObject) -> str | None:
        """Store an object if it is newer than what we hold; returns its job key, or None when
        nothing changed (the watch echoing what one of our own writes already stored), so such
        echoes do not trigger another reconcile."""
        key = object_key(obj)
        with self._lock:
            store = self._objects[kind]
            current = store.get(key)
            job_key = job_key_of(kind, obj)
            if not is_newer(obj, current) or uid_of(obj) in self._deleted_uids:
                return None
            if current is not None and _same_version(obj, current):
                return None
            if kind == POD:
                slim_pod(obj)
            if current is not None:
                old_job = job_key_of(kind, current)
                if old_job is not None and old_job != job_key:
                    self._by_job[kind][old_job].discard(key)
            store[key] = obj
            if kind in CLUSTER_WIDE_KINDS:
                self._cluster_wide_generation += 1
            if job_key is not None and kind != JOB:
                self._by_job[kind][job_key].add(key)
            return job_key

    def remove(self, kind: str, obj: WireObject) -> str | None:
        """Forget an object; a pod's disappearance is recorded as an edge for its job."""
        key = object_key(obj)
        with self._lock:
            current = self._objects[kind].pop(key, None)
            if kind in CLUSTER_WIDE_KINDS and current is not None:
                self._cluster_wide_generation += 1
            last = current if current is not None else obj
            uid = uid_of(obj)
            if uid:
                self._deleted_uids[uid] = None
                while len(self._deleted_uids) > MAX_TOMBSTONES:
                    self._deleted_uids.popitem(last=False)
            job_key = job_key_of(kind, last)
            if job_key is None:
                return None
            if kind != JOB:
                self._by_job[kind][job_key].discard(key)
                if not self._by_job[kind][job_key]:
                    del self._by_job[kind][job_key]
            else:
                self._edges.pop(job_key, None)
            if kind == POD and current is not None and job_key in self._objects[JOB]:
                # The watch may show the deletion without the annotation we set just before.
                by_us = deleted_by_controller(obj) or deleted_by_controller(current)
                edges = self._edges[job_key]
                if len(edges) < MAX_EDGES_PER_JOB:
                    edges.append(PodEdge(kind="deleted", pod=last, by_controller=by_us))
            return job_key

    def replace_all(self, kind: str, items: Iterable[WireObject]) -> set[str]:
        """A fresh list: store every item, remove what vanished; returns the job keys touched."""
        touched: set[str] = set()
        with self._lock:
            fresh = {object_key(item): item for item in items}
            for key, old in list(self._objects[kind].items()):
                if key not in fresh:
                    job_key = self.remove(kind, old)
                    if job_key:
                        touched.add(job_key)
            for item in fresh.values():
                job_key = self.upsert(kind, item)
                if job_key:
                    touched.add(job_key)
        return touched

    # --- writes from our own API calls -------------------------------------------------------

    def store_written(self, kind: str, obj: WireObject) -> None:
        """Read-your-writes: keep the object a write returned if it is at least as new."""
        if kind in KINDS and obj.get("metadata"):
            self.upsert(kind, drop_field_sets(obj))

    def forget_deleted(self, kind: str, namespace: str, name: str) -> None:
        """Read-your-deletes: an object our own DELETE removed is gone before the watch says so,
        so the next reconcile cannot act on it again (a Command executed twice)."""
        with self._lock:
            current = self._objects[kind].get(objectkeys.key(namespace, name))
            if current is not None:
                self.remove(kind, current)

    # --- reads -------------------------------------------------------------------------------

    def job(self, key: str) -> WireObject | None:
        with self._lock:
            return self._objects[JOB].get(key)

    def jobs(self) -> list[WireObject]:
        """Every Job held (shared objects: readers must not mutate them)."""
        with self._lock:
            return list(self._objects[JOB].values())

    def job_keys(self) -> list[str]:
        with self._lock:
            return list(self._objects[JOB])

    def view(self, job_key: str) -> JobView:
        with self._lock:
            view = JobView(job=self._objects[JOB].get(job_key))
            for kind, target in (
                (POD, view.pods),
                (PODGROUP, view.pod_groups),
                (COMMAND, view.commands),
                (WORKLOAD, view.workloads),
                (NATIVE_PODGROUP, view.native_pod_groups),
                (COMPOSITE_PODGROUP, view.composite_pod_groups),
            ):
                store = self._objects[kind]
                target.extend(store[k] for k in self._by_job[kind].get(job_key, ()))
            for kind in CHILD_KINDS:
                store = self._objects[kind]
                view.children.extend(store[k] for k in self._by_job[kind].get(job_key, ()))
            return view

    def queues(self) -> list[WireObject]:
        with self._lock:
            return list(self._objects[QUEUE].values())

    def jobs_in_queue(self, queue: str) -> list[str]:
        """The keys of the Jobs submitted to `queue` (`default` when they name none)."""
        with self._lock:
            return [
                key
                for key, job in self._objects[JOB].items()
                if (spec_of(job).get("queue") or DEFAULT_QUEUE) == queue
            ]

    def cluster_wide_generation(self) -> int:
        """Changes with every PriorityClass or ResourceFlavor stored or removed."""
        with self._lock:
            return self._cluster_wide_generation

    def get(self, kind: str, key: str) -> WireObject | None:
        with self._lock:
            return self._objects[kind].get(key)

    def priority_values(self) -> dict[str, int]:
        with self._lock:
            return {
                str(obj["metadata"]["name"]): int(obj.get("value") or 0)
                for obj in self._objects[PRIORITY_CLASS].values()
            }

    def resource_flavors(self) -> dict[str, WireObject]:
        """Kueue's ResourceFlavors by name (shared objects: readers must not mutate them)."""
        with self._lock:
            return {
                str(obj["metadata"]["name"]): obj for obj in self._objects[RESOURCE_FLAVOR].values()
            }

    def count(self, kind: str) -> int:
        with self._lock:
            return len(self._objects[kind])

    # --- pod edges ---------------------------------------------------------------------------

    def take_edges(self, job_key: str) -> list[PodEdge]:
        with self._lock:
            return self._edges.pop(job_key, [])

    def return_edges(self, job_key: str, edges: list[PodEdge]) -> None:
        """Give back edges a failed reconcile took, ahead of any that arrived meanwhile."""
        if not edges:
            return
        with self._lock:
            self._edges[job_key] = edges + self._edges.get(job_key, [])
