"""vcjob's own Job status fields that kube-apiserver dropped from a status write: the Job CRD
installed is not vcjob's (Volcano's own, kept by a cluster that runs Volcano's chart), whose
schema prunes what it does not know. vcjob then works as Volcano does, without what those fields
carry; the controller says so once instead of staying silent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

# The status fields vcjob adds beside Volcano's (docs/lifecycle.md).
OWN_STATUS_FIELDS: Final = (
    "attempts", "restartCounts", "typedConditions", "reason", "startTime", "suspendedSeconds",
    "suspendedSince", "succeededIndexes",
)  # fmt: skip


def pruned(sent: Mapping[str, Any], written: Mapping[str, Any] | None) -> tuple[str, ...]:
    """vcjob's fields present in the status sent and absent from the status written back."""
    back = written or {}
    return tuple(f for f in OWN_STATUS_FIELDS if f in sent and f not in back)


def warning(fields: tuple[str, ...]) -> str:
    return (
        f"kube-apiserver drops vcjob's Job status fields ({', '.join(fields)}): the Job CRD is not "
        "vcjob's (Volcano's own?). Jobs run as under Volcano; retry budgets by cause, the attempt "
        "history, typed conditions and the deadline's spec fields do not persist. Install vcjob's "
        "CRDs to have them (docs/migrating-from-volcano.md)"
    )
