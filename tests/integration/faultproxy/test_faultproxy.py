"""The fault proxy in front of a real kube-apiserver, driven with kubectl, httpx and raw TLS."""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx
import pytest

from localcluster import kubebin
from localcluster.faultproxy import FaultProxy
from tests.support.polling import wait_for, wait_until

pytestmark = pytest.mark.slow

KUBECTL = str(kubebin.require("kubectl"))
CONFIGMAPS = "/api/v1/namespaces/{ns}/configmaps"
FAULT_LOGGER = "localcluster.faultproxy"
READ_FAULTS = {500: "InternalError", 429: "TooManyRequests", 504: "Timeout"}
WRITE_FAULTS = {**READ_FAULTS, 409: "Conflict"}
WATCH_LONGRUNNING = 'apiserver_longrunning_requests{component="apiserver",group=""'


class ControlPlane(Protocol):
    """What the `control_plane` fixture (conftest.py) provides."""

    @property
    def url(self) -> str: ...
    @property
    def ca(self) -> Path: ...
    @property
    def token(self) -> str: ...
    @property
    def proxy_cert(self) -> Path: ...
    @property
    def proxy_key(self) -> Path: ...


def tls(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


@dataclass(frozen=True)
class Proxied:
    """A started proxy and the ways to reach kube-apiserver through it."""

    proxy: FaultProxy
    plane: ControlPlane
    kubeconfig: Path
    cache_dir: Path

    def client(self, authorized: bool = True, timeout: float = 15.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.plane.token}"} if authorized else {}
        return httpx.Client(
            base_url=self.proxy.url, verify=tls(self.plane.ca), headers=headers, timeout=timeout
        )

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self._argv(), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done

    def kubectl_popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self._argv(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def _argv(self) -> list[str]:
        return [KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir)]


class StartProxy(Protocol):
    def __call__(
        self, rate: float = 0.0, seed: int | None = None, timeout_hold: float = 0.3
    ) -> Proxied: ...


def write_kubeconfig(path: Path, server: str, ca: Path, token: str) -> None:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": server, "certificate-authority": str(ca)}}
                ],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )


@pytest.fixture
def start_proxy(control_plane: ControlPlane, tmp_path: Path) -> Iterator[StartProxy]:
    started: list[FaultProxy] = []

    def start(rate: float = 0.0, seed: int | None = None, timeout_hold: float = 0.3) -> Proxied:
        proxy = FaultProxy(
            control_plane.url,
            control_plane.ca,
            control_plane.proxy_cert,
            control_plane.proxy_key,
            rate,
            seed,
            timeout_hold=timeout_hold,
        )
        proxy.start()
        started.append(proxy)
        kubeconfig = tmp_path / f"kubeconfig-{len(started)}"
        write_kubeconfig(kubeconfig, proxy.url, control_plane.ca, control_plane.token)
        return Proxied(proxy, control_plane, kubeconfig, tmp_path / "kubectl-cache")

    yield start
    for proxy in started:
        proxy.stop()


@pytest.fixture
def direct(control_plane: ControlPlane) -> Iterator[httpx.Client]:
    """A client that talks to kube-apiserver itself, bypassing the proxy."""
    with httpx.Client(
        base_url=control_plane.url,
        verify=tls(control_plane.ca),
        headers={"Authorization": f"Bearer {control_plane.token}"},
        timeout=15.0,
    ) as client:
        yield client


@pytest.fixture
def namespace(direct: httpx.Client) -> str:
    name = f"fp-{uuid.uuid4().hex[:8]}"
    created = direct.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert created.status_code == 201, created.text
    return name


@dataclass(frozen=True)
class Injected:
    """One "fault injected" log record of the proxy, with its structured extras."""

    kind: str
    method: str
    path: str
    after_events: int | None
    abrupt: bool | None
    applied: bool | None

    @classmethod
    def of(cls, record: logging.LogRecord) -> Injected:
        extras = record.__dict__
        return cls(
            str(extras["kind"]),
            str(extras["method"]),
            str(extras["path"]),
            extras.get("after_events"),
            extras.get("abrupt"),
            extras.get("applied"),
        )


FaultsLog = Callable[[], list[Injected]]


@pytest.fixture
def faults_log(caplog: pytest.LogCaptureFixture) -> FaultsLog:
    caplog.set_level(logging.INFO, logger=FAULT_LOGGER)

    def injected() -> list[Injected]:
        return [Injected.of(r) for r in caplog.records if r.getMessage() == "fault injected"]

    return injected


def configmap(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def create_configmaps(direct: httpx.Client, ns: str, names: list[str]) -> None:
    for name in names:
        answer = direct.post(CONFIGMAPS.format(ns=ns), json=configmap(name, a="1"))
        assert answer.status_code == 201, answer.text


def watch_lines(response: httpx.Response) -> Iterator[dict[str, object]]:
    for line in response.iter_lines():
        if line:
            event: dict[str, object] = json.loads(line)
            yield event


def event_name(event: dict[str, object]) -> tuple[object, object]:
    obj = event["object"]
    assert isinstance(obj, dict)
    return event["type"], obj["metadata"]["name"]


# -- pass-through at rate 0 ---------------------------------------------------------------------


def test_kubectl_creates_gets_lists_patches_and_deletes_through_the_proxy(
    start_proxy: StartProxy, direct: httpx.Client, namespace: str
) -> None:
    proxied = start_proxy()
    proxied.kubectl("create", "configmap", "settings", "-n", namespace, "--from-literal=a=1")
    got = json.loads(
        proxied.kubectl("get", "configmap", "settings", "-n", namespace, "-o", "json").stdout
    )
    itself = direct.get(f"{CONFIGMAPS.format(ns=namespace)}/settings").json()
    assert got["data"] == {"a": "1"}
    assert got["metadata"]["uid"] == itself["metadata"]["uid"]

    proxied.kubectl(
        "patch",
        "configmap",
        "settings",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"data":{"b":"2"}}',
    )
    assert direct.get(f"{CONFIGMAPS.format(ns=namespace)}/settings").json()["data"] == {
        "a": "1",
        "b": "2",
    }
    # A response large enough that kube-apiserver gzips it for kubectl, passed on as it is.
    big = "x" * 400_000
    assert (
        direct.post(CONFIGMAPS.format(ns=namespace), json=configmap("big", payload=big)).status_code
        == 201
    )
    listed = json.loads(proxied.kubectl("get", "configmaps", "-n", namespace, "-o", "json").stdout)
    assert sorted(item["metadata"]["name"] for item in listed["items"]) == ["big", "settings"]
    assert (
        next(i for i in listed["items"] if i["metadata"]["name"] == "big")["data"]["payload"] == big
    )

    proxied.kubectl("delete", "configmap", "settings", "-n", namespace)
    assert direct.get(f"{CONFIGMAPS.format(ns=namespace)}/settings").status_code == 404


def test_gzip_responses_pass_unchanged(
    start_proxy: StartProxy, direct: httpx.Client, namespace: str
) -> None:
    created = direct.post(
        CONFIGMAPS.format(ns=namespace), json=configmap("big", payload="y" * 300_000)
    )
    assert created.status_code == 201
    with start_proxy().client() as client:
        answer = client.get(CONFIGMAPS.format(ns=namespace), headers={"Accept-Encoding": "gzip"})
    assert answer.status_code == 200
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.json()["items"][0]["data"]["payload"] == "y" * 300_000


def test_kubectl_watch_prints_objects_as_they_are_created(
    start_proxy: StartProxy, direct: httpx.Client, namespace: str
) -> None:
    proxied = start_proxy()
    watch = proxied.kubectl_popen("get", "configmaps", "-n", namespace, "--watch", "-o", "name")
    lines: queue.Queue[str] = queue.Queue()
    assert watch.stdout is not None
    stdout = watch.stdout

    def read_lines() -> None:
        for line in stdout:
            lines.put(line.strip())

    threading.Thread(target=read_lines, daemon=True).start()
    try:
        create_configmaps(direct, namespace, ["one"])
        assert lines.get(timeout=20) == "configmap/one"
        # kubectl printed "one", so its list is done: "two" can only come through the watch stream.
        create_configmaps(direct, namespace, ["two"])
        assert lines.get(timeout=20) == "configmap/two"
    finally:
        watch.terminate()
        watch.wait(10)


def test_watch_events_stream_as_they_happen(
    start_proxy: StartProxy, direct: httpx.Client, namespace: str
) -> None:
    path = CONFIGMAPS.format(ns=namespace)
    version = direct.get(path).json()["metadata"]["resourceVersion"]
    with (
        start_proxy().client(timeout=20.0) as client,
        client.stream("GET", f"{path}?watch=true&resourceVersion={version}") as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        events = watch_lines(response)
        create_configmaps(direct, namespace, ["first"])
        assert event_name(next(events)) == ("ADDED", "first")
        patched = direct.patch(
            f"{path}/first",
            json={"data": {"a": "2"}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 200
        assert event_name(next(events)) == ("MODIFIED", "first")


def test_credentials_and_impersonation_reach_kube_apiserver(start_proxy: StartProxy) -> None:
    proxied = start_proxy()
    with proxied.client(authorized=False) as anonymous:
        refused = anonymous.get("/api/v1/namespaces/default/configmaps")
    # The proxy adds no credentials of its own: without a token the caller is anonymous.
    assert refused.status_code == 403
    assert 'User "system:anonymous"' in refused.json()["message"]
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    with proxied.client() as client:
        who = client.post(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json=review,
            headers=[
                ("Impersonate-User", "jane"),
                ("Impersonate-Group", "devs"),
                ("Impersonate-Group", "qa"),
            ],
        )
        as_jane = client.get(
            "/api/v1/namespaces/default/configmaps", headers={"Impersonate-User": "jane"}
        )
    assert who.status_code == 201, who.text
    user = who.json()["status"]["userInfo"]
    assert user["username"] == "jane"
    assert {"devs", "qa"} <= set(user["groups"])
    assert as_jane.status_code == 403
    assert 'User "jane" cannot list resource "configmaps"' in as_jane.json()["message"]
    assert as_jane.headers["audit-id"]  # kube-apiserver's own response headers pass back


# -- faults -------------------------------------------------------------------------------------


def test_at_rate_one_every_resource_request_gets_an_allowed_fault(
    start_proxy: StartProxy,
    direct: httpx.Client,
    namespace: str,
    faults_log: FaultsLog,
) -> None:
    create_configmaps(direct, namespace, ["target"])
    proxied = start_proxy(rate=1.0, seed=3, timeout_hold=0.2)
    path = CONFIGMAPS.format(ns=namespace)
    merge = {"Content-Type": "application/merge-patch+json"}
    calls: list[tuple[str, str, dict[str, object] | None]] = [
        ("GET", path, None),
        ("GET", f"{path}/target", None),
        ("POST", path, configmap("new")),
        ("PUT", f"{path}/target", configmap("target", a="2")),
        ("PATCH", f"{path}/target", {"data": {"a": "3"}}),
        ("DELETE", f"{path}/target", None),
    ]
    seen: set[int] = set()
    with proxied.client() as client:
        for method, url, body in calls * 10:
            answer = client.request(
                method, url, json=body, headers=merge if method == "PATCH" else None
            )
            allowed = READ_FAULTS if method == "GET" else WRITE_FAULTS
            assert answer.status_code in allowed, (method, answer.status_code, answer.text)
            status = answer.json()
            assert (status["kind"], status["status"]) == ("Status", "Failure")
            assert status["reason"] == allowed[answer.status_code]
            if answer.status_code == 429:
                assert answer.headers["retry-after"] == "1"
            seen.add(answer.status_code)
        # Discovery and health are never failed, so clients always get as far as their own calls.
        for free in ("/api", "/apis", "/api/v1", "/version", "/readyz"):
            assert client.get(free).status_code == 200, free
    assert seen == set(WRITE_FAULTS)
    records = faults_log()
    assert len(records) == len(calls) * 10
    assert {(r.method, r.path) for r in records} == {(m, u) for m, u, _ in calls}


def test_kubectl_reports_the_injected_fault(start_proxy: StartProxy, namespace: str) -> None:
    proxied = start_proxy(rate=1.0, seed=5, timeout_hold=0.2)
    failed = proxied.kubectl("get", "configmaps", "-n", namespace, check=False)
    assert failed.returncode != 0
    assert "Error from server" in failed.stderr
    assert any(
        reason in failed.stderr
        for reason in ("InternalError", "Internal error occurred", "Timeout", "Too many requests")
    ), failed.stderr


def test_seeded_runs_are_reproducible(
    start_proxy: StartProxy, direct: httpx.Client, namespace: str
) -> None:
    create_configmaps(direct, namespace, ["target"])
    path = f"{CONFIGMAPS.format(ns=namespace)}/target"

    def run(seed: int) -> list[tuple[int, str]]:
        outcomes: list[tuple[int, str]] = []
        with start_proxy(rate=0.5, seed=seed, timeout_hold=0.1).client() as client:
            for index in range(40):
                if index % 3 == 2:
                    answer = client.patch(
                        path,
                        json={"data": {"a": str(index)}},
                        headers={"Content-Type": "application/merge-patch+json"},
                    )
                else:
                    answer = client.get(path)
                reason = answer.json().get("reason", "") if answer.status_code >= 400 else ""
                outcomes.append((answer.status_code, reason))
        return outcomes

    first = run(42)
    assert any(code >= 400 for code, _ in first) and any(code < 400 for code, _ in first)
    assert run(42) == first
    assert run(43) != first


def test_too_many_requests_carries_retry_after(start_proxy: StartProxy, namespace: str) -> None:
    with start_proxy(rate=1.0, seed=9).client() as client:
        answers = [client.get(CONFIGMAPS.format(ns=namespace)) for _ in range(20)]
    throttled = [a for a in answers if a.status_code == 429]
    assert throttled
    for answer in throttled:
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["details"] == {"retryAfterSeconds": 1}
        assert answer.json()["message"] == "Too many requests, please try again later."


@dataclass(frozen=True)
class WatchRun:
    code: int
    events: int
    abrupt: bool  # ended by a broken connection rather than a proper end of the response


def run_json_watch(client: httpx.Client, path: str) -> WatchRun:
    with client.stream("GET", f"{path}?watch=true") as response:
        if response.status_code != 200:
            response.read()
            return WatchRun(response.status_code, 0, False)
        events = 0
        try:
            for _ in watch_lines(response):
                events += 1
        except httpx.RemoteProtocolError:
            return WatchRun(200, events, True)
        return WatchRun(200, events, False)


def test_watches_are_cut_after_the_logged_number_of_events(
    start_proxy: StartProxy,
    direct: httpx.Client,
    namespace: str,
    faults_log: FaultsLog,
) -> None:
    # A watch without a resourceVersion starts with an ADDED event for each of the 8 objects.
    create_configmaps(direct, namespace, [f"cm{i}" for i in range(8)])
    path = CONFIGMAPS.format(ns=namespace)
    kinds: set[tuple[str, bool]] = set()
    with start_proxy(rate=1.0, seed=21).client() as client:
        for _ in range(40):
            run = run_json_watch(client, path)
            fault = faults_log()[-1]
            if fault.kind == "WatchCut":
                assert run.code == 200
                assert run.events == fault.after_events
                assert 1 <= run.events <= 5
                assert run.abrupt is fault.abrupt
                kinds.add(("cut", run.abrupt))
            else:
                assert run.code == {"InternalError": 500, "TooManyRequests": 429}[fault.kind]
                kinds.add((fault.kind, False))
            if len(kinds) == 4:
                break
        # The proxy and this client's keep-alive connection still serve after every cut.
        assert client.get("/api").status_code == 200
    assert kinds == {
        ("cut", True),
        ("cut", False),
        ("InternalError", False),
        ("TooManyRequests", False),
    }


def test_protobuf_watches_are_cut_between_frames(
    start_proxy: StartProxy,
    direct: httpx.Client,
    namespace: str,
    faults_log: FaultsLog,
) -> None:
    create_configmaps(direct, namespace, [f"cm{i}" for i in range(8)])
    accept = {"Accept": "application/vnd.kubernetes.protobuf;stream=watch"}
    cuts = 0
    with start_proxy(rate=1.0, seed=4).client() as client:
        for _ in range(20):
            received = b""
            with client.stream(
                "GET", f"{CONFIGMAPS.format(ns=namespace)}?watch=true", headers=accept
            ) as response:
                if response.status_code != 200:
                    continue
                assert "protobuf" in response.headers["content-type"]
                try:
                    for chunk in response.iter_raw():
                        received += chunk
                except httpx.RemoteProtocolError:
                    pass
            frames, offset = 0, 0
            while offset < len(received):
                offset += 4 + int.from_bytes(received[offset : offset + 4], "big")
                frames += 1
            assert offset == len(received), "the cut fell inside a frame"
            assert frames == faults_log()[-1].after_events
            cuts += 1
    assert cuts >= 3


def test_timeouts_hold_the_request_then_answer_504(start_proxy: StartProxy, namespace: str) -> None:
    path = CONFIGMAPS.format(ns=namespace)
    # A hold far longer than the shortened one, so that a busy machine's delays (which only add)
    # cannot make the one pass for the other.
    with start_proxy(rate=1.0, seed=13, timeout_hold=4.0).client() as client:
        held: list[float] = []
        shortened: list[float] = []
        for _ in range(60):
            start = time.monotonic()
            answer = client.get(path)
            if answer.status_code == 504:
                assert answer.json()["reason"] == "Timeout"
                held.append(time.monotonic() - start)
            start = time.monotonic()
            # kube-apiserver's own ?timeout= shortens the hold, as it shortens its own deadline.
            answer = client.get(f"{path}?timeout=300ms")
            if answer.status_code == 504:
                shortened.append(time.monotonic() - start)
            if held and shortened:
                break
    assert held and min(held) >= 4.0
    assert shortened and min(shortened) >= 0.3 and max(shortened) < 3.0


def test_a_timed_out_write_may_still_happen(
    start_proxy: StartProxy,
    direct: httpx.Client,
    namespace: str,
    faults_log: FaultsLog,
) -> None:
    path = CONFIGMAPS.format(ns=namespace)
    applied: list[str] = []
    dropped: list[str] = []
    with start_proxy(rate=1.0, seed=17, timeout_hold=0.1).client() as client:
        for index in range(200):
            answer = client.post(path, json=configmap(f"c{index}"))
            assert answer.status_code in WRITE_FAULTS
            fault = faults_log()[-1]
            if fault.kind == "Timeout":
                assert answer.status_code == 504
                (applied if fault.applied else dropped).append(f"c{index}")
            if applied and dropped:
                break
    assert applied and dropped
    # Exactly the applied timeouts created their objects; every other create was failed before
    # it reached kube-apiserver.
    wait_for(
        lambda: sorted(i["metadata"]["name"] for i in direct.get(path).json()["items"]),
        lambda names: names == sorted(applied),
        "the applied writes to land",
        timeout=20,
    )


# -- robustness ---------------------------------------------------------------------------------


def longrunning_watches(direct: httpx.Client) -> float:
    metrics = direct.get("/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith(WATCH_LONGRUNNING)
        and 'resource="configmaps"' in line
        and 'verb="WATCH"' in line
    )


def open_raw(proxied: Proxied) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", proxied.proxy.port), timeout=15)
    return tls(proxied.plane.ca).wrap_socket(raw, server_hostname="127.0.0.1")


def request_head(proxied: Proxied, method: str, target: str, *extra: str) -> bytes:
    lines = [
        f"{method} {target} HTTP/1.1",
        f"Host: 127.0.0.1:{proxied.proxy.port}",
        f"Authorization: Bearer {proxied.plane.token}",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_until(conn: ssl.SSLSocket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_clients_leaving_mid_watch_end_the_upstream_watch(
    start_proxy: StartProxy, direct: httpx.Client, namespace: str
) -> None:
    proxied = start_proxy()
    baseline = longrunning_watches(direct)
    watches = []
    for _ in range(5):
        conn = open_raw(proxied)
        conn.sendall(request_head(proxied, "GET", f"{CONFIGMAPS.format(ns=namespace)}?watch=true"))
        assert read_until(conn, b"\r\n\r\n").startswith(b"HTTP/1.1 200")
        watches.append(conn)
    wait_until(
        "5 more watches on kube-apiserver", lambda: longrunning_watches(direct) >= baseline + 5, 20
    )
    for conn in watches:
        conn.close()
    wait_until(
        "the watches gone from kube-apiserver", lambda: longrunning_watches(direct) <= baseline, 20
    )
    with proxied.client() as client:
        assert client.get(CONFIGMAPS.format(ns=namespace)).status_code == 200


def test_broken_clients_do_not_hurt_the_proxy(start_proxy: StartProxy, namespace: str) -> None:
    proxied = start_proxy()
    with open_raw(proxied) as garbage:
        garbage.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        assert read_until(garbage, b"\r\n\r\n").startswith(b"HTTP/1.1 400")
    with open_raw(proxied) as half:
        half.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")  # never finished
    with open_raw(proxied) as short_body:
        short_body.sendall(
            request_head(proxied, "POST", CONFIGMAPS.format(ns=namespace), "Content-Length: 1000")
            + b'{"metadata":'
        )
    with socket.create_connection(("127.0.0.1", proxied.proxy.port)):
        pass  # no TLS handshake at all
    with proxied.client() as client:
        assert client.get(CONFIGMAPS.format(ns=namespace)).status_code == 200


def test_many_concurrent_connections_and_watches(
    start_proxy: StartProxy, direct: httpx.Client, namespace: str
) -> None:
    proxied = start_proxy()
    path = CONFIGMAPS.format(ns=namespace)
    version = direct.get(path).json()["metadata"]["resourceVersion"]
    opened = threading.Barrier(11)

    def watch_for_created() -> tuple[object, object]:
        with (
            proxied.client(timeout=30.0) as client,
            client.stream("GET", f"{path}?watch=true&resourceVersion={version}") as response,
        ):
            opened.wait(30)
            return event_name(next(watch_lines(response)))

    def list_five_times() -> list[int]:
        with proxied.client() as client:
            return [client.get(path).status_code for _ in range(5)]

    with ThreadPoolExecutor(max_workers=50) as pool:
        watches = [pool.submit(watch_for_created) for _ in range(10)]
        lists = [pool.submit(list_five_times) for _ in range(40)]
        opened.wait(30)
        create_configmaps(direct, namespace, ["hello"])
        assert [w.result(timeout=60) for w in watches] == [("ADDED", "hello")] * 10
        assert all(codes == [200] * 5 for codes in (f.result(timeout=60) for f in lists))


def test_upgrade_requests_are_never_faulted_and_reach_kube_apiserver(
    start_proxy: StartProxy, namespace: str
) -> None:
    proxied = start_proxy(rate=1.0, seed=1)
    with open_raw(proxied) as conn:
        conn.sendall(
            request_head(
                proxied,
                "GET",
                f"/api/v1/namespaces/{namespace}/pods/nope/exec?command=ls&stdout=true",
                "Connection: Upgrade",
                "Upgrade: websocket",
                "Sec-WebSocket-Version: 13",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                "Sec-WebSocket-Protocol: v5.channel.k8s.io",
            )
        )
        answer = read_until(conn, b"}")
    assert answer.startswith(b"HTTP/1.1 404")
    assert b'pods \\"nope\\" not found' in answer


class EchoUpstream:
    """An HTTPS server that switches protocols on any request, then echoes bytes back."""

    def __init__(self, cert: Path, key: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(15)
        self.context = context
        self.port = int(self.listener.getsockname()[1])
        self.head = b""
        self.thread = threading.Thread(target=self._serve_one, daemon=True)
        self.thread.start()

    def _serve_one(self) -> None:
        raw, _ = self.listener.accept()
        with self.context.wrap_socket(raw, server_side=True) as conn:
            while b"\r\n\r\n" not in self.head:
                self.head += conn.recv(4096)
            conn.sendall(
                b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
            )
            while data := conn.recv(4096):
                conn.sendall(data)

    def close(self) -> None:
        self.listener.close()


def test_upgraded_connections_are_tunnelled_both_ways(control_plane: ControlPlane) -> None:
    upstream = EchoUpstream(control_plane.proxy_cert, control_plane.proxy_key)
    proxy = FaultProxy(
        f"https://127.0.0.1:{upstream.port}",
        control_plane.ca,
        control_plane.proxy_cert,
        control_plane.proxy_key,
        rate=1.0,
        seed=1,
    )
    proxy.start()
    try:
        raw = socket.create_connection(("127.0.0.1", proxy.port), timeout=15)
        with tls(control_plane.ca).wrap_socket(raw, server_hostname="localhost") as conn:
            conn.sendall(
                b"GET /api/v1/namespaces/ns/pods/p/portforward HTTP/1.1\r\nHost: localhost\r\n"
                b"Authorization: Bearer t0ken\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
            )
            assert read_until(conn, b"\r\n\r\n").startswith(b"HTTP/1.1 101")
            for message in (b"ping", b"x" * 100_000):
                conn.sendall(message)
                echoed = b""
                while len(echoed) < len(message):
                    echoed += conn.recv(65536)
                assert echoed == message
        head = upstream.head.decode().lower()
        assert "authorization: bearer t0ken" in head
        assert f"host: 127.0.0.1:{upstream.port}" in head
        assert "upgrade: echo" in head
    finally:
        proxy.stop()
        upstream.close()


class OneAnswerPerConnection:
    """An HTTPS server that answers one request per connection, as if keeping it alive, and
    closes the connection once told to: a server dropping an idle keep-alive connection."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(15)
        self.port = int(self.listener.getsockname()[1])
        self.connections = 0
        self.drop = threading.Semaphore(0)
        self.dropped = threading.Semaphore(0)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                raw, _ = self.listener.accept()
                self.connections += 1
                with self.context.wrap_socket(raw, server_side=True) as conn:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        head += conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    self.drop.acquire(timeout=15)
                self.dropped.release()

    def close(self) -> None:
        self.listener.close()


def test_a_kept_alive_connection_the_server_dropped_is_replaced(
    control_plane: ControlPlane,
) -> None:
    upstream = OneAnswerPerConnection(control_plane.proxy_cert, control_plane.proxy_key)
    try:
        with (
            FaultProxy(
                f"https://127.0.0.1:{upstream.port}",
                control_plane.ca,
                control_plane.proxy_cert,
                control_plane.proxy_key,
            ) as proxy,
            httpx.Client(base_url=proxy.url, verify=tls(control_plane.ca), timeout=15) as client,
        ):
            answers = []
            # One client connection throughout; the server drops the proxy's upstream
            # connection after each answer, once the proxy has kept it for reuse.
            for _ in range(5):
                answers.append(client.get("/api/v1/namespaces"))
                upstream.drop.release()
                assert upstream.dropped.acquire(timeout=15)
        assert [(a.status_code, a.text) for a in answers] == [(200, "ok")] * 5
        assert upstream.connections == 5
    finally:
        upstream.close()


def test_unreachable_kube_apiserver_is_a_503(control_plane: ControlPlane) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with (
        FaultProxy(
            f"https://127.0.0.1:{port}",
            control_plane.ca,
            control_plane.proxy_cert,
            control_plane.proxy_key,
        ) as proxy,
        httpx.Client(base_url=proxy.url, verify=tls(control_plane.ca), timeout=15) as client,
    ):
        answer = client.get("/api/v1/namespaces/default/configmaps")
        assert answer.status_code == 503
        assert answer.json()["reason"] == "ServiceUnavailable"
        assert client.get("/version").status_code == 503  # and the proxy keeps answering


def test_runs_as_a_child_process(
    control_plane: ControlPlane, tmp_path: Path, namespace: str
) -> None:
    port_file = tmp_path / "port"
    argv = [
        sys.executable, "-m", "localcluster.faultproxy",
        "--upstream", control_plane.url,
        "--upstream-ca", str(control_plane.ca),
        "--cert", str(control_plane.proxy_cert),
        "--key", str(control_plane.proxy_key),
        "--port", "0",
        "--port-file", str(port_file),
        "--fault-rate", "1", "--fault-seed", "7",
        "--timeout-hold", "0.1",
    ]  # fmt: skip
    process = subprocess.Popen(
        argv,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until("the port file", port_file.exists, 20)
        url = f"https://127.0.0.1:{port_file.read_text().strip()}"
        kubeconfig = tmp_path / "kubeconfig"
        write_kubeconfig(kubeconfig, url, control_plane.ca, control_plane.token)
        version = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), "get", "--raw", "/version"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert json.loads(version.stdout)["gitVersion"] == "v1.37.2"
        with httpx.Client(
            base_url=url,
            verify=tls(control_plane.ca),
            headers={"Authorization": f"Bearer {control_plane.token}"},
            timeout=15,
        ) as client:
            assert client.get(CONFIGMAPS.format(ns=namespace)).status_code in READ_FAULTS
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    logged = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    injected = [entry for entry in logged if entry.get("msg") == "fault injected"]
    assert len(injected) == 1, stderr
    assert injected[0]["kind"] in ("InternalError", "TooManyRequests", "Timeout")
    assert injected[0]["method"] == "GET"
    assert injected[0]["path"] == CONFIGMAPS.format(ns=namespace)
