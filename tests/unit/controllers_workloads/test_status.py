"""ReplicaSet and Deployment status, which pods go first on scale-down, and the watch cache."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcluster.controllers.cronjobs import CronJobController
from localcluster.controllers.jobs import JobController
from localcluster.controllers.workloads.controllers import (
    Cache,
    DeploymentController,
    ReplicaSetController,
)
from localcluster.controllers.workloads.objects import NEW_RS_AVAILABLE, NEW_RS_CREATED, RS_UPDATED
from localcluster.controllers.workloads.replicasets import (
    event,
    pods_to_delete,
    replica_set_status,
    status_patch,
)
from localcluster.controllers.workloads.status import deployment_status

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
AT = "2026-01-01T12:00:00Z"
EARLIER = "2026-01-01T11:00:00Z"


def pod(
    name: str,
    *,
    ready: bool = True,
    phase: str = "Running",
    node: str | None = "node-1",
    created: str = "2026-01-01T00:00:00Z",
    ready_since: str = EARLIER,
    labels: dict[str, str] | None = None,
    restarts: int = 0,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "labels": {"app": "web"} if labels is None else labels,
        },
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": ready_since,
                }
            ],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def replica_set(
    name: str = "web-abc", replicas: int = 2, generation: int = 3, **status: int
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "generation": generation},
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}},
        },
        "status": status,
    }


# -- ReplicaSet status -----------------------------------------------------------------------


def test_replica_set_status_counts_ready_available_and_fully_labeled_pods() -> None:
    labeled = {"app": "web", "pod-template-hash": "abc"}
    pods = [
        pod("a", labels=labeled),
        pod("b", labels=labeled, ready=False),
        pod("c", labels={"app": "web"}),  # a label of the template is missing
    ]
    status, recheck = replica_set_status(replica_set(), pods, NOW)
    assert status == {
        "replicas": 3,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "observedGeneration": 3,
    }
    assert recheck is None


def test_replica_set_status_leaves_out_zero_counters_but_replicas() -> None:
    status, _ = replica_set_status(replica_set(generation=1), [], NOW)
    assert status == {"replicas": 0, "observedGeneration": 1}


def test_min_ready_seconds_delays_availability_and_asks_for_a_recheck() -> None:
    rs = replica_set()
    rs["spec"]["minReadySeconds"] = 10
    just_ready = pod("a", ready_since="2026-01-01T11:59:56Z")
    long_ready = pod("b")
    status, recheck = replica_set_status(rs, [just_ready, long_ready], NOW)
    assert status["readyReplicas"] == 2
    assert status["availableReplicas"] == 1
    assert recheck == 6.0


# -- scale-down order ------------------------------------------------------------------------


def test_scale_down_removes_the_least_useful_pods_first() -> None:
    pods = [
        pod("running-old", created="2026-01-01T00:00:01Z"),
        pod("running-new", created="2026-01-01T00:00:09Z"),
        pod("not-ready", ready=False),
        pod("pending", phase="Pending", ready=False),
        pod("unscheduled", phase="Pending", ready=False, node=None),
        pod("restarted", restarts=3, created="2026-01-01T00:00:01Z"),
    ]
    order = [p["metadata"]["name"] for p in pods_to_delete(pods, len(pods))]
    assert order == [
        "unscheduled",
        "pending",
        "not-ready",
        "restarted",
        "running-new",
        "running-old",
    ]
    assert [p["metadata"]["name"] for p in pods_to_delete(pods, 1)] == ["unscheduled"]
    assert pods_to_delete(pods, 0) == []


# -- Deployment status -----------------------------------------------------------------------


def deployment(
    replicas: int = 2, generation: int = 2, status: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "generation": generation},
        "spec": {
            "replicas": replicas,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            **spec,
        },
        "status": status or {},
    }


def rs_with(name: str, replicas: int, ready: int, available: int, want: int) -> dict[str, Any]:
    rs = replica_set(name, want)
    rs["status"] = {
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": available,
    }
    return rs


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == kind)


def test_a_fresh_deployment_reports_a_created_replica_set_and_no_availability() -> None:
    new = rs_with("web-new", 0, 0, 0, 2)
    status = deployment_status(deployment(), new, [new], NOW, created_new=True)
    assert status["observedGeneration"] == 2
    assert status["unavailableReplicas"] == 2
    for counter in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
        assert counter not in status  # zero, so left out like kube's omitempty
    available = condition(status, "Available")
    assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")
    progressing = condition(status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", NEW_RS_CREATED)
    assert progressing["message"] == 'Created new replica set "web-new"'
    assert progressing["lastUpdateTime"] == progressing["lastTransitionTime"] == AT


def test_a_complete_rollout_reports_the_new_replica_set_available() -> None:
    new = rs_with("web-new", 2, 2, 2, 2)
    old = rs_with("web-old", 0, 0, 0, 0)
    status = deployment_status(deployment(), new, [old, new], NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 2,
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
    }
    assert condition(status, "Available")["reason"] == "MinimumReplicasAvailable"
    progressing = condition(status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", NEW_RS_AVAILABLE)
    assert progressing["message"] == 'ReplicaSet "web-new" has successfully progressed.'


def test_progress_mid_rollout_refreshes_the_progressing_condition() -> None:
    before = {
        "replicas": 3,
        "updatedReplicas": 1,
        "availableReplicas": 2,
        "conditions": [
            {
                "type": "Progressing",
                "status": "True",
                "reason": NEW_RS_CREATED,
                "lastUpdateTime": EARLIER,
                "lastTransitionTime": EARLIER,
            }
        ],
    }
    new = rs_with("web-new", 2, 2, 2, 2)
    old = rs_with("web-old", 1, 1, 1, 1)
    status = deployment_status(deployment(status=before), new, [old, new], NOW)
    progressing = condition(status, "Progressing")
    assert progressing["reason"] == RS_UPDATED
    assert progressing["lastUpdateTime"] == AT
    assert progressing["lastTransitionTime"] == EARLIER  # still True: no transition
    assert status["replicas"] == 3
    assert status["updatedReplicas"] == 2


def test_a_settled_deployment_keeps_its_conditions_as_they_are() -> None:
    new = rs_with("web-new", 3, 3, 3, 3)
    first = deployment_status(deployment(3), new, [new], NOW)
    later = deployment_status(deployment(3, status=first), new, [new], NOW + timedelta(minutes=5))
    assert later == first


def test_a_paused_deployment_says_so() -> None:
    new = rs_with("web-new", 2, 2, 2, 2)
    status = deployment_status(deployment(paused=True), new, [new], NOW)
    progressing = condition(status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")


def test_status_patch_nulls_what_went_away() -> None:
    assert status_patch({"replicas": 2, "readyReplicas": 2}, {"replicas": 0}) == {
        "status": {"readyReplicas": None, "replicas": 0}
    }


# -- the watch cache -------------------------------------------------------------------------


def obj(name: str, version: str, uid: str | None = None, owner: str | None = None) -> Any:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": uid or f"uid-{name}",
        "resourceVersion": version,
    }
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "ReplicaSet"}]
    return {"metadata": meta}


def test_the_cache_never_goes_back_in_time_nor_revives_the_deleted() -> None:
    cache = Cache()
    cache.replace([obj("a", "5", owner="rs-1")])
    assert cache.synced.is_set()
    cache.observe(obj("a", "7", owner="rs-1"))
    cache.observe(obj("a", "6", owner="rs-1"))  # a late watch event: older than what we wrote
    assert cache.get("ns/a") is not None
    assert cache.get("ns/a")["metadata"]["resourceVersion"] == "7"  # type: ignore[index]
    assert [o["metadata"]["name"] for o in cache.controlled_by("rs-1")] == ["a"]
    cache.forget(obj("a", "8"))
    cache.observe(obj("a", "9", owner="rs-1"))
    assert cache.get("ns/a") is None
    assert cache.controlled_by("rs-1") == []
    # The same name with a new uid is a new object.
    cache.observe(obj("a", "10", uid="uid-a2"))
    assert cache.get("ns/a")["metadata"]["uid"] == "uid-a2"  # type: ignore[index]
    assert cache.keys() == ["ns/a"]


@pytest.mark.parametrize(
    ("controller", "api_version"),
    [
        (ReplicaSetController, "apps/v1"),
        (DeploymentController, "apps/v1"),
        (JobController, "batch/v1"),
        (CronJobController, "batch/v1"),
    ],
)
def test_events_name_the_objects_own_api_version(controller: Any, api_version: str) -> None:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    body = event(obj("a", "1"), controller.kind, "R", "m", "c", moment, controller.api_version)
    assert body["involvedObject"]["apiVersion"] == api_version
    assert body["involvedObject"]["kind"] == controller.kind
