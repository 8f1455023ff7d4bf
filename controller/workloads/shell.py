"""The PodGroup controller's I/O: informers for Pods, ReplicaSets, StatefulSets and PodGroups, a
work queue keyed by `<kind>/<namespace>/<name>`, and the writes `plan` asks for. It runs inside
the `vcjob controller` process and acts only while that process holds the leader Lease."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from controller.keyworkers import KeyWorkers
from controller.objectstore import Informer, key_of
from controller.workloads.decide import (
    ANNOTATED_OWNER_KINDS,
    GROUP_NAME_ANNOTATION,
    PodGroupPlan,
    is_workload_group,
    needs_podgroup,
    plan_for_owner,
    plan_for_pod,
    podgroup_name,
)
from kubeio.client import PODGROUPS, PODS, Resource
from kubeio.errors import AlreadyExistsError, KubeError, NotFoundError
from kubeio.events import EventRecorder
from kubeio.informer import SharedWatches
from kubeio.kubelike import KubeLike
from shared import labels
from shared.wire import (
    WireObject,
    annotations_of,
    deletion_timestamp,
    namespace_of,
    owner_references,
)

log = logging.getLogger(__name__)

REPLICASETS: Final = Resource("apps", "v1", "replicasets", "ReplicaSet")
STATEFULSETS: Final = Resource("apps", "v1", "statefulsets", "StatefulSet")
DAEMONSETS: Final = Resource("apps", "v1", "daemonsets", "DaemonSet")
BATCH_JOBS: Final = Resource("batch", "v1", "jobs", "Job")
_OWNER_API: Final = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
}
CONTROLLER_NAME: Final = "pg-controller"
POD_KEY: Final = "Pod"


class PodGroupController(KeyWorkers):
    thread_prefix = "podgroup"

    def __init__(
        self,
        kube: KubeLike,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
        *,
        scheduler_names: Iterable[str] = ("volcano",),
        inherit_owner_annotations: bool = True,
        workers: int = 2,
        watches: SharedWatches | None = None,
    ) -> None:
        super().__init__(is_leader, workers, watches)
        self.kube = kube
        self.recorder = recorder
        self.scheduler_names = frozenset(scheduler_names)
        self.inherit = inherit_owner_annotations
        # The job controller's pods name their group and come from its own watch: not watching
        # them here halves the pod events the process decodes and keeps one copy of each pod.
        self.pods = self._informer(
            kube, PODS, self._on_pod, label_selector=f"!{labels.JOB_NAME_KEY}"
        )
        self.replicasets = self._informer(kube, REPLICASETS, self._on_owner)
        self.statefulsets = self._informer(kube, STATEFULSETS, self._on_owner)
        # Read for their annotations only.
        self.daemonsets = self._informer(kube, DAEMONSETS, _ignore)
        self.batch_jobs = self._informer(kube, BATCH_JOBS, _ignore)
        # Only the groups this controller names (`podgroup-<uid>`): not a copy of every Job's.
        self.podgroups = self._informer(kube, PODGROUPS, _ignore, keep=is_workload_group)
        self._owners = {
            "ReplicaSet": self.replicasets,
            "StatefulSet": self.statefulsets,
            "DaemonSet": self.daemonsets,
            "Job": self.batch_jobs,
        }

    # --- events -> keys --------------------------------------------------------------------

    def _on_pod(self, old: WireObject | None, new: WireObject | None) -> None:
        if new is not None and needs_podgroup(new, self.scheduler_names):
            self.queue.add(f"{POD_KEY}/{key_of(new)}")

    def _on_owner(self, old: WireObject | None, new: WireObject | None) -> None:
        if new is not None:
            self.queue.add(f"{new.get('kind')}/{key_of(new)}")

    # --- KeyWorkers ------------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        return [*self._owners.values(), self.pods, self.podgroups]

    def resync_keys(self) -> Iterable[str]:
        return [
            f"{POD_KEY}/{key_of(pod)}"
            for pod in self.pods.items()
            if needs_podgroup(pod, self.scheduler_names)
        ]

    def handle(self, key: str) -> float | None:
        kind, _, rest = key.partition("/")
        if kind == POD_KEY:
            pod = self.pods.get(rest)
            if pod is not None and needs_podgroup(pod, self.scheduler_names):
                self._sync_pod(pod, sync_existing=False)
            return None
        owners = self.replicasets if kind == "ReplicaSet" else self.statefulsets
        owner = owners.get(rest)
        if owner is None or deletion_timestamp(owner):
            return None
        plan = plan_for_owner(owner, self.pods.items(), self.scheduler_names)
        if plan.delete is not None:
            namespace = owner["metadata"]["namespace"]
            if self.podgroups.get(f"{namespace}/{plan.delete}") is not None:
                self.kube.delete(PODGROUPS, namespace, plan.delete)
                log.info(
                    "podgroup deleted: its owner has no replicas",
                    extra={"podgroup": f"{namespace}/{plan.delete}", "owner": key},
                )
        elif plan.pod is not None:
            self._sync_pod(plan.pod, sync_existing=True)
        return None

    def failed(self, key: str, exc: Exception) -> None:
        self.queue.add_rate_limited(key)
        if isinstance(exc, KubeError):
            log.warning("podgroup sync failed", extra={"key": key, "error": str(exc)})
        else:
            log.exception("podgroup sync crashed", extra={"key": key})

    # --- one sync --------------------------------------------------------------------------

    def _sync_pod(self, pod: Mapping[str, Any], *, sync_existing: bool) -> None:
        namespace = str(pod["metadata"]["namespace"])
        owner_annotations = self._owner_annotations(pod) if self.inherit else {}
        # A PodGroup the cache does not hold yet meets AlreadyExists on create, and is left so.
        existing = self.podgroups.get(f"{namespace}/{podgroup_name(pod)}")
        plan = plan_for_pod(
            pod, existing, owner_annotations, sync_existing=sync_existing, inherit=self.inherit
        )
        self._apply(pod, plan)

    def _apply(self, pod: Mapping[str, Any], plan: PodGroupPlan) -> None:
        namespace = str(pod["metadata"]["namespace"])
        where = f"{namespace}/{plan.name}"
        if plan.create is not None:
            try:
                self.podgroups.put(self.kube.create(PODGROUPS, namespace, plan.create))
                log.info("podgroup created", extra={"podgroup": where})
            except AlreadyExistsError:
                pass
        if plan.update is not None:
            self.podgroups.put(self.kube.replace(PODGROUPS, namespace, plan.update))
            log.info("podgroup updated", extra={"podgroup": where})
        if plan.annotate_pod:
            patch = {"metadata": {"annotations": {GROUP_NAME_ANNOTATION: plan.name}}}
            try:
                self.pods.put(
                    self.kube.merge_patch(PODS, namespace, pod["metadata"]["name"], patch)
                )
            except NotFoundError:
                return

    def _owner_annotations(self, pod: Mapping[str, Any]) -> dict[str, str]:
        """The annotations of the pod's owners (the first owner's value wins), as Volcano reads
        them (ReplicaSets, StatefulSets, DaemonSets and batch Jobs)."""
        out: dict[str, str] = {}
        namespace = namespace_of(pod)
        for ref in owner_references(pod):
            kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
            if kind not in ANNOTATED_OWNER_KINDS or ref.get("apiVersion") != _OWNER_API[kind]:
                continue
            owner = self._owners[kind].get(f"{namespace}/{name}")
            for key, value in annotations_of(owner).items():
                out.setdefault(str(key), str(value))
        return out


def _ignore(old: WireObject | None, new: WireObject | None) -> None:
    del old, new
