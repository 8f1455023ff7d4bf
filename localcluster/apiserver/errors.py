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
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            status["details"] = self.details
        return status


def _details(resource: str, name: str, group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    return details


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
