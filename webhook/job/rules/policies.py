"""Lifecycle policies (`spec.policies`, `spec.tasks[*].policies`): events or an exit code, an
action, a timeout (admission.md, "Lifecycle policies")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from shared.duration import parse_duration
from shared.fielderrors import FieldError, Path
from shared.models import LifecyclePolicy, PolicyAction, PolicyEvent
from webhook.job.reading import Readable, everything, shown
from webhook.job.rules import wording

EVENTS: Final = tuple(e.value for e in PolicyEvent)
ACTIONS: Final = tuple(a.value for a in PolicyAction)


def _policy_events(policy: LifecyclePolicy, where: Path) -> Iterator[tuple[str, Path]]:
    if policy.event:
        yield policy.event, where.child("event")
    for k, event in enumerate(policy.events or []):
        yield event, where.child("events").index(k)


def validate_policies(
    policies: list[LifecyclePolicy] | None, path: Path, readable: Readable = everything
) -> list[FieldError]:
    """One list of policies at `path`: each has events or an exit code (not both), a known
    action, a non-zero exit code not repeated, a non-negative timeout; an event is not repeated
    across policies, and `*` stands alone."""
    errors: list[FieldError] = []
    seen_events: dict[str, Path] = {}
    # An event repeated inside one policy's list is admitted with a warning (Volcano reads it
    # once: webhook.job.rules.job_warnings); across policies it is refused.
    event_policy: dict[str, int] = {}
    seen_codes: set[int] = set()
    for j, policy in enumerate(policies or []):
        where = path.index(j)
        events = list(_policy_events(policy, where))
        has_code = policy.exit_code is not None
        all_read = all(readable(where.child(f)) for f in ("event", "events", "exitCode"))
        if events and has_code:
            errors.append(
                FieldError.forbidden(
                    where.child("exitCode"),
                    "must not specify event and exitCode simultaneously: set event or events, "
                    "or exitCode",
                )
            )
        elif not events and not has_code and all_read:
            errors.append(
                FieldError.required(
                    where,
                    "either event and exitCode should be specified: set one of event, events "
                    "or exitCode",
                )
            )
        for event, event_path in events:
            if event not in EVENTS:
                errors.append(
                    wording.unsupported(event_path, event, EVENTS, "invalid policy event")
                )
            elif event_policy.get(event, j) != j:
                errors.append(
                    FieldError.duplicate(
                        event_path, event, f"duplicate event {event} across different policy"
                    )
                )
            elif event not in seen_events:
                seen_events[event] = event_path
                event_policy[event] = j
        action_path = where.child("action")
        if not policy.action:
            if readable(action_path):
                errors.append(
                    FieldError.required(
                        action_path, "invalid policy action: every policy needs an action"
                    )
                )
        elif policy.action not in ACTIONS:
            errors.append(
                wording.unsupported(action_path, policy.action, ACTIONS, "invalid policy action")
            )
        if policy.exit_code is not None:
            code_path = where.child("exitCode")
            if policy.exit_code == 0:
                errors.append(
                    FieldError.invalid(
                        code_path, 0, "0 is not a valid error code; use a non-zero exit code"
                    )
                )
            elif policy.exit_code in seen_codes:
                errors.append(
                    FieldError.duplicate(
                        code_path, policy.exit_code, f"duplicate exitCode {policy.exit_code}"
                    )
                )
            seen_codes.add(policy.exit_code)
        if policy.timeout is not None:
            try:
                timeout = parse_duration(policy.timeout)
            except ValueError as exc:
                errors.append(
                    FieldError.invalid(where.child("timeout"), shown(policy.timeout), str(exc))
                )
            else:
                if timeout.total_seconds() < 0:
                    errors.append(
                        FieldError.invalid(
                            where.child("timeout"), policy.timeout, "must not be negative"
                        )
                    )
    if "*" in seen_events and len(seen_events) > 1:
        errors.append(
            FieldError.invalid(
                seen_events["*"],
                "*",
                "if there's * here, no other policy should be here: * matches every event, so "
                "it must be the only event in the list; remove the other events or the * policy",
            )
        )
    return errors
