"""An idle cluster stays idle: once every Job has finished, vcjob's processes stop talking to the
API server.

A Job of every plugin and policy kind (the examples, a GPU-only trainer, an elastic job, retries
that run out, a deadline, Commands that abort and terminate, a TTL, a suspended Job, a JobFlow, a
CronJob that is not due, a Queue of its own) is driven to its end on one cluster whose
kube-apiserver writes an audit log. Then the requests each vcjob process sends (told apart by
their User-Agent) are counted over a minute of nothing happening: a controller that deletes what
is already gone, or a node agent retrying a refused status, shows up as hundreds.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.running import LocalCluster, running_cluster
from tests.support.polling import wait_for

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
RUNTIME_KEY = "sim.vcjob.io/runtime"
FINISHED = {"Completed", "Failed", "Aborted", "Terminated"}

# Requests a process may send in a quiet minute besides its Lease renewals, the node agent's
# node heartbeats (a kubelet's job) and its watches coming back after their timeout: a periodic
# look at a Queue, say. A loop sends hundreds.
QUIET_MINUTE_BUDGET = {"vcjob-controller": 6, "vcjob-webhook": 6, "vcjob-node-agent": 6}
# A watch the server ended after its timeout (5 to 10 minutes) comes back once, and a process may
# watch one resource several times (each controller its own informer). A watch given up for want
# of an event before kube-apiserver's once-a-minute bookmark comes back twice or more a minute,
# and one that is ended at once and comes back again and again, dozens.
WATCHES_PER_RESOURCE_PER_MINUTE = 6
QUIET_WINDOW = dt.timedelta(seconds=60)
# Before the quiet minute: how long the processes may take to finish what the last Jobs left
# (pods deleted, plugin objects removed, the TTL), and the stretch of silence that says they have.
SETTLE_TIMEOUT = 120.0
SETTLE_WINDOW = dt.timedelta(seconds=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    workdir = tmp_path_factory.mktemp("idle")
    with running_cluster(
        workdir,
        controller=True,
        nodes=3,
        node_gpu=4,
        pod_runtime="2s",
        extra_args=["--audit-log", str(workdir / "audit.jsonl"), "--elastic-period", "2s"],
    ) as running:
        yield running


# --- the audit log ------------------------------------------------------------------------------


def _when(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def vcjob_requests(audit: Path, since: dt.datetime) -> Counter[tuple[str, str, str]]:
    """(process, "verb code", resource) of every request a vcjob process sent since `since`, Lease
    renewals and the node agent's node heartbeats left out."""
    seen: set[str] = set()
    counts: Counter[tuple[str, str, str]] = Counter()
    with audit.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # the line being written
            audit_id = str(event.get("auditID"))
            if audit_id in seen:
                continue
            seen.add(audit_id)
            process = str(event.get("userAgent") or "").split("/", 1)[0]
            if process not in QUIET_MINUTE_BUDGET:
                continue
            if _when(str(event.get("requestReceivedTimestamp"))) < since:
                continue
            ref = event.get("objectRef") or {}
            resource = "/".join(filter(None, (ref.get("resource"), ref.get("subresource"))))
            if ref.get("resource") == "leases":
                continue
            if process == "vcjob-node-agent" and ref.get("resource") == "nodes":
                continue
            code = (event.get("responseStatus") or {}).get("code")
            counts[
                process, f"{event.get('verb')} {code}", resource or str(event.get("requestURI"))
            ] += 1
    return counts


def watches_ended_since(audit: Path, since: dt.datetime) -> Counter[tuple[str, str]]:
    """(process, resource) of every watch a vcjob process opened since `since` that has already
    ended: a watch asks for 5 to 10 minutes, so one that ends within a minute was given up."""
    ended: Counter[tuple[str, str]] = Counter()
    with audit.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # the line being written
            if event.get("verb") != "watch" or event.get("stage") != "ResponseComplete":
                continue
            process = str(event.get("userAgent") or "").split("/", 1)[0]
            if process not in QUIET_MINUTE_BUDGET:
                continue
            if _when(str(event.get("requestReceivedTimestamp"))) < since:
                continue
            ref = event.get("objectRef") or {}
            ended[process, str(ref.get("resource"))] += 1
    return ended


def by_process(counts: Counter[tuple[str, str, str]]) -> Counter[str]:
    """Requests per process, watches left out (`restarted_watches` counts those)."""
    totals: Counter[str] = Counter()
    for (process, verb, _resource), count in counts.items():
        if not verb.startswith("watch "):
            totals[process] += count
    return totals


def restarted_watches(counts: Counter[tuple[str, str, str]]) -> dict[tuple[str, str], int]:
    """The watches opened more often than a timeout explains, by (process, resource)."""
    watches: Counter[tuple[str, str]] = Counter()
    for (process, verb, resource), count in counts.items():
        if verb.startswith("watch "):
            watches[process, resource] += count
    return {key: n for key, n in watches.items() if n > WATCHES_PER_RESOURCE_PER_MINUTE}


# --- the workload -------------------------------------------------------------------------------


def _job(name: str, task: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"schedulerName": "volcano", "minAvailable": 1, "tasks": [task], **spec},
    }


def _task(
    replicas: int = 1,
    runtime: str = "2s",
    resources: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "name": "main",
        "replicas": replicas,
        "template": {
            "metadata": {"annotations": {RUNTIME_KEY: runtime, **(annotations or {})}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "resources": resources or {"requests": {"cpu": "100m"}},
                    }
                ],
            },
        },
    }


def _shortened(document: dict[str, Any], runtime: str) -> dict[str, Any]:
    """An example Job whose pods run for `runtime` (the success policy's workers keep theirs:
    the policy ends the Job while they run)."""
    for task in document["spec"]["tasks"]:
        annotations = task["template"].setdefault("metadata", {}).setdefault("annotations", {})
        if document["metadata"]["name"] != "leader-decides" or task["name"] == "leader":
            annotations[RUNTIME_KEY] = runtime
    return document


def example_jobs() -> list[dict[str, Any]]:
    jobs = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == "Job":
                runtime = "20s" if document["metadata"]["name"] == "elastic-resnet" else "2s"
                jobs.append(_shortened(document, runtime))
    return jobs


def policy_jobs(queue: str) -> list[dict[str, Any]]:
    gpu_only = {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}
    return [
        # Requests nothing but a GPU: BestEffort to kube-apiserver, whatever else it asks.
        _job("gpu-only", _task(replicas=2, resources=gpu_only), minAvailable=2),
        _job(
            "retries-run-out",
            _task(annotations={"sim.vcjob.io/exit-code": "1"}),
            queue=queue,
            maxRetry=2,
            policies=[{"event": "PodFailed", "action": "RestartJob"}],
        ),
        _job("past-its-deadline", _task(runtime="600s"), activeDeadlineSeconds=5),
        _job("to-abort", _task(runtime="600s")),
        _job("to-terminate", _task(runtime="600s")),
        _job("with-ttl", _task(), ttlSecondsAfterFinished=0),
        _job("suspended", _task(), suspend=True),
    ]


def flow_objects() -> list[dict[str, Any]]:
    template_spec = _job("", _task())["spec"]
    return [
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": name},
            "spec": template_spec,
        }
        for name in ("first", "second")
    ] + [
        {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobFlow",
            "metadata": {"name": "two-steps"},
            "spec": {
                "jobRetainPolicy": "retain",
                "flows": [
                    {"name": "first"},
                    {"name": "second", "dependsOn": {"targets": ["first"]}},
                ],
            },
        },
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "CronJob",
            "metadata": {"name": "not-due"},
            "spec": {"schedule": "0 0 29 2 *", "jobTemplate": {"spec": _job("", _task())["spec"]}},
        },
    ]


def _apply(cluster: LocalCluster, namespace: str, objects: list[dict[str, Any]]) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=body)


def _get(cluster: LocalCluster, namespace: str, *what: str) -> Any:
    return json.loads(cluster.kubectl("get", "-n", namespace, *what, "-o", "json").stdout)


def _phases(cluster: LocalCluster, namespace: str) -> dict[str, str | None]:
    return {
        job["metadata"]["name"]: ((job.get("status") or {}).get("state") or {}).get("phase")
        for job in _get(cluster, namespace, "vcjob")["items"]
    }


def _command(cluster: LocalCluster, namespace: str, job: str, action: str) -> None:
    target = _get(cluster, namespace, "vcjob", job)
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": f"{job}-{action.lower()}-"},
        "action": action,
        "target": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": job,
            "uid": target["metadata"]["uid"],
        },
    }
    _apply(cluster, namespace, [command])


def test_nothing_is_sent_once_every_job_has_finished(cluster: LocalCluster) -> None:
    namespace = f"idle-{uuid.uuid4().hex[:6]}"
    queue = f"idle-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    queue_body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": queue},
        "spec": {"weight": 1},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(queue_body))
    jobs = example_jobs() + policy_jobs(queue)
    _apply(cluster, namespace, jobs + flow_objects())

    wait_for(
        lambda: _phases(cluster, namespace),
        lambda p: p.get("to-abort") == "Running" and p.get("to-terminate") == "Running",
        "the jobs to abort and terminate running",
        timeout=180,
    )
    _command(cluster, namespace, "to-abort", "AbortJob")
    _command(cluster, namespace, "to-terminate", "TerminateJob")

    ending = {job["metadata"]["name"] for job in jobs} - {"with-ttl", "suspended"}
    ending |= {"two-steps-first", "two-steps-second"}
    wait_for(
        lambda: _phases(cluster, namespace),
        lambda p: all(p.get(name) in FINISHED for name in ending) and "with-ttl" not in p,
        "every job finished (and the one with a TTL deleted)",
        timeout=300,
    )
    flow = _get(cluster, namespace, "jobflow", "two-steps")
    assert (flow.get("status") or {}).get("state", {}).get("phase") == "Succeed", flow

    audit = cluster.dir / "audit.jsonl"

    def last_seconds() -> Counter[tuple[str, str, str]]:
        return vcjob_requests(audit, dt.datetime.now(dt.UTC) - SETTLE_WINDOW)

    # Settling: what the last Jobs left is carried out; then ten seconds of (near) silence.
    wait_for(
        last_seconds,
        lambda counts: all(by_process(counts)[p] <= 2 for p in QUIET_MINUTE_BUDGET),
        "vcjob's processes to fall quiet after the last Job finished",
        timeout=SETTLE_TIMEOUT,
        interval=2.0,
    )

    # The quiet minute: read the log every few seconds and stop at the first process over budget.
    start = dt.datetime.now(dt.UTC)

    def minute_so_far() -> tuple[
        dt.datetime, Counter[tuple[str, str, str]], Counter[tuple[str, str]]
    ]:
        return (
            dt.datetime.now(dt.UTC),
            vcjob_requests(audit, start),
            watches_ended_since(audit, start),
        )

    def over_budget(counts: Counter[tuple[str, str, str]], ended: Counter[tuple[str, str]]) -> bool:
        totals = by_process(counts)
        return (
            bool(ended)
            or bool(restarted_watches(counts))
            or any(totals[p] > budget for p, budget in QUIET_MINUTE_BUDGET.items())
        )

    now, counts, ended = wait_for(
        minute_so_far,
        lambda seen: seen[0] - start >= QUIET_WINDOW or over_budget(seen[1], seen[2]),
        "a minute of an idle cluster",
        timeout=QUIET_WINDOW.total_seconds() + 30,
        interval=5.0,
    )
    assert not over_budget(counts, ended), (
        f"vcjob sent requests on an idle cluster in {(now - start).total_seconds():.0f}s "
        f"(budget per minute {QUIET_MINUTE_BUDGET}): {counts.most_common(10)}; "
        f"watches re-opened more than {WATCHES_PER_RESOURCE_PER_MINUTE} times: "
        f"{restarted_watches(counts)}; watches opened and already ended: {dict(ended)}"
    )
