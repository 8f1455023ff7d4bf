"""Which pods `pods/portforward` reaches, and how its streams are read."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.apiserver import errors
from localcluster.apiserver.portforward import (
    StreamRequest,
    forward_error,
    is_portforward_request,
    pod_address,
    stream_request,
)
from localcluster.apiserver.requestinfo import request_attributes
from localcluster.simulator.podstatus import pod_ip_for


def running(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "uid": "u1"},
        "spec": {"nodeName": "node-1"},
        "status": {"phase": "Running", "podIP": pod_ip_for("u1"), **status},
    }


def test_a_running_pod_that_really_runs_is_reached_at_its_pod_ip() -> None:
    assert pod_address(running(), "web") == pod_ip_for("u1")


@pytest.mark.parametrize(
    ("pod", "code", "message"),
    [
        (None, 404, 'pods "web" not found'),
        ({**running(), "spec": {}}, 400, "pod web does not have a host assigned"),
        (
            running(phase="Pending"),
            400,
            "unable to forward port because pod is not running. Current status=Pending",
        ),
        (running(podIP="10.244.1.2"), 400, "pod web is simulated and listens nowhere"),
        (running(podIP=""), 400, "pod web is simulated"),
    ],
)
def test_other_pods_get_kubes_answer(pod: dict[str, Any] | None, code: int, message: str) -> None:
    with pytest.raises(errors.StatusError) as caught:
        pod_address(pod, "web")
    assert caught.value.code == code
    assert message in str(caught.value.to_status()["message"])


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("POST", "/api/v1/namespaces/ns/pods/web/portforward", True),
        ("GET", "/api/v1/namespaces/ns/pods/web/portforward", True),
        ("GET", "/api/v1/namespaces/ns/pods/web/log", False),
        ("GET", "/apis/x.io/v1/namespaces/ns/pods/web/portforward", False),
    ],
)
def test_portforward_requests_are_recognised(method: str, path: str, expected: bool) -> None:
    assert is_portforward_request(request_attributes(method, path, {})) is expected


@pytest.mark.parametrize(
    ("headers", "stream_id", "expected"),
    [
        (
            {"streamtype": ["error"], "port": ["80"], "requestid": ["4"]},
            1,
            StreamRequest("error", "4", 80),
        ),
        (
            {"streamtype": ["data"], "port": ["80"], "requestid": ["4"]},
            3,
            StreamRequest("data", "4", 80),
        ),
        ({"streamtype": ["error"], "port": ["80"]}, 5, StreamRequest("error", "5", 80)),
        ({"streamtype": ["data"], "port": ["80"]}, 7, StreamRequest("data", "5", 80)),
    ],
)
def test_streams_pair_by_request_id(
    headers: dict[str, list[str]], stream_id: int, expected: StreamRequest
) -> None:
    assert stream_request(headers, stream_id) == expected


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({"port": ["80"]}, "streamtype header is missing"),
        ({"streamtype": ["resize"], "port": ["80"]}, "invalid stream type"),
        ({"streamtype": ["data"]}, "port header is missing"),
        ({"streamtype": ["data"], "port": ["http"]}, "unable to parse 'http' as a port"),
        ({"streamtype": ["data"], "port": ["70000"]}, "between 1 and 65535"),
    ],
)
def test_bad_stream_headers_name_the_header(headers: dict[str, list[str]], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        stream_request(headers, 1)


def test_the_error_stream_text_names_port_pod_and_uid() -> None:
    assert forward_error(80, "web", "u1", "refused") == (
        "error forwarding port 80 to pod web, uid u1: refused"
    )
