"""Each task's pod template (`webhook.job.podtemplate`) and its NUMA topology policy."""

from __future__ import annotations

from typing import Any

from shared.fielderrors import FieldError, Path
from shared.models import TOPOLOGY_POLICIES, TaskSpec
from shared.models.job import JobSpec
from webhook import memo
from webhook.job import podtemplate
from webhook.job.reading import Readable, everything


def validate_topology_policy(task: TaskSpec, path: Path) -> list[FieldError]:
    """topologyPolicy is one of Kubernetes' and, unless none, every container asks for whole
    CPUs. `path` is the task's."""
    policy = task.topology_policy
    if policy is None or policy == "":
        return []
    if policy not in TOPOLOGY_POLICIES:
        return [FieldError.not_supported(path.child("topologyPolicy"), policy, TOPOLOGY_POLICIES)]
    if policy == "none":
        return []
    return podtemplate.topology_errors(task.template, path.child("template"), policy)


def validate_templates(
    spec: JobSpec,
    path: Path,
    readable: Readable = everything,
    recall: memo.Recall = memo.fresh,
) -> list[FieldError]:
    """Every task's pod template and topology policy, task by task."""
    errors: list[FieldError] = []
    # Tasks often share one pod template (ps and workers): a template equal to one already
    # found valid needs no second look.
    valid: list[dict[str, Any]] = []
    for i, task in enumerate(spec.tasks):
        where = path.child("tasks").index(i)
        if readable(where.child("template")) and task.template not in valid:
            found = podtemplate.validate_template(task.template, where.child("template"), recall)
            errors.extend(found)
            if not found:
                valid.append(task.template)
        errors.extend(validate_topology_policy(task, where))
    return errors
