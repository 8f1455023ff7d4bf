"""The fault proxy's pure rules: which requests fail, how, how often, and what they answer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from localcluster.faultproxy import ProxyConfig, ProxyServer, UpstreamTarget
from localcluster.faults import (
    TIMEOUT_MESSAGE,
    WATCH_CUT_EVENTS,
    FaultKind,
    FaultPicker,
    ResourceRef,
    StatusFault,
    TimeoutFault,
    WatchCut,
    WatchFraming,
    fault_answer,
    faultable,
    hold_seconds,
    is_upgrade,
    parse_request,
    parse_resource_path,
)
from localcluster.proxyheaders import downstream_response_headers, upstream_request_headers

# -- how often, and which kinds -----------------------------------------------------------------


def test_rate_zero_never_faults() -> None:
    picker = FaultPicker(0.0, seed=1)
    for method, watch in [("GET", False), ("POST", False), ("GET", True), ("DELETE", False)]:
        assert all(picker.pick(method, watch) is None for _ in range(500))


def test_rate_one_always_faults() -> None:
    picker = FaultPicker(1.0, seed=2)
    for method, watch in [("GET", False), ("PATCH", False), ("GET", True)]:
        assert all(picker.pick(method, watch) is not None for _ in range(500))


@pytest.mark.parametrize("rate", [0.05, 0.2, 0.5])
def test_faults_follow_the_rate(rate: float) -> None:
    picker = FaultPicker(rate, seed=3)
    share = sum(picker.pick("GET", False) is not None for _ in range(20_000)) / 20_000
    assert abs(share - rate) < 0.02


@pytest.mark.parametrize(
    ("method", "watch", "kinds"),
    [
        (
            "GET",
            False,
            {FaultKind.INTERNAL_ERROR, FaultKind.TOO_MANY_REQUESTS, FaultKind.TIMEOUT},
        ),
        (
            "POST",
            False,
            {
                FaultKind.INTERNAL_ERROR,
                FaultKind.TOO_MANY_REQUESTS,
                FaultKind.CONFLICT,
                FaultKind.TIMEOUT,
            },
        ),
        (
            "PUT",
            False,
            {
                FaultKind.INTERNAL_ERROR,
                FaultKind.TOO_MANY_REQUESTS,
                FaultKind.CONFLICT,
                FaultKind.TIMEOUT,
            },
        ),
        (
            "GET",
            True,
            {FaultKind.INTERNAL_ERROR, FaultKind.TOO_MANY_REQUESTS, FaultKind.WATCH_CUT},
        ),
    ],
)
def test_each_request_shape_gets_exactly_its_kinds(
    method: str, watch: bool, kinds: set[FaultKind]
) -> None:
    picker = FaultPicker(1.0, seed=4)
    seen = {fault.kind for fault in (picker.pick(method, watch) for _ in range(2000)) if fault}
    assert seen == kinds


def test_conflicts_hit_writes_only_and_cuts_watches_only() -> None:
    picker = FaultPicker(1.0, seed=5)
    reads = [picker.pick("GET", False) for _ in range(2000)]
    assert not any(isinstance(f, StatusFault) and f.kind is FaultKind.CONFLICT for f in reads)
    assert not any(isinstance(f, WatchCut) for f in reads)


def test_watch_cuts_fall_after_one_to_five_events_and_are_clean_or_abrupt() -> None:
    picker = FaultPicker(1.0, seed=6)
    cuts = [f for f in (picker.pick("GET", True) for _ in range(3000)) if isinstance(f, WatchCut)]
    assert {c.after_events for c in cuts} == set(
        range(WATCH_CUT_EVENTS[0], WATCH_CUT_EVENTS[1] + 1)
    )
    assert {c.abrupt for c in cuts} == {True, False}


def test_only_timed_out_writes_may_still_be_applied() -> None:
    picker = FaultPicker(1.0, seed=7)
    read_timeouts = [f for f in (picker.pick("GET", False) for _ in range(3000)) if f]
    write_timeouts = [f for f in (picker.pick("POST", False) for _ in range(3000)) if f]
    assert {f.applied for f in read_timeouts if isinstance(f, TimeoutFault)} == {False}
    assert {f.applied for f in write_timeouts if isinstance(f, TimeoutFault)} == {True, False}


def test_kinds_are_spread_by_their_weights() -> None:
    picker = FaultPicker(1.0, seed=8)
    kinds = Counter(f.kind for f in (picker.pick("GET", False) for _ in range(9000)) if f)
    # READ weights 4:4:1
    assert 3700 < kinds[FaultKind.INTERNAL_ERROR] < 4300
    assert 3700 < kinds[FaultKind.TOO_MANY_REQUESTS] < 4300
    assert 800 < kinds[FaultKind.TIMEOUT] < 1200


def test_same_seed_same_faults_other_seed_other_faults() -> None:
    calls = [("GET", False), ("POST", False), ("GET", True), ("DELETE", False)] * 50

    def run(seed: int) -> list[object]:
        picker = FaultPicker(0.5, seed=seed)
        return [picker.pick(method, watch) for method, watch in calls]

    assert run(11) == run(11)
    assert run(11) != run(12)


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_rate_must_be_a_share(rate: float) -> None:
    with pytest.raises(ValueError, match=r"between 0\.0 and 1\.0"):
        FaultPicker(rate)


# -- what a request is --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "resource", "legacy_watch"),
    [
        ("/api/v1/namespaces/ns/configmaps", ResourceRef("", "v1", "configmaps", "ns"), False),
        (
            "/api/v1/namespaces/ns/configmaps/cm",
            ResourceRef("", "v1", "configmaps", "ns", "cm"),
            False,
        ),
        ("/api/v1/pods", ResourceRef("", "v1", "pods"), False),
        ("/api/v1/namespaces", ResourceRef("", "v1", "namespaces"), False),
        ("/api/v1/namespaces/ns", ResourceRef("", "v1", "namespaces", "", "ns"), False),
        (
            "/api/v1/namespaces/ns/status",
            ResourceRef("", "v1", "namespaces", "", "ns", "status"),
            False,
        ),
        (
            "/api/v1/namespaces/ns/pods/p/log",
            ResourceRef("", "v1", "pods", "ns", "p", "log"),
            False,
        ),
        (
            "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status",
            ResourceRef("batch.volcano.sh", "v1alpha1", "jobs", "ns", "j", "status"),
            False,
        ),
        (
            "/apis/coordination.k8s.io/v1/leases",
            ResourceRef("coordination.k8s.io", "v1", "leases"),
            False,
        ),
        (
            "/api/v1/watch/namespaces/ns/pods",
            ResourceRef("", "v1", "pods", "ns"),
            True,
        ),
        ("/api", None, False),
        ("/api/v1", None, False),
        ("/apis", None, False),
        ("/apis/batch.volcano.sh", None, False),
        ("/apis/batch.volcano.sh/v1alpha1", None, False),
        ("/version", None, False),
        ("/readyz", None, False),
        ("/openapi/v3/api/v1", None, False),
        ("/metrics", None, False),
    ],
)
def test_paths_are_read_as_kube_apiserver_reads_them(
    path: str, resource: ResourceRef | None, legacy_watch: bool
) -> None:
    assert parse_resource_path(path) == (resource, legacy_watch)


@pytest.mark.parametrize(
    ("method", "target", "is_watch"),
    [
        ("GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5", True),
        ("GET", "/api/v1/namespaces/ns/pods?watch=1", True),
        ("GET", "/api/v1/watch/namespaces/ns/pods", True),
        ("GET", "/api/v1/namespaces/ns/pods?watch=false", False),
        ("GET", "/api/v1/namespaces/ns/pods", False),
        ("POST", "/api/v1/namespaces/ns/pods?watch=true", False),
        ("GET", "/api/v1/namespaces/ns/pods/p/log?follow=true&watch=true", False),
        ("GET", "/api?watch=true", False),
    ],
)
def test_watch_requests_are_recognised(method: str, target: str, is_watch: bool) -> None:
    assert parse_request(method, target).is_watch is is_watch


def test_only_resource_requests_without_upgrade_are_faultable() -> None:
    resource = parse_request("GET", "/api/v1/namespaces/ns/configmaps")
    assert faultable(resource, upgrade=False)
    assert not faultable(resource, upgrade=True)
    for path in ("/api", "/apis/apps/v1", "/version", "/healthz", "/openapi/v2"):
        assert not faultable(parse_request("GET", path), upgrade=False)


@pytest.mark.parametrize(
    ("headers", "upgrade"),
    [
        ([(b"Connection", b"Upgrade"), (b"Upgrade", b"websocket")], True),
        ([(b"connection", b"keep-alive, upgrade"), (b"upgrade", b"SPDY/3.1")], True),
        ([(b"Connection", b"keep-alive")], False),
        ([(b"Upgrade", b"websocket")], False),
        ([], False),
    ],
)
def test_upgrades_are_recognised_by_the_connection_header(
    headers: list[tuple[bytes, bytes]], upgrade: bool
) -> None:
    assert is_upgrade(headers) is upgrade


@pytest.mark.parametrize(
    ("timeout", "hold"),
    [
        (None, 10.0),
        ("", 10.0),
        ("2s", 2.0),
        ("500ms", 0.5),
        ("1m0s", 10.0),
        ("30s", 10.0),
        ("0s", 10.0),
        ("soon", 10.0),
    ],
)
def test_hold_is_the_shorter_of_the_proxy_hold_and_the_request_timeout(
    timeout: str | None, hold: float
) -> None:
    assert hold_seconds(timeout, 10.0) == hold


def test_request_timeout_parameter_is_read() -> None:
    request = parse_request("get", "/api/v1/namespaces/ns/configmaps?timeout=2s&limit=5")
    assert (request.method, request.timeout, request.path) == (
        "GET",
        "2s",
        "/api/v1/namespaces/ns/configmaps",
    )


# -- what a fault answers -----------------------------------------------------------------------


def _body(kind: FaultKind, resource: ResourceRef | None = None) -> dict[str, object]:
    decoded: dict[str, object] = json.loads(fault_answer(kind, resource).body)
    return decoded


@pytest.mark.parametrize(
    ("kind", "code", "reason"),
    [
        (FaultKind.INTERNAL_ERROR, 500, "InternalError"),
        (FaultKind.TOO_MANY_REQUESTS, 429, "TooManyRequests"),
        (FaultKind.CONFLICT, 409, "Conflict"),
        (FaultKind.TIMEOUT, 504, "Timeout"),
    ],
)
def test_answers_are_status_objects(kind: FaultKind, code: int, reason: str) -> None:
    answer = fault_answer(kind, ResourceRef("", "v1", "configmaps", "ns", "cm"))
    body = _body(kind, ResourceRef("", "v1", "configmaps", "ns", "cm"))
    assert answer.code == code
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert (body["status"], body["reason"], body["code"]) == ("Failure", reason, code)
    headers = dict(answer.headers)
    assert headers["Content-Type"] == "application/json"
    assert headers["Content-Length"] == str(len(answer.body))


def test_too_many_requests_says_when_to_retry() -> None:
    answer = fault_answer(FaultKind.TOO_MANY_REQUESTS, None)
    assert dict(answer.headers)["Retry-After"] == "1"
    assert _body(FaultKind.TOO_MANY_REQUESTS)["details"] == {"retryAfterSeconds": 1}
    assert "Retry-After" not in dict(fault_answer(FaultKind.INTERNAL_ERROR, None).headers)


def test_conflict_names_the_object_like_kube_apiserver() -> None:
    body = _body(
        FaultKind.CONFLICT, ResourceRef("batch.volcano.sh", "v1alpha1", "jobs", "ns", "j", "status")
    )
    assert body["message"] == (
        'Operation cannot be fulfilled on jobs.batch.volcano.sh "j": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    assert body["details"] == {"kind": "jobs", "name": "j", "group": "batch.volcano.sh"}


def test_timeout_is_worded_like_the_request_timeout_filter() -> None:
    assert _body(FaultKind.TIMEOUT)["message"] == TIMEOUT_MESSAGE


def test_watch_cuts_have_no_status_answer() -> None:
    with pytest.raises(ValueError, match="not answered with a Status"):
        fault_answer(FaultKind.WATCH_CUT, None)


# -- where watch events end ---------------------------------------------------------------------


def test_json_events_end_at_newlines_across_chunks() -> None:
    framing = WatchFraming.for_content_type("application/json")
    assert framing.feed(b'{"type":"ADDED"}\n{"type":"MOD') == [17]
    assert framing.feed(b'IFIED"}\n') == [8]
    assert framing.feed(b"") == []


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def test_protobuf_events_end_after_their_length_prefix() -> None:
    framing = WatchFraming.for_content_type("application/vnd.kubernetes.protobuf;stream=watch")
    stream = frame(b"first") + frame(b"") + frame(b"third event")
    ends_at = [9, 13, 28]
    assert framing.feed(stream) == ends_at
    # The same stream split at every possible place gives the same boundaries.
    for split in range(1, len(stream)):
        framing = WatchFraming(length_prefixed=True)
        first = framing.feed(stream[:split])
        second = [split + end for end in framing.feed(stream[split:])]
        assert first + second == ends_at


def test_protobuf_events_byte_by_byte() -> None:
    framing = WatchFraming(length_prefixed=True)
    stream = frame(b"ab") + frame(b"cde")
    ends = [i + 1 for i, byte in enumerate(stream) if framing.feed(bytes([byte])) == [1]]
    assert ends == [6, 13]


# -- headers ------------------------------------------------------------------------------------


def test_request_headers_pass_but_hop_by_hop_and_host_are_replaced() -> None:
    headers = [
        (b"Host", b"127.0.0.1:7000"),
        (b"Authorization", b"Bearer abc"),
        (b"Impersonate-User", b"jane"),
        (b"Impersonate-Group", b"a"),
        (b"Impersonate-Group", b"b"),
        (b"Content-Type", b"application/merge-patch+json"),
        (b"Accept", b"application/json"),
        (b"User-Agent", b"kubectl/v1.37.2"),
        (b"Connection", b"keep-alive, X-Hop"),
        (b"X-Hop", b"1"),
        (b"Keep-Alive", b"timeout=5"),
        (b"Transfer-Encoding", b"chunked"),
        (b"Content-Length", b"99"),
        (b"Expect", b"100-continue"),
        (b"Proxy-Authorization", b"Basic x"),
    ]
    assert upstream_request_headers(headers, b"127.0.0.1:6443", 12) == [
        (b"Host", b"127.0.0.1:6443"),
        (b"Authorization", b"Bearer abc"),
        (b"Impersonate-User", b"jane"),
        (b"Impersonate-Group", b"a"),
        (b"Impersonate-Group", b"b"),
        (b"Content-Type", b"application/merge-patch+json"),
        (b"Accept", b"application/json"),
        (b"User-Agent", b"kubectl/v1.37.2"),
        (b"Content-Length", b"12"),
    ]


def test_a_request_without_a_body_gets_no_content_length() -> None:
    assert upstream_request_headers([(b"Accept", b"*/*")], b"h:1", None) == [
        (b"Host", b"h:1"),
        (b"Accept", b"*/*"),
    ]


def test_upgrade_requests_keep_connection_and_upgrade() -> None:
    headers = [
        (b"Connection", b"Upgrade"),
        (b"Upgrade", b"websocket"),
        (b"Sec-WebSocket-Protocol", b"v5.channel.k8s.io"),
    ]
    assert upstream_request_headers(headers, b"h:1", None, upgrade=True) == [
        (b"Host", b"h:1"),
        *headers,
    ]


def test_response_headers_lose_hop_by_hop_and_a_chunked_length() -> None:
    chunked = [
        (b"Content-Type", b"application/json"),
        (b"Transfer-Encoding", b"chunked"),
        (b"Content-Length", b"10"),
        (b"Audit-Id", b"x"),
        (b"Connection", b"close"),
    ]
    assert downstream_response_headers(chunked) == [
        (b"Content-Type", b"application/json"),
        (b"Audit-Id", b"x"),
    ]
    sized = [(b"Content-Length", b"10"), (b"Warning", b"299 - a"), (b"Warning", b"299 - b")]
    assert downstream_response_headers(sized) == sized


# -- configuration ------------------------------------------------------------------------------


def test_upstream_is_an_https_origin() -> None:
    assert UpstreamTarget.from_url("https://127.0.0.1:6443") == UpstreamTarget(
        "127.0.0.1", 6443, b"127.0.0.1:6443"
    )
    assert UpstreamTarget.from_url("https://localhost/").authority == b"localhost"
    for bad in ("http://127.0.0.1:6443", "https://127.0.0.1:6443/api", "127.0.0.1:6443"):
        with pytest.raises(ValueError, match="upstream"):
            UpstreamTarget.from_url(bad)


def test_the_proxy_serves_on_loopback_only() -> None:
    unused = Path("unused")
    with pytest.raises(ValueError, match="loopback only"):
        ProxyServer(ProxyConfig("https://127.0.0.1:6443", unused, unused, unused, host="192.0.2.1"))
