"""Request bodies: kubeio encodes JSON itself, and the official REST object sends those bytes as
they are (through the same request hook a counter may wrap), everything else its own way."""

from __future__ import annotations

import json
from typing import Any

import pytest
import urllib3

from kubeio.client import MERGE_PATCH, accept_encoded_bodies, encoded_body

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


class FakePool:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.sent.append({"method": method, "url": url, **kwargs})
        return urllib3.HTTPResponse(body=b"{}", status=201, preload_content=False)


class FakeRest:
    def __init__(self) -> None:
        self.pool_manager = FakePool()
        self.own: list[Any] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.own.append(kwargs["body"])
        return "own way"


def test_bytes_go_as_they_are_and_the_rest_the_rest_objects_way() -> None:
    rest = FakeRest()
    accept_encoded_bodies(rest)
    accept_encoded_bodies(rest)  # idempotent: one wrapper
    headers = {"Content-Type": "application/json"}
    response = rest.request(
        "POST",
        "https://h/api/v1/pods",
        headers=headers,
        body=b'{"a":1}',
        _request_timeout=(5.0, 30.0),
    )
    assert response.status == 201 and json.loads(response.read()) == {}
    [sent] = rest.pool_manager.sent
    assert sent["body"] == b'{"a":1}' and sent["headers"] == headers
    assert (sent["timeout"].connect_timeout, sent["timeout"].read_timeout) == (5.0, 30.0)
    assert sent["preload_content"] is False
    assert rest.own == []
    assert rest.request("POST", "https://h/x", body={"a": 1}) == "own way"
    assert rest.request("GET", "https://h/x") == "own way"
    assert rest.own == [{"a": 1}, None]
