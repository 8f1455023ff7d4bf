"""A CronJob on the local cluster with a real one-minute schedule: a Job within a minute, then
with concurrencyPolicy Forbid and that Job still running, no second one at the next slot."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from batch_helpers import get_json, wait_for

from localcluster.running import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "cronjob.yaml"


def _jobs(cluster: LocalCluster, namespace: str) -> list[dict]:
    return list(get_json(cluster, "vcjob", "-n", namespace)["items"])


def test_forbid_creates_one_job_per_running_slot(cluster: LocalCluster, namespace: str) -> None:
    cron = yaml.safe_load(EXAMPLE.read_text())
    cron["metadata"]["name"] = "every-minute"
    cron["spec"]["schedule"] = "* * * * *"
    cron["spec"]["concurrencyPolicy"] = "Forbid"
    # Its pods run well past the next slot.
    template = cron["spec"]["jobTemplate"]["spec"]["tasks"][0]["template"]
    template["metadata"]["annotations"]["sim.vcjob.io/runtime"] = "600s"
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(cron))
    header, row = cluster.kubectl("get", "cronvj", "-n", namespace).stdout.splitlines()
    # Kubernetes' CronJob columns (LAST SCHEDULE is empty until the first run).
    assert header.split() == ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert row.split()[:3] == ["every-minute", "*", "*"]

    jobs = wait_for(lambda: _jobs(cluster, namespace), bool, "the first Job", timeout=90)
    (job,) = jobs
    meta = job["metadata"]
    scheduled = datetime.fromisoformat(
        meta["annotations"]["volcano.sh/cronjob-scheduled-timestamp"]
    )
    assert meta["name"] == f"every-minute-{int(scheduled.timestamp()) // 60}"
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "every-minute", True)
    status = wait_for(
        lambda: get_json(cluster, "cronvj", "every-minute", "-n", namespace).get("status") or {},
        lambda s: bool(s.get("active")),
        "status.active",
    )
    assert [a["name"] for a in status["active"]] == [meta["name"]]
    assert datetime.fromisoformat(status["lastScheduleTime"].replace("Z", "+00:00")) == scheduled
    wait_for(
        lambda: get_json(cluster, "vcjob", meta["name"], "-n", namespace),
        lambda j: (j.get("status") or {}).get("state", {}).get("phase") == "Running",
        "the Job to run",
    )

    # The next slot passes while the first Job still runs: Forbid skips it with an event. The
    # event is the controller's own word that it looked at that slot (no slot before it can
    # raise one: the first Job ran for the first slot), so the Jobs are counted once it is there
    # rather than a fixed time after the slot.
    next_slot = scheduled.timestamp() + 60
    wait_for(
        lambda: [e["reason"] for e in get_json(cluster, "events", "-n", namespace)["items"]],
        lambda reasons: "ForbidConcurrent" in reasons,
        "the ForbidConcurrent event of the next slot",
        timeout=max(0.0, next_slot - datetime.now(UTC).timestamp()) + 90,
    )
    assert [j["metadata"]["name"] for j in _jobs(cluster, namespace)] == [meta["name"]]

    # Deleting the CronJob deletes its Jobs (ownerReferences).
    cluster.kubectl("delete", "cronvj", "every-minute", "-n", namespace)
    wait_for(lambda: _jobs(cluster, namespace), lambda items: not items, "the Jobs to go")
