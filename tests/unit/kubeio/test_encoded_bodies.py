"""Request bodies: kubeio encodes JSON itself, and the official REST object sends those bytes as
they are (through the same request hook a counter may wrap) straight to its origin's connection
pool, everything else its own way."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import urllib3

from kubeio.client import MERGE_PATCH, accept_encoded_bodies, encoded_body, split_origin

JSON_PATCH = "application/json-patch+json"


@pytest.mark.parametrize(
    ("body", "content_type", "encoded"),
    [
        pytest.param({"a": 1}, "application/json", b'{"a":1}', id="object"),
        pytest.param({"s": "é"}, "application/json", '{"s":"é"}'.encode(), id="utf-8 as is"),
        pytest.param({"a": None}, MERGE_PATCH, b'{"a":null}', id="merge patch"),
        pytest.param([{"op": "test"}], JSON_PATCH, b'[{"op":"test"}]', id="json patch list"),
        pytest.param({"a": 1}, JSON_PATCH, {"a": 1}, id="json patch object: REST object's rule"),
        pytest.param(None, "application/json", None, id="no body"),
        pytest.param(b"{}", "application/json", b"{}", id="bytes already"),
        pytest.param("x: 1", "application/yaml", "x: 1", id="not json"),
        pytest.param(
            {"big": 2**70}, "application/json", b'{"big":1180591620717411303424}', id="big"
        ),
    ],
)
def test_encoded_body(body: Any, content_type: str, encoded: Any) -> None:
    assert encoded_body(body, content_type) == encoded


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 201 `{}` to anything, recording the request line's target, the body and the
    client's port (one port per connection)."""

    seen: ClassVar[list[tuple[str, str, bytes, int]]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, body, self.client_address[1]))
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def server() -> Iterator[str]:
    Recorder.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    httpd.protocol_version = "HTTP/1.1"
    Recorder.protocol_version = "HTTP/1.1"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class Rest:
    """The official REST object's shape: a pool manager and a `request` of its own."""

    def __init__(self, pool_manager: urllib3.PoolManager) -> None:
        self.pool_manager = pool_manager
        self.own: list[Any] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.own.append(kwargs["body"])
        return "own way"


def test_bytes_go_as_they_are_and_the_rest_the_rest_objects_way(server: str) -> None:
    rest = Rest(urllib3.PoolManager(maxsize=1))
    accept_encoded_bodies(rest)
    accept_encoded_bodies(rest)  # idempotent: one wrapper
    headers = {"Content-Type": "application/json"}
    for n in range(3):
        response = rest.request(
            "POST",
            f"{server}/api/v1/pods?n={n}",
            headers=headers,
            body=b'{"a":1}',
            _request_timeout=(5.0, 30.0),
        )
        assert response.status == 201 and json.loads(response.read()) == {}
    sent = Recorder.seen
    assert [(m, p, b) for m, p, b, _ in sent] == [
        ("POST", f"/api/v1/pods?n={n}", b'{"a":1}') for n in range(3)
    ]
    assert len({port for *_, port in sent}) == 1  # one pooled connection
    assert rest.own == []
    assert rest.request("POST", f"{server}/x", body={"a": 1}) == "own way"
    assert rest.request("GET", f"{server}/x") == "own way"
    assert rest.own == [{"a": 1}, None]


def test_a_closed_pool_is_found_again(server: str) -> None:
    rest = Rest(urllib3.PoolManager())
    accept_encoded_bodies(rest)
    rest.request("PUT", f"{server}/a", body=b"1", _request_timeout=5.0).read()
    rest.pool_manager.clear()  # what ApiClient.close does
    rest.request("PUT", f"{server}/b", body=b"2", _request_timeout=5.0).read()
    assert [(p, b) for _, p, b, _ in Recorder.seen] == [("/a", b"1"), ("/b", b"2")]


def test_through_a_proxy_the_target_stays_absolute(server: str) -> None:
    rest = Rest(urllib3.ProxyManager(server))
    accept_encoded_bodies(rest)
    rest.request("POST", "http://api.example:8080/api/v1/pods", body=b"{}").read()
    [(_, target, _, _)] = Recorder.seen
    assert target == "http://api.example:8080/api/v1/pods"


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("https://h:6443/api/v1/pods?x=1", ("https://h:6443", "/api/v1/pods?x=1")),
        ("http://127.0.0.1/a", ("http://127.0.0.1", "/a")),
        ("https://h", ("https://h", "")),
        ("/relative", ("", "/relative")),
    ],
)
def test_split_origin(url: str, parts: tuple[str, str]) -> None:
    assert split_origin(url) == parts
