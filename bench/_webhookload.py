"""The webhook under real load (`bench/webhook.py --real-load`): varied Jobs created through
kube-apiserver, and the same Jobs' AdmissionReviews sent to the webhook directly; vcjob's webhook
side by side with Volcano's `vc-webhook-manager` when its binary is given.

Both contenders serve the same real kube-apiserver (with etcd) at once, each registered for its
own namespace (a `namespaceSelector` on `bench.vcjob.io/admission`), with the Queue check on and
each at its production defaults. The load is `wrk` (or the bundled generator): every request a
different Job (names, tasks, templates, plugins vary; the memo's miss path), the same bodies for
both contenders, in interleaved slices. A third namespace without a webhook gives kube-apiserver's
own floor.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from _controllerbench import process_cpu_seconds, status_mb

from kubeio.client import JOBS, QUEUES, Kube, Resource
from kubeio.errors import AlreadyExistsError, KubeError
from localcluster.running import free_port, running_cluster
from shared import certgen, labels

ADMISSION_LABEL: Final = "bench.vcjob.io/admission"
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
MUTATING = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", namespaced=False,
)  # fmt: skip
VALIDATING = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", namespaced=False,
)  # fmt: skip
ID_PLACEHOLDER: Final = "@ID@"
BODY_VARIANTS: Final = 64
METRIC: Final = "apiserver_admission_webhook_admission_duration_seconds"


# ---------------------------------------------------------------------------------------------
# Pure parts: the Jobs, the webhook configurations, the apiserver's histogram


def varied_job(index: int, name: str, namespace: str) -> dict[str, Any]:
    """One of many realistic Jobs: 1-3 tasks, their replicas, images, commands, env, resources,
    ports, plugins and policies all depend on `index` (every one valid for both webhooks)."""
    images = ("busybox:1.36", "python:3.11-slim", "nvcr.io/nvidia/pytorch:24.01-py3", "nginx:1.27")
    task_sets = (("worker",), ("ps", "worker"), ("master", "worker", "evaluator"))
    tasks = []
    total = 0
    for position, task_name in enumerate(task_sets[index % len(task_sets)]):
        replicas = 1 + (index + position) % 6
        total += replicas
        cpu = 1 + (index + position) % 4
        container: dict[str, Any] = {
            "name": task_name,
            "image": images[(index + position) % len(images)],
            "command": ["sh", "-c", f"echo {task_name} {index}; sleep {10 + index % 50}"],
            "env": [
                {"name": f"VAR_{k}", "value": f"{index}-{position}-{k}"}
                for k in range(1 + index % 5)
            ],
            "resources": {
                "requests": {"cpu": str(cpu), "memory": f"{cpu}Gi"},
                "limits": {"cpu": str(cpu), "memory": f"{2 * cpu}Gi"},
            },
            "ports": [{"containerPort": 2222 + position, "name": f"{task_name[:6]}-port"}],
        }
        task: dict[str, Any] = {
            "name": task_name,
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": name, "role": task_name}},
                "spec": {
                    "containers": [container],
                    "restartPolicy": ("Never", "OnFailure")[index % 2],
                },
            },
        }
        if index % 3 == 0:
            task["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
        tasks.append(task)
    plugins = ({"env": [], "svc": []}, {"ssh": [], "svc": []}, {"env": []}, {})[index % 4]
    spec: dict[str, Any] = {
        "minAvailable": max(1, total - index % 3),
        "schedulerName": "volcano",
        "queue": "default",
        "tasks": tasks,
        "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
    }
    if plugins:
        spec["plugins"] = plugins
    if index % 5 == 0:
        spec["maxRetry"] = 5
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def admission_review(job: dict[str, Any], uid: str) -> dict[str, Any]:
    """The AdmissionReview kube-apiserver sends for the CREATE of `job`."""
    gvk = {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"}
    gvr = {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": job["metadata"]["name"],
            "namespace": job["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
            "object": job,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


def body_templates(namespace: str, direct: bool) -> list[str]:
    """BODY_VARIANTS request bodies with ID_PLACEHOLDER where each request puts its own id (the
    Job's name and the review's uid): Jobs to create, or their AdmissionReviews."""
    bodies = []
    for index in range(BODY_VARIANTS):
        job = varied_job(index, f"b-{ID_PLACEHOLDER}", namespace)
        document = admission_review(job, ID_PLACEHOLDER) if direct else job
        bodies.append(json.dumps(document, separators=(",", ":")))
    return bodies


@dataclass(frozen=True)
class Contender:
    """One webhook under test: its name, the paths it serves and the webhook names it registers."""

    name: str
    mutate_path: str
    validate_path: str

    @property
    def namespace(self) -> str:
        return f"bench-{self.name}"

    @property
    def mutating_name(self) -> str:
        return f"mutatejob.{self.name}.bench"

    @property
    def validating_name(self) -> str:
        return f"validatejob.{self.name}.bench"


VCJOB: Final = Contender("vcjob", labels.MUTATE_PATH, labels.VALIDATE_PATH)
# vc-webhook-manager finds its configurations by these names (it only adds its CA to them).
VOLCANO: Final = Contender("volcano", "/jobs/mutate", "/jobs/validate")
VOLCANO_CONFIG_NAMES: Final = {
    "mutating": "volcano-admission-service-jobs-mutate",
    "validating": "volcano-admission-service-jobs-validate",
}


def webhook_configurations(
    contender: Contender, port: int, ca_pem: bytes
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration of `contender` on 127.0.0.1:`port`,
    for the Jobs of its own namespace only; the same rules and settings for every contender."""

    def webhook(name: str, path: str, operations: list[str]) -> dict[str, Any]:
        return {
            "name": name,
            "clientConfig": {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca_pem).decode(),
            },
            "rules": [
                {
                    "apiGroups": ["batch.volcano.sh"],
                    "apiVersions": ["v1alpha1"],
                    "operations": operations,
                    "resources": ["jobs"],
                }
            ],
            "namespaceSelector": {"matchLabels": {ADMISSION_LABEL: contender.name}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10,
        }

    names = (
        VOLCANO_CONFIG_NAMES
        if contender == VOLCANO
        else {
            "mutating": f"{contender.name}-bench-mutate",
            "validating": f"{contender.name}-bench-validate",
        }
    )
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": names["mutating"]},
        "webhooks": [webhook(contender.mutating_name, contender.mutate_path, ["CREATE"])],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": names["validating"]},
        "webhooks": [
            webhook(contender.validating_name, contender.validate_path, ["CREATE", "UPDATE"])
        ],
    }
    return mutating, validating


Histogram = dict[float, float]  # upper bound -> cumulative count ("+Inf" as math.inf)

_SAMPLE = re.compile(r"^(?P<metric>[a-z_]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def admission_histograms(metrics_text: str) -> dict[str, Histogram]:
    """kube-apiserver's `METRIC` buckets per webhook name, summed over operation, rejection and
    type: cumulative counts by upper bound."""
    out: dict[str, Histogram] = {}
    for line in metrics_text.splitlines():
        match = _SAMPLE.match(line)
        if match is None or match["metric"] != f"{METRIC}_bucket":
            continue
        tags = dict(_LABEL.findall(match["labels"]))
        bound = float("inf") if tags["le"] == "+Inf" else float(tags["le"])
        histogram = out.setdefault(tags["name"], {})
        histogram[bound] = histogram.get(bound, 0.0) + float(match["value"])
    return out


def histogram_delta(after: Histogram, before: Histogram) -> Histogram:
    return {bound: count - before.get(bound, 0.0) for bound, count in after.items()}


def histogram_add(total: Histogram, part: Histogram) -> Histogram:
    return {bound: total.get(bound, 0.0) + part.get(bound, 0.0) for bound in {*total, *part}}


def histogram_quantile(histogram: Histogram, q: float) -> float:
    """The q-quantile as Prometheus' histogram_quantile computes it: linear inside the bucket
    that holds it (the largest finite bound when it falls in +Inf; nan without observations)."""
    bounds = sorted(histogram)
    if not bounds or histogram[bounds[-1]] <= 0:
        return float("nan")
    rank = q * histogram[bounds[-1]]
    lower_bound, lower_count = 0.0, 0.0
    for bound in bounds:
        count = histogram[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            width = count - lower_count
            fraction = (rank - lower_count) / width if width > 0 else 1.0
            return lower_bound + (bound - lower_bound) * fraction
        lower_bound, lower_count = bound, count
    return lower_bound


# ---------------------------------------------------------------------------------------------
# Load


@dataclass
class Slice:
    """One timed slice of load: requests, seconds, p50 and p99 latency (s), non-2xx answers."""

    requests: int
    seconds: float
    p50: float
    p99: float
    errors: int


@dataclass
class Figures:
    """Every slice of one target, and the admission histogram and CPU seconds they caused."""

    slices: list[Slice] = field(default_factory=list)
    histogram: dict[str, Histogram] = field(default_factory=dict)
    cpu_seconds: float = 0.0

    def median(self, pick: Callable[[Slice], float]) -> float:
        values = sorted(pick(s) for s in self.slices)
        return values[len(values) // 2] if values else float("nan")

    def spread(self, pick: Callable[[Slice], float]) -> tuple[float, float]:
        values = [pick(s) for s in self.slices]
        return (min(values), max(values)) if values else (float("nan"), float("nan"))

    @property
    def requests(self) -> int:
        return sum(s.requests for s in self.slices)

    @property
    def errors(self) -> int:
        return sum(s.errors for s in self.slices)


def _lua_script(bodies: Sequence[str], path: str, headers: dict[str, str], prefix: str) -> str:
    """A wrk script: every request one of `bodies` in turn, ID_PLACEHOLDER replaced by an id
    unique to the thread and request."""
    quoted = ",\n".join(f"[==[{body}]==]" for body in bodies)
    header_lines = "\n".join(
        f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()
    )
    return f"""
wrk.method = "POST"
{header_lines}
local bodies = {{
{quoted}
}}
local counter = 0
local next_thread = 0
function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
end
request = function()
  counter = counter + 1
  local id = string.format("{prefix}-%d-%d", tid, counter)
  local body = bodies[(counter % #bodies) + 1]:gsub("{ID_PLACEHOLDER}", id)
  return wrk.format(nil, "{path}", nil, body)
end
"""


def _seconds(value: str, unit: str) -> float:
    return float(value) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]


def wrk_slice(
    wrk: str,
    url: str,
    path: str,
    bodies: Sequence[str],
    headers: dict[str, str],
    prefix: str,
    connections: int,
    seconds: int,
) -> Slice:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(_lua_script(bodies, path, headers, prefix))
    try:
        result = subprocess.run(
            [
                wrk, "-t", str(min(2, connections)), "-c", str(connections), "-d", f"{seconds}s",
                "--timeout", "10s", "--latency", "-s", script.name, url,
            ],
            capture_output=True, text=True, check=True, timeout=seconds + 60,
        )  # fmt: skip
    finally:
        Path(script.name).unlink()
    return parse_wrk(result.stdout + result.stderr)


def parse_wrk(text: str) -> Slice:
    """A Slice from wrk's report (run with --latency): total, p50, p99, failures."""
    done = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)\b", text)
    if done is None:
        raise RuntimeError(f"wrk printed no total:\n{text}")
    percentiles = {
        pct: _seconds(value, unit)
        for pct, value, unit in re.findall(r"\s(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\b", text)
    }
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    socket_errors = re.search(r"Socket errors: (.*)", text)
    errors = int(non_2xx.group(1)) if non_2xx else 0
    if socket_errors:
        errors += sum(int(n) for n in re.findall(r"\d+", socket_errors.group(1)))
    return Slice(
        requests=int(done.group(1)),
        seconds=_seconds(done.group(2), done.group(3)),
        p50=percentiles.get("50", float("nan")),
        p99=percentiles.get("99", float("nan")),
        errors=errors,
    )


async def _bundled_connection(
    port: int,
    requests: Callable[[int], bytes],
    context: ssl.SSLContext,
    until: float,
    out: list[tuple[float, bool]],
    first: int,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    count = first
    try:
        while time.perf_counter() < until:
            count += 1
            started = time.perf_counter()
            writer.write(requests(count))
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
            await reader.readexactly(int(length.group(1)) if length else 0)
            out.append((time.perf_counter() - started, head[9:10] == b"2"))
    finally:
        writer.close()
        # The slice is over: a server that answers the TLS close untidily (application data
        # after its close_notify, a reset) changes none of the figures already taken.
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await writer.wait_closed()


def bundled_slice(
    port: int,
    path: str,
    bodies: Sequence[str],
    headers: dict[str, str],
    prefix: str,
    connections: int,
    seconds: int,
) -> Slice:
    """The same load as `wrk_slice` from asyncio connections (one request in flight each)."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())

    def request(count: int) -> bytes:
        body = bodies[count % len(bodies)].replace(ID_PLACEHOLDER, f"{prefix}-{count}").encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body

    async def drive() -> list[tuple[float, bool]]:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        out: list[tuple[float, bool]] = []
        until = time.perf_counter() + seconds
        await asyncio.gather(
            *(
                _bundled_connection(port, request, context, until, out, n * 10_000_000)
                for n in range(connections)
            )
        )
        return out

    answers = asyncio.run(drive())
    latencies = sorted(latency for latency, _ in answers)

    def pct(p: float) -> float:
        return (
            latencies[min(len(latencies) - 1, int(p * len(latencies)))]
            if latencies
            else float("nan")
        )

    return Slice(
        len(answers), float(seconds), pct(0.5), pct(0.99), sum(1 for _, ok in answers if not ok)
    )


# ---------------------------------------------------------------------------------------------
# Processes and cluster


@dataclass
class Running:
    contender: Contender
    process: subprocess.Popen[bytes]
    port: int


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"webhook exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError), socket_to(port):
            return
        time.sleep(0.2)
    raise RuntimeError(f"webhook did not listen on {port}:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def socket_to(port: int) -> Iterator[None]:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=1):
        yield


def start_vcjob(vcjob: list[str], cert_dir: Path, kubeconfig: Path, log: Path) -> Running:
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                *vcjob, "webhook", "--host", "127.0.0.1", "--port", str(port),
                "--health-port", "0", "--metrics-port", "0", "--queue-check", "on",
                "--kubeconfig", str(kubeconfig), "--shutdown-delay", "0", "--log-format", "json",
                "--tls-cert-file", str(cert_dir / certgen.CERT_FILE),
                "--tls-private-key-file", str(cert_dir / certgen.KEY_FILE),
            ],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    _wait_listening(process, port, log)
    return Running(VCJOB, process, port)


def start_volcano(binary: Path, cert_dir: Path, kubeconfig: Path, log: Path, port: int) -> Running:
    """vc-webhook-manager at Volcano's defaults, serving only the Job endpoints (its
    configurations must exist: it waits for them and adds its CA)."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(binary), "--kubeconfig", str(kubeconfig), "--listen-address", "127.0.0.1",
                "--port", str(port), "--webhook-url", f"https://127.0.0.1:{port}",
                "--enabled-admission", "/jobs/mutate,/jobs/validate",
                "--tls-cert-file", str(cert_dir / certgen.CERT_FILE),
                "--tls-private-key-file", str(cert_dir / certgen.KEY_FILE),
                "--ca-cert-file", str(cert_dir / certgen.CA_FILE),
            ],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    _wait_listening(process, port, log)
    return Running(VOLCANO, process, port)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Apiserver:
    """The API server's address, admin token and CA, read from the cluster's kubeconfig."""

    url: str
    token: str
    ca_pem: bytes

    @classmethod
    def from_kubeconfig(cls, path: Path) -> Apiserver:
        document = yaml.safe_load(path.read_text())
        cluster = document["clusters"][0]["cluster"]
        return cls(
            url=cluster["server"],
            token=document["users"][0]["user"]["token"],
            ca_pem=base64.b64decode(cluster["certificate-authority-data"]),
        )

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].rstrip("/"))

    def metrics(self) -> str:
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        request = urllib.request.Request(  # noqa: S310 (the cluster's own https address)
            f"{self.url}/metrics", headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, context=context, timeout=30) as response:  # noqa: S310
            text: str = response.read().decode()
            return text


def prepare_cluster(kube: Kube, contenders: Sequence[Contender]) -> None:
    """The Open `default` Queue and a namespace per contender, plus `bench-none` (no webhook)."""
    with contextlib.suppress(AlreadyExistsError):
        kube.create(QUEUES, None, {
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True},
        })  # fmt: skip
    queue = kube.get(QUEUES, None, "default")
    queue["status"] = {"state": "Open"}
    kube.request("PUT", QUEUES.path(None, "default", "status"), body=queue)
    for name in [*(c.namespace for c in contenders), "bench-none"]:
        with contextlib.suppress(AlreadyExistsError):
            kube.create(NAMESPACES, None, {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {
                    "name": name, "labels": {ADMISSION_LABEL: name.removeprefix("bench-")},
                },
            })  # fmt: skip


def register(kube: Kube, contender: Contender, port: int, ca_pem: bytes) -> None:
    mutating, validating = webhook_configurations(contender, port, ca_pem)
    kube.create(MUTATING, None, mutating)
    kube.create(VALIDATING, None, validating)


def wait_admitting(kube: Kube, contender: Contender) -> None:
    """Until kube-apiserver calls both of `contender`'s webhooks: a Job without a scheduler name
    comes back defaulted, one asking for more pods than it has is denied by its validator."""
    deadline = time.monotonic() + 60
    valid = varied_job(1, "probe", contender.namespace)
    del valid["spec"]["schedulerName"]
    invalid = varied_job(2, "probe", contender.namespace)
    invalid["spec"]["minAvailable"] = 1000
    path = JOBS.path(contender.namespace)
    while time.monotonic() < deadline:
        mutated = kube.request("POST", path, query={"dryRun": "All"}, body=valid)
        try:
            kube.request("POST", path, query={"dryRun": "All"}, body=invalid)
            denied = ""
        except KubeError as exc:
            denied = str(exc)
        if mutated["spec"].get("schedulerName") and contender.validating_name in denied:
            return
        time.sleep(0.2)
    raise RuntimeError(f"kube-apiserver does not call {contender.name}'s webhooks")


def delete_jobs(kube: Kube, namespace: str) -> None:
    """Every Job of `namespace` gone (no controller runs: nothing holds them)."""
    kube.request("DELETE", JOBS.path(namespace))
    deadline = time.monotonic() + 120
    while kube.request("GET", JOBS.path(namespace), query={"limit": 1})["items"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Jobs of {namespace} were not deleted")
        time.sleep(0.2)


@contextlib.contextmanager
def bench_cluster(tmp: Path) -> Iterator[tuple[Path, Kube, Apiserver]]:
    with running_cluster(
        tmp / "cluster", simulator=False, webhook=False, controller=False
    ) as cluster:
        kube = Kube(cluster.api_client(), qps=0)
        yield cluster.kubeconfig, kube, Apiserver.from_kubeconfig(cluster.kubeconfig)


# ---------------------------------------------------------------------------------------------
# The run


@dataclass
class Settings:
    vcjob: list[str]
    volcano: Path | None
    runs: int
    seconds: int
    connections: tuple[int, ...] = (4, 16)


Key = tuple[str, str, int]  # (what: create | validate | mutate, contender or "none", connections)


def measure(
    settings: Settings, apiserver: Apiserver, kube: Kube, running: list[Running]
) -> dict[Key, Figures]:
    """Interleaved slices: per round and concurrency, creates through kube-apiserver into each
    contender's namespace and into `bench-none`, then reviews sent to each webhook directly;
    the contenders' order alternates between rounds."""
    wrk = shutil.which("wrk")
    figures: dict[Key, Figures] = {}
    api_headers = {"Authorization": f"Bearer {apiserver.token}", "Content-Type": "application/json"}
    direct_headers = {"Content-Type": "application/json"}

    def load(
        url: str,
        port: int,
        path: str,
        bodies: list[str],
        headers: dict[str, str],
        prefix: str,
        connections: int,
    ) -> Slice:
        if wrk:
            return wrk_slice(wrk, url, path, bodies, headers, prefix, connections, settings.seconds)
        return bundled_slice(port, path, bodies, headers, prefix, connections, settings.seconds)

    for round_index in range(settings.runs):
        order = running if round_index % 2 == 0 else running[::-1]
        for connections in settings.connections:
            prefix = f"r{round_index}c{connections}"
            for target in [*(r.contender.name for r in order), "none"]:
                namespace = f"bench-{target}"
                owner = next((r for r in running if r.contender.name == target), None)
                metrics_before = admission_histograms(apiserver.metrics()) if owner else {}
                cpu_before = process_cpu_seconds(owner.process.pid) if owner else 0.0
                part = load(
                    apiserver.url, apiserver.port, JOBS.path(namespace),
                    body_templates(namespace, direct=False), api_headers, prefix, connections,
                )  # fmt: skip
                figure = figures.setdefault(("create", target, connections), Figures())
                figure.slices.append(part)
                if owner is not None:
                    figure.cpu_seconds += process_cpu_seconds(owner.process.pid) - cpu_before
                    metrics_after = admission_histograms(apiserver.metrics())
                    for name in (owner.contender.mutating_name, owner.contender.validating_name):
                        delta = histogram_delta(
                            metrics_after.get(name, {}), metrics_before.get(name, {})
                        )
                        figure.histogram[name] = histogram_add(
                            figure.histogram.get(name, {}), delta
                        )
                delete_jobs(kube, namespace)
            for runner in order:
                contender = runner.contender
                bodies = body_templates(contender.namespace, direct=True)
                for what, path in (
                    ("validate", contender.validate_path),
                    ("mutate", contender.mutate_path),
                ):
                    cpu_before = process_cpu_seconds(runner.process.pid)
                    part = load(
                        f"https://127.0.0.1:{runner.port}", runner.port, path, bodies,
                        direct_headers, f"{prefix}{what}", connections,
                    )  # fmt: skip
                    figure = figures.setdefault((what, contender.name, connections), Figures())
                    figure.slices.append(part)
                    figure.cpu_seconds += process_cpu_seconds(runner.process.pid) - cpu_before
    return figures


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def report(settings: Settings, figures: dict[Key, Figures], rss: dict[str, float]) -> list[str]:
    """One figure per line: the p99 ratios first, then latencies, throughput, the API server's
    admission histogram, CPU per request and RSS."""
    names = ["vcjob", *(["volcano"] if settings.volcano else [])]
    low, high = settings.connections[0], settings.connections[-1]
    lines = []

    def latency(what: str, target: str, connections: int) -> str:
        figure = figures[(what, target, connections)]
        p50, p99 = figure.median(lambda s: s.p50), figure.median(lambda s: s.p99)
        p99_low, p99_high = figure.spread(lambda s: s.p99)
        return f"{_ms(p50)} / {_ms(p99)} ms (p99 range {_ms(p99_low)}-{_ms(p99_high)})"

    def rate(what: str, target: str, connections: int) -> str:
        figure = figures[(what, target, connections)]
        median = figure.median(lambda s: s.requests / s.seconds)
        rate_low, rate_high = figure.spread(lambda s: s.requests / s.seconds)
        return f"{median:.0f}/s ({rate_low:.0f}-{rate_high:.0f})"

    def cpu_per_request(what: str, target: str) -> float:
        parts = [figures[(what, target, c)] for c in settings.connections]
        requests = sum(f.requests for f in parts)
        return sum(f.cpu_seconds for f in parts) / max(requests, 1) * 1000

    if settings.volcano:
        for what in ("create", "validate", "mutate"):
            for connections in settings.connections:
                ours = figures[(what, "vcjob", connections)].median(lambda s: s.p99)
                theirs = figures[(what, "volcano", connections)].median(lambda s: s.p99)
                where = "through kube-apiserver" if what == "create" else "direct"
                lines.append(
                    f"{what} p99 vcjob / Volcano at {connections} connections ({where}): "
                    f"{ours / theirs:.2f} (target <= 1.0)"
                )
    for connections in settings.connections:
        for target in [*names, "none"]:
            label = "no webhook" if target == "none" else target
            lines.append(
                f"create through kube-apiserver, {label}, {connections} connections: p50 / p99 "
                f"{latency('create', target, connections)}; {rate('create', target, connections)}"
            )
    for name in names:
        figure = figures[("create", name, high)]
        total = histogram_add({}, {})
        for webhook_name, histogram in sorted(figure.histogram.items()):
            total = histogram_add(total, histogram)
            lines.append(
                f"kube-apiserver's {METRIC} for {webhook_name} at {high} connections: "
                f"p50 {_ms(histogram_quantile(histogram, 0.5))} / p99 "
                f"{_ms(histogram_quantile(histogram, 0.99))} ms "
                f"({histogram.get(float('inf'), 0):.0f} calls)"
            )
        lines.append(
            f"{name} webhook CPU per Job created through kube-apiserver (mutate + validate): "
            f"{cpu_per_request('create', name):.2f} ms"
        )
    for what in ("validate", "mutate"):
        for name in names:
            lines.append(
                f"direct {what}, {name}: p50 / p99 at {low} connections "
                f"{latency(what, name, low)}; at {high}: {rate(what, name, high)}; "
                f"CPU per review {cpu_per_request(what, name):.2f} ms"
            )
    lines.append(
        "webhook RSS after the load: " + ", ".join(f"{k} {v:.1f} MB" for k, v in rss.items())
    )
    errors = {f"{w} {t} {c}": f.errors for (w, t, c), f in figures.items() if f.errors}
    sizes = [len(b) for b in body_templates("bench-vcjob", direct=False)]
    generator = "wrk" if shutil.which("wrk") else "bundled generator"
    lines.append(
        f"load: {generator}, {settings.runs} interleaved rounds of {settings.seconds} s slices at "
        f"{', '.join(map(str, settings.connections))} connections; {BODY_VARIANTS} different Jobs "
        f"({min(sizes)}-{max(sizes)} bytes) with unique names; non-2xx or failed requests: "
        f"{errors or 0}"
    )
    return lines


def run(settings: Settings) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cert_dir = tmp / "certs"
        certgen.write_bundle(certgen.issue(["127.0.0.1", "localhost"]), cert_dir)
        ca_pem = (cert_dir / certgen.CA_FILE).read_bytes()
        with bench_cluster(tmp) as (kubeconfig, kube, apiserver):
            contenders = [VCJOB, *([VOLCANO] if settings.volcano else [])]
            prepare_cluster(kube, contenders)
            running: list[Running] = []
            try:
                ours = start_vcjob(settings.vcjob, cert_dir, kubeconfig, tmp / "vcjob-webhook.log")
                running.append(ours)
                register(kube, VCJOB, ours.port, ca_pem)
                if settings.volcano is not None:
                    port = free_port()
                    register(kube, VOLCANO, port, ca_pem)
                    running.append(
                        start_volcano(
                            settings.volcano,
                            cert_dir,
                            kubeconfig,
                            tmp / "volcano-webhook.log",
                            port,
                        )
                    )
                for runner in running:
                    wait_admitting(kube, runner.contender)
                figures = measure(settings, apiserver, kube, running)
                rss = {r.contender.name: status_mb(r.process.pid, "VmRSS") for r in running}
            finally:
                for runner in running:
                    _stop(runner.process)
    return report(settings, figures, rss)
