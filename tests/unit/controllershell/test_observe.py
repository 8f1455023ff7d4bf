"""The cache's job index and `observe` building `Observed`, pod edges first."""

from __future__ import annotations

from typing import Any

from controller.job.shell.cache import Cache
from controller.job.shell.observe import build_observed, pvcs_to_look_up
from kubeio.clock import ManualClock

JOB_UID = "uid-1"


def job(name: str = "j", uid: str = JOB_UID, rv: str = "1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv},
        "spec": spec,
    }


def pod(
    name: str,
    *,
    job_name: str = "j",
    owner_uid: str = JOB_UID,
    rv: str = "2",
    out_of_sync: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"pod-{name}-{rv}",
        "resourceVersion": rv,
        "labels": {"volcano.sh/job-name": job_name},
        "ownerReferences": [
            {"kind": "Job", "name": job_name, "uid": owner_uid, "controller": True}
        ],
    }
    if out_of_sync:
        meta["annotations"] = {"volcano.sh/controller-out-of-sync": "true"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": {"phase": "Running"}}


def cached(*pods: dict[str, Any]) -> Cache:
    cache = Cache()
    cache.upsert("Job", job())
    for p in pods:
        cache.upsert("Pod", p)
    return cache


def test_pods_are_indexed_by_their_job() -> None:
    cache = cached(pod("j-w-0"), pod("j-w-1"), pod("k-w-0", job_name="k"))
    assert sorted(p["metadata"]["name"] for p in cache.view("ns/j").pods) == ["j-w-0", "j-w-1"]


def test_a_pod_deleted_by_someone_else_becomes_an_edge_not_by_the_controller() -> None:
    cache = cached(pod("j-w-0"))
    assert cache.remove("Pod", pod("j-w-0", rv="3")) == "ns/j"
    [edge] = cache.take_edges("ns/j")
    assert edge.kind == "deleted"
    assert not edge.by_controller
    assert edge.pod["metadata"]["name"] == "j-w-0"
    assert cache.take_edges("ns/j") == [], "an edge is handed out once"


def test_a_pod_the_controller_annotated_before_deleting_is_marked_as_ours() -> None:
    cache = cached(pod("j-w-0"))
    cache.upsert("Pod", pod("j-w-0", rv="3", out_of_sync=True))
    cache.remove("Pod", pod("j-w-0", rv="4"))
    [edge] = cache.take_edges("ns/j")
    assert edge.by_controller


def test_annotation_seen_only_on_the_delete_event_still_counts() -> None:
    cache = cached(pod("j-w-0"))
    cache.remove("Pod", pod("j-w-0", rv="4", out_of_sync=True))
    assert cache.take_edges("ns/j")[0].by_controller


def test_a_relist_that_misses_a_pod_records_its_deletion() -> None:
    cache = cached(pod("j-w-0"), pod("j-w-1"))
    touched = cache.replace_all("Pod", [pod("j-w-1")])
    assert touched == {"ns/j"}
    [edge] = cache.take_edges("ns/j")
    assert edge.pod["metadata"]["name"] == "j-w-0"


def test_no_edges_are_kept_for_a_job_that_is_gone() -> None:
    cache = cached(pod("j-w-0"))
    cache.remove("Job", job())
    cache.remove("Pod", pod("j-w-0"))
    assert cache.take_edges("ns/j") == []


def test_edges_of_a_failed_reconcile_are_given_back_in_order() -> None:
    cache = cached(pod("a"), pod("b"))
    cache.remove("Pod", pod("a"))
    taken = cache.take_edges("ns/j")
    cache.remove("Pod", pod("b"))
    cache.return_edges("ns/j", taken)
    assert [e.pod["metadata"]["name"] for e in cache.take_edges("ns/j")] == ["a", "b"]


def test_read_your_writes_keeps_the_newer_object() -> None:
    cache = cached()
    cache.store_written("Job", job(rv="10"))
    assert cache.upsert("Job", job(rv="9")) is None  # a late watch event
    stored = cache.job("ns/j")
    assert stored is not None
    assert stored["metadata"]["resourceVersion"] == "10"


def test_observed_carries_pods_edges_memory_and_pod_group(clock: ManualClock) -> None:
    cache = cached(pod("j-w-0"), pod("j-w-1", owner_uid="old-uid"))
    group = {
        "kind": "PodGroup",
        "metadata": {
            "name": f"j-{JOB_UID}",
            "namespace": "ns",
            "ownerReferences": [{"kind": "Job", "name": "j", "uid": JOB_UID}],
        },
    }
    cache.upsert("PodGroup", group)
    cache.upsert("Pod", pod("j-w-2"))
    cache.remove("Pod", pod("j-w-2"))
    observed = build_observed(
        cache.view("ns/j"),
        now=clock.now(),
        edges=cache.take_edges("ns/j"),
        memory={"timers": {}},
        priority_values={"high": 100},
    )
    assert observed is not None
    assert [p["metadata"]["name"] for p in observed.pods] == ["j-w-0"], "old job's pods hidden"
    assert [e.pod["metadata"]["name"] for e in observed.pod_edges] == ["j-w-2"]
    assert observed.pod_group is group
    assert observed.memory == {"timers": {}}
    assert observed.priority_values == {"high": 100}
    assert observed.now == clock.now()


def test_commands_and_children_are_found_by_job() -> None:
    cache = cached()
    command = {
        "kind": "Command",
        "metadata": {"name": "j-abortjob-x1y2z", "namespace": "ns"},
        "action": "AbortJob",
        "target": {"kind": "Job", "name": "j", "uid": JOB_UID},
    }
    config_map = {
        "kind": "ConfigMap",
        "metadata": {"name": "j-svc", "namespace": "ns", "labels": {"volcano.sh/job-name": "j"}},
    }
    cache.upsert("Command", command)
    cache.upsert("ConfigMap", config_map)
    observed = build_observed(cache.view("ns/j"), now=ManualClock().now())
    assert observed is not None
    assert observed.commands == [command]
    assert observed.children == {("ConfigMap", "j-svc"): config_map}


def test_kubernetes_own_gang_objects_of_this_job_are_observed() -> None:
    cache = cached()

    def owned(kind: str, name: str, uid: str) -> dict[str, Any]:
        ref = {"kind": "Job", "name": "j", "uid": uid, "controller": True}
        return {
            "kind": kind,
            "metadata": {"name": name, "namespace": "ns", "ownerReferences": [ref]},
        }

    composite = owned("CompositePodGroup", f"j-{JOB_UID}", JOB_UID)
    groups = [owned("PodGroup", f"j-{JOB_UID}-{task}", JOB_UID) for task in ("ps", "w")]
    cache.upsert("CompositePodGroup", owned("CompositePodGroup", "j-old", "uid-0"))
    cache.upsert("CompositePodGroup", composite)
    for group in (*groups, owned("PodGroup", "j-old-w", "uid-0")):
        cache.upsert("NativePodGroup", group)
    observed = build_observed(cache.view("ns/j"), now=ManualClock().now())
    assert observed is not None
    assert observed.native_composite_pod_group == composite
    assert sorted(g["metadata"]["name"] for g in observed.native_pod_groups) == [
        f"j-{JOB_UID}-ps",
        f"j-{JOB_UID}-w",
    ]


def test_referenced_pvcs_not_cached_are_looked_up_and_missing_ones_reported() -> None:
    cache = Cache()
    j = job(
        volumes=[
            {"mountPath": "/d", "volumeClaimName": "data"},
            {"mountPath": "/x", "volumeClaim": {}},
        ]
    )
    cache.upsert("Job", j)
    view = cache.view("ns/j")
    assert pvcs_to_look_up(j, view) == ["data"]
    observed = build_observed(view, now=ManualClock().now(), looked_up_pvcs={"data": None})
    assert observed is not None
    assert observed.missing_pvcs == frozenset({"data"})
    found = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"}}
    observed = build_observed(view, now=ManualClock().now(), looked_up_pvcs={"data": found})
    assert observed is not None
    assert observed.missing_pvcs == frozenset()
    assert observed.children[("PersistentVolumeClaim", "data")] is found


def test_no_observation_without_the_job() -> None:
    assert build_observed(Cache().view("ns/none"), now=ManualClock().now()) is None


def test_a_late_copy_of_a_deleted_pod_does_not_bring_it_back() -> None:
    first, written_earlier, deleted = pod("j-w-0"), pod("j-w-0", rv="5"), pod("j-w-0", rv="6")
    for p in (written_earlier, deleted):
        p["metadata"]["uid"] = first["metadata"]["uid"]
    cache = cached(first)
    cache.remove("Pod", deleted)
    cache.store_written("Pod", written_earlier)
    assert cache.view("ns/j").pods == []
    recreated = pod("j-w-0", rv="7")
    recreated["metadata"]["uid"] = "a-new-uid"
    cache.upsert("Pod", recreated)
    assert [p["metadata"]["uid"] for p in cache.view("ns/j").pods] == ["a-new-uid"]


def test_the_watch_echo_of_our_own_write_triggers_no_reconcile() -> None:
    cache = cached()
    created = pod("j-w-0", rv="7")
    cache.store_written("Pod", created)
    assert cache.upsert("Pod", pod("j-w-0", rv="7")) is None, "same version: nothing new"
    changed = pod("j-w-0", rv="8")
    changed["metadata"]["uid"] = created["metadata"]["uid"]
    assert cache.upsert("Pod", changed) == "ns/j"


def prebuilt(owner_uid: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "job-j-abcde", "namespace": "ns", "resourceVersion": "3"}
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {"kind": "Job", "name": "j", "uid": owner_uid, "controller": True}
        ]
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta}


def test_a_prebuilt_workload_is_the_jobs_unless_another_job_owns_it(clock: ManualClock) -> None:
    cache = Cache()
    cache.upsert("Job", job())
    view = cache.view("ns/j")
    unowned = build_observed(view, now=clock.now(), prebuilt_workload=prebuilt(None))
    assert unowned is not None and unowned.workload == prebuilt(None)
    stale = build_observed(view, now=clock.now(), prebuilt_workload=prebuilt("uid-old"))
    assert stale is not None and stale.workload is None
