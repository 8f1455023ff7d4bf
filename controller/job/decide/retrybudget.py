"""Retry budgets by cause: what caused a restart, which budget it is charged to, and the
backoff before the restarted pods are recreated.

Without `spec.retryPolicy` every restart Volcano counts is charged to `maxRetry` (retryCount)
and pods are recreated at once, exactly as in Volcano. With it:
- operator restarts (a command, resume, a spec edit) are charged to no budget;
- infrastructure restarts are charged to `retryPolicy.infrastructureRetries` when that is set;
- application restarts (and infrastructure ones when it is unset) to `maxRetry`;
- `retryPolicy.backoff` delays the recreation after every charged restart.
Every restart is counted by cause in `status.restartCounts` either way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from controller.job.decide.policies import Decision
from shared.models import PolicyAction, PolicyEvent
from shared.models.job import RetryPolicy
from shared.wire import conditions_of, pod_status


class Cause(StrEnum):
    APPLICATION = "Application"
    INFRASTRUCTURE = "Infrastructure"
    OPERATOR = "Operator"


# Pod status reasons the kubelet or the control plane give a pod they stopped for reasons of
# their own, not the application's.
INFRASTRUCTURE_POD_REASONS: Final = frozenset(
    {"Evicted", "Preempting", "Preempted", "NodeLost", "Shutdown", "Terminated", "NodeShutdown"}
)
INFRASTRUCTURE_EVENTS: Final = frozenset({PolicyEvent.POD_EVICTED, PolicyEvent.UNKNOWN})
# Share of the backoff that jitter may take away: restarts of jobs that failed together spread
# out, and the n-th delay stays longer than the (n-1)-th until the cap.
JITTER: Final = 0.25


def disrupted(pod: Mapping[str, Any] | None) -> bool:
    """The pod was stopped by its node or the control plane (eviction, preemption, node loss)."""
    if pod is None:
        return False
    if pod_status(pod).get("reason") in INFRASTRUCTURE_POD_REASONS:
        return True
    return any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        for c in conditions_of(pod)
    )


def classify(decision: Decision, pod: Mapping[str, Any] | None) -> Cause:
    """The cause of the restart `decision` orders; `pod` is the pod its event is about."""
    if decision.command or decision.action == PolicyAction.RESUME_JOB:
        return Cause.OPERATOR
    if decision.event == PolicyEvent.JOB_UPDATED:
        return Cause.OPERATOR
    if decision.event in INFRASTRUCTURE_EVENTS:
        return Cause.INFRASTRUCTURE
    if disrupted(pod):
        return Cause.INFRASTRUCTURE
    return Cause.APPLICATION


@dataclass(frozen=True)
class Charge:
    """Which budget a restart uses: `max_retry` (retryCount) or `infrastructure`, or none."""

    max_retry: bool
    infrastructure: bool

    @property
    def counted(self) -> bool:
        return self.max_retry or self.infrastructure


def charge(cause: Cause, policy: RetryPolicy | None) -> Charge:
    if policy is None:
        return Charge(max_retry=True, infrastructure=False)  # Volcano: every restart counts
    if cause == Cause.OPERATOR:
        return Charge(False, False)
    if cause == Cause.INFRASTRUCTURE and policy.infrastructure_retries is not None:
        return Charge(False, True)
    return Charge(True, False)


def infrastructure_exhausted(restarts: int, policy: RetryPolicy | None) -> bool:
    """More infrastructure restarts than `infrastructureRetries` allows: the job fails."""
    if policy is None or policy.infrastructure_retries is None:
        return False
    return restarts > policy.infrastructure_retries


def backoff_seconds(policy: RetryPolicy | None, counted_restarts: int, job_uid: str) -> float:
    """Delay before the pods of the `counted_restarts`-th charged restart are recreated:
    base·2^(n-1), at most cap, less a jitter of up to `JITTER` of it. The jitter comes from the
    job's UID and n, so every controller replica computes the same delay."""
    if policy is None or policy.backoff is None or counted_restarts < 1:
        return 0.0
    base, cap = policy.backoff.base_seconds, policy.backoff.cap_seconds
    exponent = min(counted_restarts - 1, 32)
    delay = float(min(cap, base * 2**exponent))
    digest = hashlib.sha256(f"{job_uid}/{counted_restarts}".encode()).digest()
    fraction = int.from_bytes(digest[:4], "big") / 2**32
    return round(delay * (1 - JITTER * fraction), 3)
