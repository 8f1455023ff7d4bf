"""A Queue on DELETE (`/queues/validate`): what may be deleted, as Volcano's webhook manager
decides it (`can not be deleted`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from shared.fielderrors import FieldError, Path

PROTECTED_QUEUES: Final = ("default", "root")


@dataclass(frozen=True)
class DeletionFacts:
    """What a deletion is judged on, gathered by the shell."""

    name: str
    state: str | None
    children: Sequence[str]
    # `<namespace>/<name>` of the PodGroups in the queue; None when they could not be listed.
    podgroups: Sequence[str] | None
    require_closed: bool = False


def validate_deletion(facts: DeletionFacts) -> list[FieldError]:
    """`default` and `root` are never deleted; nor a queue with child queues or PodGroups; with
    `require_closed`, only a Closed queue is."""
    path = Path.of("metadata", "name")
    name = facts.name
    if name in PROTECTED_QUEUES:
        return [FieldError.forbidden(path, f"`{name}` queue can not be deleted")]
    errors: list[FieldError] = []
    if facts.require_closed and facts.state != "Closed":
        errors.append(
            FieldError.forbidden(
                Path.of("status", "state"),
                f"only queue with state `Closed` can be deleted, queue `{name}` state is "
                f"`{facts.state or ''}` (close it first: vcctl queue operate -n {name} -a close)",
            )
        )
    if facts.children:
        errors.append(
            FieldError.forbidden(
                path,
                f"queue {name} can not be deleted because it has {len(facts.children)} child "
                f"queues: {', '.join(facts.children)}",
            )
        )
    if facts.podgroups:
        shown = ", ".join(facts.podgroups[:10])
        more = f" and {len(facts.podgroups) - 10} more" if len(facts.podgroups) > 10 else ""
        errors.append(
            FieldError.forbidden(
                path,
                f"queue {name} can not be deleted because it has {len(facts.podgroups)} "
                f"PodGroups: {shown}{more} (close the queue and let its jobs finish first)",
            )
        )
    return errors
