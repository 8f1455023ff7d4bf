from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeio.client import Resource
from kubeio.clock import ManualClock
from kubeio.errors import AlreadyExistsError, ConflictError, NotFoundError


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


class FakeKube:
    """Just enough of `kubeio.client.Kube` in memory: objects by (plural, namespace, name),
    a global resourceVersion, optimistic concurrency on status writes, and injected failures."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.rv = 100
        # (verb, plural) -> list of exceptions to raise, one per call, before succeeding.
        self.failures: dict[tuple[str, str], list[Exception]] = {}

    def _fail(self, verb: str, plural: str) -> None:
        queue = self.failures.get((verb, plural))
        if queue:
            raise queue.pop(0)

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(obj)

    def put(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        self.objects[(res.plural, meta.get("namespace"), meta["name"])] = copy.deepcopy(obj)
        return self._bump(self.objects[(res.plural, meta.get("namespace"), meta["name"])])

    def get_or_none(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.calls.append(("get", res.plural, name))
        self._fail("get", res.plural)
        found = self.objects.get((res.plural, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        found = self.get_or_none(res, namespace, name)
        if found is None:
            raise NotFoundError(f"{name} not found", 404, "NotFound")
        return found

    def create(self, res: Resource, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        self.calls.append(("create", res.plural, name))
        self._fail("create", res.plural)
        key = (res.plural, namespace, name)
        if key in self.objects:
            raise AlreadyExistsError(f"{name} exists", 409, "AlreadyExists")
        obj = copy.deepcopy(body)
        obj["metadata"]["namespace"] = namespace
        obj["metadata"].setdefault("uid", f"uid-{name}-{self.rv}")
        self.objects[key] = obj
        return self._bump(obj)

    def replace(self, res: Resource, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        self.calls.append(("replace", res.plural, name))
        self._fail("replace", res.plural)
        key = (res.plural, namespace, name)
        if key not in self.objects:
            raise NotFoundError(f"{name} not found", 404, "NotFound")
        self.objects[key] = copy.deepcopy(body)
        return self._bump(self.objects[key])

    def replace_status(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        self.calls.append(("status", res.plural, name))
        self._fail("status", res.plural)
        key = (res.plural, namespace, name)
        current = self.objects.get(key)
        if current is None:
            raise NotFoundError(f"{res.plural} {name} not found", 404, "NotFound")
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ConflictError("the object has been modified", 409, "Conflict")
        current["status"] = copy.deepcopy(body["status"])
        return self._bump(current)

    def merge_patch(
        self, res: Resource, namespace: str | None, name: str, patch: dict[str, Any], sub: str = ""
    ) -> dict[str, Any]:
        self.calls.append(("patch" + (f"/{sub}" if sub else ""), res.plural, name))
        self._fail("patch", res.plural)
        key = (res.plural, namespace, name)
        if key not in self.objects:
            raise NotFoundError(f"{name} not found", 404, "NotFound")
        self.objects[key] = jsonpatch_merge(self.objects[key], patch)
        return self._bump(self.objects[key])

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        propagation: str | None = None,
    ) -> dict[str, Any] | None:
        self.calls.append(("delete", res.plural, name))
        self._fail("delete", res.plural)
        key = (res.plural, namespace, name)
        current = self.objects.get(key)
        if current is None:
            return None
        if uid and current["metadata"].get("uid") != uid:
            raise ConflictError("precondition failed: uid", 409, "Conflict")
        del self.objects[key]
        return None

    def names(self, plural: str) -> list[str]:
        return sorted(name for (p, _ns, name) in self.objects if p == plural)


def jsonpatch_merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = jsonpatch_merge(result.get(key), value)
    return result


@pytest.fixture
def fake_kube() -> FakeKube:
    return FakeKube()
