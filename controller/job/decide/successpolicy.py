"""KEP-3998 success rules adapted to multi-task jobs (api.md "SuccessPolicy").

Rules are evaluated in order and the first one met wins. A rule whose indexes cannot be parsed
is skipped (admission rejects such rules; a stored one must not crash the controller)."""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from shared import indexranges
from shared.models import SuccessPolicy, SuccessPolicyRule


@dataclass(frozen=True)
class RuleMet:
    index: int
    message: str


def _rule_task(rule: SuccessPolicyRule, task_names: list[str]) -> str | None:
    if rule.task_name:
        return rule.task_name
    if rule.succeeded_indexes is not None and len(task_names) == 1:
        return task_names[0]
    return None


def _describe(rule: SuccessPolicyRule, task: str | None) -> str:
    parts = []
    if rule.succeeded_indexes is not None:
        where = f"task {task} indexes {rule.succeeded_indexes}"
        if rule.succeeded_count is not None:
            parts.append(f"{rule.succeeded_count} of {where} succeeded")
        else:
            parts.append(f"{where} succeeded")
    elif task is not None:
        parts.append(f"{rule.succeeded_count} pods of task {task} succeeded")
    else:
        parts.append(f"{rule.succeeded_count} pods of the job succeeded")
    return parts[0]


def rule_met(
    rule: SuccessPolicyRule, task_names: list[str], succeeded: Mapping[str, Set[int]]
) -> bool:
    task = _rule_task(rule, task_names)
    if rule.succeeded_indexes is not None:
        if task is None:
            return False
        try:
            wanted = indexranges.expand(rule.succeeded_indexes)
        except indexranges.IndexRangeError:
            return False
        if not wanted:
            return False
        done = len(wanted & set(succeeded.get(task, set())))
        if rule.succeeded_count is not None:
            return done >= rule.succeeded_count
        return done == len(wanted)
    if rule.succeeded_count is None:
        return False
    if task is not None:
        total = len(succeeded.get(task, set()))
    else:
        total = sum(len(v) for v in succeeded.values())
    return total >= rule.succeeded_count


def evaluate(
    policy: SuccessPolicy | None, task_names: list[str], succeeded: Mapping[str, Set[int]]
) -> RuleMet | None:
    """The first rule met, with a message such as `rule 0 met: task master indexes 0 succeeded`."""
    if policy is None:
        return None
    for i, rule in enumerate(policy.rules):
        if rule_met(rule, task_names, succeeded):
            task = _rule_task(rule, task_names)
            return RuleMet(i, f"rule {i} met: {_describe(rule, task)}")
    return None
