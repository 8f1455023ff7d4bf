"""The objects `vcjob local up` registers: Nodes, the default Queue, the webhook configurations."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path

import pytest

from localcluster.bootstrap import (
    DEFAULT_CRDS_DIR,
    default_queue,
    load_crds,
    webhook_configurations,
)
from localcluster.clusterdir import StartupError
from localcluster.simulator.nodes import NodeShape, build_nodes, heartbeat_conditions, host_ip
from localcluster.simulator.scheduling import node_view

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_nodes_are_named_and_sized_as_asked() -> None:
    nodes = build_nodes(2, NodeShape(cpu="4", memory="16Gi", gpu=2), T0)
    assert [n["metadata"]["name"] for n in nodes] == ["node-1", "node-2"]
    node = nodes[1]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-2"
    assert node["status"]["capacity"] == node["status"]["allocatable"]
    assert node["status"]["allocatable"] == {
        "cpu": "4",
        "memory": "16Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
        "nvidia.com/gpu": "2",
    }
    assert node_view(node).taints == ()
    assert host_ip(node) == "127.0.0.1"
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.2"


def test_nodes_advertise_the_kubelet_api_where_the_agent_serves_it() -> None:
    (node,) = build_nodes(1, NodeShape(), T0, kubelet_port=31250, address="127.0.0.9")
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 31250
    assert node["status"]["addresses"] == [
        {"type": "InternalIP", "address": "127.0.0.9"},
        {"type": "Hostname", "address": "node-1"},
    ]


def test_nodes_without_gpus_do_not_advertise_them() -> None:
    (node,) = build_nodes(1, NodeShape(), T0)
    assert "nvidia.com/gpu" not in node["status"]["capacity"]


def test_heartbeat_refreshes_heartbeats_and_keeps_transitions() -> None:
    (node,) = build_nodes(1, NodeShape(), T0)
    later = datetime(2026, 1, 1, 12, 0, 20, tzinfo=UTC)
    ready = {c["type"]: c for c in heartbeat_conditions(node, later)}["Ready"]
    assert ready["status"] == "True"
    assert ready["lastHeartbeatTime"] == "2026-01-01T12:00:20Z"
    assert ready["lastTransitionTime"] == "2026-01-01T12:00:00Z"


def test_default_queue() -> None:
    queue = default_queue()
    assert queue["metadata"]["name"] == "default"
    assert queue["spec"] == {"weight": 1, "reclaimable": True}


def test_webhook_configurations_match_the_chart() -> None:
    mutating, validating = webhook_configurations(9443, b"CA PEM")
    assert mutating["metadata"]["name"] == "vcjob-mutate"
    assert validating["metadata"]["name"] == "vcjob-validate"
    mutate, mutate_cron = mutating["webhooks"][:2]
    validate, validate_cron = validating["webhooks"][:2]
    assert mutate["rules"][0]["operations"] == mutate_cron["rules"][0]["operations"] == ["CREATE"]
    assert validate["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert validate_cron["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    for hook, path, resource in (
        (mutate, "/mutate-batch-volcano-sh-v1alpha1-job", "jobs"),
        (validate, "/validate-batch-volcano-sh-v1alpha1-job", "jobs"),
        (mutate_cron, "/mutate-batch-volcano-sh-v1alpha1-cronjob", "cronjobs"),
        (validate_cron, "/validate-batch-volcano-sh-v1alpha1-cronjob", "cronjobs"),
    ):
        assert hook["clientConfig"]["url"] == f"https://127.0.0.1:9443{path}"
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == b"CA PEM"
        assert hook["rules"][0]["apiGroups"] == ["batch.volcano.sh"]
        assert hook["rules"][0]["apiVersions"] == ["v1alpha1"]
        assert hook["rules"][0]["resources"] == [resource]
        assert (hook["sideEffects"], hook["failurePolicy"], hook["timeoutSeconds"]) == (
            "None",
            "Fail",
            5,
        )
        assert hook["admissionReviewVersions"] == ["v1"]


def test_jobflow_and_jobtemplate_webhooks_at_volcanos_paths() -> None:
    _, validating = webhook_configurations(9443, b"CA PEM")
    hooks = {hook["name"]: hook for hook in validating["webhooks"]}
    for name, path, resource in (
        ("validatejobflow.vcjob.volcano.sh", "/jobflows/validate", "jobflows"),
        ("validatejobtemplate.vcjob.volcano.sh", "/jobtemplates/validate", "jobtemplates"),
    ):
        hook = hooks[name]
        assert hook["clientConfig"]["url"] == f"https://127.0.0.1:9443{path}"
        (rule,) = hook["rules"]
        assert rule["apiGroups"] == ["flow.volcano.sh"]
        assert rule["resources"] == [resource]
        assert rule["operations"] == ["CREATE", "UPDATE"]


def test_the_charts_crds_load() -> None:
    names = {crd["metadata"]["name"] for crd in load_crds(DEFAULT_CRDS_DIR)}
    assert {"jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh"} <= names


def test_a_crd_folder_with_something_else_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(StartupError, match="expected a CustomResourceDefinition"):
        load_crds(tmp_path)
