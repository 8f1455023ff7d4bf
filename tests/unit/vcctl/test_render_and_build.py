"""vcctl's tables, the `job view` layout and the objects the CLI creates."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner

from shared.cli import main
from vcctl.build import (
    build_command,
    build_queue,
    build_queue_command,
    build_run_job,
    parse_resources,
)
from vcctl.render import job_table, job_view, podgroup_phases, queue_table


def job(name: str, namespace: str = "default", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-03-04T12:00:00Z",
            "labels": {"volcano.sh/job-type": "Train"} if name == "typed" else {},
        },
        "spec": {
            "queue": "default",
            "tasks": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 3}],
        },
        "status": {"state": {"phase": "Running"}, "minAvailable": 4, **status},
    }


def test_job_table_has_vcctls_columns_and_widths() -> None:
    text = job_table([job("train", running=5, retryCount=2)], False, UTC)
    header, row = text.splitlines()
    assert header.split() == [
        "Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running",
        "Succeeded", "Failed", "Unknown", "RetryCount",
    ]  # fmt: skip
    # Name: the longest name (5) + 3; then Creation 15, Phase 12, JobType 12, ...
    assert header.startswith("Name    Creation       Phase       JobType     Replicas    Min   ")
    assert row.split() == ["train", "2026-03-04", "Running", "Batch", "5", "4", "0", "5", "0",
                           "0", "0", "2"]  # fmt: skip
    assert row.index("2026-03-04") == header.index("Creation")


def test_job_table_all_namespaces_and_job_type() -> None:
    text = job_table([job("typed", "team-a")], True, UTC)
    header, row = text.splitlines()
    assert header.startswith("Namespace   Name")
    assert row.split()[:2] == ["team-a", "typed"]
    assert "Train" in row.split()


def test_wide_adds_queue_and_scheduler() -> None:
    header = job_table([job("j")], False, UTC, wide=True).splitlines()[0]
    assert header.split()[-2:] == ["Queue", "Scheduler"]


def test_nothing_to_list() -> None:
    assert job_table([], False, UTC) == "No resources found"
    assert queue_table([], {}) == "No resources found"


def test_queue_table_counts_podgroups_per_phase() -> None:
    queue = {"metadata": {"name": "q"}, "spec": {"weight": 2}, "status": {"state": "Closing"}}
    phases = podgroup_phases(
        [
            {"spec": {"queue": "q"}, "status": {"phase": "Running"}},
            {"spec": {"queue": "q"}, "status": {"phase": "Running"}},
            {"spec": {"queue": "q"}, "status": {"phase": "Inqueue"}},
            {"spec": {"queue": "other"}, "status": {"phase": "Running"}},
        ]
    )
    header, row = queue_table([queue], phases).splitlines()
    assert header == (
        "Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed"
    )
    assert row.split() == ["q", "2", "Closing", "1", "0", "2", "0", "0"]


def test_job_view_sections_and_events() -> None:
    events = [
        {
            "type": "Normal",
            "reason": "JobCreated",
            "message": "accepted",
            "count": 3,
            "firstTimestamp": "2026-03-04T12:00:00Z",
            "lastTimestamp": "2026-03-04T12:05:00Z",
            "source": {"component": "vcjob-controller"},
        }
    ]
    text = job_view(job("train", running=5), events, datetime(2026, 3, 4, 12, 10, tzinfo=UTC))
    assert text.splitlines()[0] == "Name:\ttrain"
    for line in ("Spec:", "  Min Available:\t", "Status:", "    Phase:\tRunning", "Events:"):
        assert line in text
    assert re.search(r"^  Type\s+Reason\s+Age\s+From\s+Message$", text, re.MULTILINE)
    assert "Form" not in text
    assert "5m (x3 over 10m)" in text
    assert job_view(job("train"), [], datetime.now(UTC)).endswith("Events: \t<none>")


def test_job_view_shows_every_plugin_with_its_arguments() -> None:
    plugins = {"pytorch": ["--master=master", "--port=23456"], "svc": [], "tensorflow": []}
    shown = job("train")
    shown["spec"]["plugins"] = plugins
    lines = job_view(shown, [], datetime.now(UTC)).splitlines()
    start = lines.index("  Plugins:")
    assert lines[start + 1 : start + 4] == [
        '    Pytorch:\t["--master=master", "--port=23456"]',
        "    Svc:\t[]",
        "    Tensorflow:\t[]",
    ]
    assert lines[start + 4] == "  Queue:\tdefault"


def test_job_command_is_owned_by_and_targets_the_job() -> None:
    command = build_command(job("train", "ml"), "AbortJob")
    assert re.fullmatch(r"train-abortjob-[a-z0-9]{5}", command["metadata"]["name"])
    assert command["metadata"]["namespace"] == "ml"
    assert command["metadata"]["ownerReferences"] == [command["target"]]
    assert command["target"]["kind"] == "Job"
    assert command["target"]["uid"] == "uid-train"


def test_queue_command_goes_to_default_and_targets_the_queue() -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q", "uid": "uid-q"},
    }
    command = build_queue_command(queue, "CloseQueue")
    assert re.fullmatch(r"q-closequeue-[a-z0-9]{5}", command["metadata"]["name"])
    assert command["metadata"]["namespace"] == "default"
    assert command["action"] == "CloseQueue"
    assert command["target"] == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "name": "q",
        "uid": "uid-q",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_run_job_is_vcctls() -> None:
    built = build_run_job(
        name="hello",
        namespace="ml",
        image="busybox",
        min_available=1,
        replicas=3,
        requests=parse_resources("cpu=1000m,memory=100Mi", "-R"),
        limits={},
        scheduler="volcano",
    )
    task = built["spec"]["tasks"][0]
    assert "name" not in task, "the webhook names the task default0"
    assert task["replicas"] == 3
    container = task["template"]["spec"]["containers"][0]
    assert container["name"] == "hello"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["resources"]["requests"] == {"cpu": "1000m", "memory": "100Mi"}
    assert task["template"]["metadata"]["labels"] == {"job.volcano.sh": "hello"}
    assert build_queue("q", 2, "Open")["status"] == {"state": "Open"}


@pytest.mark.parametrize("text", ["cpu", "cpu=", "cpu=lots", "=1"])
def test_bad_resources_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="-R"):
        parse_resources(text, "-R")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["job", "view"],
            "Failed to view job: job name (specified by NAME, --name or -N) is mandatory",
        ),
        (["job", "delete"], "Failed to delete job: job name is mandatory to delete"),
        (["job", "why"], "Failed to explain job: job name (NAME or --name/-N) is mandatory"),
        (
            ["job", "view", "a", "-N", "b"],
            "Failed to view job: the name is given twice, as NAME (a) and with --name/-N (b)",
        ),
        (["job", "why", "a", "--name", "a"], "Failed to explain job: the name is given twice"),
        (["resume", "a", "-N", "b"], "Failed to resume job: the name is given twice"),
        (["queue", "get", "q", "-n", "r"], "Failed to get queue: the name is given twice"),
        (["queue", "create", "q", "-n", "r"], "Failed to create queue: the name is given twice"),
        (["queue", "delete"], "queue name must be specified (give NAME or --name/-n)"),
        (["job", "run"], "Failed to run job: job name cannot be left blank"),
        (["suspend"], "Failed to suspend job: job name is mandatory to suspend"),
        (["queue", "operate", "-n", "q"], "Failed to operate queue: action can not be null"),
        (["queue", "operate", "-n", "q", "-a", "update"], "weight must be specified"),
        (["queue", "get"], "name is mandatory to get the particular queue details"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(argv: list[str], message: str) -> None:
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert message in lines[0]


def test_a_kubeconfig_that_does_not_exist_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["job", "list", "-k", "/nonexistent/kubeconfig"])
    assert result.exit_code == 2
    assert "--kubeconfig /nonexistent/kubeconfig: no such file" in result.output


@pytest.mark.parametrize(
    ("status", "line"),
    [
        ("True", "  Suspended:\tqueued by Kueue in LocalQueue lq: insufficient unused quota"),
        ("False", None),
    ],
)
def test_job_view_says_why_a_suspended_job_waits(status: str, line: str | None) -> None:
    condition = {
        "type": "Suspended",
        "status": status,
        "reason": "JobSuspended",
        "message": "queued by Kueue in LocalQueue lq: insufficient unused quota",
    }
    shown = job_view(
        job("j", state={"phase": "Pending"}, typedConditions=[condition]),
        [],
        datetime(2026, 3, 4, 12, 10, tzinfo=UTC),
    ).splitlines()
    suspended = [s for s in shown if s.strip().startswith("Suspended:")]
    assert suspended == ([] if line is None else [line])
