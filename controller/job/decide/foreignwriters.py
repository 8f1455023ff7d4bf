"""Another controller writing a Job's status while vcjob's runs: Volcano's controller left
running beside vcjob's (a switch half done), or a second install. Both would fight over every
pod and phase; kube-apiserver's managed fields name each writer of the status and when it last
wrote, which is all it takes to tell.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from controller.job.decide.status import parse_time

STATUS_SUBRESOURCE = "status"
# kube-apiserver names a writer by its User-Agent up to the first "/": vcjob's controller sends
# `vcjob-controller/<version> (python)`.
OWN_MANAGER = "vcjob-controller"
# The Event reason a Job gets, once per writer.
REASON = "AnotherControllerWrites"


def status_writers_since(
    job: Mapping[str, Any], own_managers: Collection[str], since: datetime
) -> tuple[str, ...]:
    """The field managers other than vcjob's own that wrote the Job's status at or after
    `since` (the controller's start), sorted. Entries older than the Job came in with it (a copy
    created with its original's managedFields, as MultiKueue makes on a worker cluster): nobody
    wrote them to this Job. Times are kept to the second, so a write in the Job's first second
    counts."""
    metadata = job.get("metadata")
    entries = metadata.get("managedFields") if isinstance(metadata, Mapping) else None
    created = (
        parse_time(metadata.get("creationTimestamp")) if isinstance(metadata, Mapping) else None
    )
    if created is not None:
        since = max(since, created)
    found: set[str] = set()
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or entry.get("subresource") != STATUS_SUBRESOURCE:
            continue
        manager = str(entry.get("manager") or "")
        written = parse_time(entry.get("time"))
        if manager and manager not in own_managers and written is not None and written >= since:
            found.add(manager)
    return tuple(sorted(found))


def warning(manager: str, own_manager: str) -> str:
    return (
        f"{manager} writes this Job's status too: another controller ({manager}) runs beside "
        f"vcjob's ({own_manager}), and the two will undo each other's work; stop one of them"
    )
