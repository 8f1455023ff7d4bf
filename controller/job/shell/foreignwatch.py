"""The Job watch's store, seeing who else writes a Job's status: each writer that is not vcjob's
controller, from the controller's start on, is reported once per Job (an error in the log, a
Warning Event on the Job, a counter)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from controller.job.decide import foreignwriters
from controller.job.decide.suspension import managed_by_other
from kubeio.informer import Store
from shared.objectkeys import object_key
from shared.wire import WireObject, uid_of

log = logging.getLogger(__name__)

Report = Callable[[WireObject, str], None]


class ForeignWriterWatch:
    """Wraps the Job watch's store; reports, then hands every object on unchanged."""

    def __init__(self, inner: Store, own_manager: str, since: datetime, report: Report) -> None:
        self._inner = inner
        self._own = (own_manager,)
        self._since = since
        self._report = report
        # Only the Job watch's thread calls in: (job key, uid) -> writers already reported.
        self._reported: dict[tuple[str, str], set[str]] = {}

    def replace_all(self, kind: str, items: Iterable[WireObject]) -> set[str]:
        listed = list(items)
        for obj in listed:
            self._look(obj)
        return self._inner.replace_all(kind, listed)

    def upsert(self, kind: str, obj: WireObject) -> str | None:
        self._look(obj)
        return self._inner.upsert(kind, obj)

    def remove(self, kind: str, obj: WireObject) -> str | None:
        self._reported.pop(_identity(obj), None)
        return self._inner.remove(kind, obj)

    def _look(self, job: WireObject) -> None:
        if managed_by_other(job):  # its status is another controller's to write
            return
        writers = foreignwriters.status_writers_since(job, self._own, self._since)
        if not writers:
            return
        seen = self._reported.setdefault(_identity(job), set())
        for manager in writers:
            if manager not in seen:
                seen.add(manager)
                self._report(job, manager)


def _identity(job: WireObject) -> tuple[str, str]:
    return object_key(job), uid_of(job)
