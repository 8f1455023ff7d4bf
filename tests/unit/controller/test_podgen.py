"""Pod building (api.md "Child objects") and every plugin's env, volumes and objects."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from builders import UID, created_pods, job, plan_for

from controller.job.decide.model import PlanSettings
from controller.job.decide.podgen import claim_volume_name
from shared import labels

Wire = dict[str, Any]


def pods_by_name(plan: Any) -> dict[str, Wire]:
    return {o["metadata"]["name"]: o for o in plan.create if o["kind"] == "Pod"}


def env_of(pod: Wire, container: int = 0, init: bool = False) -> dict[str, Any]:
    key = "initContainers" if init else "containers"
    return {
        e["name"]: e.get("value", e.get("valueFrom"))
        for e in pod["spec"][key][container].get("env", [])
    }


def children_of(plan: Any) -> dict[tuple[str, str], Wire]:
    return {(o["kind"], o["metadata"]["name"]): o for o in plan.create if o["kind"] != "Pod"}


def test_pod_names_labels_annotations_and_owner() -> None:
    j = job("j").task("w", 2).phase("Pending", version=2, retryCount=1).build()
    pod = pods_by_name(plan_for(j))["j-w-1"]
    meta = pod["metadata"]
    assert meta["labels"] == {
        "app": "w",
        labels.JOB_NAME_KEY: "j",
        labels.JOB_NAMESPACE_KEY: "default",
        labels.TASK_SPEC_KEY: "w",
        labels.TASK_INDEX_KEY: "1",
        labels.QUEUE_NAME_KEY: "default",
    }
    assert meta["annotations"] == {
        labels.TASK_SPEC_KEY: "w",
        labels.TASK_INDEX_KEY: "1",
        labels.JOB_NAME_KEY: "j",
        labels.QUEUE_NAME_KEY: "default",
        labels.JOB_VERSION_KEY: "2",
        labels.JOB_RETRY_COUNT_KEY: "1",
        labels.ATTEMPT_KEY: "0",
        labels.TEMPLATE_UID_KEY: "j-w",
        labels.POD_GROUP_KEY: f"j-{UID}",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "j",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_scheduler_and_priority_fall_back_to_the_jobs() -> None:
    j = job("j").task("a").task("b", priority_class="high").priority_class("low").build()
    j["spec"]["tasks"][0]["template"]["spec"]["schedulerName"] = "other"
    pods = pods_by_name(plan_for(j))
    assert pods["j-a-0"]["spec"]["schedulerName"] == "other"
    assert pods["j-a-0"]["spec"]["priorityClassName"] == "low"
    assert pods["j-b-0"]["spec"]["schedulerName"] == "volcano"
    assert pods["j-b-0"]["spec"]["priorityClassName"] == "high"


def test_unknown_template_fields_are_kept() -> None:
    j = job("j").task("w").build()
    tpl = j["spec"]["tasks"][0]["template"]
    tpl["spec"]["futureField"] = {"x": 1}
    tpl["spec"]["containers"][0]["weirdKnob"] = True
    pod = pods_by_name(plan_for(j))["j-w-0"]
    assert pod["spec"]["futureField"] == {"x": 1}
    assert pod["spec"]["containers"][0]["weirdKnob"] is True
    assert "env" not in j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]


def test_job_volumes_are_mounted_in_the_main_containers_only() -> None:
    """Volcano mounts a job volume into `containers`, never into `initContainers`, through a pod
    volume named `<job>-<12 [0-9a-z]>`."""
    j = job("j").task("w", 2).volume("/data", claim_name="data").build()
    j["spec"]["tasks"][0]["template"]["spec"]["initContainers"] = [{"name": "i", "image": "x"}]
    pods = pods_by_name(plan_for(j))
    pod = pods["j-w-0"]
    [volume] = pod["spec"]["volumes"]
    assert volume["persistentVolumeClaim"] == {"claimName": "data"}
    assert re.fullmatch(r"j-[0-9a-z]{12}", volume["name"])
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": volume["name"], "mountPath": "/data"}
    ]
    assert "volumeMounts" not in pod["spec"]["initContainers"][0]
    assert pods["j-w-1"]["spec"]["volumes"] == [volume]


@pytest.mark.parametrize(
    ("job_name", "claim", "expected"),
    [
        ("j", "data", r"j-[0-9a-z]{12}"),
        ("a" * 63, "data", "a" * 50 + r"-[0-9a-z]{12}"),
        ("a" * 49 + "-b", "data", "a" * 49 + r"-[0-9a-z]{12}"),
    ],
)
def test_claim_volume_name_is_a_dns_label_in_volcano_format(
    job_name: str, claim: str, expected: str
) -> None:
    name = claim_volume_name(job_name, claim)
    assert re.fullmatch(expected, name)
    assert len(name) <= 63
    assert claim_volume_name(job_name, claim) == name
    assert claim_volume_name(job_name, "other") != name


def test_topology_policy_becomes_an_annotation() -> None:
    j = job("j").task("w").build()
    j["spec"]["tasks"][0]["topologyPolicy"] = "best-effort"
    pod = pods_by_name(plan_for(j))["j-w-0"]
    assert pod["metadata"]["annotations"]["volcano.sh/numa-topology-policy"] == "best-effort"


def test_env_plugin_sets_the_index_in_containers_and_init_containers() -> None:
    j = job("j").task("w", 2).plugin("env").build()
    j["spec"]["tasks"][0]["template"]["spec"]["initContainers"] = [{"name": "i", "image": "x"}]
    pod = pods_by_name(plan_for(j))["j-w-1"]
    for init in (False, True):
        env = env_of(pod, init=init)
        assert env["VK_TASK_INDEX"] == "1"
        assert env["VC_TASK_INDEX"] == "1"


def test_svc_plugin_objects_and_pod_changes() -> None:
    j = (
        job("j")
        .task("ps")
        .task("work-er", 2)
        .plugin("svc", "--publish-not-ready-addresses")
        .build()
    )
    plan = plan_for(j)
    children = children_of(plan)
    cm = children[("ConfigMap", "j-svc")]
    assert cm["data"] == {
        "ps.host": "j-ps-0.j",
        "VC_PS_HOSTS": "j-ps-0.j",
        "VC_PS_NUM": "1",
        "work_er.host": "j-work-er-0.j\nj-work-er-1.j",
        "VC_WORK_ER_HOSTS": "j-work-er-0.j,j-work-er-1.j",
        "VC_WORK_ER_NUM": "2",
    }
    svc = children[("Service", "j")]
    assert svc["spec"] == {
        "clusterIP": "None",
        "selector": {labels.JOB_NAME_KEY: "j", labels.JOB_NAMESPACE_KEY: "default"},
        "publishNotReadyAddresses": True,
    }
    policy = children[("NetworkPolicy", "j")]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    for child in children.values():
        assert child["metadata"]["ownerReferences"][0]["uid"] == UID
        assert child["metadata"]["labels"][labels.JOB_NAME_KEY] == "j"
    pod = pods_by_name(plan)["j-work-er-1"]
    assert pod["spec"]["hostname"] == "j-work-er-1"
    assert pod["spec"]["subdomain"] == "j"
    env = env_of(pod)
    assert env["VC_PS_HOSTS"] == {"configMapKeyRef": {"name": "j-svc", "key": "VC_PS_HOSTS"}}
    assert env["VC_WORK_ER_NUM"] == {"configMapKeyRef": {"name": "j-svc", "key": "VC_WORK_ER_NUM"}}
    assert {"name": "j-svc", "mountPath": "/etc/volcano"} in pod["spec"]["containers"][0][
        "volumeMounts"
    ]
    assert plan.status is not None
    assert plan.status["controlledResources"]["plugin-svc"] == "svc"


@pytest.mark.parametrize(
    ("args", "settings", "expected"),
    [
        ([], PlanSettings(), True),
        (["--disable-network-policy"], PlanSettings(), False),
        ([], PlanSettings(disable_network_policy=True), False),
    ],
    ids=["default", "plugin flag", "controller flag"],
)
def test_network_policy_switches(args: list[str], settings: PlanSettings, expected: bool) -> None:
    j = job("j").task("w").plugin("svc", *args).build()
    plan = plan_for(j, settings=settings)
    assert (("NetworkPolicy", "j") in children_of(plan)) is expected


@pytest.mark.parametrize("key_type", ["rsa", "ed25519"])
def test_ssh_plugin_secret_and_mount(key_type: str) -> None:
    j = job("j").task("w", 2).plugin("ssh").build()
    plan = plan_for(j, settings=PlanSettings(ssh_key_type=key_type))  # type: ignore[arg-type]
    secret = children_of(plan)[("Secret", "j-ssh")]
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert set(data) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    marker = "RSA PRIVATE KEY" if key_type == "rsa" else "OPENSSH PRIVATE KEY"
    assert marker in data["id_rsa"]
    assert data["authorized_keys"] == data["id_rsa.pub"]
    assert data["id_rsa.pub"].startswith("ssh-rsa " if key_type == "rsa" else "ssh-ed25519 ")
    assert "Host j-w-1\n  HostName j-w-1.j\n" in data["config"]
    pod = pods_by_name(plan)["j-w-0"]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "j-ssh")
    assert volume["secret"]["defaultMode"] == 0o600
    assert {"name": "j-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"} in pod["spec"][
        "containers"
    ][0]["volumeMounts"]


def test_tensorflow_plugin_tf_config() -> None:
    j = job("j").task("ps").task("worker", 2).plugin("tensorflow", "--port=3333").build()
    pod = pods_by_name(plan_for(j))["j-worker-1"]
    tf = json.loads(env_of(pod)["TF_CONFIG"])
    assert tf == {
        "cluster": {"ps": ["j-ps-0.j:3333"], "worker": ["j-worker-0.j:3333", "j-worker-1.j:3333"]},
        "task": {"type": "worker", "index": 1},
    }


def test_tensorflow_plugin_skips_a_single_pod_job() -> None:
    j = job("j").task("worker").plugin("tensorflow").build()
    assert "TF_CONFIG" not in env_of(pods_by_name(plan_for(j))["j-worker-0"])


def test_pytorch_ranks_are_unique_masters_first() -> None:
    j = job("j").task("master", 2).task("worker", 3).plugin("pytorch").build()
    pods = pods_by_name(plan_for(j))
    ranks = {name: env_of(p)["RANK"] for name, p in pods.items()}
    assert ranks == {
        "j-master-0": "0",
        "j-master-1": "1",
        "j-worker-0": "2",
        "j-worker-1": "3",
        "j-worker-2": "4",
    }
    env = env_of(pods["j-worker-0"])
    assert env["MASTER_ADDR"] == "j-master-0.j"
    assert env["MASTER_PORT"] == "23456"
    assert env["WORLD_SIZE"] == "5"
    assert {"name": "pytorchjob-port", "containerPort": 23456} in pods["j-worker-0"]["spec"][
        "containers"
    ][0]["ports"]


def test_mpi_host_on_the_master_only() -> None:
    j = job("j").task("master").task("worker", 2).plugin("mpi").build()
    pods = pods_by_name(plan_for(j))
    assert env_of(pods["j-master-0"])["MPI_HOST"] == "j-worker-0.j,j-worker-1.j"
    assert "MPI_HOST" not in env_of(pods["j-worker-0"])
    assert {"name": "mpijob-port", "containerPort": 22} in pods["j-worker-0"]["spec"]["containers"][
        0
    ]["ports"]


def test_template_env_wins_over_plugin_env() -> None:
    j = job("j").task("w").plugin("env").build()
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "VK_TASK_INDEX", "value": "custom"}
    ]
    assert env_of(pods_by_name(plan_for(j))["j-w-0"])["VK_TASK_INDEX"] == "custom"


def test_pod_group_spec_and_min_resources_by_priority() -> None:
    j = (
        job("j")
        .task("low", 2, cpu="1", priority_class="low")
        .task("high", 2, cpu="500m", priority_class="high")
        .min_available(3)
        .build()
    )
    j["spec"]["tasks"][0]["minAvailable"] = 1
    j["spec"]["tasks"][1]["minAvailable"] = 1
    plan = plan_for(j, pod_group=None, priority_values={"high": 100, "low": 1})
    pg = plan.create[0]
    assert pg["kind"] == "PodGroup"
    assert pg["metadata"]["name"] == f"j-{UID}"
    # one of each task (their minAvailable), then the spare high-priority pod: 1 + 0.5 + 0.5
    assert pg["spec"] == {
        "minMember": 3,
        "minTaskMember": {"low": 1, "high": 1},
        "queue": "default",
        "minResources": {"count/pods": "3", "cpu": "2", "pods": "3", "requests.cpu": "2"},
    }
    assert created_pods(plan) == []


@pytest.mark.parametrize(
    ("requests", "replicas", "expected"),
    [
        (
            {"cpu": "500m", "memory": "1Gi"},
            2,
            {
                "count/pods": "2",
                "cpu": "1",
                "memory": "2Gi",
                "pods": "2",
                "requests.cpu": "1",
                "requests.memory": "2Gi",
            },
        ),
        (
            {"cpu": "250m", "memory": "768Mi"},
            2,
            {
                "count/pods": "2",
                "cpu": "500m",
                "memory": "1536Mi",
                "pods": "2",
                "requests.cpu": "500m",
                "requests.memory": "1536Mi",
            },
        ),
        (
            {"memory": "1G", "nvidia.com/gpu": "1"},
            3,
            {
                "count/pods": "3",
                "memory": "3G",
                "nvidia.com/gpu": "3",
                "pods": "3",
                "requests.memory": "3G",
                "requests.nvidia.com/gpu": "3",
            },
        ),
    ],
    ids=["binary memory", "milli cpu", "decimal and extended"],
)
def test_min_resources_keep_the_written_units(
    requests: dict[str, str], replicas: int, expected: dict[str, str]
) -> None:
    j = job("j").task("w", replicas).build()
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {"requests": requests}
    plan = plan_for(j, pod_group=None)
    assert plan.create[0]["spec"]["minResources"] == expected


@pytest.mark.parametrize(
    ("pod_level", "expected_cpu", "expected_memory"),
    [
        pytest.param({"requests": {"cpu": "2"}}, "4", "128Mi", id="pod-level-request-wins"),
        pytest.param({"limits": {"cpu": "3"}}, "6", "128Mi", id="a-pod-level-limit-alone"),
        pytest.param(
            {"requests": {"nvidia.com/gpu": "1"}}, "1", "128Mi", id="unsupported-kept-out"
        ),
        pytest.param({}, "1", "128Mi", id="none"),
    ],
)
def test_min_resources_count_pod_level_resources(
    pod_level: dict[str, Any], expected_cpu: str, expected_memory: str
) -> None:
    """Kubernetes' PodRequests: pod-level cpu, memory and hugepages replace the containers' sum."""
    j = job("j").task("w", 2).build()
    spec = j["spec"]["tasks"][0]["template"]["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": "500m", "memory": "64Mi"}}
    if pod_level:
        spec["resources"] = pod_level
    plan = plan_for(j, pod_group=None)
    minimum = plan.create[0]["spec"]["minResources"]
    assert (minimum["cpu"], minimum["memory"]) == (expected_cpu, expected_memory)
