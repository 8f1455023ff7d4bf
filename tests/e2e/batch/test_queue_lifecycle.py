"""A queue's life on the local cluster: Open once created, Closing while a job still runs in it
(new jobs denied), Closed once the job is gone, and open again."""

from __future__ import annotations

import pytest
from batch_helpers import get_json, job_manifest, run_script, wait_for

from localcluster.running import LocalCluster, ToolError

pytestmark = pytest.mark.e2e


def _state(cluster: LocalCluster, queue: str) -> str | None:
    return (get_json(cluster, "queue", queue).get("status") or {}).get("state")


def test_close_then_reopen_a_queue_with_a_running_job(
    cluster: LocalCluster, namespace: str
) -> None:
    queue = f"life-{namespace}"
    created = run_script(cluster, "vcjob", "queue", "create", "-n", queue, "-w", "2")
    assert created.returncode == 0, created.stderr
    wait_for(lambda: _state(cluster, queue), lambda s: s == "Open", "the queue to open")

    cluster.kubectl("create", "-n", namespace, "-f", "-", input=job_manifest("first", queue))
    wait_for(
        lambda: get_json(cluster, "podgroups.scheduling.volcano.sh", "-n", namespace)["items"],
        bool,
        "the job's PodGroup",
    )

    closed = run_script(cluster, "vcjob", "queue", "operate", "-n", queue, "-a", "close")
    assert closed.returncode == 0, closed.stderr
    wait_for(lambda: _state(cluster, queue), lambda s: s == "Closing", "Closing")
    # The Command was carried out and deleted.
    wait_for(
        lambda: get_json(cluster, "commands", "-n", "default")["items"],
        lambda items: not [c for c in items if c["target"]["name"] == queue],
        "the CloseQueue Command to be deleted",
    )
    listed = run_script(cluster, "vcjob", "queue", "get", "-n", queue)
    assert listed.stdout.splitlines()[1].split()[:3] == [queue, "2", "Closing"]

    # The webhook judges a job's queue by its own watch of the Queues, which may be a moment
    # behind the state read above: a server-side dry run shows when it has seen Closing too.
    second = job_manifest("second", queue)
    wait_for(
        lambda: (
            cluster.kubectl(
                "create", "-n", namespace, "--dry-run=server", "-f", "-", input=second, check=False
            ).stderr
        ),
        lambda stderr: "Closing" in stderr,
        "the webhook to see the queue Closing",
    )
    with pytest.raises(ToolError) as denied:
        cluster.kubectl("create", "-n", namespace, "-f", "-", input=second)
    assert "Closing" in denied.value.stderr and "spec.queue" in denied.value.stderr

    cluster.kubectl("delete", "vcjob", "first", "-n", namespace)
    wait_for(lambda: _state(cluster, queue), lambda s: s == "Closed", "Closed", timeout=90)

    opened = run_script(cluster, "vcjob", "queue", "operate", "-n", queue, "-a", "open")
    assert opened.returncode == 0, opened.stderr
    wait_for(lambda: _state(cluster, queue), lambda s: s == "Open", "Open again")
    third = job_manifest("third", queue)
    wait_for(
        lambda: (
            cluster.kubectl(
                "create", "-n", namespace, "--dry-run=server", "-f", "-", input=third, check=False
            ).returncode
        ),
        lambda code: code == 0,
        "the webhook to see the queue Open again",
    )
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=third)

    # Foreground: the Job is gone only with its PodGroup, and a queue with PodGroups stays.
    cluster.kubectl("delete", "vcjob", "third", "-n", namespace, "--cascade=foreground")
    # As in Volcano 1.14 and later, an Open queue may be deleted once no PodGroup names it.
    assert _state(cluster, queue) == "Open"
    gone = run_script(cluster, "vcjob", "queue", "delete", "-n", queue)
    assert gone.returncode == 0, gone.stderr
