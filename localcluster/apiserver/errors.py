"""API errors as kube-apiserver reports them: a `Status` object with code, reason and message."""

from __future__ import annotations

from typing import Any


class StatusError(Exception):
    """Raised anywhere in request handling; the HTTP layer turns it into a `Status` response."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def to_status(self) -> dict[str, Any]:
        return failure_status(self.code, self.reason, self.message, self.details)


# metav1.Status and metav1.StatusDetails fields in their Go declaration order, which is the
# order kube-apiserver's JSON encoder writes them in (clients compare error bodies verbatim).
STATUS_FIELDS = ("kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code")
DETAILS_FIELDS = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")


def _ordered(values: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    known = {key: values[key] for key in order if key in values}
    return {**known, **{k: v for k, v in values.items() if k not in known}}


CAUSE_FIELDS = ("reason", "message", "field")


def status_details(details: dict[str, Any]) -> dict[str, Any]:
    """StatusDetails without its empty fields, in kube's field order (its causes too)."""
    ordered = _ordered(
        {k: v for k, v in details.items() if v not in (None, "", [])}, DETAILS_FIELDS
    )
    causes = ordered.get("causes")
    if isinstance(causes, list):
        ordered["causes"] = [
            _ordered({k: v for k, v in c.items() if v not in (None, "")}, CAUSE_FIELDS)
            if isinstance(c, dict)
            else c
            for c in causes
        ]
    return ordered


def failure_status(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Failure `Status` as kube-apiserver writes it: omitted empties, Go field order."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        status["details"] = status_details(details)
    status["code"] = code
    return _ordered({k: v for k, v in status.items() if v != ""}, STATUS_FIELDS)


def success_status(details: dict[str, Any], code: int | None = None) -> dict[str, Any]:
    """The Success `Status` a DELETE answers when the store does not return the object."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": status_details(details),
    }
    if code is not None:
        status["code"] = code
    return status


def _details(resource: str, name: str, group: str = "") -> dict[str, Any]:
    return status_details({"name": name, "group": group, "kind": resource})


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        _details(resource, name, group),
    )


def already_exists(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        _details(resource, name, group),
    )


def conflict(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": '
        "the object has been modified; please apply your changes to the latest version and try "
        "again",
        _details(resource, name, group),
    )


def invalid(kind: str, name: str, causes: list[dict[str, str]], group: str = "") -> StatusError:
    """422 Invalid; each cause is {field, reason, message} and the message joins them like kube.

    As in apimachinery, a cause's message is the error body without its field path (kubectl
    prints `field: message`), while the Status message lists the full `field: message` errors.
    Causes whose message already starts with their field are normalised.
    """
    qualified = f"{kind}.{group}" if group else kind
    normalised: list[dict[str, str]] = []
    full: list[str] = []
    for cause in causes:
        field_path = cause.get("field", "")
        body = cause.get("message", "")
        if field_path and body.startswith(f"{field_path}: "):
            body = body[len(field_path) + 2 :]
        normalised.append({**cause, "message": body})
        full.append(f"{field_path}: {body}" if field_path else body)
    summary = ", ".join(full)
    message = f'{qualified} "{name}" is invalid: '
    message += f"[{summary}]" if len(full) > 1 else summary
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": normalised}
    if group:
        details["group"] = group
    return StatusError(422, "Invalid", message, details)


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def method_not_allowed(message: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", message)
