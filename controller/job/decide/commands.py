"""Commands (bus.volcano.sh): which one runs now, which are deleted, what is reported.

Pure: the planner hands in the Job's Commands and UID and gets the decision back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.job.decide import podview
from controller.job.decide.model import EventRecord
from controller.job.decide.policies import Decision
from shared.models import COMMAND_ACTIONS, PolicyAction


@dataclass
class CommandOutcome:
    # At most one: a quick suspend + resume must run both, in order, one per reconcile.
    decisions: list[Decision] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    # Valid Commands left for the next reconcile.
    waiting: int = 0


def consume(commands: Iterable[Mapping[str, Any]], job_uid: str) -> CommandOutcome:
    """Oldest first: the first valid Command becomes a decision and is deleted; Commands for
    another Job UID or with an unknown action are deleted with a Warning; the other valid ones
    wait."""
    out = CommandOutcome()
    ordered = sorted(
        commands, key=lambda c: (podview.creation_timestamp(c) or "", podview.name_of(c))
    )
    accepted = {a.value for a in COMMAND_ACTIONS}
    for command in ordered:
        name = podview.name_of(command)
        action = str(command.get("action") or "")
        target = command.get("target") or {}
        target_uid = target.get("uid")
        valid = action in accepted and target_uid in (None, "", job_uid)
        if valid and out.decisions:
            out.waiting += 1
            continue
        out.delete.append(name)
        if target_uid and target_uid != job_uid:
            out.events.append(
                EventRecord(
                    "Warning",
                    "CommandRejected",
                    f"command {name} targets job uid {target_uid}, "
                    f"not this job ({job_uid}); it was deleted without effect",
                )
            )
            continue
        if action not in accepted:
            out.events.append(
                EventRecord(
                    "Warning",
                    "CommandRejected",
                    f"command {name} has unknown action {action!r}; accepted actions are "
                    + ", ".join(sorted(accepted)),
                )
            )
            continue
        detail = f"command {name} issued {action}"
        if command.get("reason") or command.get("message"):
            detail += f" ({command.get('reason') or ''}: {command.get('message') or ''})"
        out.events.append(
            EventRecord("Normal", "CommandIssued", f"Start to execute command {action}")
        )
        out.decisions.append(Decision(PolicyAction(action), detail, command=True))
    return out
