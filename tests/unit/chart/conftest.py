"""Fixtures for the self-managed certificate tests: an in-memory API server
that speaks just enough of the REST protocol (GET/POST/PUT/PATCH with resourceVersion
compare-and-swap) for `webhook.selfcerts`."""

from __future__ import annotations

import copy
import json
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import pytest


@dataclass
class FakeResponse:
    status: int
    data: bytes
    reason: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def read(self) -> bytes:
        return self.data


class FakeApiClient:
    """Stands in for kubernetes.client.ApiClient (param_serialize + call_api)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.resource_version = 0
        self.calls: list[tuple[str, str]] = []
        # Runs once, right before the next write is applied (to interleave two replicas).
        self.before_write: Callable[[], None] | None = None
        self.fail_next: list[int] = []
        # kubeio hooks the REST object to send the bodies it encodes as they are.
        self.rest_client = types.SimpleNamespace(request=None)

    def add(self, path: str, obj: dict[str, Any]) -> None:
        self.resource_version += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.resource_version)
        self.objects[path] = stored

    def get(self, path: str) -> dict[str, Any]:
        return self.objects[path]

    def writes(self, path: str) -> int:
        return sum(1 for method, p in self.calls if p.startswith(path) and method != "GET")

    def param_serialize(
        self,
        method: str,
        resource_path: str,
        query_params: list[tuple[str, Any]] | None = None,
        header_params: dict[str, str] | None = None,
        body: Any = None,
        auth_settings: list[str] | None = None,
    ) -> tuple[str, str, dict[str, str], Any, list[Any]]:
        return method, resource_path, dict(header_params or {}), body, []

    def call_api(
        self,
        method: str,
        url: str,
        header_params: dict[str, str] | None = None,
        body: Any = None,
        _request_timeout: Any = None,
    ) -> FakeResponse:
        if isinstance(body, bytes):  # kubeio encodes JSON bodies itself
            body = json.loads(body)
        self.calls.append((method, url))
        if self.fail_next:
            return self._status(self.fail_next.pop(0), "InternalError")
        if method != "GET" and self.before_write is not None:
            hook, self.before_write = self.before_write, None
            hook()
        if method == "GET":
            if url not in self.objects:
                return self._status(404, "NotFound")
            return self._ok(self.objects[url])
        if method == "POST":
            path = f"{url}/{body['metadata']['name']}"
            if path in self.objects:
                return self._status(409, "AlreadyExists")
            self.add(path, body)
            return self._ok(self.objects[path], 201)
        if method == "PUT":
            current = self.objects.get(url)
            if current is None:
                return self._status(404, "NotFound")
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                return self._status(409, "Conflict")
            self.add(url, body)
            return self._ok(self.objects[url])
        if method == "PATCH":
            current = self.objects.get(url)
            if current is None:
                return self._status(404, "NotFound")
            assert (header_params or {}).get("Content-Type") == "application/json-patch+json"
            try:
                patched = jsonpatch.apply_patch(current, body)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
                return self._status(422, "Invalid")
            self.add(url, patched)
            return self._ok(self.objects[url])
        return self._status(405, "MethodNotAllowed")

    @staticmethod
    def _ok(obj: dict[str, Any], status: int = 200) -> FakeResponse:
        return FakeResponse(status, json.dumps(obj).encode())

    @staticmethod
    def _status(code: int, reason: str) -> FakeResponse:
        body = {"kind": "Status", "status": "Failure", "reason": reason, "code": code}
        return FakeResponse(code, json.dumps(body).encode(), reason=reason)


@pytest.fixture
def fake_api() -> FakeApiClient:
    return FakeApiClient()
