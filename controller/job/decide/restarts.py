"""The restart a job is in the middle of, persisted with the Restarting phase.

A restart is decided in one status write (phase Restarting, retryCount and version bumps, and
this record) and carried out in the reconciles after it. The record says which pods the
restart replaces, so a controller that crashed or failed half-way through the deletions — or
a fresh replica with no memory — finishes the same restart instead of forgetting it. It lives
in `status.controlledResources` under `RECORD_KEY`, written and removed together with the
phase, so phase and record can never disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from controller.job.decide import podview
from controller.job.decide.podview import JobPod
from shared.models import PolicyAction

RECORD_KEY: Final = "restart-target"


@dataclass(frozen=True)
class RestartRecord:
    """`action` is RestartJob, RestartTask, RestartPod or ResumeJob; `tasks`/`pods` name the
    targets of a targeted restart."""

    action: PolicyAction
    tasks: frozenset[str] = frozenset()
    pods: frozenset[str] = frozenset()
    # vcjob's retry budgets: what caused the restart (`retrybudget.Cause`) and the
    # time (RFC 3339) before which the pods are not recreated (the backoff); None when unset.
    cause: str | None = None
    not_before: str | None = None

    @property
    def needs_new_pod_group(self) -> bool:
        """Full restarts and resumes go through gang admission again with a new PodGroup."""
        return self.action in (PolicyAction.RESTART_JOB, PolicyAction.RESUME_JOB)


def encode(record: RestartRecord) -> str:
    fields: dict[str, Any] = {
        "action": record.action.value,
        "tasks": sorted(record.tasks),
        "pods": sorted(record.pods),
    }
    if record.cause is not None:
        fields["cause"] = record.cause
    if record.not_before is not None:
        fields["notBefore"] = record.not_before
    return json.dumps(fields, separators=(",", ":"), sort_keys=True)


def decode(text: str | None) -> RestartRecord | None:
    """The record, or None when absent or unreadable (then the restart is treated as a full
    one: every pod of an older version is replaced)."""
    if not text:
        return None
    try:
        raw = json.loads(text)
        action = PolicyAction(raw["action"])
    except (ValueError, KeyError, TypeError):
        return None
    return RestartRecord(
        action,
        frozenset(str(t) for t in raw.get("tasks") or []),
        frozenset(str(p) for p in raw.get("pods") or []),
        str(raw["cause"]) if raw.get("cause") else None,
        str(raw["notBefore"]) if raw.get("notBefore") else None,
    )


def is_victim(record: RestartRecord | None, pod: JobPod, version: int) -> bool:
    """Whether this restart replaces `pod`. Full restarts and resumes bumped the version, so
    their victims are the older pods (a resume keeps the succeeded ones); targeted restarts
    replace the named tasks' and pods' pods. No pod is created while Restarting, so every pod
    matching a target is one that predates the decision."""
    if record is None or record.action == PolicyAction.RESTART_JOB:
        return pod.version < version
    if record.action == PolicyAction.RESUME_JOB:
        return pod.version < version and pod.phase != podview.SUCCEEDED
    return pod.task in record.tasks or pod.name in record.pods
