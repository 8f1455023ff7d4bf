"""API error translation, resource paths, the client-side rate limit and the CLI's Commands."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from controller.cli import controller_command
from kubeio.client import (
    BOOKMARK_PERIOD,
    EVENTS_BUDGET,
    JOBS,
    KUBERNETES_BUDGET,
    LEASES,
    PODS,
    PRIORITY_CLASSES,
    VOLCANO_BUDGET,
    TokenBucket,
    budget_for_path,
    stream_lines,
    translate,
    watch_idle_timeout,
)
from kubeio.errors import (
    AlreadyExistsError,
    ConflictError,
    NotFoundError,
    PermanentError,
    TransientError,
)


@pytest.mark.parametrize(
    ("status", "reason", "error"),
    [
        pytest.param(409, "Conflict", ConflictError, id="409 conflict"),
        pytest.param(409, "AlreadyExists", AlreadyExistsError, id="409 already exists"),
        pytest.param(404, "NotFound", NotFoundError, id="404"),
        pytest.param(500, "InternalError", TransientError, id="500"),
        pytest.param(503, "ServiceUnavailable", TransientError, id="503"),
        pytest.param(504, "Timeout", TransientError, id="504"),
        pytest.param(429, "TooManyRequests", TransientError, id="429"),
        pytest.param(422, "Invalid", PermanentError, id="422"),
        pytest.param(400, "BadRequest", PermanentError, id="400"),
    ],
)
def test_api_errors_carry_the_retry_decision(status: int, reason: str, error: type) -> None:
    translated = translate(status, {"reason": reason, "message": "m"}, "POST /x")
    assert type(translated) is error
    assert translated.status == status
    assert "POST /x" in str(translated)


def test_conflicts_are_transient() -> None:
    assert isinstance(translate(409, {"reason": "Conflict"}, "PUT"), TransientError)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            JOBS.path("ns", "j", "status"),
            "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status",
        ),
        (PODS.path(), "/api/v1/pods"),
        (PODS.path("ns"), "/api/v1/namespaces/ns/pods"),
        (
            LEASES.path("vcjob-system", "l"),
            "/apis/coordination.k8s.io/v1/namespaces/vcjob-system/leases/l",
        ),
        (
            PRIORITY_CLASSES.path("ignored", "high"),
            "/apis/scheduling.k8s.io/v1/priorityclasses/high",
        ),
    ],
)
def test_resource_paths(path: str, expected: str) -> None:
    assert path == expected


@pytest.mark.parametrize(
    ("request_timeout", "idle"),
    [
        pytest.param(5.0, 150.0, id="the node agent's 5 s: bookmarks decide"),
        pytest.param(10.0, 150.0, id="the controller's 10 s: bookmarks decide"),
        pytest.param(30.0, 150.0, id="the default 30 s"),
        pytest.param(60.0, 180.0, id="a long request timeout decides"),
    ],
)
def test_an_idle_watch_outlives_two_bookmark_periods(request_timeout: float, idle: float) -> None:
    assert watch_idle_timeout(request_timeout) == idle
    assert watch_idle_timeout(request_timeout) > 2 * BOOKMARK_PERIOD


def test_token_bucket_allows_a_burst_then_paces_at_qps() -> None:
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=3, monotonic=lambda: now[0], sleep=lambda s: None)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    now[0] += 1.0
    assert bucket.reserve() == 0.0


@pytest.mark.parametrize(
    ("path", "budget"),
    [
        ("/api/v1/namespaces/ns/pods", KUBERNETES_BUDGET),
        ("/api/v1/namespaces/ns/pods/events", KUBERNETES_BUDGET),  # a pod named "events"
        ("/api/v1/namespaces/events/pods", KUBERNETES_BUDGET),  # a namespace named "events"
        ("/api/v1/namespaces/ns/secrets/job-ssh", KUBERNETES_BUDGET),
        ("/api/v1/nodes", KUBERNETES_BUDGET),
        ("/apis/coordination.k8s.io/v1/namespaces/ns/leases/vcjob", KUBERNETES_BUDGET),
        ("/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w", KUBERNETES_BUDGET),
        ("/api/v1/namespaces/ns/events", EVENTS_BUDGET),
        ("/api/v1/namespaces/ns/events/e1", EVENTS_BUDGET),
        ("/api/v1/events", EVENTS_BUDGET),
        ("/apis/events.k8s.io/v1/namespaces/ns/events", EVENTS_BUDGET),
        ("/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status", VOLCANO_BUDGET),
        ("/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups", VOLCANO_BUDGET),
        ("/apis/scheduling.volcano.sh/v1beta1/queues/default", VOLCANO_BUDGET),
        ("/apis/bus.volcano.sh/v1alpha1/namespaces/ns/commands", VOLCANO_BUDGET),
        ("/apis/flow.volcano.sh/v1alpha1/jobflows?watch=true", VOLCANO_BUDGET),
        ("/apis/batch/v1/namespaces/ns/jobs", KUBERNETES_BUDGET),  # Kubernetes' own Job
    ],
)
def test_each_request_spends_the_budget_of_its_client(path: str, budget: str) -> None:
    assert budget_for_path(path) == budget


def test_every_documented_flag_exists_and_reads_its_environment_variable() -> None:
    result = CliRunner().invoke(controller_command, ["--help"])
    assert result.exit_code == 0
    for flag in [
        "--kubeconfig", "--workers", "--leader-elect", "--no-leader-elect", "--lease-namespace",
        "--lease-name", "--gang-schedulers", "--qps", "--burst", "--resync-period",
        "--health-port", "--metrics-port", "--disable-network-policy", "--ssh-key-type",
        "--log-level", "--log-format", "--elastic", "--elastic-period", "--elastic-dry-run",
        "--elastic-max-step", "--gpu-resource",
    ]:  # fmt: skip
        assert flag in result.output, flag
    bad = CliRunner().invoke(controller_command, [], env={"VCJOB_CONTROLLER_WORKERS": "zero"})
    assert bad.exit_code == 2
    assert "workers" in bad.output.lower()


@pytest.mark.parametrize(
    ("chunks", "lines"),
    [
        pytest.param([b'{"a":1}\n', b'{"b":2}\n'], [b'{"a":1}', b'{"b":2}'], id="a line a chunk"),
        pytest.param([b'{"a":1}\n{"b":2}\n'], [b'{"a":1}', b'{"b":2}'], id="two in one chunk"),
        pytest.param([b'{"a"', b":1}", b'\n{"b":2}\n'], [b'{"a":1}', b'{"b":2}'], id="cut"),
        pytest.param([b"\n", b'{"a":1}\n\n'], [b'{"a":1}'], id="empty lines skipped"),
        pytest.param([b'{"a":1}\n{"b"'], [b'{"a":1}'], id="a cut last line dropped"),
        pytest.param([b'{"s":"\xc3', b'\xa9"}\n'], [b'{"s":"\xc3\xa9"}'], id="utf-8 cut"),
        pytest.param([], [], id="nothing"),
    ],
)
def test_stream_lines(chunks: list[bytes], lines: list[bytes]) -> None:
    assert list(stream_lines(chunks)) == lines
