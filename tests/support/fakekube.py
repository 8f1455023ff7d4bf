"""`FakeKube`: the in-memory API server the unit tests hand to vcjob's shells (a `KubeLike`).

Objects live by (plural, namespace, name) under one global resourceVersion, with the API's rules
that the shells rely on: create refuses an existing name (409 AlreadyExists), get, replace and
patches of a missing object are 404, a status write carrying a stale resourceVersion is a 409
Conflict, a delete with a uid precondition that does not match is a 409, and a delete of a
missing object is success (None), as `kubeio.client.Kube.delete` reports it (a 404 with
`missing_ok=False`).

What a test may steer or read:

- `calls`: every call as (verb, plural, name); verbs are get, create, replace, status,
  patch (patch/<sub> for a subresource), delete, list and watch.
- `requests`: the raw `request()` calls, as (method, path, body, content type).
- `failures[(verb, plural)]`: exceptions raised by the next calls of that verb, one per call,
  before the call does anything (patch covers every subresource).
- `before`: callbacks run at each call with (verb, plural, name), before it is applied (another
  writer that gets in first).
- `watch_scripts`: each `watch()` plays the next script: a dict is an event, an exception is
  raised, a callable is called (to change the objects between events). When no script is left,
  `watches_done` is set and the stream stays quiet for a moment, as a server's would.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from typing import Any

import jsonpatch

from kubeio.client import MERGE_PATCH, Resource
from kubeio.errors import AlreadyExistsError, ConflictError, NotFoundError, PermanentError
from shared.wire import WireObject

JSON_PATCH = "application/json-patch+json"

Key = tuple[str, str | None, str]
WatchStep = WireObject | Exception | Callable[[], None]


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[Key, WireObject] = {}
        self.rv = 100
        self.calls: list[tuple[str, str, str]] = []
        self.requests: list[tuple[str, str, Any, str]] = []
        self.failures: dict[tuple[str, str], list[Exception]] = {}
        self.before: list[Callable[[str, str, str], None]] = []
        self.watch_scripts: list[list[WatchStep]] = []
        self.watch_from: list[str] = []
        self.watches_done = threading.Event()

    # --- what tests set up and read ------------------------------------------------------------

    def put(self, res: Resource, obj: WireObject) -> WireObject:
        """Store `obj` as it is (no admission, no rules) and return it with its resourceVersion."""
        meta = obj["metadata"]
        key = (res.plural, meta.get("namespace"), meta["name"])
        self.objects[key] = copy.deepcopy(obj)
        return self._bump(self.objects[key])

    def stored(self, res: Resource, namespace: str | None, name: str) -> WireObject:
        """The stored object itself (not a copy): a test may edit it as another writer would."""
        return self.objects[(res.plural, namespace, name)]

    def names(self, plural: str) -> list[str]:
        return sorted(name for (p, _ns, name) in self.objects if p == plural)

    def events(self) -> list[tuple[str, str, str]]:
        """The Events written so far, as (type, reason, message)."""
        return [
            (str(o.get("type")), str(o.get("reason")), str(o.get("message")))
            for (plural, _ns, _name), o in list(self.objects.items())
            if plural == "events"
        ]

    def changes(self) -> list[tuple[str, str, str]]:
        """`calls` without the Events and without reads: what a controller changed."""
        return [c for c in self.calls if c[1] != "events" and c[0] not in ("get", "list", "watch")]

    # --- KubeLike ------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: tuple[float, float] | None = None,
    ) -> Any:
        self.requests.append((method, path, copy.deepcopy(body), content_type))
        plural, namespace, name, sub = parse_path(path)
        if method == "GET" and name:
            return self._get(plural, namespace, name)
        if method == "PATCH" and name:
            return self._patch(plural, namespace, name, body, sub, content_type)
        if method == "DELETE" and name:
            return self._delete(plural, namespace, name, None)
        raise PermanentError(f"{method} {path}: 405 MethodNotAllowed", 405, "MethodNotAllowed")

    def get(self, res: Resource, namespace: str | None, name: str) -> WireObject:
        return self._get(res.plural, namespace, name)

    def get_or_none(self, res: Resource, namespace: str | None, name: str) -> WireObject | None:
        try:
            return self._get(res.plural, namespace, name)
        except NotFoundError:
            return None

    def create(self, res: Resource, namespace: str | None, body: WireObject) -> WireObject:
        name = body["metadata"]["name"]
        self._call("create", res.plural, name)
        key = (res.plural, namespace, name)
        if key in self.objects:
            raise AlreadyExistsError(f"{res.plural} {name} already exists", 409, "AlreadyExists")
        obj = copy.deepcopy(body)
        if namespace is not None:
            obj["metadata"]["namespace"] = namespace
        # Unique per incarnation: a pod created again under its name is another pod.
        obj["metadata"].setdefault("uid", f"uid-{name}-{self.rv}")
        self.objects[key] = obj
        return self._bump(obj)

    def replace(self, res: Resource, namespace: str | None, body: WireObject) -> WireObject:
        name = body["metadata"]["name"]
        self._call("replace", res.plural, name)
        key = self._existing(res.plural, namespace, name)
        self.objects[key] = copy.deepcopy(body)
        return self._bump(self.objects[key])

    def replace_status(self, res: Resource, namespace: str, body: WireObject) -> WireObject:
        name = body["metadata"]["name"]
        self._call("status", res.plural, name)
        current = self.objects[self._existing(res.plural, namespace, name)]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ConflictError("the object has been modified", 409, "Conflict")
        current["status"] = copy.deepcopy(body["status"])
        return self._bump(current)

    def merge_patch(
        self, res: Resource, namespace: str | None, name: str, patch: WireObject, sub: str = ""
    ) -> WireObject:
        return self._patch(res.plural, namespace, name, patch, sub, MERGE_PATCH)

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        propagation: str | None = None,
        missing_ok: bool = True,
    ) -> WireObject | None:
        return self._delete(res.plural, namespace, name, uid, missing_ok)

    def list(
        self, res: Resource, *, label_selector: str | None = None, limit: int = 500
    ) -> tuple[list[WireObject], str]:
        self._call("list", res.plural, "")
        matches = selector(label_selector)
        items = [
            copy.deepcopy(obj)
            for (plural, _ns, _name), obj in self.objects.items()
            if plural == res.plural and matches(obj)
        ]
        return items, str(self.rv)

    def watch(
        self,
        res: Resource,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[WireObject]:
        self._call("watch", res.plural, "")
        self.watch_from.append(resource_version)
        if not self.watch_scripts:
            self.watches_done.set()
            threading.Event().wait(0.05)
            return
        for step in self.watch_scripts.pop(0):
            if isinstance(step, Exception):
                raise step
            if callable(step):
                step()
                continue
            yield copy.deepcopy(step)

    # --- the rules -----------------------------------------------------------------------------

    def _call(self, verb: str, plural: str, name: str) -> None:
        self.calls.append((verb, plural, name))
        for hook in list(self.before):
            hook(verb, plural, name)
        queue = self.failures.get((verb.split("/", 1)[0], plural))
        if queue:
            raise queue.pop(0)

    def _bump(self, obj: WireObject) -> WireObject:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(obj)

    def _existing(self, plural: str, namespace: str | None, name: str) -> Key:
        key = (plural, namespace, name)
        if key not in self.objects:
            raise NotFoundError(f'{plural} "{name}" not found', 404, "NotFound")
        return key

    def _get(self, plural: str, namespace: str | None, name: str) -> WireObject:
        self._call("get", plural, name)
        return copy.deepcopy(self.objects[self._existing(plural, namespace, name)])

    def _patch(
        self,
        plural: str,
        namespace: str | None,
        name: str,
        patch: Any,
        sub: str,
        content_type: str,
    ) -> WireObject:
        self._call("patch" + (f"/{sub}" if sub else ""), plural, name)
        key = self._existing(plural, namespace, name)
        if content_type == JSON_PATCH:
            try:
                patched = jsonpatch.JsonPatch(patch).apply(self.objects[key])
            except jsonpatch.JsonPatchException as exc:
                raise PermanentError(f"PATCH {name}: 422 Invalid: {exc}", 422, "Invalid") from exc
        else:
            patched = merge(self.objects[key], patch)
        self.objects[key] = patched
        return self._bump(patched)

    def _delete(
        self,
        plural: str,
        namespace: str | None,
        name: str,
        uid: str | None,
        missing_ok: bool = True,
    ) -> WireObject | None:
        self._call("delete", plural, name)
        current = self.objects.get((plural, namespace, name))
        if current is None:
            if not missing_ok:
                raise NotFoundError(f'{plural} "{name}" not found', 404, "NotFound")
            return None
        if uid and current["metadata"].get("uid") != uid:
            raise ConflictError("Precondition failed: UID in precondition", 409, "Conflict")
        del self.objects[(plural, namespace, name)]
        return None


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def parse_path(path: str) -> tuple[str, str | None, str, str]:
    """(plural, namespace, name, subresource) of an API path such as
    /apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/j/status."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    rest += [""] * (3 - len(rest))
    return rest[0], namespace, rest[1], rest[2]


def selector(text: str | None) -> Callable[[WireObject], bool]:
    """A label selector of equality (`a=b`, `a==b`, `a!=b`) and existence (`a`, `!a`) terms."""
    terms = [t.strip() for t in (text or "").split(",") if t.strip()]

    def matches(obj: WireObject) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for term in terms:
            if "!=" in term:
                key, value = term.split("!=", 1)
                if labels.get(key.strip()) == value.strip():
                    return False
            elif "=" in term:
                key, value = term.replace("==", "=").split("=", 1)
                if labels.get(key.strip()) != value.strip():
                    return False
            elif term.startswith("!"):
                if term[1:] in labels:
                    return False
            elif term not in labels:
                return False
        return True

    return matches
