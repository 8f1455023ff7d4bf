"""`status.attempts`: the job's runs between restarts, newest last, at most `MAX_ATTEMPTS`.

Attempt 0 starts with the job; a restart ends the current attempt (its cause, the reason, the
pods that failed and their exit codes, the backoff before the next) and the next attempt starts
when its pods are recreated. The index is carried by every pod (annotation `labels.ATTEMPT_KEY`,
environment variable `labels.ATTEMPT_ENV`) so the logs of different attempts can be told apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from controller.job.decide import podview
from shared.wire import pod_status

MAX_ATTEMPTS: Final = 10
MAX_FAILED_PODS: Final = 20


def current_index(attempts: Sequence[Mapping[str, Any]]) -> int:
    return int(attempts[-1].get("index") or 0) if attempts else 0


def start(attempts: Sequence[Mapping[str, Any]], when: str) -> list[dict[str, Any]]:
    """The first attempt, or the next one after an ended attempt (nothing when one is open)."""
    out = [dict(a) for a in attempts]
    if out and not out[-1].get("endTime"):
        return out
    index = current_index(out) + 1 if out else 0
    out.append({"index": index, "startTime": when})
    return out[-MAX_ATTEMPTS:]


def failed_pods(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The failed pods of an attempt with their exit codes, by name."""
    out: list[dict[str, Any]] = []
    for pod in sorted(pods, key=podview.name_of):
        if podview.phase(pod) != podview.FAILED:
            continue
        entry: dict[str, Any] = {"name": podview.name_of(pod)}
        code = podview.failed_exit_code(pod)
        if code is not None:
            entry["exitCode"] = code
        reason = pod_status(pod).get("reason")
        if reason:
            entry["reason"] = str(reason)
        out.append(entry)
    return out[:MAX_FAILED_PODS]


def end(
    attempts: Sequence[Mapping[str, Any]],
    when: str,
    *,
    cause: str | None,
    reason: str,
    failed: list[dict[str, Any]],
    backoff_seconds: float | None = None,
) -> list[dict[str, Any]]:
    """The current attempt ended (a restart, or the job finished); an attempt already ended is
    kept as it was."""
    out = [dict(a) for a in attempts] or [{"index": 0}]
    last = out[-1]
    if last.get("endTime"):
        return out
    last["endTime"] = when
    last["reason"] = reason
    if cause is not None:
        last["cause"] = cause
    if failed:
        last["failedPods"] = failed
    if backoff_seconds:
        last["backoffSeconds"] = backoff_seconds
    return out
