"""The chart, run for real: `vcjob local up --bare` is a fresh cluster, `helm install --wait`
starts the chart's own webhook and controller processes (its args, probes, ServiceAccounts and
RBAC), Jobs run to completion through them, `helm test` runs its pod, `helm upgrade` from the
previous release's chart and code rolls both Deployments without a failed admission and leaves 20
running Jobs alone, `helm uninstall` keeps the CRDs. The last test reads the
API server's audit log of the whole module: every grant the chart gives its ServiceAccounts was
used, and nothing they asked was refused.

Every wait is bounded; the module takes about two and a half minutes.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import shlex
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography import x509

from localcluster import controlplane, kubebin
from localcluster.running import (
    LocalCluster,
    free_port,
    running_cluster,
    tools_env,
    vcjob_executable,
)
from localcluster.tools import PROJECT_ROOT, tool_path
from shared import certgen, labels
from tests.support import polling
from tests.support.leastprivilege import chart_grants, read_audit_log, refused, unused_grants

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHART = str(PROJECT_ROOT / "charts" / "vcjob")
NAMESPACE = "vcjob-system"
RELEASE = "vcjob"
CONTROLLER_SA = f"system:serviceaccount:{NAMESPACE}:vcjob-controller"
WEBHOOK_SA = f"system:serviceaccount:{NAMESPACE}:vcjob-webhook"
# Short periods so that the elastic loop and rolling updates happen within the test's time.
VALUES = ["--set", "controller.elastic.period=2s"]
WAIT = 120.0


# The last released tree (the newest landed commit), moved forward with each release: `helm
# upgrade` from its chart and code to this tree's must leave running Jobs alone.
PREVIOUS_RELEASE = "ca1572f"
PREVIOUS_REPOSITORY = "vcjob-previous"


def previous_release(target: Path) -> Path | str:
    """The previous release's tree (`git archive`), whose chart and code the upgrade starts from;
    or why it is not at hand."""
    if not (PROJECT_ROOT / ".git").exists():
        return "not a git checkout: the previous release's tree is not at hand"
    known = subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "cat-file", "-e", f"{PREVIOUS_RELEASE}^{{commit}}"],
        capture_output=True, check=False,
    )  # fmt: skip
    if known.returncode != 0:
        return f"this clone does not have {PREVIOUS_RELEASE} (a shallow clone?)"
    archive = subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "archive", PREVIOUS_RELEASE, "charts", "controller",
         "kubeio", "shared", "webhook", "vcctl", "localcluster"],
        capture_output=True, check=True,
    )  # fmt: skip
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


@pytest.fixture(scope="module")
def previous_tree(tmp_path_factory: pytest.TempPathFactory) -> Path | str:
    return previous_release(tmp_path_factory.mktemp("previous-release"))


@pytest.fixture(scope="module")
def bare(
    tmp_path_factory: pytest.TempPathFactory, previous_tree: Path | str
) -> Iterator[LocalCluster]:
    workdir = tmp_path_factory.mktemp("bare")
    audit = workdir / "audit.log"
    extra = ["--bare", "--audit-log", str(audit)]
    if isinstance(previous_tree, Path):
        # The previous release's image runs its own code with this environment's dependencies.
        previous = shlex.join([
            "env", f"PYTHONPATH={previous_tree}", sys.executable, "-c",
            "import sys; from shared.cli import main; sys.exit(main())",
        ])  # fmt: skip
        extra += ["--run-image", f"{PREVIOUS_REPOSITORY}={previous}"]
    with running_cluster(workdir, webhook=False, pod_runtime="2s", extra_args=extra) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def helm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("helm-home")


def helm(cluster: LocalCluster, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = cluster.helm(*args, home=home, check=False, timeout=WAIT + 30)
    if done.returncode != 0:
        pytest.fail(
            f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}\n{cluster.logs()[-6000:]}"
        )
    return done


def kubectl_json(cluster: LocalCluster, *args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(cluster.kubectl("get", "-o", "json", *args).stdout)
    return document


wait_for = functools.partial(polling.wait_until, timeout=WAIT)


def job_phase(cluster: LocalCluster, name: str) -> str:
    done = cluster.kubectl(
        "get", "vcjob", name, "-o", "jsonpath={.status.state.phase}", check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def job_manifest(
    name: str, replicas: int = 2, task: dict[str, Any] | None = None, **spec: Any
) -> str:
    document = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": replicas,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    **(task or {}),
                    "template": {
                        "metadata": {"annotations": spec.pop("annotations", {})},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "busybox"}],
                        },
                    },
                }
            ],
            **spec,
        },
    }
    return yaml.safe_dump(document)


@pytest.fixture(scope="module")
def installed(bare: LocalCluster, helm_home: Path) -> LocalCluster:
    helm(bare, helm_home, "install", RELEASE, CHART, "-n", NAMESPACE, "--create-namespace",
         "--wait", "--timeout", f"{WAIT:.0f}s", *VALUES)  # fmt: skip
    # The chart's controller creates the `default` Queue once it leads, as Volcano's scheduler.
    wait_for(
        "the controller to create the default Queue",
        lambda: bare.kubectl("get", "queue", "default", check=False).returncode == 0,
    )
    queue = kubectl_json(bare, "queue", "default")
    assert (queue["spec"]["weight"], queue["spec"]["reclaimable"]) == (1, True)
    return bare


def test_install_runs_the_chart_processes(installed: LocalCluster) -> None:
    for name in ("vcjob-controller", "vcjob-webhook"):
        deployment = kubectl_json(installed, "deployment", name, "-n", NAMESPACE)
        assert deployment["status"].get("readyReplicas") == deployment["spec"]["replicas"]
    pods = kubectl_json(installed, "pods", "-n", NAMESPACE)["items"]
    for pod in pods:
        status = pod["status"]["containerStatuses"][0]
        assert status["ready"] and status["containerID"].startswith("vcjob://"), pod["metadata"]
        assert pod["status"]["podIP"].startswith("10.244.")
    # Ready means caches synced, not leading: the election may still be under way.
    wait_for(
        "the controller to take the lead",
        lambda: (
            "leadership acquired"
            in installed.kubectl("logs", "-n", NAMESPACE, "deploy/vcjob-controller").stdout
        ),
    )
    mutating = kubectl_json(installed, "mutatingwebhookconfiguration", "vcjob-mutating-webhook")
    assert mutating["webhooks"][0]["clientConfig"].get("caBundle")


def test_logs_exec_and_port_forward_reach_the_chart_pods_through_the_api_server(
    installed: LocalCluster,
) -> None:
    """kube-apiserver proxies these to the node agent's kubelet API, as to any kubelet."""
    logs = installed.kubectl("logs", "-n", NAMESPACE, "deploy/vcjob-webhook", "--tail", "200")
    assert "webhook serving" in logs.stdout
    version = installed.kubectl("exec", "-n", NAMESPACE, "deploy/vcjob-webhook", "--",
                                "vcjob", "--version")  # fmt: skip
    assert "version" in version.stdout
    kubectl = str(tool_path("kubectl"))
    base = [kubectl, "--kubeconfig", str(installed.kubeconfig), "-n", NAMESPACE]
    follow = subprocess.Popen(
        [*base, "logs", "-f", "deploy/vcjob-controller", "--tail", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=tools_env(),
    )  # fmt: skip
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline(), "kubectl logs -f printed nothing"
        assert follow.poll() is None, "kubectl logs -f should keep following"
    finally:
        follow.kill()
        follow.wait(10)
    local = free_port()
    forward = subprocess.Popen(
        [*base, "port-forward", "svc/vcjob-webhook", f"{local}:9443"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=tools_env(),
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        assert "Forwarding from" in forward.stdout.readline()
        # The webhook's own TLS port: its admission paths take only POST.
        answer = httpx.get(
            f"https://127.0.0.1:{local}/validate-batch-volcano-sh-v1alpha1-job",
            verify=False,  # noqa: S501 - the serving certificate names the Service, not 127.0.0.1
            timeout=10,
        )
        assert answer.status_code == 405
    finally:
        forward.kill()
        forward.wait(10)


def test_controller_may_not_read_secrets(installed: LocalCluster) -> None:
    answer = installed.kubectl("auth", "can-i", "list", "secrets", "-A", f"--as={CONTROLLER_SA}",
                               check=False)  # fmt: skip
    assert answer.stdout.strip() == "no"


def test_jobs_run_to_completion_through_the_chart(installed: LocalCluster) -> None:
    installed.kubectl(
        "create", "-f", "-", input=job_manifest("done", plugins={"svc": [], "ssh": []})
    )
    wait_for("job done to complete", lambda: job_phase(installed, "done") == "Completed")
    # A finished Job's plugin objects go, by name (the controller cannot list Secrets).
    wait_for("the ssh Secret to go", lambda: installed.kubectl(
        "get", "secret", "done-ssh", check=False).returncode != 0)  # fmt: skip


def test_cronjobs_and_queue_commands_through_the_chart(installed: LocalCluster) -> None:
    """The chart's CronJob and Queue controllers work with the chart's grants: a CronJob starts
    its Job, and closing a parent queue marks its child closed by the parent."""
    job = yaml.safe_load(job_manifest("unused", replicas=1))
    cronjob = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "every"},
        "spec": {
            "schedule": "@every 5s",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": job["spec"]},
        },
    }
    installed.kubectl("create", "-f", "-", input=yaml.safe_dump(cronjob))

    def owned_jobs() -> list[dict[str, Any]]:
        return [
            j
            for j in kubectl_json(installed, "vcjob")["items"]
            if any(o.get("name") == "every" for o in j["metadata"].get("ownerReferences") or [])
        ]

    wait_for("the CronJob to start a Job", lambda: bool(owned_jobs()))
    wait_for("the CronJob's status", lambda: bool(
        kubectl_json(installed, "cronjob.batch.volcano.sh", "every").get("status", {}).get(
            "lastScheduleTime")))  # fmt: skip
    installed.kubectl("delete", "cronjob.batch.volcano.sh", "every", "--wait=false")

    for name, parent in (("lp-parent", None), ("lp-child", "lp-parent")):
        queue: dict[str, Any] = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1, **({"parent": parent} if parent else {})},
        }
        installed.kubectl("create", "-f", "-", input=yaml.safe_dump(queue))
    uid = kubectl_json(installed, "queue", "lp-parent")["metadata"]["uid"]
    target = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "name": "lp-parent",
        "uid": uid,
    }
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "lp-parent-closequeue-", "namespace": "default"},
        "target": target,
        "action": "CloseQueue",
    }
    installed.kubectl("create", "-f", "-", input=yaml.safe_dump(command))

    def child_closed() -> bool:
        child = kubectl_json(installed, "queue", "lp-child")
        annotations = child["metadata"].get("annotations") or {}
        return annotations.get("volcano.sh/closed-by-parent") == "true"

    wait_for("the child queue to be closed by its parent", child_closed)

    # The chart's webhook keeps a parent while it has children, and lists a queue's PodGroups
    # before it lets the queue go.
    kept = installed.kubectl("delete", "queue", "lp-parent", check=False)
    assert "queue lp-parent can not be deleted because it has 1 child queues: lp-child" in (
        kept.stderr
    )
    installed.kubectl("delete", "queue", "lp-child")
    installed.kubectl("delete", "queue", "lp-parent")


def test_jobflows_through_the_chart(installed: LocalCluster) -> None:
    """The chart's JobFlow controller and webhook with the chart's grants: a cycle is denied, a
    flow of two steps Succeeds and, with jobRetainPolicy delete, its Jobs go."""
    spec = yaml.safe_load(job_manifest("unused", replicas=1))["spec"]
    for name in ("one", "two"):
        template = {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": name},
            "spec": spec,
        }
        installed.kubectl("create", "-f", "-", input=yaml.safe_dump(template))

    def flow(name: str, targets_of_one: list[str]) -> str:
        return yaml.safe_dump({
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": name},
            "spec": {
                "jobRetainPolicy": "delete",
                "flows": [
                    {"name": "one", "dependsOn": {"targets": targets_of_one}},
                    {"name": "two", "dependsOn": {"targets": ["one"]}},
                ],
            },
        })  # fmt: skip

    denied = installed.kubectl("create", "-f", "-", input=flow("cyclic", ["two"]), check=False)
    assert denied.returncode != 0 and "jobflow Flow is not DAG" in denied.stderr
    installed.kubectl("create", "-f", "-", input=flow("pair", []))
    wait_for("the flow to succeed", lambda: kubectl_json(installed, "jf", "pair").get(
        "status", {}).get("state", {}).get("phase") == "Succeed")  # fmt: skip
    wait_for("the flow's Jobs to go", lambda: not any(
        j["metadata"]["name"].startswith("pair-")
        for j in kubectl_json(installed, "vcjob")["items"]))  # fmt: skip
    installed.kubectl("delete", "jf", "pair", "--wait=false")


def test_scaling_suspending_and_ttl(installed: LocalCluster, tmp_path: Path) -> None:
    long_running = {"sim.vcjob.io/runtime": "60s"}
    manifest = job_manifest("scaled", plugins={"svc": [], "ssh": []}, annotations=long_running)
    installed.kubectl("create", "-f", "-", input=manifest)
    wait_for("job scaled to run", lambda: job_phase(installed, "scaled") == "Running")
    scale = [
        {"op": "replace", "path": "/spec/tasks/0/replicas", "value": 3},
        {"op": "replace", "path": "/spec/minAvailable", "value": 3},
    ]
    installed.kubectl("patch", "vcjob", "scaled", "--type", "json", "-p", json.dumps(scale))

    def hosts() -> str:
        return installed.kubectl("get", "cm", "scaled-svc", "-o", "yaml", check=False).stdout

    wait_for("the hosts ConfigMap to list three workers", lambda: "scaled-worker-2" in hosts())
    # Suspend, resume, suspend: the second abort repeats an event, which the controller counts
    # on the first one (patch) instead of writing a new one.
    for action, phases in (
        ("suspend", ("Aborted",)),
        ("resume", ("Pending", "Running")),
        ("suspend", ("Aborted",)),
    ):
        command = [*vcjob_executable(), action, "scaled", "--kubeconfig", str(installed.kubeconfig)]
        subprocess.run(command, check=True, timeout=60)
        wait_for(f"job scaled to be {' or '.join(phases)} after {action}",
                 lambda phases=phases: job_phase(installed, "scaled") in phases)  # fmt: skip
    # Events are written after the status that shows the phase: wait for the repeat.
    wait_for(
        "an event of the job repeated (counted on the first)",
        lambda: any(
            int(e.get("count") or 1) > 1
            for e in kubectl_json(
                installed, "events", "--field-selector", "involvedObject.name=scaled"
            )["items"]
        ),
    )
    claim = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "given"},
           "spec": claim}  # fmt: skip
    installed.kubectl("create", "-f", "-", input=json.dumps(pvc))
    volumes = [
        {"mountPath": "/given", "volumeClaimName": "given"},
        {"mountPath": "/scratch", "volumeClaim": {"accessModes": ["ReadWriteOnce"],
                                                  "resources": {"requests": {"storage": "1Gi"}}}},
    ]  # fmt: skip
    brief = job_manifest("brief", ttlSecondsAfterFinished=0, volumes=volumes)
    installed.kubectl("create", "-f", "-", input=brief)
    wait_for("job brief to be deleted after its TTL", lambda: installed.kubectl(
        "get", "vcjob", "brief", check=False).returncode != 0)  # fmt: skip


# Kubernetes' own gang API is served from 1.37 (the pinned release); the manual lane of an older
# release (docs/kubernetes-versions.md) runs the chart on a cluster without it.
GANG_API_SERVED = bool(controlplane.kubernetes_features(kubebin.KUBERNETES_VERSION).runtime_config)


@pytest.mark.skipif(
    not GANG_API_SERVED, reason=f"Kubernetes {kubebin.KUBERNETES_VERSION} has no gang API"
)
def test_kubernetes_gang_through_the_chart(installed: LocalCluster) -> None:
    """A default-scheduler Job gets Kubernetes' own gang (1.37): the chart's controller creates
    the Workload and the PodGroup and resizes the PodGroup on scale, and a CompositePodGroup for
    a Job whose tasks have their own minAvailable (docs/native-gang.md)."""
    manifest = job_manifest(
        "native", schedulerName="default-scheduler", annotations={"sim.vcjob.io/runtime": "60s"}
    )
    installed.kubectl("create", "-f", "-", input=manifest)
    wait_for("job native to run", lambda: job_phase(installed, "native") == "Running")
    workloads = kubectl_json(installed, "workloads.scheduling.k8s.io")["items"]
    assert [w["spec"]["controllerRef"]["name"] for w in workloads] == ["native"]
    scale = [
        {"op": "replace", "path": "/spec/tasks/0/replicas", "value": 3},
        {"op": "replace", "path": "/spec/minAvailable", "value": 3},
    ]
    installed.kubectl("patch", "vcjob", "native", "--type", "json", "-p", json.dumps(scale))
    wait_for(
        "the job's PodGroup resized to 3",
        lambda: (
            [
                g["spec"]["schedulingPolicy"]
                for g in kubectl_json(installed, "podgroups.scheduling.k8s.io")["items"]
            ]
            == [{"gang": {"minCount": 3}}]
        ),
    )
    installed.kubectl("delete", "vcjob", "native")
    # A task with a minAvailable of its own: the tasks' gangs under a CompositePodGroup.
    document = yaml.safe_load(
        job_manifest(
            "tasks", schedulerName="default-scheduler", annotations={"sim.vcjob.io/runtime": "60s"}
        )
    )
    worker = document["spec"]["tasks"][0]
    document["spec"]["tasks"] = [
        {**worker, "name": "ps", "replicas": 1},
        {**worker, "replicas": 2, "minAvailable": 1},
    ]
    installed.kubectl("create", "-f", "-", input=yaml.safe_dump(document))
    wait_for("job tasks to run", lambda: job_phase(installed, "tasks") == "Running")
    composites = kubectl_json(installed, "compositepodgroups.scheduling.k8s.io")["items"]
    assert [c["metadata"]["ownerReferences"][0]["name"] for c in composites] == ["tasks"]
    installed.kubectl("delete", "vcjob", "tasks")


def test_elastic_jobs_are_sized_from_node_capacity(installed: LocalCluster) -> None:
    elastic = {"minReplicas": 1, "maxReplicas": 2}
    runtime = {"sim.vcjob.io/runtime": "30s"}
    manifest = job_manifest("elastic", replicas=1, task=elastic, annotations=runtime)
    installed.kubectl("create", "-f", "-", input=manifest)

    def grown() -> bool:
        job = kubectl_json(installed, "vcjob", "elastic")
        return int(job["spec"]["tasks"][0]["replicas"]) == 2

    wait_for("the elastic task to grow into idle capacity", grown)


def test_helm_test_runs_its_pod(installed: LocalCluster, helm_home: Path) -> None:
    done = helm(installed, helm_home, "test", RELEASE, "-n", NAMESPACE, "--logs",
                "--timeout", f"{WAIT:.0f}s")  # fmt: skip
    assert "PASS: the webhook denied the invalid Job" in done.stdout


def test_certificates_rotate_through_the_secret(installed: LocalCluster) -> None:
    """A new CA (published beside the old one, as a rotation does) and a serving pair it signed,
    written into the webhook's Secret, are adopted by every webhook pod at its next sync (about a
    minute): caBundle, served certificate, and admission keeps working."""
    secret = kubectl_json(installed, "secret", "vcjob-webhook-tls", "-n", NAMESPACE)
    old_cas = base64.b64decode(secret["data"]["ca.crt"])
    names = ["vcjob-webhook", f"vcjob-webhook.{NAMESPACE}", f"vcjob-webhook.{NAMESPACE}.svc"]
    bundle = certgen.issue([*names, f"vcjob-webhook.{NAMESPACE}.svc.cluster.local"])
    data = {
        "ca.crt": bundle.ca.cert_pem + old_cas,
        "ca.key": bundle.ca.key_pem,
        "tls.crt": bundle.serving.cert_pem,
        "tls.key": bundle.serving.key_pem,
    }
    patch = {"data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
    installed.kubectl(
        "patch", "secret", "vcjob-webhook-tls", "-n", NAMESPACE, "-p", json.dumps(patch)
    )
    new_serving = x509.load_pem_x509_certificate(bundle.serving.cert_pem)

    def adopted() -> bool:
        config = kubectl_json(
            installed, "validatingwebhookconfiguration", "vcjob-validating-webhook"
        )
        if any(
            bundle.ca.cert_pem not in base64.b64decode(w["clientConfig"].get("caBundle", ""))
            for w in config["webhooks"]
        ):
            return False
        pods = kubectl_json(installed, "pods", "-n", NAMESPACE, "-l",
                            "app.kubernetes.io/component=webhook")["items"]  # fmt: skip
        for pod in pods:
            try:
                served = ssl.get_server_certificate((pod["status"]["podIP"], 9443), timeout=5)
            except OSError:
                return False
            if x509.load_pem_x509_certificate(served.encode()) != new_serving:
                return False
        return True

    # The sync runs a minute after the last one ended; then the pod reloads its files.
    wait_for("every webhook pod to serve the new certificate", adopted, timeout=180)
    admitted = installed.kubectl("create", "--dry-run=server", "-f", "-", input=job_manifest("x"))
    assert "created (server dry run)" in admitted.stdout


def controller_pod_leads(cluster: LocalCluster) -> bool:
    """The Lease is held by a controller pod that exists and is not going away."""
    lease = kubectl_json(cluster, "lease", "vcjob-controller", "-n", NAMESPACE)
    pods = kubectl_json(cluster, "pods", "-n", NAMESPACE, "-l",
                        "app.kubernetes.io/component=controller")["items"]  # fmt: skip
    names = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
    holder = str(lease["spec"].get("holderIdentity", ""))
    return any(holder.startswith(name) for name in names)


def running_jobs(cluster: LocalCluster, names: set[str]) -> dict[str, dict[str, Any]]:
    jobs = kubectl_json(cluster, "vcjob")["items"]
    return {
        j["metadata"]["name"]: j
        for j in jobs
        if j["metadata"]["name"] in names
        and (j.get("status") or {}).get("state", {}).get("phase") == "Running"
    }


def job_pods(cluster: LocalCluster, names: set[str]) -> dict[str, tuple[str, int]]:
    """Each pod of the Jobs: its UID and its containers' restarts."""
    pods = kubectl_json(cluster, "pods")["items"]
    return {
        p["metadata"]["name"]: (
            p["metadata"]["uid"],
            sum(
                c.get("restartCount", 0)
                for c in (p.get("status") or {}).get("containerStatuses") or []
            ),
        )
        for p in pods
        if (p["metadata"].get("labels") or {}).get("volcano.sh/job-name") in names
    }


def test_upgrade_from_the_previous_release_leaves_running_jobs_alone(
    installed: LocalCluster, helm_home: Path, previous_tree: Path | str
) -> None:
    """The previous release's chart and code run 20 Jobs; `helm upgrade` to this tree's rolls
    both Deployments with no admission refused meanwhile, recreates and restarts no pod, and
    the new controller takes over the Lease and the Jobs."""
    if not isinstance(previous_tree, Path):
        pytest.skip(previous_tree)
    previous_chart = str(previous_tree / "charts" / "vcjob")
    helm(installed, helm_home, "upgrade", RELEASE, previous_chart, "-n", NAMESPACE, "--wait",
         "--timeout", f"{WAIT:.0f}s", *VALUES,
         "--set", f"image.repository={PREVIOUS_REPOSITORY}")  # fmt: skip
    wait_for("the previous release's controller to lead", lambda: controller_pod_leads(installed))
    names = {f"upgrade-{i}" for i in range(20)}
    for name in sorted(names):
        installed.kubectl("create", "-f", "-", input=job_manifest(
            name, replicas=1, annotations={labels.SIM_RUNTIME_KEY: "1h"}))  # fmt: skip

    def all_running() -> dict[str, dict[str, Any]] | None:
        jobs = running_jobs(installed, names)
        return jobs if len(jobs) == len(names) else None

    before = wait_for("20 Jobs Running under the previous release", all_running)
    pods = job_pods(installed, names)
    assert len(pods) == len(names)

    failures: list[str] = []
    stop = threading.Event()

    def admit_continuously() -> None:
        manifest = job_manifest("probe")
        while not stop.is_set():
            done = installed.kubectl("create", "--dry-run=server", "-f", "-", input=manifest,
                                     check=False)  # fmt: skip
            if done.returncode != 0:
                failures.append(done.stderr.strip())
            time.sleep(0.2)  # paces the probes: admissions all through the upgrade

    prober = threading.Thread(target=admit_continuously, daemon=True)
    prober.start()
    try:
        helm(installed, helm_home, "upgrade", RELEASE, CHART, "-n", NAMESPACE, "--wait",
             "--timeout", f"{WAIT:.0f}s", *VALUES)  # fmt: skip
        wait_for("this release's controller to lead", lambda: controller_pod_leads(installed))
    finally:
        stop.set()
        prober.join(30)
    assert failures == []
    # It acts: a new Job runs to completion.
    installed.kubectl("create", "-f", "-", input=job_manifest("after-upgrade"))
    wait_for(
        "after-upgrade Completed", lambda: job_phase(installed, "after-upgrade") == "Completed"
    )
    after = running_jobs(installed, names)
    assert sorted(after) == sorted(before), "every Job still Running"
    for name, job in after.items():
        status, was = job["status"], before[name]["status"]
        assert (status["version"], status["retryCount"]) == (was["version"], was["retryCount"])
    assert job_pods(installed, names) == pods, "no pod recreated or restarted"
    installed.kubectl("delete", "vcjob", *sorted(names), "after-upgrade", "--wait=false")


@pytest.fixture(scope="module")
def uninstalled_at() -> dict[str, str]:
    """When `helm uninstall` began: its teardown removes RBAC while the pods still stop."""
    return {}


def test_uninstall_keeps_the_crds(
    installed: LocalCluster, helm_home: Path, uninstalled_at: dict[str, str]
) -> None:
    uninstalled_at["at"] = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
    helm(installed, helm_home, "uninstall", RELEASE, "-n", NAMESPACE, "--wait",
         "--timeout", f"{WAIT:.0f}s")  # fmt: skip
    crds = kubectl_json(installed, "crd")["items"]
    assert {"jobs.batch.volcano.sh", "podgroups.scheduling.volcano.sh"} <= {
        c["metadata"]["name"] for c in crds
    }


def test_least_privilege_from_the_audit_log(
    bare: LocalCluster, helm_home: Path, uninstalled_at: dict[str, str]
) -> None:
    """Runs last: the audit log of everything above (up to the uninstall, whose teardown
    removes the RBAC objects before the pods have stopped) against the chart's own rules."""
    rendered = helm(bare, helm_home, "template", RELEASE, CHART, "-n", NAMESPACE, *VALUES).stdout
    documents = [d for d in yaml.safe_load_all(rendered) if d]
    grants = [g for g in chart_grants(documents) if g.user in (CONTROLLER_SA, WEBHOOK_SA)]
    assert grants, "the chart grants its ServiceAccounts nothing?"
    records = read_audit_log(bare.dir / "audit.log")
    if "at" in uninstalled_at:
        records = [r for r in records if r["timestamp"] < uninstalled_at["at"]]
    denied = refused(records, [CONTROLLER_SA, WEBHOOK_SA])
    assert denied == [], "refused calls:\n" + "\n".join(json.dumps(r) for r in denied)
    unused = unused_grants(grants, records)
    if not GANG_API_SERVED:
        # Granted for the day the cluster serves the gang API; nothing can use them before.
        gang_api = {"workloads", "podgroups", "compositepodgroups"}
        unused = [
            g for g in unused if not (g.group == "scheduling.k8s.io" and g.resource in gang_api)
        ]
    assert unused == [], "grants nothing used:\n" + "\n".join(g.describe() for g in unused)
