"""Validation of Jobs on CREATE and UPDATE (admission.md, api.md success policy, elastic.md).

Pure functions: every rule runs and every failure is returned as a FieldError with its
Kubernetes field path, sorted in the order the fields appear in the object. The object is
judged as it would be after defaulting. Values of the wrong type never raise: the pydantic
models read the object, their errors become field errors, the unreadable values are set aside,
and the semantic rules run on what could be read.

The work is in four places: `webhook.reading` (the raw object read into the model),
`webhook.create` and `webhook.update` (which rules run, in which order), and
`webhook.rules.<topic>` (each rule a function `validate_x(spec, path) -> list[FieldError]`).
This module is their public face.
"""

from __future__ import annotations

from webhook.create import validate_create
from webhook.reading import Reading, read_job, sort_errors
from webhook.rules.job_queue import QueueView
from webhook.update import validate_update

__all__ = [
    "QueueView",
    "Reading",
    "read_job",
    "sort_errors",
    "validate_create",
    "validate_update",
]
