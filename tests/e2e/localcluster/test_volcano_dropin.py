"""vcjob as a drop-in for Volcano on the local cluster: today's manifests (partitions, network
topology, ray, hcclrank) run to Completed, typos in a template fail as kubectl reports them, and a
gang that cannot fit says why through the PodGroup and the Job."""

from __future__ import annotations

import functools
import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster
from tests.support import polling

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
WAIT = 90.0
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("dropin"), webhook=True, controller=True, nodes=3
    ) as running:
        yield running


@pytest.fixture
def kubectl(cluster: LocalCluster) -> Kubectl:
    namespace = f"vd-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)

    def run(*args: str, check: bool = True, stdin: str | None = None) -> Any:
        return cluster.kubectl("-n", namespace, *args, check=check, input=stdin)

    return run


def get(kubectl: Kubectl, *what: str) -> Any:
    return json.loads(kubectl("get", *what, "-o", "json").stdout)


wait_for = functools.partial(polling.wait_for, timeout=WAIT)


def phase(job: dict[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def run_to_completion(kubectl: Kubectl, example: str, name: str) -> tuple[Any, list[Any]]:
    """Create the example, capture its pods while they exist, and wait for Completed."""
    kubectl("create", "-f", str(EXAMPLES / example))
    # Every pod of the Job, each bound: the gang may be placed before its last pods are made.
    (manifest,) = [
        d for d in yaml.safe_load_all((EXAMPLES / example).read_text()) if d and d["kind"] == "Job"
    ]
    replicas = sum(int(t.get("replicas", 1)) for t in manifest["spec"]["tasks"])
    pods = wait_for(
        lambda: get(kubectl, "pods", "-l", f"volcano.sh/job-name={name}")["items"],
        lambda items: len(items) == replicas and all(p["spec"].get("nodeName") for p in items),
        f"{name}'s {replicas} pods to be bound",
    )
    job = wait_for(lambda: get(kubectl, "vcjob", name), lambda j: phase(j) == "Completed", name)
    return job, pods


def test_partitions_network_topology_and_ray_run_to_completed(kubectl: Kubectl) -> None:
    name = "ray-partitions"
    job, pods = run_to_completion(kubectl, "ray-partitions.yaml", name)
    assert job["spec"]["plugins"] == {"ray": [], "svc": []}
    assert job["spec"]["runningEstimate"] == "30m"
    worker = next(t for t in job["spec"]["tasks"] if t["name"] == "worker")
    assert worker["minAvailable"] == 2  # minPartitions · partitionSize
    by_name = {p["metadata"]["name"]: p for p in pods}
    partitions = {
        n: p["metadata"]["labels"].get("volcano.sh/partition-id") for n, p in by_name.items()
    }
    assert partitions == {
        f"{name}-head-0": None,
        f"{name}-worker-0": "0",
        f"{name}-worker-1": "0",
        f"{name}-worker-2": "1",
        f"{name}-worker-3": "1",
    }
    head = by_name[f"{name}-head-0"]["spec"]["containers"][0]
    assert head["command"][2].startswith("ray start --head --block")
    worker_cmd = by_name[f"{name}-worker-0"]["spec"]["containers"][0]["command"]
    assert worker_cmd[2] == f"ray start --block --address={name}-head-0.{name}:6379"


def test_podgroup_carries_sub_groups_and_topology(kubectl: Kubectl) -> None:
    kubectl("create", "-f", str(EXAMPLES / "ray-partitions.yaml"))
    group = wait_for(
        lambda: get(kubectl, "podgroups.scheduling.volcano.sh")["items"],
        lambda items: bool(items),
        "the PodGroup",
    )[0]
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    (sub,) = group["spec"]["subGroupPolicy"]
    assert (sub["name"], sub["subGroupSize"], sub["minSubGroups"]) == ("worker", 2, 1)
    assert sub["matchLabelKeys"] == ["volcano.sh/partition-id"]
    assert sub["networkTopology"] == {"mode": "soft", "highestTierAllowed": 1}
    assert group["spec"]["minResources"]["requests.cpu"]
    # The plugins' objects are created after the PodGroup, by requests of their own.
    service = json.loads(
        wait_for(
            lambda: (
                kubectl(
                    "get", "service", "ray-partitions-head-svc", "-o", "json", check=False
                ).stdout
            ),
            bool,
            "the ray head's Service",
        )
    )
    assert [p["name"] for p in service["spec"]["ports"]] == ["gcs", "dashboard", "client-server"]


def test_hcclrank_runs_to_completed_with_ranks(kubectl: Kubectl) -> None:
    _, pods = run_to_completion(kubectl, "hcclrank.yaml", "hccl-training")
    ranks = {p["metadata"]["name"]: p["metadata"]["annotations"]["hccl/rankIndex"] for p in pods}
    assert ranks == {
        "hccl-training-master-0": "0",
        "hccl-training-worker-0": "1",
        "hccl-training-worker-1": "2",
    }


def test_a_template_typo_fails_with_kubectls_unknown_field_message(kubectl: Kubectl) -> None:
    manifest = yaml.safe_load((EXAMPLES / "hcclrank.yaml").read_text())
    container = manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    container["imagePullPolicyy"] = "Always"
    done = kubectl("create", "-f", "-", check=False, stdin=yaml.safe_dump(manifest))
    assert done.returncode != 0
    assert (
        'strict decoding error: unknown field "spec.tasks[0].template.spec.containers[0].'
        'imagePullPolicyy"'
    ) in done.stderr
    # A pod spec key that is not a PodSpec field is caught the same way.
    manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0].pop("imagePullPolicyy")
    manifest["spec"]["tasks"][0]["template"]["spec"]["priorityClass"] = "high"
    done = kubectl("create", "-f", "-", check=False, stdin=yaml.safe_dump(manifest))
    assert 'unknown field "spec.tasks[0].template.spec.priorityClass"' in done.stderr


def test_a_gpu_job_on_a_gpu_less_cluster_says_why_it_waits(kubectl: Kubectl) -> None:
    manifest = yaml.safe_load((EXAMPLES / "hcclrank.yaml").read_text())
    manifest["metadata"]["name"] = "gpu-wait"
    for task in manifest["spec"]["tasks"]:
        task["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    kubectl("create", "-f", "-", stdin=yaml.safe_dump(manifest))
    group = wait_for(
        lambda: get(kubectl, "podgroups.scheduling.volcano.sh")["items"],
        lambda items: (
            bool(items)
            and any(
                c.get("type") == "Unschedulable"
                for c in (items[0].get("status") or {}).get("conditions") or []
            )
        ),
        "the Unschedulable condition",
    )[0]
    (condition,) = group["status"]["conditions"]
    # No node has a GPU at all: more capacity of the same kind would not help.
    assert "no node has nvidia.com/gpu: no node can run it" in condition["message"]
    events = wait_for(
        lambda: get(kubectl, "events")["items"],
        lambda items: any(e["reason"] == "PodGroupPending" for e in items),
        "the Job's PodGroupPending event",
    )
    pending = next(e for e in events if e["reason"] == "PodGroupPending")
    assert pending["type"] == "Warning"
    assert pending["involvedObject"]["kind"] == "Job"
    assert pending["message"].startswith(
        f"PodGroup {pending['involvedObject']['namespace']}:gpu-wait unschedulable, reason: "
    )
    assert pending["message"].endswith("no node has nvidia.com/gpu: no node can run it")
    assert not get(kubectl, "pods")["items"]


def test_another_controller_writing_a_jobs_status_is_reported(kubectl: Kubectl) -> None:
    """Volcano's controller left running beside vcjob's: its status writes (kube-apiserver names
    their writer in the Job's managed fields) get a Warning Event on the Job, once."""
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "shared"},
        "spec": {
            "minAvailable": 1,
            "tasks": [{"name": "w", "replicas": 1, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "600"]}],
            }}}],
        },
    }  # fmt: skip
    kubectl("create", "-f", "-", stdin=yaml.safe_dump(job))
    wait_for(lambda: get(kubectl, "vcjob", "shared"), lambda j: phase(j) != "", "a first status")
    # What Volcano's controller does on its next sync: a status write of its own.
    for duration in ("1s", "2s"):  # a change each time: kube-apiserver skips a write that is not
        kubectl(
            "patch", "vcjob", "shared", "--subresource=status", "--type=merge",
            "--field-manager=vc-controller-manager",
            "-p", json.dumps({"status": {"runningDuration": duration}}),
        )  # fmt: skip
    events = wait_for(
        lambda: get(kubectl, "events")["items"],
        lambda items: any(e["reason"] == "AnotherControllerWrites" for e in items),
        "the AnotherControllerWrites event",
    )
    (warning,) = [e for e in events if e["reason"] == "AnotherControllerWrites"]
    assert warning["type"] == "Warning"
    assert warning["involvedObject"]["name"] == "shared"
    assert warning.get("count", 1) == 1
    assert "vc-controller-manager writes this Job's status too" in warning["message"]
    assert "vcjob-controller" in warning["message"]


SHAPES = Path(__file__).resolve().parents[2] / "data" / "volcano_shapes"
VALID_SHAPES = sorted(SHAPES.glob("*.yaml"))
INVALID_SHAPES = sorted((SHAPES / "invalid").glob("*.yaml"))


@pytest.mark.parametrize("path", VALID_SHAPES, ids=[p.stem for p in VALID_SHAPES])
def test_volcano_example_shape_runs_to_completed(kubectl: Kubectl, path: Path) -> None:
    kubectl("create", "-f", str(path))
    (job,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "Job"]
    name = job["metadata"]["name"]
    wait_for(lambda: get(kubectl, "vcjob", name), lambda j: phase(j) == "Completed", name)


@pytest.mark.parametrize("path", INVALID_SHAPES, ids=[p.stem for p in INVALID_SHAPES])
def test_invalid_volcano_example_shape_is_denied(kubectl: Kubectl, path: Path) -> None:
    at = next(
        line.split("# denied-at: ", 1)[1]
        for line in path.read_text().splitlines()
        if "# denied-at: " in line
    )
    done = kubectl("create", "-f", str(path), check=False)
    assert done.returncode != 0
    assert (
        f'The Job "{yaml.safe_load(path.read_text())["metadata"]["name"]}" is invalid'
        in done.stderr
    )
    assert at in done.stderr
