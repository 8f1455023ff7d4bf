"""Field paths and field errors worded like Kubernetes' apimachinery `field.ErrorList`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ErrorType(StrEnum):
    """The `reason` of a StatusCause, as kube-apiserver reports it."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    DUPLICATE = "FieldValueDuplicate"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    NOT_FOUND = "FieldValueNotFound"


class Path:
    """A field path such as `spec.tasks[1].policies[0].event`. Treated as immutable; a slotted
    class rather than a frozen dataclass because validators build one for every field."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[str, ...] = ()) -> None:
        self.parts = parts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and other.parts == self.parts

    def __hash__(self) -> int:
        return hash(self.parts)

    def __repr__(self) -> str:
        return f"Path({self.parts!r})"

    @classmethod
    def of(cls, *names: str) -> Path:
        return cls(tuple(names))

    def child(self, *names: str) -> Path:
        return Path(self.parts + names)

    def index(self, i: int) -> Path:
        return Path((*self.parts, f"[{i}]"))

    def key(self, k: str) -> Path:
        return Path((*self.parts, f"[{k}]"))

    def __str__(self) -> str:
        out = ""
        for part in self.parts:
            if part.startswith("[") or not out:
                out += part
            else:
                out += "." + part
        return out


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


@dataclass(frozen=True)
class FieldError:
    type: ErrorType
    field: str
    detail: str = ""
    value: Any = None
    show_value: bool = False

    @classmethod
    def required(cls, path: Path, detail: str = "") -> FieldError:
        return cls(ErrorType.REQUIRED, str(path), detail)

    @classmethod
    def invalid(cls, path: Path, value: Any, detail: str) -> FieldError:
        return cls(ErrorType.INVALID, str(path), detail, value, True)

    @classmethod
    def invalid_each(cls, path: Path, value: Any, problems: Iterable[str]) -> list[FieldError]:
        """One error per problem, as Kubernetes reports them (never one joined message)."""
        return [cls.invalid(path, value, problem) for problem in problems]

    @classmethod
    def duplicate(cls, path: Path, value: Any, detail: str = "") -> FieldError:
        return cls(ErrorType.DUPLICATE, str(path), detail, value, True)

    @classmethod
    def not_supported(cls, path: Path, value: Any, supported: Iterable[str]) -> FieldError:
        listed = ", ".join(json.dumps(s) for s in supported)
        return cls(ErrorType.NOT_SUPPORTED, str(path), f"supported values: {listed}", value, True)

    @classmethod
    def forbidden(cls, path: Path, detail: str) -> FieldError:
        return cls(ErrorType.FORBIDDEN, str(path), detail)

    @classmethod
    def not_found(cls, path: Path, value: Any, detail: str = "") -> FieldError:
        return cls(ErrorType.NOT_FOUND, str(path), detail, value, True)

    @classmethod
    def too_long(cls, path: Path, max_length: int) -> FieldError:
        return cls(ErrorType.TOO_LONG, str(path), f"must have at most {max_length} bytes")

    @classmethod
    def too_many(cls, path: Path, actual: int, max_items: int) -> FieldError:
        return cls(
            ErrorType.TOO_MANY, str(path), f"must have at most {max_items} items", actual, True
        )

    @property
    def summary(self) -> str:
        """The error without its path, e.g. `Invalid value: 5: must be at most 3`."""
        head = {
            ErrorType.REQUIRED: "Required value",
            ErrorType.INVALID: "Invalid value",
            ErrorType.DUPLICATE: "Duplicate value",
            ErrorType.NOT_SUPPORTED: "Unsupported value",
            ErrorType.FORBIDDEN: "Forbidden",
            ErrorType.TOO_LONG: "Too long",
            ErrorType.TOO_MANY: "Too many",
            ErrorType.NOT_FOUND: "Not found",
        }[self.type]
        text = head
        if self.show_value:
            text += f": {_render_value(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.summary}" if self.field else self.summary

    def as_cause(self) -> dict[str, str]:
        """A metav1.StatusCause: as in apimachinery, the message is the error without its field
        (kubectl prints `<field>: <message>` for each cause)."""
        return {"field": self.field, "reason": str(self.type), "message": self.summary}


def render(errors: Iterable[FieldError]) -> str:
    return "; ".join(str(e) for e in errors)
