"""Reading a raw Job for admission: the pydantic model reads the object, its errors become field
errors with Kubernetes field paths, the unreadable values are set aside so that the rest can be
read, and errors are put in the order their fields appear in the object.

A Job under CREATE is defaulted and read once per request (`read_new_job`): the mutation patch,
the schema's verdict and every rule work from that one `NewJob`.

Pure: no I/O, nothing kept between calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from shared.fielderrors import FieldError, Path
from shared.models import Job
from webhook.job.defaulting import copy_json, defaulted_view

_PATH_TOKEN: Final = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
# Whether the value at a field path could be read (`Reading.readable`); rules skip a check
# whose input was set aside, since its reading error is already reported.
Readable = Callable[[Path], bool]


def everything(path: Path) -> bool:
    """Every value could be read (a rule called on a model built directly)."""
    return True


def shown(value: Any) -> Any:
    """A value fit for an error message: no nested objects, no huge strings."""
    if isinstance(value, dict):
        return "<object>"
    if isinstance(value, list):
        return "<list>"
    if isinstance(value, str) and len(value) > 120:
        return value[:117] + "..."
    return value


def _loc_path(loc: Sequence[str | int]) -> Path:
    path = Path()
    previous: str | int | None = None
    for part in loc:
        if isinstance(part, int):
            path = path.index(part)
        elif part == "[key]":
            break
        elif previous == "plugins" and len(path.parts) == 2:
            path = path.key(part)
        else:
            path = path.child(part)
        previous = part
    return path


def _pydantic_error(error: Any, path: Path) -> FieldError:
    kind: str = error["type"]
    value = error.get("input")
    ctx: dict[str, Any] = error.get("ctx") or {}
    simple = {
        "int_type": "must be an integer",
        "int_parsing": "must be an integer",
        "int_from_float": "must be an integer",
        "string_type": "must be a string",
        "bool_type": "must be a boolean",
        "list_type": "must be a list",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "model_attributes_type": "must be an object",
    }
    if kind == "missing":
        return FieldError.required(path)
    if kind in simple:
        return FieldError.invalid(path, shown(value), simple[kind])
    if kind == "greater_than_equal":
        return FieldError.invalid(path, value, f"should be greater than or equal to {ctx['ge']}")
    if kind == "greater_than":
        return FieldError.invalid(path, value, f"must be greater than {ctx['gt']}")
    if kind == "less_than_equal":
        return FieldError.invalid(path, value, f"must be less than or equal to {ctx['le']}")
    if kind == "string_too_long":
        return FieldError.too_long(path, int(ctx["max_length"]))
    if kind == "too_long":
        return FieldError.too_many(path, int(ctx["actual_length"]), int(ctx["max_length"]))
    if kind == "too_short":
        if str(path).endswith("successPolicy.rules"):
            return FieldError.required(
                path, "at least one rule must be specified when the successPolicy is specified"
            )
        return FieldError.required(path, f"must have at least {ctx['min_length']} items")
    return FieldError.invalid(path, shown(value), str(error.get("msg", "is not valid")))


def _set_aside(data: Any, loc: Sequence[str | int], missing: bool) -> None:
    """Remove the unreadable value at `loc` so the rest of the object can be read; list items
    become empty objects so that indexes (and so field paths) stay the same."""
    parent = data
    for part in loc[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return
    last = loc[-1] if loc else None
    if isinstance(parent, dict) and isinstance(last, str):
        if missing:
            parent[last] = ""
        else:
            parent.pop(last, None)
    elif isinstance(parent, list) and isinstance(last, int) and last < len(parent):
        parent[last] = {}


@dataclass
class Reading:
    """A Job read from a raw object: the model (None when unreadable), the errors met while
    reading, and the field paths whose values were set aside."""

    job: Job | None
    errors: list[FieldError] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)

    def readable(self, path: Path) -> bool:
        """False when the value at `path`, or a value containing it, could not be read."""
        if not self.broken:
            return True
        text = str(path)
        return not any(text == b or text.startswith((b + ".", b + "[")) for b in self.broken)


def not_a_job(value: Any) -> list[FieldError]:
    """The one problem of a value that is not an object at all."""
    return [FieldError.invalid(Path(), shown(value), "must be a Job object")]


def read_job(raw: Any) -> Reading:
    """Read a raw Job (status is ignored: it never reaches admission)."""
    if not isinstance(raw, dict):
        return Reading(None, not_a_job(raw))
    # pydantic does not modify its input: copy only once values must be set aside.
    data = {k: v for k, v in raw.items() if k != "status"}
    copied = False
    reading = Reading(None)
    for _ in range(4):
        try:
            reading.job = Job.model_validate(data, strict=True, by_alias=True, by_name=False)
        except ValidationError as exc:
            if not copied:
                data, copied = copy_json(data), True
            for error in exc.errors(include_url=False):
                loc = tuple(error["loc"])
                path = _loc_path(loc)
                if str(path) in reading.broken:
                    continue
                reading.errors.append(_pydantic_error(error, path))
                reading.broken.add(str(path))
                _set_aside(data, loc, missing=error["type"] == "missing")
        else:
            return reading
    return reading


@dataclass(frozen=True)
class NewJob:
    """A Job under CREATE as one request sees it: the object as sent (`raw`), its defaulted form
    (`defaulted`, what the API server stores once the patch is applied) and that form read into
    the model (`reading`). The patch is the diff from the one to the other; the rules judge the
    defaulted form, and the few that must see what the user wrote read `raw`."""

    raw: dict[str, Any]
    defaulted: dict[str, Any]
    reading: Reading
    scheduler_name: str


def read_new_job(raw: dict[str, Any], scheduler_name: str) -> NewJob:
    """`raw` defaulted (a view sharing what defaulting leaves alone: read it, never change it)
    and read into the model: the one place a CREATE is defaulted and parsed."""
    defaulted = defaulted_view(raw, scheduler_name)
    return NewJob(raw, defaulted, read_job(defaulted), scheduler_name)


def _tokens(field_path: str) -> list[str]:
    return [
        m.group(1) if m.group(1) is not None else m.group(2)
        for m in _PATH_TOKEN.finditer(field_path)
    ]


def _order_key(obj: Any, field_path: str) -> tuple[int, ...]:
    key: list[int] = []
    node = obj
    for token in _tokens(field_path):
        if isinstance(node, dict):
            keys = list(node)
            position = keys.index(token) if token in keys else len(keys)
            key.append(position)
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit():
            key.append(int(token))
            index = int(token)
            node = node[index] if index < len(node) else None
        else:
            key.append(0)
            node = None
    return tuple(key)


def sort_errors(obj: Any, errors: list[FieldError]) -> list[FieldError]:
    """Errors in the order of their fields in `obj` (stable for errors on the same field)."""
    return sorted(errors, key=lambda e: _order_key(obj, e.field))
