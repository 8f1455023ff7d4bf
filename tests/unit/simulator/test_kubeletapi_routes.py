"""kubelet's routes, and which pod a request is about: the process runtime's pods first, then the
simulated ones the node agent's informer knows, and the answers given before any upgrade."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from localcluster.simulator.kubeletpods import ContainerEntry, NodePods, PodEntry, simulated_entry
from localcluster.simulator.kubeletroutes import (
    RefusalError,
    Route,
    RouteError,
    route,
    stream_target,
)
from localcluster.simulator.remotecommand import StreamOptions


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/healthz", Route("healthz")),
        ("GET", "/containerLogs/ns/web/main", Route("logs", "ns", "web", "main")),
        ("POST", "/exec/ns/web/main", Route("exec", "ns", "web", "main")),
        ("GET", "/exec/ns/web/u-1/main", Route("exec", "ns", "web", "main", uid="u-1")),
        ("POST", "/attach/ns/web/main", Route("attach", "ns", "web", "main")),
        ("POST", "/portForward/ns/web", Route("portforward", "ns", "web")),
        ("GET", "/portForward/ns/web/u-1", Route("portforward", "ns", "web", uid="u-1")),
        ("GET", "/containerLogs/ns/we%62/main", Route("logs", "ns", "web", "main")),
    ],
)
def test_kubelet_paths_route_with_their_parameters(method: str, path: str, expected: Route) -> None:
    assert route(method, path) == expected


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/pods", 404),
        ("GET", "/containerLogs/ns/web", 404),
        ("GET", "/containerLogs/ns//main", 404),
        ("GET", "/exec/ns/web/a/b/c", 404),
        ("POST", "/containerLogs/ns/web/main", 405),
        ("DELETE", "/exec/ns/web/main", 405),
    ],
)
def test_other_paths_and_methods_are_refused(method: str, path: str, status: int) -> None:
    with pytest.raises(RouteError) as caught:
        route(method, path)
    assert caught.value.status == status


def pod(name: str, node: str = "node-1", image: str = "nginx") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": name, "uid": f"uid-{name}"},
        "spec": {
            "nodeName": node,
            "initContainers": [{"name": "setup", "image": image}],
            "containers": [{"name": "main", "image": image}],
        },
        "status": {"containerStatuses": [{"name": "main", "restartCount": 2}]},
    }


RUNNING = PodEntry(
    namespace="ns",
    name="real",
    uid="uid-real",
    node_name="node-1",
    runs_for_real=True,
    folder=Path("/pods/ns_real_uid-real"),
    containers=(
        ContainerEntry("main", 1, pid=4242, started=True),
        ContainerEntry("idle", 0),
        ContainerEntry("booting", 0, pid=4343),
    ),
    netns="/proc/4000/ns/net",
)


class Runtime:
    """The process runtime's side of the directory: runs `real`, and would run `python` images."""

    def find_pod(self, namespace: str, name: str) -> PodEntry | None:
        return RUNNING if (namespace, name) == ("ns", "real") else None

    def handles(self, pod: Mapping[str, Any]) -> bool:
        return all(c["image"] == "python" for c in pod["spec"]["containers"])


KNOWN = {
    "real": pod("real", image="python"),
    "sim": pod("sim"),
    "pending": pod("pending", image="python"),
    "elsewhere": pod("elsewhere", node="node-2"),
    "unbound": pod("unbound", node=""),
}


def directory(runtime: Runtime | None = None) -> NodePods:
    return NodePods(lambda ns, name: KNOWN.get(name) if ns == "ns" else None, runtime, "node-1")


def test_the_runtimes_pods_come_first() -> None:
    assert directory(Runtime()).find_pod("ns", "real") == RUNNING


def test_other_bound_pods_are_simulated_with_their_restart_counts() -> None:
    entry = directory(Runtime()).find_pod("ns", "sim")
    assert entry == PodEntry(
        namespace="ns",
        name="sim",
        uid="uid-sim",
        node_name="node-1",
        runs_for_real=False,
        containers=(ContainerEntry("setup", 0), ContainerEntry("main", 2)),
    )


def test_a_pod_the_runtime_will_run_is_not_called_simulated() -> None:
    entry = directory(Runtime()).find_pod("ns", "pending")
    assert entry is not None
    assert entry.runs_for_real
    assert entry.folder is None


@pytest.mark.parametrize("name", ["elsewhere", "unbound", "missing"])
def test_pods_not_on_this_node_are_unknown(name: str) -> None:
    assert directory().find_pod("ns", name) is None


def test_without_a_runtime_every_pod_is_simulated() -> None:
    entry = directory().find_pod("ns", "real")
    assert entry is not None
    assert not entry.runs_for_real
    assert simulated_entry(KNOWN["real"], runs_for_real=False) == entry


def test_log_files_are_named_per_run() -> None:
    assert RUNNING.log_file("main", 1) == Path("/pods/ns_real_uid-real/logs/main/1.log")
    assert simulated_entry(KNOWN["sim"], False).log_file("main", 0) is None


EXEC = StreamOptions(stdin=False, stdout=True, stderr=True, tty=False)


@pytest.mark.parametrize(
    ("route", "options", "status", "says"),
    [
        (Route("exec", "ns", "missing", "main"), EXEC, 404, "pod does not exist"),
        (Route("exec", "ns", "real", "main", uid="other"), EXEC, 404, "pod not found"),
        (Route("exec", "ns", "sim", "main"), EXEC, 400, "is simulated"),
        (Route("exec", "ns", "real", "nope"), EXEC, 500, 'container not found (\\"nope\\")'),
        (Route("exec", "ns", "real", "idle"), EXEC, 400, "is not running"),
        (Route("exec", "ns", "real", "booting"), EXEC, 400, "is still starting"),
        (
            Route("attach", "ns", "real", "main"),
            StreamOptions(stdin=True, stdout=True, stderr=False, tty=False),
            400,
            "attach with stdin is not supported",
        ),
        (
            Route("attach", "ns", "real", "main"),
            StreamOptions(stdin=False, stdout=True, stderr=False, tty=True),
            400,
            "attach with a terminal (tty) is not supported",
        ),
    ],
)
def test_exec_and_attach_are_refused_before_the_upgrade(
    route: Route, options: StreamOptions, status: int, says: str
) -> None:
    with pytest.raises(RefusalError) as caught:
        stream_target(directory(Runtime()), route, options)
    assert caught.value.answer.status == status
    assert says in caught.value.answer.body.decode()


def test_status_answers_are_metav1_status_json() -> None:
    with pytest.raises(RefusalError) as caught:
        stream_target(directory(Runtime()), Route("exec", "ns", "sim", "main"), EXEC)
    answer = caught.value.answer
    assert answer.content_type == "application/json"
    body = json.loads(answer.body)
    assert (body["status"], body["reason"], body["code"]) == ("Failure", "BadRequest", 400)
    assert body["message"].startswith("pod ns/sim is simulated: no container runtime runs it")


def test_a_running_container_is_the_target() -> None:
    entry, pid = stream_target(directory(Runtime()), Route("exec", "ns", "real", "main"), EXEC)
    assert (entry, pid) == (RUNNING, 4242)
