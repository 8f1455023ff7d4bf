"""Errors that carry the retry decision (translated from API responses in `kube.py` only)."""

from __future__ import annotations


class KubeError(Exception):
    """An API call failed; `status` is the HTTP code (0 when the request never got an answer)."""

    def __init__(self, message: str, status: int = 0, reason: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        # The API server's own message (a Status's `message`), for tools that show only that.
        self.detail = detail


class KubeconfigError(Exception):
    """No usable kubeconfig (missing, unreadable, no such context, no service account)."""


class TransientError(KubeError):
    """5xx, 429, timeouts, connection errors: retry with backoff, forever."""


class ConflictError(TransientError):
    """409 Conflict on an update: re-read, re-plan, retry."""


class AlreadyExistsError(KubeError):
    """409 AlreadyExists on a create; deterministic names make this a success for the caller."""


class NotFoundError(KubeError):
    """404: the object (or the resource type) does not exist."""


class PermanentError(KubeError):
    """422 Invalid, 400 BadRequest, 403 Forbidden: retrying the same request cannot help."""


class PartialProgressError(TransientError):
    """Some writes of a plan succeeded before one failed: retry soon, the backoff restarts."""

    def __init__(self, cause: KubeError, progress: int) -> None:
        super().__init__(str(cause), cause.status, cause.reason, cause.detail)
        self.progress = progress
