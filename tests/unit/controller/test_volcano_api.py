"""Today's Volcano Job API in the controller: partitions, network topology, RestartPartition,
PodGroupPending, preemptable propagation, and the plugin flags Volcano defines."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from builders import World, job, plan_for

from controller.job.decide import partitions, podgroup
from controller.job.decide.plugins import pytorch
from controller.job.decide.podgen import partition_id
from shared import labels
from shared.models import Job

Wire = dict[str, Any]
PARTITION = "volcano.sh/partition-id"


def partitioned(replicas: int = 8, size: int = 4, minimum: int = 1, **extra: Any) -> Wire:
    j = job("j").task("worker", replicas).build()
    j["spec"]["tasks"][0]["partitionPolicy"] = {
        "totalPartitions": replicas // size,
        "partitionSize": size,
        "minPartitions": minimum,
        **extra,
    }
    return j


def pods_of(plan: Any) -> dict[str, Wire]:
    return {o["metadata"]["name"]: o for o in plan.create if o["kind"] == "Pod"}


@pytest.mark.parametrize(
    ("index", "size", "expected"), [(0, 4, "0"), (3, 4, "0"), (4, 4, "1"), (7, 4, "1"), (5, 0, "0")]
)
def test_partition_id_is_index_div_size(index: int, size: int, expected: str) -> None:
    task = Job.from_wire(partitioned(size=size or 4)).spec.tasks[0]
    assert task.partition_policy is not None
    task.partition_policy.partition_size = size
    assert partition_id(task, index) == expected


def test_partitioned_pods_carry_the_partition_label() -> None:
    pods = pods_of(plan_for(partitioned()))
    assert {name: p["metadata"]["labels"][PARTITION] for name, p in pods.items()} == {
        f"j-worker-{i}": str(i // 4) for i in range(8)
    }
    unpartitioned = pods_of(plan_for(job("j").task("w", 2).build()))
    assert all(PARTITION not in p["metadata"]["labels"] for p in unpartitioned.values())


def test_pod_group_has_sub_group_policy_and_network_topology() -> None:
    j = partitioned(networkTopology={"mode": "soft", "highestTierName": "rack"})
    j["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}
    del j["spec"]["tasks"][0]["minAvailable"]
    pg = podgroup.build_pod_group(Job.from_wire(j), {})
    assert pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert pg["spec"]["subGroupPolicy"] == [
        {
            "name": "worker",
            "subGroupSize": 4,
            "minSubGroups": 1,
            "labelSelector": {"matchLabels": {labels.TASK_SPEC_KEY: "worker"}},
            "matchLabelKeys": [PARTITION],
            "networkTopology": {"mode": "soft", "highestTierName": "rack"},
        }
    ]
    # minTaskMember falls back to minPartitions·partitionSize.
    assert pg["spec"]["minTaskMember"] == {"worker": 4}


def test_network_topology_is_set_at_creation_only() -> None:
    j = partitioned()
    pg = podgroup.build_pod_group(Job.from_wire(j), {})
    j["spec"]["networkTopology"] = {"mode": "soft", "highestTierAllowed": 1}
    assert podgroup.updated_pod_group(pg, podgroup.desired_spec(Job.from_wire(j), {})) is None


def test_tier_number_wins_over_tier_name() -> None:
    j = job("j").task("w").build()
    j["spec"]["networkTopology"] = {"highestTierAllowed": 1, "highestTierName": "rack"}
    pg = podgroup.build_pod_group(Job.from_wire(j), {})
    assert pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}


def test_min_resources_use_volcanos_quota_keys() -> None:
    j = job("j").task("w", 2).build()
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "memory": "1Gi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    pg = podgroup.build_pod_group(Job.from_wire(j), {})
    assert pg["spec"]["minResources"] == {
        "count/pods": "2",
        "pods": "2",
        "cpu": "2",
        "requests.cpu": "2",
        "limits.cpu": "2",
        "memory": "2Gi",
        "requests.memory": "2Gi",
        "limits.memory": "2Gi",
    }


PENDING_CASES = [
    pytest.param([], None, id="no conditions"),
    pytest.param(
        [
            {
                "type": "Unschedulable",
                "status": "True",
                "message": "no gpu",
                "lastTransitionTime": "1",
            }
        ],
        "PodGroup default:j unschedulable, reason: no gpu",
        id="unschedulable",
    ),
    pytest.param(
        [
            {"type": "Unschedulable", "status": "True", "message": "x", "lastTransitionTime": "1"},
            {"type": "Scheduled", "status": "True", "lastTransitionTime": "2"},
        ],
        None,
        id="scheduled later",
    ),
    pytest.param(
        [{"type": "Unschedulable", "status": "False", "lastTransitionTime": "3"}],
        None,
        id="false conditions do not count",
    ),
]


@pytest.mark.parametrize(("conditions", "expected"), PENDING_CASES)
def test_pending_warning(conditions: list[Wire], expected: str | None) -> None:
    j = Job.from_wire(job("j").task("w").build())
    pg = {"status": {"phase": "Pending", "conditions": conditions}}
    assert podgroup.pending_warning(j, pg) == expected


def test_controller_relays_pod_group_pending() -> None:
    world = World(job("j").task("w").build())
    world.step()
    assert world.pod_group is not None
    world.pod_group["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": "insufficient nvidia.com/gpu in the cluster: the gang needs 1, 0 left",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    plan = world.step()
    warnings = [e for e in plan.events if e.reason == "PodGroupPending"]
    assert [(e.type, e.message) for e in warnings] == [
        (
            "Warning",
            "PodGroup default:j unschedulable, reason: insufficient nvidia.com/gpu in the "
            "cluster: the gang needs 1, 0 left",
        )
    ]


def test_partition_pods() -> None:
    def pod(name: str, task: str, partition: str | None) -> Wire:
        pod_labels = {labels.TASK_SPEC_KEY: task}
        if partition is not None:
            pod_labels[PARTITION] = partition
        return {"metadata": {"name": name, "labels": pod_labels, "annotations": dict(pod_labels)}}

    pods = [pod("a", "w", "0"), pod("b", "w", "0"), pod("c", "w", "1"), pod("d", "x", "0")]
    assert partitions.partition_pods(pods, "w", "a") == {"a", "b"}
    assert partitions.partition_pods(pods, "w", None) == frozenset()
    assert partitions.partition_pods([pod("e", "w", None)], "w", "e") == frozenset()


def restart_partition_world() -> World:
    j = partitioned(replicas=4, size=2, minimum=0)
    j["spec"]["tasks"][0]["policies"] = [{"event": "PodFailed", "action": "RestartPartition"}]
    world = World(j)
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    return world


def test_restart_partition_kills_only_that_partition_and_counts_a_retry() -> None:
    world = restart_partition_world()
    assert world.phase == "Running"
    kept = {n: world.pods[n]["metadata"]["uid"] for n in ("j-worker-2", "j-worker-3")}
    world.set_pod("j-worker-1", "Failed", exit_code=1)
    world.step()
    # The decision is written first; the partition's pods go in the reconciles after it.
    assert world.phase == "Restarting"
    assert world.status["retryCount"] == 1
    world.step()
    assert world.phase == "Restarting"
    assert sorted(world.pods) == ["j-worker-2", "j-worker-3"]
    assert world.status["retryCount"] == 1
    assert world.status["version"] == 0
    assert world.pod_group is not None, "the PodGroup is kept"
    world.step()
    assert world.phase == "Pending"
    world.step()
    assert sorted(world.pods) == [f"j-worker-{i}" for i in range(4)]
    assert {n: world.pods[n]["metadata"]["uid"] for n in kept} == kept


def test_restart_partition_without_a_partition_does_nothing() -> None:
    j = job("j").task("w", 2).policy(event="PodFailed", action="RestartPartition").build()
    world = World(j)
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    world.set_pod("j-w-0", "Failed", exit_code=1)
    world.step()
    assert world.phase == "Running"
    assert world.status.get("retryCount", 0) == 0
    assert "j-w-0" in world.pods


# -- propagation ---------------------------------------------------------------------------------


def test_preemptable_label_and_annotation_propagate_and_the_job_wins() -> None:
    j = job("j").task("w").build()
    j["metadata"]["labels"] = {"volcano.sh/preemptable": "true"}
    j["metadata"]["annotations"] = {
        "volcano.sh/preemptable": "false",
        "volcano.sh/revocable-zone": "rz",
        "volcano.sh/jdb-min-available": "1",
    }
    j["spec"]["tasks"][0]["template"]["metadata"]["annotations"] = {
        "volcano.sh/preemptable": "true"
    }
    (pod,) = pods_of(plan_for(j)).values()
    assert pod["metadata"]["labels"]["volcano.sh/preemptable"] == "true"
    assert pod["metadata"]["annotations"]["volcano.sh/preemptable"] == "false"
    assert pod["metadata"]["annotations"]["volcano.sh/revocable-zone"] == "rz"
    assert pod["metadata"]["annotations"]["volcano.sh/jdb-min-available"] == "1"
    assert "volcano.sh/revocable-zone" not in pod["metadata"]["labels"]


def test_job_forwarding_annotation_reaches_pod_label_and_annotation() -> None:
    j = job("j").task("w").build()
    j["metadata"]["annotations"] = {"volcano.sh/job-forwarding": "true"}
    (pod,) = pods_of(plan_for(j)).values()
    assert pod["metadata"]["labels"]["volcano.sh/job-forwarding"] == "true"
    assert pod["metadata"]["annotations"]["volcano.sh/job-forwarding"] == "true"


# -- plugin flags --------------------------------------------------------------------------------


def env_names(pod: Wire) -> set[str]:
    return {e["name"] for e in pod["spec"]["containers"][0].get("env", [])}


def test_svc_inject_hosts_env_false_keeps_hostname_and_mount_only() -> None:
    j = job("j").task("w", 2).plugin("svc", "--inject-hosts-env=false").build()
    pod = pods_of(plan_for(j))["j-w-0"]
    assert not {n for n in env_names(pod) if n.startswith("VC_")}
    assert pod["spec"]["hostname"] == "j-w-0"
    assert pod["spec"]["subdomain"] == "j"
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert [m["mountPath"] for m in mounts] == ["/etc/volcano"]


def test_svc_injects_hosts_env_by_default() -> None:
    pod = pods_of(plan_for(job("j").task("w", 2).plugin("svc").build()))["j-w-0"]
    assert {"VC_W_HOSTS", "VC_W_NUM"} <= env_names(pod)


def test_svc_publish_not_ready_and_disable_network_policy() -> None:
    j = (
        job("j")
        .task("w")
        .plugin("svc", "--publish-not-ready-addresses", "--disable-network-policy")
        .build()
    )
    plan = plan_for(j)
    kinds = {(o["kind"], o["metadata"]["name"]): o for o in plan.create if o["kind"] != "Pod"}
    assert kinds[("Service", "j")]["spec"]["publishNotReadyAddresses"] is True
    assert ("NetworkPolicy", "j") not in kinds


def test_ssh_port_goes_into_the_config() -> None:
    plan = plan_for(job("j").task("w").plugin("ssh", "--ssh-port=2222").build())
    secret = next(o for o in plan.create if o["kind"] == "Secret")
    config = base64.b64decode(secret["data"]["config"]).decode()
    assert "Port 2222" in config


@pytest.mark.parametrize("port", ["0", "70000"])
def test_ssh_port_out_of_range_falls_back_to_22(port: str) -> None:
    plan = plan_for(job("j").task("w").plugin("ssh", f"--ssh-port={port}").build())
    secret = next(o for o in plan.create if o["kind"] == "Secret")
    assert "Port 22\n" in base64.b64decode(secret["data"]["config"]).decode()


def test_pytorch_wait_for_master_init_container_on_workers_only() -> None:
    j = (
        job("j")
        .task("master")
        .task("worker", 2)
        .plugin(
            "pytorch",
            "--wait-master-enabled",
            "--wait-master-timeout=60",
            "--wait-master-image=busybox:1.37",
        )
        .build()
    )
    pods = pods_of(plan_for(j))
    assert "initContainers" not in pods["j-master-0"]["spec"]
    (init,) = pods["j-worker-1"]["spec"]["initContainers"]
    assert init["name"] == "wait-for-master"
    assert init["image"] == "busybox:1.37"
    assert init["command"][:2] == ["sh", "-c"]
    assert "j-master-0.j 23456" in init["command"][2]
    assert "-ge 60" in init["command"][2]


def test_pytorch_without_wait_flag_adds_no_init_container() -> None:
    j = job("j").task("master").task("worker").plugin("pytorch").build()
    assert "initContainers" not in pods_of(plan_for(j))["j-worker-0"]["spec"]


def test_pytorch_master_address_follows_the_template_hostname() -> None:
    j = job("j").task("master").task("worker").build()
    j["spec"]["tasks"][0]["template"]["spec"].update({"hostname": "m", "subdomain": "s"})
    master = Job.from_wire(j).spec.tasks[0]
    assert pytorch.master_address(Job.from_wire(j), master) == "m.s"


# -- ray and hcclrank ----------------------------------------------------------------------------


def ray_job(*args: str) -> Wire:
    return job("rj").task("head").task("worker", 2).plugin("ray", *args).plugin("svc").build()


def test_ray_head_and_worker_commands_and_ports() -> None:
    j = ray_job()
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["name"] = "head"
    plan = plan_for(j)
    pods = pods_of(plan)
    head = pods["rj-head-0"]["spec"]["containers"][0]
    assert head["command"] == [
        "sh",
        "-c",
        "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 --dashboard-port=8265 "
        "--ray-client-server-port=10001",
    ]
    assert [(p["name"], p["containerPort"]) for p in head["ports"]] == [
        ("gcs", 6379),
        ("dashboard", 8265),
        ("client-server", 10001),
    ]
    worker = pods["rj-worker-1"]["spec"]["containers"][0]
    assert worker["command"] == ["sh", "-c", "ray start --block --address=rj-head-0.rj:6379"]
    service = next(
        o for o in plan.create if o["kind"] == "Service" and o["metadata"]["name"] == "rj-head-svc"
    )
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"] == {
        labels.JOB_NAME_KEY: "rj",
        labels.JOB_NAMESPACE_KEY: "default",
        labels.TASK_SPEC_KEY: "head",
    }
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("gcs", 6379, "gcs"),
        ("dashboard", 8265, "dashboard"),
        ("client-server", 10001, "client-server"),
    ]


def test_ray_flags_rename_tasks_containers_and_ports() -> None:
    j = (
        job("rj")
        .task("boss")
        .task("hands")
        .plugin("ray", "--head=boss", "--worker=hands", "--headContainer=boss", "--port=7000")
        .build()
    )
    j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "mine", "containerPort": 7000}
    ]
    pods = pods_of(plan_for(j))
    head = pods["rj-boss-0"]["spec"]["containers"][0]
    # A port with that number already exists: no `gcs` port is added.
    assert [p["name"] for p in head["ports"]] == ["mine", "dashboard", "client-server"]
    assert "--port=7000" in head["command"][2]
    # The worker container is named `hands`, not `worker`: left alone.
    assert pods["rj-hands-0"]["spec"]["containers"][0]["command"] == ["true"]


def test_ray_without_a_head_task_changes_nothing() -> None:
    j = job("rj").task("worker").plugin("ray").build()
    plan = plan_for(j)
    assert not [o for o in plan.create if o["kind"] == "Service"]
    assert pods_of(plan)["rj-worker-0"]["spec"]["containers"][0]["command"] == ["true"]


def rank_of(pod: Wire) -> str | None:
    value = pod["metadata"]["annotations"].get("hccl/rankIndex")
    return None if value is None else str(value)


def test_hcclrank_ranks_master_then_workers() -> None:
    j = job("h").task("master", 2).task("worker", 2).task("other").plugin("hcclrank").build()
    pods = pods_of(plan_for(j))
    assert {n: rank_of(p) for n, p in pods.items()} == {
        "h-master-0": "0",
        "h-master-1": "1",
        "h-worker-0": "2",
        "h-worker-1": "3",
        "h-other-0": None,
    }


def test_hcclrank_keeps_a_template_annotation_and_copies_a_literal_rank_env() -> None:
    j = job("h").task("master").task("worker").plugin("hcclrank").build()
    j["spec"]["tasks"][0]["template"]["metadata"]["annotations"] = {"hccl/rankIndex": "7"}
    j["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RANK", "value": "5"}
    ]
    pods = pods_of(plan_for(j))
    assert (rank_of(pods["h-master-0"]), rank_of(pods["h-worker-0"])) == ("7", "5")


def test_delayed_restart_partition_fires_once_for_the_partition() -> None:
    j = partitioned(replicas=4, size=2, minimum=0)
    j["spec"]["tasks"][0]["policies"] = [
        {"event": "PodFailed", "action": "RestartPartition", "timeout": "10s"}
    ]
    world = World(j)
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    world.set_pod("j-worker-2", "Failed", exit_code=1)
    world.set_pod("j-worker-3", "Failed", exit_code=1)
    world.step()
    assert world.phase == "Running"
    assert len((world.memory or {}).get("timers", {})) == 2
    world.step(timedelta(seconds=11))
    assert world.phase == "Restarting"  # written first; the partition goes next
    world.step()
    assert world.phase == "Restarting"
    assert sorted(world.pods) == ["j-worker-0", "j-worker-1"]
    assert world.status["retryCount"] == 1
    world.step()
    assert world.phase == "Pending"
    assert world.status["retryCount"] == 1, "the partition's second timer never fires"
    assert not (world.memory or {}).get("timers")
