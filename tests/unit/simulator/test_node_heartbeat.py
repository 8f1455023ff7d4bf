"""What the node agent writes to keep its nodes alive, and how it reports a pod it cannot place:
node Leases, node status reports, PodScheduled patches and events, as kubelet and the schedulers
write them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from localcluster.simulator.nodes import (
    NodeShape,
    build_lease,
    build_nodes,
    lease_renewal,
    managed,
    micro_time,
    status_update,
)
from localcluster.simulator.runner import build_event, scheduled_event, unschedulable_patch
from localcluster.simulator.scheduling import Binding, PodSchedulingFailure

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_micro_time_has_six_fractional_digits_in_utc() -> None:
    moment = datetime(2026, 1, 1, 13, 0, 5, 120, tzinfo=UTC) + timedelta(microseconds=3)
    assert micro_time(moment) == "2026-01-01T13:00:05.000123Z"
    assert micro_time(T0) == "2026-01-01T12:00:00.000000Z"


def test_a_lease_is_named_after_its_node_held_and_owned_by_it() -> None:
    (node,) = build_nodes(1, NodeShape(), T0)
    node["metadata"]["uid"] = "node-uid"
    lease = build_lease(node, T0)
    assert lease["metadata"] == {
        "name": "node-1",
        "namespace": "kube-node-lease",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "node-uid"}
        ],
    }
    assert lease["spec"] == {
        "holderIdentity": "node-1",
        "leaseDurationSeconds": 40,
        "renewTime": "2026-01-01T12:00:00.000000Z",
    }
    later = T0 + timedelta(seconds=10)
    assert lease_renewal("node-1", later)["spec"]["renewTime"] == "2026-01-01T12:00:10.000000Z"


def test_a_status_report_brings_an_unknown_node_back_to_ready_now() -> None:
    (node,) = build_nodes(1, NodeShape(), T0, kubelet_port=4242)
    # What the node lifecycle controller writes when the heartbeats stop.
    for condition in node["status"]["conditions"]:
        condition.update(status="Unknown", reason="NodeStatusUnknown")
    later = T0 + timedelta(minutes=2)
    report = status_update(node, later, 4242)["status"]
    ready = {c["type"]: c for c in report["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert ready["lastTransitionTime"] == ready["lastHeartbeatTime"] == "2026-01-01T12:02:00Z"
    assert report["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 4242}}
    assert report["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"}
    assert report["nodeInfo"]["kubeletVersion"] == "v1.37.2"


def test_only_nodes_the_agent_registered_are_its_own() -> None:
    (node,) = build_nodes(1, NodeShape(), T0)
    assert managed(node)
    assert not managed({"metadata": {"name": "someone-elses"}})


def test_an_unschedulable_pod_is_patched_by_condition_type_for_its_uid_only() -> None:
    failure = PodSchedulingFailure("ns", "p", "uid-p", "Unschedulable", "0/1 nodes are available")
    assert unschedulable_patch(failure, T0) == {
        "metadata": {"uid": "uid-p"},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/1 nodes are available",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-01-01T12:00:00Z",
                }
            ]
        },
    }


def test_events_name_their_object_and_reporter() -> None:
    involved = {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"}
    event = build_event(involved, "FailedScheduling", "why", "volcano", T0)
    assert event["metadata"]["namespace"] == "ns"
    assert event["metadata"]["name"].startswith("p.")
    assert (event["type"], event["reason"], event["message"]) == (
        "Warning",
        "FailedScheduling",
        "why",
    )
    assert event["involvedObject"] == involved
    assert event["source"] == {"component": "volcano"}
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T12:00:00Z"
    scheduled = scheduled_event(Binding("ns", "p", "node-2"), "u", "volcano", T0)
    assert (scheduled["type"], scheduled["reason"]) == ("Normal", "Scheduled")
    assert scheduled["message"] == "Successfully assigned ns/p to node-2"
