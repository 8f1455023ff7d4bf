"""The one error the local cluster's API views raise (their kubeio errors, translated for callers
that read the server's Status)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeio.errors import KubeError


class ApiError(Exception):
    """A failed call: `code` is the HTTP status (0 when no answer came), `status` the server's
    Status object as far as it is known."""

    def __init__(
        self, code: int, status: Mapping[str, Any], method: str = "", path: str = ""
    ) -> None:
        self.code = code
        self.status = dict(status)
        self.reason = str(status.get("reason", ""))
        message = str(status.get("message", "")) or f"HTTP {code}"
        where = f"{method} {path}: " if method or path else ""
        super().__init__(f"{where}{code} {self.reason}: {message}".strip())

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def already_exists(self) -> bool:
        return self.code == 409 and self.reason == "AlreadyExists"

    @classmethod
    def from_kube(cls, exc: KubeError, method: str = "", path: str = "") -> ApiError:
        status = {"code": exc.status, "reason": exc.reason, "message": str(exc)}
        return cls(exc.status, status, method, path)
