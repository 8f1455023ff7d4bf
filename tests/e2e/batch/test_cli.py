"""The console scripts against the local cluster: `vcjob job …`, `kubectl vcjob job …` (the
kubectl plugin), output, exit codes and one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from batch_helpers import BIN, get_json, job_manifest, run_script, script_env, wait_for

from localcluster.running import LocalCluster

pytestmark = pytest.mark.e2e

HEADER = [
    "Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running",
    "Succeeded", "Failed", "Unknown", "RetryCount",
]  # fmt: skip


def _phase(cluster: LocalCluster, namespace: str, name: str) -> str | None:
    job = get_json(cluster, "vcjob", name, "-n", namespace)
    return ((job.get("status") or {}).get("state") or {}).get("phase")


def test_job_lifecycle_through_the_cli(cluster: LocalCluster, namespace: str) -> None:
    ran = run_script(cluster, "vcjob", "job", "run", "-N", "hello", "-n", namespace, "-r", "2")
    assert (ran.returncode, ran.stdout.strip()) == (0, "run job hello successfully"), ran.stderr
    # The listings below are compared with each other: wait until the counts they show stop
    # moving (both pods Running), not only for the phase, which turns Running at minAvailable.
    wait_for(
        lambda: get_json(cluster, "vcjob", "hello", "-n", namespace).get("status") or {},
        lambda s: (s.get("state") or {}).get("phase") == "Running" and s.get("running") == 2,
        "Running with both pods running",
    )

    listed = run_script(cluster, "vcjob", "job", "list", "-n", namespace)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == HEADER
    cells = row.split()
    assert (cells[0], cells[2], cells[3], cells[4], cells[5]) == (
        "hello",
        "Running",
        "Batch",
        "2",
        "1",
    )
    assert (cells[6], cells[7]) == ("0", "2"), listed.stdout

    # The same through kubectl's plugin mechanism: `kubectl-vcjob` on PATH.
    plugin = run_script(cluster, "kubectl", "vcjob", "job", "list", "-n", namespace)
    assert plugin.returncode == 0, plugin.stderr
    assert plugin.stdout == listed.stdout

    everywhere = run_script(cluster, "vcjob", "job", "list", "-A")
    assert everywhere.stdout.splitlines()[0].split()[:2] == ["Namespace", "Name"]
    assert any(line.split()[:2] == [namespace, "hello"] for line in everywhere.stdout.splitlines())

    as_json = run_script(cluster, "vcjob", "job", "list", "-n", namespace, "-o", "json")
    assert [j["metadata"]["name"] for j in json.loads(as_json.stdout)["items"]] == ["hello"]
    wide = run_script(cluster, "vcjob", "job", "list", "-n", namespace, "-o", "wide")
    assert wide.stdout.splitlines()[0].split()[-2:] == ["Queue", "Scheduler"]

    viewed = run_script(cluster, "vcjob", "job", "view", "-N", "hello", "-n", namespace)
    assert viewed.returncode == 0, viewed.stderr
    assert viewed.stdout.startswith("Name:\thello\nNamespace:\t" + namespace)
    assert "Events:" in viewed.stdout
    # The name as a plain argument, as `kubectl describe` takes it.
    by_argument = run_script(cluster, "vcjob", "job", "view", "hello", "-n", namespace)
    assert by_argument.returncode == 0, by_argument.stderr
    assert by_argument.stdout.startswith("Name:\thello\nNamespace:\t" + namespace)
    twice = run_script(cluster, "vcjob", "job", "view", "hello", "-N", "other", "-n", namespace)
    assert (twice.returncode, twice.stderr.strip()) == (
        2,
        "Failed to view job: the name is given twice, as NAME (hello) and with --name/-N "
        "(other): give it once",
    )

    suspended = run_script(cluster, "vcjob", "job", "suspend", "-N", "hello", "-n", namespace)
    assert suspended.returncode == 0, suspended.stderr
    wait_for(lambda: _phase(cluster, namespace, "hello"), lambda p: p == "Aborted", "Aborted")
    # The alias, with the job as an argument as before.
    resumed = run_script(cluster, "vcjob", "resume", "hello", "-n", namespace)
    assert resumed.returncode == 0, resumed.stderr
    wait_for(lambda: _phase(cluster, namespace, "hello"), lambda p: p != "Aborted", "resumed")

    deleted = run_script(cluster, "vcjob", "job", "delete", "-N", "hello", "-n", namespace)
    assert deleted.stdout.strip() == "delete job hello successfully"
    empty = run_script(cluster, "vcjob", "job", "list", "-n", namespace)
    assert empty.stdout.strip() == "No resources found"


def test_namespace_defaults_to_the_kubeconfig_context(
    cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copy(cluster.kubeconfig, kubeconfig)
    env = script_env(cluster)
    env["KUBECONFIG"] = str(kubeconfig)
    run_script(
        cluster,
        "kubectl",
        "config",
        "set-context",
        "--current",
        f"--namespace={namespace}",
        env=env,
    )
    ran = run_script(cluster, "vcjob", "job", "run", "-N", "ctx", env=env)
    assert ran.returncode == 0, ran.stderr
    assert get_json(cluster, "vcjob", "ctx", "-n", namespace)["metadata"]["namespace"] == namespace
    listed = run_script(cluster, "vcjob", "job", "list", env=env)
    assert listed.stdout.splitlines()[1].split()[0] == "ctx"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["job", "view", "-N", "ghost"], 'Failed to view job: job "ghost" not found in namespace'),
        (["job", "suspend", "-N", "ghost"], 'Failed to suspend job: job "ghost" not found'),
        (["job", "why", "ghost"], 'Failed to explain job: job "ghost" not found'),
        (["job", "delete", "ghost"], 'Failed to delete job: job "ghost" not found'),
        (["queue", "get", "-n", "ghost"], 'Failed to get queue: queue "ghost" not found'),
        (["queue", "delete", "-n", "root"], "Failed to delete queue: "),
        (["queue", "operate", "-n", "ghost", "-a", "close"], 'queue "ghost" not found'),
    ],
)
def test_errors_are_one_line(cluster: LocalCluster, argv: list[str], message: str) -> None:
    result = run_script(cluster, str(BIN / "vcjob"), *argv)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_kubeconfig_is_one_line(cluster: LocalCluster, tmp_path: Path) -> None:
    env = script_env(cluster)
    env["KUBECONFIG"] = str(tmp_path / "absent")
    env["HOME"] = str(tmp_path)
    result = run_script(cluster, "vcjob", "job", "list", env=env)
    assert result.returncode == 1
    assert result.stderr.startswith("Failed to list job: cannot load the kubeconfig")
    assert result.stderr.strip().count("\n") == 0


def _quick_job(name: str) -> str:
    """A Job whose one pod succeeds a second after it starts."""
    job = json.loads(job_manifest(name))
    job["spec"]["tasks"][0]["template"]["metadata"] = {
        "annotations": {"sim.vcjob.io/runtime": "1s"}
    }
    return json.dumps(job)


def test_a_finished_job_is_not_suspended_and_why_says_its_pod_group_went(
    cluster: LocalCluster, namespace: str
) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=_quick_job("quick"))
    wait_for(lambda: _phase(cluster, namespace, "quick"), lambda p: p == "Completed", "Completed")

    suspended = run_script(cluster, "vcjob", "job", "suspend", "quick", "-n", namespace)
    assert (suspended.returncode, suspended.stderr.strip()) == (
        1,
        f"Failed to suspend job: job {namespace}/quick is Completed: a finished job cannot be "
        "suspended",
    )
    assert get_json(cluster, "commands", "-n", namespace)["items"] == []

    def why() -> list[str]:
        explained = run_script(cluster, "vcjob", "job", "why", "quick", "-n", namespace)
        assert explained.returncode == 0, explained.stderr
        return explained.stdout.splitlines()

    lines = wait_for(
        why, lambda out: not any(line.startswith("PodGroup ") for line in out), "no PodGroup"
    )
    assert lines[0] == f"Job {namespace}/quick: Completed"
    assert "PodGroup: none (deleted when the job finished)" in lines


def test_run_refuses_unknown_fields_with_their_path(
    cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    job = json.loads(job_manifest("typo"))
    job["spec"]["foo"] = 1
    manifest = tmp_path / "typo.yaml"
    manifest.write_text(json.dumps(job))  # JSON is YAML
    ran = run_script(cluster, "vcjob", "job", "run", "-f", str(manifest), "-n", namespace)
    assert ran.returncode == 1
    assert ran.stderr.startswith("Failed to run job: ")
    assert 'strict decoding error: unknown field "spec.foo"' in ran.stderr
    assert ran.stderr.strip().count("\n") == 0, ran.stderr
    assert get_json(cluster, "vcjob", "-n", namespace)["items"] == []


def test_queue_create_with_state_closed_makes_a_closed_queue(
    cluster: LocalCluster, namespace: str
) -> None:
    queue = f"shut-{namespace}"
    created = run_script(cluster, "vcjob", "queue", "create", queue, "-S", "Closed")
    assert created.returncode == 0, created.stderr
    assert created.stdout.splitlines()[0] == f"create queue {queue} successfully"
    wait_for(
        lambda: (get_json(cluster, "queue", queue).get("status") or {}).get("state"),
        lambda state: state == "Closed",
        "the new queue to be Closed",
    )
    shown = run_script(cluster, "vcjob", "queue", "get", queue)
    assert shown.stdout.splitlines()[1].split()[:3] == [queue, "1", "Closed"]
    deleted = run_script(cluster, "vcjob", "queue", "delete", queue)
    assert deleted.returncode == 0, deleted.stderr


def test_the_kubectl_plugin_offers_only_the_user_commands(cluster: LocalCluster) -> None:
    shown = run_script(cluster, "kubectl", "vcjob", "--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("Usage: kubectl vcjob ")
    commands = [line.split()[0] for line in shown.stdout.split("Commands:\n")[1].splitlines()]
    assert commands == [
        "job", "jobflow", "jobtemplate", "pod", "queue", "resume", "suspend", "version",
    ]  # fmt: skip
    server = run_script(cluster, "kubectl", "vcjob", "controller")
    assert server.returncode == 2
    assert "run `vcjob controller`" in server.stderr
