"""Switch a local cluster's Jobs from Volcano's controller to vcjob's and back, and report what
changed: the manual lane of docs/migrating-from-volcano.md.

Builds `vc-controller-manager` from a Volcano tree, starts `vcjob local up --no-controller`, runs
the Jobs of tests/data/volcano_takeover/jobs.yaml under Volcano's controller, then:
1. Volcano → vcjob (stop, then start): objects recreated, phases, `startTime` against the Job's
   `Running` condition, status writes in a quiet window;
2. a Job vcjob runs to Running, then vcjob → Volcano: whether Volcano's controller rewrites it;
3. both at once (vcjob's started again beside Volcano's, a new Job): vcjob's warning.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from volcano_e2e import build_command, default_cache  # noqa: E402

from localcluster.running import LocalCluster, running_cluster, vcjob_executable  # noqa: E402

JOBS_FILE = ROOT / "tests" / "data" / "volcano_takeover" / "jobs.yaml"
KINDS = "vcjob,podgroups.scheduling.volcano.sh,pods,services,configmaps,secrets,networkpolicies"
# Volcano's controller waits forever for informers the local cluster does not serve.
VOLCANO_GATES = "--controllers=*,-colocation-config-controller,-sharding-controller"
WAIT = 120.0
QUIET_WINDOW = 20.0
BY_VCJOB = "by-vcjob"
# The phases of the Jobs of JOBS_FILE once Volcano's controller has run them a while.
SETTLED = {"mpi-like": "Running", "tf-like": "Running", "finished": "Completed"}
BOTH = "both-at-once"

Wire = dict[str, Any]
Key = tuple[str, str]


# -- what is compared (pure) ---------------------------------------------------------------


def owned_objects(items: Sequence[Wire]) -> dict[Key, str]:
    """The Jobs and every object a Job owns, by (kind, name), with their UIDs."""
    return {
        (o["kind"], o["metadata"]["name"]): o["metadata"]["uid"]
        for o in items
        if o["kind"] == "Job" or o["metadata"].get("ownerReferences")
    }


@dataclass(frozen=True)
class Takeover:
    objects: int
    recreated: list[str]
    missing: list[str]
    phase_changed: list[str]
    # Jobs whose startTime is later than their Running condition: the takeover's time, not theirs.
    start_moved: list[str]


def compare(before: Sequence[Wire], after: Sequence[Wire]) -> Takeover:
    old, new = owned_objects(before), owned_objects(after)
    jobs_before = {o["metadata"]["name"]: o for o in before if o["kind"] == "Job"}
    phase_changed, start_moved = [], []
    for job in (o for o in after if o["kind"] == "Job"):
        name, status = job["metadata"]["name"], job.get("status") or {}
        was = jobs_before.get(name)
        if was is not None and phase_of(was) != phase_of(job):
            phase_changed.append(f"{name}: {phase_of(was)} -> {phase_of(job)}")
        running = [
            c["lastTransitionTime"]
            for c in status.get("conditions") or []
            if c.get("status") == "Running"
        ]
        if status.get("startTime") and running and status["startTime"] > min(running):
            start_moved.append(name)
    return Takeover(
        objects=len(old),
        recreated=sorted(
            f"{k}/{n}" for (k, n), uid in old.items() if (k, n) in new and new[(k, n)] != uid
        ),
        missing=sorted(f"{k}/{n}" for (k, n) in old if (k, n) not in new),
        phase_changed=phase_changed,
        start_moved=start_moved,
    )


def phase_of(job: Mapping[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def status_writes(job: Mapping[str, Any], manager: str) -> str | None:
    """When `manager` last wrote the Job's status (kube-apiserver's managed fields)."""
    for entry in (job.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == manager and entry.get("subresource") == "status":
            return str(entry.get("time"))
    return None


# -- the lane (I/O) ------------------------------------------------------------------------


@contextmanager
def process(argv: Sequence[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield child
    finally:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)


def volcano(binary: Path, cluster: LocalCluster, log: Path) -> Any:
    return process(
        [str(binary), "--kubeconfig", str(cluster.kubeconfig), "--leader-elect=false",
         VOLCANO_GATES, "--listen-address", "127.0.0.1:0", "--healthz-address", "127.0.0.1:0"],
        log,
    )  # fmt: skip


def vcjob(cluster: LocalCluster, log: Path) -> Any:
    return process(
        [*vcjob_executable(), "controller", "--kubeconfig", str(cluster.kubeconfig),
         "--no-leader-elect", "--health-port", "0", "--metrics-port", "0",
         "--bind-address", "127.0.0.1", "--log-format", "text"],
        log,
    )  # fmt: skip


def snapshot(cluster: LocalCluster) -> list[Wire]:
    done = cluster.kubectl("get", KINDS, "-o", "json", "--show-managed-fields")
    items: list[Wire] = json.loads(done.stdout)["items"]
    return items


def jobs_of(items: Sequence[Wire]) -> dict[str, Wire]:
    return {o["metadata"]["name"]: o for o in items if o["kind"] == "Job"}


def wait(what: str, check: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    raise SystemExit(f"timed out waiting for {what}")


def writes_in_window(cluster: LocalCluster, manager: str, seconds: float) -> int:
    """How many Jobs `manager` wrote the status of during the next `seconds`."""
    before = {n: status_writes(j, manager) for n, j in jobs_of(snapshot(cluster)).items()}
    time.sleep(seconds)
    after = {n: status_writes(j, manager) for n, j in jobs_of(snapshot(cluster)).items()}
    return sum(1 for n, t in after.items() if t is not None and t != before.get(n))


def warnings(cluster: LocalCluster, reason: str) -> list[Wire]:
    events: list[Wire] = json.loads(cluster.kubectl("get", "events", "-o", "json").stdout)["items"]
    return [e for e in events if e["reason"] == reason]


def job_manifest(name: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
        "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "default",
                 "plugins": {"svc": [], "env": []},
                 "tasks": [{"name": "w", "replicas": 2, "template": {"spec": {"containers": [
                     {"name": "w", "image": "busybox", "command": ["sleep", "3600"]}]}}}]},
    })  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    cache = args.cache or default_cache(args.volcano_src)
    binary = build_command(args.volcano_src, cache, "controller-manager", "pkg/controllers", False)
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    with running_cluster(work / "cluster", controller=False, nodes=3, pod_runtime="1h") as cluster:
        with volcano(binary, cluster, work / "volcano-1.log"):
            cluster.kubectl("create", "-f", str(JOBS_FILE))
            wait(
                "Volcano's controller to run the Jobs",
                lambda: {n: phase_of(j) for n, j in jobs_of(snapshot(cluster)).items()} == SETTLED,
            )
            time.sleep(2)  # its last status writes of the round
            before = snapshot(cluster)
        with vcjob(cluster, work / "vcjob-1.log"):
            wait("vcjob's first round on every Job", lambda: all(
                (j.get("status") or {}).get("attempts") for j in jobs_of(snapshot(cluster)).values()
            ))  # fmt: skip
            after = snapshot(cluster)
            results["volcano_to_vcjob"] = asdict(compare(before, after))
            results["volcano_to_vcjob"]["vcjob_status_writes_in_window"] = writes_in_window(
                cluster, "vcjob-controller", QUIET_WINDOW
            )
            cluster.kubectl("create", "-f", "-", input=job_manifest(BY_VCJOB))
            wait(
                f"{BY_VCJOB} Running",
                lambda: phase_of(jobs_of(snapshot(cluster)).get(BY_VCJOB, {})) == "Running",
            )
            ran = jobs_of(snapshot(cluster))[BY_VCJOB]
        with volcano(binary, cluster, work / "volcano-2.log"):
            time.sleep(QUIET_WINDOW)  # Volcano's controller's first sync of every Job
            back = snapshot(cluster)
            results["vcjob_to_volcano"] = asdict(compare(after, back))
            rewritten = jobs_of(back)[BY_VCJOB]
            results["vcjob_to_volcano"]["volcano_rewrote_job_vcjob_ran"] = (
                status_writes(rewritten, "vc-controller-manager") is not None
            )
            results["vcjob_to_volcano"]["running_since_kept"] = (
                rewritten["status"]["conditions"] == ran["status"]["conditions"]
            )
            log = work / "vcjob-2.log"
            with vcjob(cluster, log):
                wait("vcjob's controller to start", lambda: log.exists()
                     and "controller health port" in log.read_text(errors="replace"))  # fmt: skip
                cluster.kubectl("create", "-f", "-", input=job_manifest(BOTH))
                events = wait(
                    "vcjob's AnotherControllerWrites warning",
                    lambda: warnings(cluster, "AnotherControllerWrites"),
                    timeout=60,
                )
                results["both_at_once"] = {
                    "warned_jobs": sorted({e["involvedObject"]["name"] for e in events}),
                    "message": events[0]["message"],
                }
    return results


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="volcano-takeover", description=__doc__.splitlines()[0])
    parser.add_argument("--volcano-src", type=Path, required=True, help="Volcano source tree")
    parser.add_argument("--workdir", type=Path, required=True, help="cluster and logs")
    parser.add_argument("--cache", type=Path, help="where vc-controller-manager is built")
    parser.add_argument("--json", type=Path, help="also write the results here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    results = run(args)
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    clean = (
        not results["volcano_to_vcjob"]["recreated"]
        and not results["volcano_to_vcjob"]["missing"]
        and not results["volcano_to_vcjob"]["start_moved"]
        and not results["vcjob_to_volcano"]["recreated"]
        and results["vcjob_to_volcano"]["running_since_kept"]
        and BOTH in results["both_at_once"]["warned_jobs"]
    )
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
