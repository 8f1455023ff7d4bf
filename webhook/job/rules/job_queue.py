"""`spec.queue`: the Job goes to an existing, Open, leaf Queue other than root."""

from __future__ import annotations

from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec
from webhook.job.reading import Readable, everything
from webhook.queueview import QueueView


def validate_queue(
    spec: JobSpec, path: Path, queues: QueueView, readable: Readable = everything
) -> list[FieldError]:
    name = spec.queue
    where = path.child("queue")
    if not name or not readable(where):
        return []
    queue = queues.get(name)
    if queue is None:
        return [FieldError.not_found(where, name, "no Queue of this name exists")]
    if name == "root":
        return [FieldError.invalid(where, name, "jobs cannot be submitted to the root queue")]
    errors: list[FieldError] = []
    if not queue.is_open:
        state = queue.status.state if queue.status else None
        errors.append(
            FieldError.invalid(
                where, name, f"the queue is {state}; jobs can only be submitted to an Open queue"
            )
        )
    children = queues.children(name)
    if children:
        errors.append(
            FieldError.invalid(
                where,
                name,
                f"the queue has child queues ({', '.join(sorted(children))}); jobs can only be "
                "submitted to a leaf queue",
            )
        )
    return errors
