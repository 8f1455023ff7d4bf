"""Build the planner's `Observed` from one job's slice of the cache (no API calls here)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from controller.job.decide.model import Observed, PodEdge
from controller.job.shell.cache import JobView
from shared.wire import WireObject, job_state, owner_references, spec_of, status_phase, uid_of


def _owned_by_other_job(obj: WireObject, job_uid: str) -> bool:
    """True for objects controlled by an earlier Job of the same name (awaiting the GC)."""
    for ref in owner_references(obj):
        if ref.get("kind") == "Job" and ref.get("uid") and ref.get("uid") != job_uid:
            return True
    return False


def _controlled_by(obj: WireObject, job_uid: str) -> bool:
    return any(
        ref.get("kind") == "Job" and ref.get("uid") == job_uid and ref.get("controller")
        for ref in owner_references(obj)
    )


def referenced_pvc_names(job: WireObject) -> list[str]:
    volumes = spec_of(job).get("volumes") or []
    return [str(v["volumeClaimName"]) for v in volumes if v.get("volumeClaimName")]


def build_observed(
    view: JobView,
    *,
    now: datetime,
    edges: Iterable[PodEdge] = (),
    memory: dict[str, Any] | None = None,
    priority_values: dict[str, int] | None = None,
    looked_up_pvcs: dict[str, WireObject | None] | None = None,
    resource_flavors: dict[str, WireObject] | None = None,
    prebuilt_workload: WireObject | None = None,
) -> Observed | None:
    """None when the job is not in the cache. `looked_up_pvcs` maps referenced PVC names that
    are not in the cache to what a direct read found (None: it does not exist).
    `prebuilt_workload`: the Workload the job's prebuilt-workload label names, as cached."""
    job = view.job
    if job is None:
        return None
    job_uid = uid_of(job)
    job_name = str(job["metadata"]["name"])
    pods = [p for p in view.pods if not _owned_by_other_job(p, job_uid)]
    groups = [g for g in view.pod_groups if not _owned_by_other_job(g, job_uid)]
    expected_group = f"{job_name}-{job_uid}"
    pod_group = next(
        (g for g in groups if g["metadata"].get("name") == expected_group),
        groups[0] if groups else None,
    )
    native_pod_groups = [g for g in view.native_pod_groups if _controlled_by(g, job_uid)]
    native_composite = next(
        (g for g in view.composite_pod_groups if _controlled_by(g, job_uid)),
        None,
    )
    children: dict[tuple[str, str], WireObject] = {}
    for child in view.children:
        if _owned_by_other_job(child, job_uid):
            continue
        children[(str(child.get("kind")), str(child["metadata"]["name"]))] = child
    missing: set[str] = set()
    for name, found in (looked_up_pvcs or {}).items():
        if found is None:
            missing.add(name)
        else:
            children[("PersistentVolumeClaim", name)] = found
    live_uids = {uid_of(p) for p in pods}
    pod_edges = [e for e in edges if uid_of(e.pod) not in live_uids or not uid_of(e.pod)]
    workload = next(
        (w for w in view.workloads if _controlled_by(w, job_uid)),
        None,
    )
    # A prebuilt Workload not adopted yet (no owner), or ours: another job's is not taken over.
    if (
        workload is None
        and prebuilt_workload is not None
        and not _owned_by_other_job(prebuilt_workload, job_uid)
    ):
        workload = prebuilt_workload
    # Commands are handed over as they are: the planner checks the target UID itself.
    commands = list(view.commands)
    return Observed(
        job=job,
        pods=pods,
        now=now,
        pod_group=pod_group,
        native_pod_groups=native_pod_groups,
        native_composite_pod_group=native_composite,
        commands=commands,
        children=children,
        missing_pvcs=frozenset(missing),
        pod_edges=pod_edges,
        memory=memory,
        priority_values=dict(priority_values or {}),
        workload=workload,
        resource_flavors=dict(resource_flavors or {}),
    )


def pvcs_to_look_up(job: WireObject, view: JobView) -> list[str]:
    """Referenced PVC names the cache does not hold (user-made PVCs carry no job label)."""
    cached = {
        str(c["metadata"]["name"])
        for c in view.children
        if c.get("kind") == "PersistentVolumeClaim"
    }
    return [name for name in referenced_pvc_names(job) if name not in cached]


def waits_for_admission(job: WireObject, pod_group: WireObject | None) -> bool:
    """A Pending job whose PodGroup is not admitted yet: its Queue is read so that a closed or
    missing one is named as the cause."""
    return job_state(job).get("phase") == "Pending" and status_phase(pod_group) in ("", "Pending")
