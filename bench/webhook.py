"""Webhook throughput and latency over TLS, side by side with a trivial FastAPI endpoint.

Both servers run in their own process with the same uvicorn TLS settings. Load comes from `wrk`
when it is on PATH, otherwise from the bundled asyncio load generator (keep-alive connections,
one request in flight per connection). Prints one figure per line, ratios first:

    .venv/bin/python bench/webhook.py [--seconds 5]

Targets (spec/quality.md): throughput ≥ 0.6 x trivial at 32 connections; p99 ≤ 5 ms at 4
connections; webhook RSS ≤ 120 MB. Under 80 stalled uploads (each sends all but the last bytes
of a ~3 MiB body, then waits) the webhook's peak RSS stays under 192 MiB — the chart's memory
limit is 256 Mi — and falls back once they are gone:

    .venv/bin/python bench/webhook.py --stalled-only

Under real load (`bench/_webhookload.py`): a real kube-apiserver with etcd, Jobs that differ in
every request (the memo's miss path) created through it and their reviews sent to the webhook
directly, the Queue check on; with Volcano's webhook side by side when its binary is given:

    .venv/bin/python bench/webhook.py --real-load [--volcano-webhook PATH/vc-webhook-manager]

It stays one script, longer than our modules, so that a benchmark is one file anyone can read
and run on its own.

The in-process cost per request (the apps called as ASGI callables: no sockets, TLS or HTTP
parsing) is printed too; on a shared machine it is steadier than the throughput ratio. To see
the effect of a change, measure an earlier checkout in the same run, interleaved with this one:

    git archive <commit> | tar -x -C /tmp/before
    .venv/bin/python bench/webhook.py --baseline /tmp/before
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import certgen, labels

VCJOB = str(Path(sys.executable).with_name("vcjob"))
TRIVIAL_PATH = "/trivial"
ROUNDS = 4
STALLED_UPLOADS = 80
STALLED_BODY_BYTES = 3 * 1024 * 1024 - 4096
STALLED_RSS_TARGET_MB = 192


def review_body() -> bytes:
    container = {
        "name": "main",
        "image": "busybox:1.36",
        "command": ["sh", "-c", "sleep 10"],
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1"}},
        "ports": [{"containerPort": 2222, "name": "tfjob-port"}],
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "tf-dist", "namespace": "default"},
        "spec": {
            "minAvailable": 3,
            "schedulerName": "volcano",
            "queue": "default",
            "plugins": {"env": [], "svc": [], "tensorflow": []},
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": [
                {
                    "name": name,
                    "replicas": replicas,
                    "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
                }
                for name, replicas in (("ps", 1), ("worker", 2))
            ],
        },
    }
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "bench",
            "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "jobs"},
            "operation": "CREATE",
            "object": job,
        },
    }
    return json.dumps(review).encode()


# ---------------------------------------------------------------------------------------------
# The trivial server (run in its own process by `--serve-trivial`)


def trivial_app() -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import Response

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    async def trivial(request: Request) -> Response:
        await request.body()
        return Response(b'{"ok":true}', media_type="application/json")

    # Routed the same way as the webhook's endpoints (a plain route on a FastAPI app).
    app.add_route(TRIVIAL_PATH, trivial, methods=["POST"])
    return app


def serve_trivial(cert_dir: Path) -> None:
    import uvicorn

    app = trivial_app()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_config=None,
        access_log=False,
        lifespan="off",
        ssl_certfile=str(cert_dir / "tls.crt"),
        ssl_keyfile=str(cert_dir / "tls.key"),
    )
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(json.dumps({"port": port}), flush=True)
        await task

    asyncio.run(run())


# ---------------------------------------------------------------------------------------------
# In-process cost per request: the apps called as ASGI callables, no sockets, TLS or HTTP parser


async def _asgi_call(app: Any, path: str, body: bytes) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 9443),
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    status = 0

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # a disconnect never comes: the client stays
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


def micro_costs(body: bytes, seconds: float) -> dict[str, float]:
    """Microseconds per request of the trivial app and of both admission endpoints, called in
    this process (interleaved slices; the fastest slice of each, the least disturbed by other
    work on the machine)."""
    # This script is itself named webhook.py: its directory must not shadow the package.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    from webhook.app import create_app
    from webhook.settings import Settings

    webhook = create_app(Settings(queue_check=False), None)
    apps = {
        "trivial": (trivial_app(), TRIVIAL_PATH),
        "validate": (webhook, labels.VALIDATE_PATH),
        "mutate": (webhook, labels.MUTATE_PATH),
    }

    async def measure() -> dict[str, float]:
        best = {name: float("inf") for name in apps}
        slices = 10
        for _ in range(slices):
            for name, (app, path) in apps.items():
                budget = seconds / slices / len(apps)
                count = 0
                started = time.perf_counter()
                while True:
                    if await _asgi_call(app, path, body) != 200:
                        raise RuntimeError(f"{name} did not answer 200")
                    count += 1
                    elapsed = time.perf_counter() - started
                    if elapsed >= budget and count >= 20:
                        break
                best[name] = min(best[name], elapsed / count * 1e6)
        return best

    return asyncio.run(measure())


def _micro_subprocess(source: Path | None, seconds: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(source)} if source is not None else None
    result = subprocess.run(
        [sys.executable, __file__, "--micro-only", "--seconds", str(seconds)],
        env=env, capture_output=True, text=True, check=True, timeout=seconds * 4 + 60,
    )  # fmt: skip
    costs: dict[str, float] = json.loads(result.stdout.splitlines()[-1])
    return costs


def micro_side_by_side(
    baseline: Path | None, seconds: float, rounds: int = 3
) -> tuple[dict[str, float], dict[str, float] | None]:
    """`micro_costs` of this tree and, when given, of the webhook in another source tree (a
    checkout of an earlier commit): each in a fresh process, alternating, the best of each."""
    sources: dict[str, Path | None] = {"now": None}
    if baseline is not None:
        sources["before"] = baseline
    best: dict[str, dict[str, float]] = {}
    for _ in range(rounds):
        for label, source in sources.items():
            costs = _micro_subprocess(source, seconds / rounds)
            kept = best.setdefault(label, costs)
            for name, value in costs.items():
                kept[name] = min(kept[name], value)
    return best["now"], best.get("before")


def micro_lines(costs: dict[str, float], before: dict[str, float] | None) -> list[str]:
    lines = []
    for name in ("validate", "mutate"):
        line = (
            f"{name} in-process cost per request: {costs[name]:.0f} us, "
            f"{costs[name] - costs['trivial']:.0f} us above trivial"
        )
        if before is not None:
            line += (
                f" (before: {before[name]:.0f} us, "
                f"{before[name] - before['trivial']:.0f} us above trivial)"
            )
        lines.append(line)
    trivial = f"trivial in-process cost per request: {costs['trivial']:.0f} us"
    if before is not None:
        trivial += f" (before: {before['trivial']:.0f} us, same app)"
    return [*lines, trivial]


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass
class Server:
    proc: subprocess.Popen[str]
    port: int

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        return int(match.group(1)) / 1024 if match else float("nan")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _wait_for_line(proc: subprocess.Popen[str], key: str, stream_name: str) -> dict[str, Any]:
    stream = getattr(proc, stream_name)
    found: dict[str, Any] = {}
    done = threading.Event()

    def pump() -> None:
        for line in stream:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if key in entry and not done.is_set():
                found.update(entry)
                done.set()

    threading.Thread(target=pump, daemon=True).start()
    if not done.wait(30):
        raise RuntimeError(f"server did not start (exit code {proc.poll()})")
    return found


def start_webhook(cert_dir: Path, source: Path | None = None) -> Server:
    """The webhook as `vcjob webhook` runs it; from the source tree `source` when given."""
    env = {**os.environ, "PYTHONPATH": str(source)} if source is not None else None
    proc = subprocess.Popen(
        [
            VCJOB, "webhook", "--host", "127.0.0.1", "--port", "0", "--health-port", "0",
            "--metrics-port", "0", "--queue-check", "off", "--shutdown-delay", "0",
            "--tls-cert-file", str(cert_dir / "tls.crt"),
            "--tls-private-key-file", str(cert_dir / "tls.key"),
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    # The "webhook serving" log line carries the bound ports.
    return Server(proc, int(_wait_for_line(proc, "webhook", "stderr")["webhook"]))


def start_trivial(cert_dir: Path) -> Server:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-trivial", str(cert_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return Server(proc, int(_wait_for_line(proc, "port", "stdout")["port"]))


# ---------------------------------------------------------------------------------------------
# Load


@dataclass
class Load:
    requests: int
    seconds: float
    latencies: list[float]
    errors: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def _connection(
    port: int, path: str, body: bytes, context: ssl.SSLContext, until: float, out: Load
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    request = head + body
    try:
        while time.perf_counter() < until:
            started = time.perf_counter()
            writer.write(request)
            headers = await reader.readuntil(b"\r\n\r\n")
            match = re.search(rb"content-length: *(\d+)", headers, re.IGNORECASE)
            await reader.readexactly(int(match.group(1)) if match else 0)
            out.latencies.append(time.perf_counter() - started)
            if not headers.startswith(b"HTTP/1.1 200"):
                out.errors += 1
            out.requests += 1
    finally:
        writer.close()
        await writer.wait_closed()


async def _drive(port: int, path: str, body: bytes, connections: int, seconds: float) -> Load:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    warmup = Load(0, 1, [], 0)
    await asyncio.gather(
        *(
            _connection(port, path, body, context, time.perf_counter() + 0.2, warmup)
            for _ in range(connections)
        )
    )
    out = Load(0, seconds, [], 0)
    until = time.perf_counter() + seconds
    await asyncio.gather(
        *(_connection(port, path, body, context, until, out) for _ in range(connections))
    )
    return out


def bundled_load(port: int, path: str, body: bytes, connections: int, seconds: float) -> Load:
    return asyncio.run(_drive(port, path, body, connections, seconds))


def wrk_load(wrk: str, port: int, path: str, body: bytes, connections: int, seconds: float) -> Load:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(
            'wrk.method = "POST"\n'
            f"wrk.body = {json.dumps(body.decode())}\n"
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
    try:
        result = subprocess.run(
            [
                wrk, "-t", "2", "-c", str(connections), "-d", f"{int(seconds)}s", "--latency",
                "-s", script.name, f"https://127.0.0.1:{port}{path}",
            ],
            capture_output=True, text=True, check=True, timeout=seconds + 30,
        )  # fmt: skip
    finally:
        Path(script.name).unlink()
    text = result.stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]
    latencies = {}
    for pct, value, unit in re.findall(r"\s(50|99)%\s+([\d.]+)(us|ms|s)", text):
        scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]
        latencies[pct] = float(value) * scale
    load = Load(int(rps * seconds), seconds, [], 0)
    # wrk reports percentiles, not samples: keep the two the report needs.
    load.latencies = [latencies.get("50", float("nan"))] * 98 + [
        latencies.get("99", float("nan"))
    ] * 2
    return load


async def _stalled_upload(port: int, context: ssl.SSLContext, hold: asyncio.Event) -> str:
    """Send all of a large body but its last bytes, then wait; the server's first answer line."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    except OSError as exc:
        return f"connect failed: {exc}"
    head = (
        f"POST {labels.VALIDATE_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {STALLED_BODY_BYTES}\r\n\r\n"
    ).encode()
    body = b'{"request": {"uid": "stall", "pad": "' + b"x" * STALLED_BODY_BYTES
    try:
        writer.write(head + body[: STALLED_BODY_BYTES - 64])
        answer = asyncio.ensure_future(reader.readline())
        drained = asyncio.ensure_future(writer.drain())
        await asyncio.wait(
            [answer, asyncio.ensure_future(hold.wait())], return_when="FIRST_COMPLETED"
        )
        drained.cancel()
        return answer.result().decode().strip() if answer.done() else "still open"
    except (OSError, asyncio.IncompleteReadError) as exc:
        return f"closed: {type(exc).__name__}"
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _stall(webhook: Server, seconds: float) -> tuple[float, float, dict[str, int]]:
    """Peak RSS while STALLED_UPLOADS uploads stall, RSS a few seconds after, and the answers."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    hold = asyncio.Event()
    tasks = [
        asyncio.create_task(_stalled_upload(webhook.port, context, hold))
        for _ in range(STALLED_UPLOADS)
    ]
    peak = webhook.rss_mb()
    until = time.perf_counter() + seconds
    while time.perf_counter() < until and not all(t.done() for t in tasks):
        peak = max(peak, webhook.rss_mb())
        await asyncio.sleep(0.05)
    hold.set()
    answers: dict[str, int] = {}
    for line in await asyncio.gather(*tasks):
        key = line.split(" ", 2)[1] if line.startswith("HTTP/") else line
        answers[key] = answers.get(key, 0) + 1
    await asyncio.sleep(3)
    return peak, webhook.rss_mb(), answers


def stalled_lines(cert_dir: Path) -> list[str]:
    webhook = start_webhook(cert_dir)
    try:
        before = webhook.rss_mb()
        peak, after, answers = asyncio.run(_stall(webhook, seconds=20))
    finally:
        webhook.stop()
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(answers.items()))
    return [
        f"webhook RSS under {STALLED_UPLOADS} stalled ~3 MiB uploads: peak {peak:.1f} MB"
        f" (target < {STALLED_RSS_TARGET_MB}; chart limit 256 Mi)",
        f"webhook RSS before / 3 s after the stalled uploads: {before:.1f} / {after:.1f} MB",
        f"answers to the stalled uploads: {summary}",
    ]


def real_load_lines(volcano: Path | None, runs: int, seconds: int) -> list[str]:
    # This script is itself named webhook.py: its directory must not shadow the package.
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.append(str(here))
    from _webhookload import Settings, run

    from localcluster.running import vcjob_executable

    return run(Settings(vcjob_executable(), volcano, runs, seconds))


def _ratio_line(name: str, now: float, before: float | None, target: str) -> str:
    line = f"{name}: {now:.2f}"
    if before is not None:
        line += f" (before: {before:.2f})"
    return f"{line} ({target})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="load time per endpoint and concurrency"
    )
    parser.add_argument(
        "--stalled-only", action="store_true", help="only the stalled-uploads memory figure"
    )
    parser.add_argument(
        "--micro-only", action="store_true", help="only the in-process cost per request (JSON)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="SOURCE",
        help="a checkout of an earlier commit: its webhook is measured in the same run, "
        "interleaved, and its figures printed beside (before: …)",
    )
    parser.add_argument(
        "--real-load",
        action="store_true",
        help="only the real-load figures: varied Jobs through kube-apiserver and direct, the "
        "Queue check on (with --volcano-webhook: side by side with Volcano's)",
    )
    parser.add_argument(
        "--volcano-webhook",
        type=Path,
        metavar="PATH",
        help="Volcano's vc-webhook-manager binary: measured beside vcjob's under the real load",
    )
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds of the real load")
    parser.add_argument("--serve-trivial", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_trivial:
        serve_trivial(args.serve_trivial)
        return
    if args.real_load or args.volcano_webhook is not None:
        if args.volcano_webhook is not None and not os.access(args.volcano_webhook, os.X_OK):
            parser.error(f"--volcano-webhook {args.volcano_webhook}: not an executable file")
        print(
            "\n".join(real_load_lines(args.volcano_webhook, args.runs, max(1, round(args.seconds))))
        )
        return
    body = review_body()
    if args.micro_only:
        print(json.dumps(micro_costs(body, args.seconds)))
        return
    if args.stalled_only:
        with tempfile.TemporaryDirectory() as tmp:
            certgen.write_bundle(certgen.issue(["127.0.0.1", "localhost"]), Path(tmp))
            print("\n".join(stalled_lines(Path(tmp))))
        return
    if args.baseline is not None and not (args.baseline / "webhook" / "app.py").is_file():
        parser.error(f"--baseline {args.baseline}: not a vcjob source tree (no webhook/app.py)")

    wrk = shutil.which("wrk")
    generator = "wrk" if wrk else "bundled asyncio generator"

    def load(port: int, path: str, connections: int) -> Load:
        if wrk:
            return wrk_load(wrk, port, path, body, connections, args.seconds / ROUNDS)
        return bundled_load(port, path, body, connections, args.seconds / ROUNDS)

    micro, micro_before = micro_side_by_side(args.baseline, args.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        cert_dir = Path(tmp)
        certgen.write_bundle(certgen.issue(["127.0.0.1", "localhost"]), cert_dir)
        webhook = start_webhook(cert_dir)
        trivial = start_trivial(cert_dir)
        servers = [webhook, trivial]
        targets = {
            "trivial": (trivial.port, TRIVIAL_PATH),
            "validate": (webhook.port, labels.VALIDATE_PATH),
            "mutate": (webhook.port, labels.MUTATE_PATH),
        }
        old: Server | None = None
        results: dict[tuple[str, int], Load] = {}
        try:
            if args.baseline is not None:
                old = start_webhook(cert_dir, args.baseline)
                servers.append(old)
                targets["validate before"] = (old.port, labels.VALIDATE_PATH)
                targets["mutate before"] = (old.port, labels.MUTATE_PATH)
            # Interleaved short slices, so a change in the machine's load hits all alike.
            for _ in range(ROUNDS):
                for connections in (32, 4):
                    for name, (port, path) in targets.items():
                        part = load(port, path, connections)
                        total = results.setdefault((name, connections), Load(0, 0, [], 0))
                        total.requests += part.requests
                        total.seconds += part.seconds
                        total.latencies += part.latencies
                        total.errors += part.errors
            rss = webhook.rss_mb()
            rss_before = old.rss_mb() if old is not None else None
        finally:
            for server in servers:
                server.stop()
        stalled = stalled_lines(cert_dir)

    def get(name: str, connections: int) -> Load | None:
        return results.get((name, connections))

    def ratio(name: str) -> float | None:
        load_32 = get(name, 32)
        return load_32.rps / results[("trivial", 32)].rps if load_32 is not None else None

    def p(name: str, pct: float) -> float | None:
        load_4 = get(name, 4)
        return load_4.percentile(pct) * 1000 if load_4 is not None else None

    def rps(name: str) -> str:
        load_32 = get(name, 32)
        return f"{load_32.rps:.0f}" if load_32 is not None else "-"

    errors = sum(x.errors for x in results.values())
    lines = []
    for name in ("validate", "mutate"):
        lines.append(
            _ratio_line(
                f"{name} throughput ratio at 32 connections",
                ratio(name) or 0.0,
                ratio(f"{name} before"),
                "target >= 0.6",
            )
        )
    for name in ("validate", "mutate"):
        line = f"{name} p99 latency at 4 connections: {p(name, 99) or 0.0:.2f} ms"
        if (before := p(f"{name} before", 99)) is not None:
            line += f" (before: {before:.2f} ms)"
        lines.append(line + " (target <= 5)")
    rss_line = f"webhook RSS after load: {rss:.1f} MB"
    if rss_before is not None:
        rss_line += f" (before: {rss_before:.1f} MB)"
    lines.append(rss_line + " (target <= 120)")
    lines += micro_lines(micro, micro_before)
    for name in ("validate", "mutate"):
        line = f"{name} p50 latency at 4 connections: {p(name, 50) or 0.0:.2f} ms"
        if (before := p(f"{name} before", 50)) is not None:
            line += f" (before: {before:.2f} ms)"
        lines.append(line)
    lines += [
        f"trivial p50 / p99 latency at 4 connections: {p('trivial', 50) or 0.0:.2f} / "
        f"{p('trivial', 99) or 0.0:.2f} ms",
        f"requests per second at 32 connections: trivial {rps('trivial')}, "
        f"validate {rps('validate')}, mutate {rps('mutate')}"
        + (
            f" (before: validate {rps('validate before')}, mutate {rps('mutate before')})"
            if args.baseline is not None
            else ""
        ),
        f"load generator: {generator}; {args.seconds:g} s per endpoint and concurrency in "
        f"{ROUNDS} interleaved slices; non-200 answers: {errors}; review body {len(body)} bytes",
    ]
    print("\n".join(lines + stalled))


if __name__ == "__main__":
    main()
