"""Every effectful transition survives an error or a crash at every API step of its apply.

Each scenario first runs clean against the in-memory API and counts the controller's writes.
Then, for every write N: the N-th write fails with a 500 (not applied), or the N-th write is
applied and the controller dies right after it (a fresh controller, empty memory and cache,
takes over from what the API holds). Every run must reach the clean run's end state with the
same retryCount and version, and create exactly as many pods: no failure is counted twice or
forgotten, and no pod runs more often than the policy says.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.job.decide import podview
from controller.job.shell.runner import Controller
from controller.settings import Settings
from kubeio.client import COMMANDS, JOBS, PODGROUPS, PODS, ApiClient, Resource
from kubeio.clock import ManualClock
from kubeio.errors import TransientError
from shared import labels
from tests.support import FakeKube

KEY = "ns/j"
UID = "job-uid-1"
MUTATING = ("create", "replace", "status", "patch", "delete")
KINDS = (("Job", JOBS), ("Pod", PODS), ("PodGroup", PODGROUPS), ("Command", COMMANDS))


class Crash(BaseException):
    """The controller process dies (nothing in it may catch this)."""


class FaultyKube(FakeKube):
    """Counts the controller's writes (Events aside) and breaks the `fail_at`-th one: `error`
    raises a 500 without applying it, `crash` applies it and then kills the controller."""

    def __init__(self, fail_at: int | None = None, mode: str = "error") -> None:
        super().__init__()
        self.fail_at = fail_at
        self.mode = mode
        self.writes = 0
        self.pod_creates: list[str] = []

    def _write(self, verb: str, res: Resource, call: Callable[[], Any]) -> Any:
        if res.plural == "events":
            return call()
        self.writes += 1
        if self.writes == self.fail_at and self.mode == "error":
            raise TransientError(f"{verb} {res.plural}: 500 injected", 500)
        result = call()
        if verb == "create" and res.plural == "pods":
            self.pod_creates.append(str(result["metadata"]["name"]))
        if self.writes == self.fail_at and self.mode == "crash":
            raise Crash()
        return result

    def create(self, res: Resource, namespace: str | None, body: dict[str, Any]) -> Any:
        return self._write(
            "create", res, lambda: super(FaultyKube, self).create(res, namespace, body)
        )

    def replace(self, res: Resource, namespace: str | None, body: dict[str, Any]) -> Any:
        return self._write(
            "replace", res, lambda: super(FaultyKube, self).replace(res, namespace, body)
        )

    def replace_status(self, res: Resource, namespace: str, body: dict[str, Any]) -> Any:
        return self._write(
            "status", res, lambda: super(FaultyKube, self).replace_status(res, namespace, body)
        )

    def merge_patch(
        self, res: Resource, namespace: str | None, name: str, patch: dict[str, Any], sub: str = ""
    ) -> Any:
        return self._write(
            "patch",
            res,
            lambda: super(FaultyKube, self).merge_patch(res, namespace, name, patch, sub),
        )

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        propagation: str | None = None,
    ) -> Any:
        return self._write(
            "delete",
            res,
            lambda: super(FaultyKube, self).delete(
                res, namespace, name, uid=uid, propagation=propagation
            ),
        )


# --- the world: a kubelet, a gang scheduler and a user, all through the API --------------------


def _job(policy: dict[str, Any] | None, tasks: list[tuple[str, int]]) -> dict[str, Any]:
    return {
        "apiVersion": labels.BATCH_API_VERSION,
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": UID},
        "spec": {
            "maxRetry": 3,
            "policies": [policy] if policy else [],
            "tasks": [
                {
                    "name": name,
                    "replicas": n,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    },
                }
                for name, n in tasks
            ],
        },
    }


def _objects(kube: FakeKube, plural: str) -> list[dict[str, Any]]:
    # A snapshot first: the controller's event recorder writes Events from its own thread, and
    # copying the items happens in one step under the GIL, where iterating them does not.
    return [o for (p, _ns, _n), o in list(kube.objects.items()) if p == plural]


def _job_of(kube: FakeKube) -> dict[str, Any]:
    return kube.objects[("jobs", "ns", "j")]


def _phase(kube: FakeKube) -> str:
    return str(((_job_of(kube).get("status") or {}).get("state") or {}).get("phase") or "")


@dataclass
class Scenario:
    name: str
    job: dict[str, Any]
    # The pod that fails on its first run (keyed by name), and how the user acts by phase.
    failing_pod: str | None
    commands: dict[str, str] = field(default_factory=dict)
    phase: str = "Completed"
    retry_count: int = 0
    version: int = 0
    pods_created: int = 0


def _kubelet(kube: FakeKube, scenario: Scenario, failed_once: set[str]) -> None:
    """Admit the PodGroup; a new pod runs, then succeeds — except the scripted one, which
    fails its first run."""
    for pg in _objects(kube, "podgroups"):
        if (pg.get("status") or {}).get("phase") != "Running":
            pg.setdefault("status", {})["phase"] = "Running"
            kube._bump(pg)
    for pod in _objects(kube, "pods"):
        status = pod.setdefault("status", {})
        name = podview.name_of(pod)
        if status.get("phase") in (None, "Pending"):
            status["phase"] = "Running"
        elif status.get("phase") == "Running":
            if name == scenario.failing_pod and name not in failed_once:
                failed_once.add(name)
                status["phase"] = "Failed"
                status["containerStatuses"] = [
                    {"name": "c", "state": {"terminated": {"exitCode": 1}}}
                ]
            elif not scenario.commands:
                status["phase"] = "Succeeded"
        else:
            continue
        kube._bump(pod)


def _user(kube: FakeKube, scenario: Scenario, issued: set[str]) -> None:
    """Issue each scripted command once, when the job is in the phase it waits for."""
    action = scenario.commands.get(_phase(kube))
    if action is None or action in issued:
        return
    issued.add(action)
    kube.put(
        COMMANDS,
        {
            "apiVersion": labels.BUS_API_VERSION,
            "kind": "Command",
            "metadata": {"name": f"c-{action.lower()}", "namespace": "ns", "uid": f"c-{action}"},
            "action": action,
            "target": {"kind": "Job", "name": "j", "uid": UID},
        },
    )
    if action == "ResumeJob":
        scenario.commands = {}  # after the resume, pods run to success


def _new_controller(kube: FakeKube, clock: ManualClock) -> Controller:
    settings = Settings(leader_elect=False, health_port=None, metrics_port=None, workers=1)
    return Controller(settings, ApiClient(), clock=clock, kube=kube)


def _refresh(ctl: Controller, kube: FakeKube) -> None:
    """What the watches would have delivered by now."""
    for kind, res in KINDS:
        items = []
        for obj in _objects(kube, res.plural):
            copied = copy.deepcopy(obj)
            copied.setdefault("kind", kind)
            items.append(copied)
        ctl.cache.replace_all(kind, items)


def _close(ctl: Controller) -> None:
    ctl.applier.close()
    ctl.recorder.close(timeout=1.0)


def run(scenario: Scenario, fail_at: int | None = None, mode: str = "error") -> FaultyKube:
    kube = FaultyKube(fail_at, mode)
    kube.put(JOBS, copy.deepcopy(scenario.job))
    script = copy.deepcopy(scenario)
    clock = ManualClock()
    ctl = _new_controller(kube, clock)
    failed_once: set[str] = set()
    issued: set[str] = set()
    try:
        for _ in range(120):
            clock.advance(2)
            _refresh(ctl, kube)
            try:
                ctl.process(KEY)
            except Crash:
                _close(ctl)
                ctl = _new_controller(kube, clock)
                continue
            _kubelet(kube, script, failed_once)
            _user(kube, script, issued)
            settled = _phase(kube) == scenario.phase and not _objects(kube, "podgroups")
            if settled and not _objects(kube, "commands"):
                break
    finally:
        _close(ctl)
    return kube


SCENARIOS = [
    Scenario(
        "RestartJob",
        _job({"event": "PodFailed", "action": "RestartJob"}, [("w", 2)]),
        failing_pod="j-w-0",
        retry_count=1,
        version=1,
        pods_created=4,
    ),
    Scenario(
        "RestartTask",
        _job({"event": "PodFailed", "action": "RestartTask"}, [("a", 1), ("b", 2)]),
        failing_pod="j-b-1",
        retry_count=1,
        pods_created=5,
    ),
    Scenario(
        "RestartPod",
        _job({"event": "PodFailed", "action": "RestartPod"}, [("w", 3)]),
        failing_pod="j-w-2",
        retry_count=1,
        pods_created=4,
    ),
    Scenario(
        "AbortJob",
        _job({"event": "PodFailed", "action": "AbortJob"}, [("w", 2)]),
        failing_pod="j-w-1",
        phase="Aborted",
        pods_created=2,
    ),
    Scenario(
        "TerminateJob",
        _job({"event": "PodFailed", "action": "TerminateJob"}, [("w", 2)]),
        failing_pod="j-w-0",
        phase="Terminated",
        pods_created=2,
    ),
    Scenario(
        "CompleteJob",
        _job({"event": "PodFailed", "action": "CompleteJob"}, [("w", 2)]),
        failing_pod="j-w-0",
        phase="Completed",
        pods_created=2,
    ),
    Scenario(
        "AbortJob then ResumeJob",
        _job(None, [("w", 2)]),
        failing_pod=None,
        commands={"Running": "AbortJob", "Aborted": "ResumeJob"},
        version=1,
        pods_created=4,
    ),
]


def _outcome(kube: FaultyKube) -> tuple[str, int, int, int]:
    status = _job_of(kube).get("status") or {}
    return (
        _phase(kube),
        int(status.get("retryCount") or 0),
        int(status.get("version") or 0),
        len(kube.pod_creates),
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_clean_run_reaches_the_expected_end(scenario: Scenario) -> None:
    kube = run(scenario)
    expected = (scenario.phase, scenario.retry_count, scenario.version, scenario.pods_created)
    assert _outcome(kube) == expected


@pytest.mark.parametrize("mode", ["error", "crash"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_a_fault_at_any_write_reaches_the_same_end(scenario: Scenario, mode: str) -> None:
    writes = run(scenario).writes
    expected = (scenario.phase, scenario.retry_count, scenario.version, scenario.pods_created)
    for n in range(1, writes + 1):
        kube = run(scenario, fail_at=n, mode=mode)
        assert _outcome(kube) == expected, f"{mode} at write {n} of {writes}"
        assert not _objects(kube, "commands"), f"a command was left behind ({mode} at {n})"
