"""The audit log (`--audit-log FILE`): one JSON line per request, written when its response
starts, naming who asked (and who impersonated), what was asked and the answer's status code."""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path
from typing import Any

from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.users import UserInfo


def audit_record(
    user: UserInfo,
    attrs: Attributes,
    code: int,
    impersonator: UserInfo | None = None,
    when: dt.datetime | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "timestamp": (when or dt.datetime.now(dt.UTC)).isoformat(timespec="microseconds"),
        "user": user.name,
        "groups": list(user.groups),
        "verb": attrs.verb,
        "apiGroup": attrs.api_group,
        "resource": attrs.resource,
        "subresource": attrs.subresource,
        "namespace": attrs.namespace,
        "name": attrs.name,
        "path": attrs.path,
        "code": code,
    }
    if impersonator is not None:
        record["impersonatedBy"] = impersonator.name
    return record


class AuditLog:
    """Appends records to a file; safe to call from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            if not self._file.closed:
                self._file.write(line)

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_audit_log(path: Path) -> list[dict[str, Any]]:
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            records.append(json.loads(line))
    return records
