"""Memoising pure functions of decoded JSON by a digest of the value's JSON encoding.

API servers send the same pod templates and Job specs again and again (every worker of a job,
every job from the same manifest), so the webhook keeps what it worked out for a value it has
seen, keyed by a short digest rather than the value itself: a key stays 16 bytes however large
the template, and the number of entries is bounded.

The pure rules keep nothing themselves: they take a `Recall` (`fresh` by default, which works
everything out), and the review layer (`webhook.job.review.MEMO`) hands them its one `Memo`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar, cast

import orjson

V = TypeVar("V")

DIGEST_BYTES: Final = 16
# Results may hold parts of the value they were worked out from (a field error shows the value
# it is about): only values up to this size are remembered, so that a full table stays small.
# Real pod templates and Job specs are a few KiB.
MAX_VALUE_BYTES: Final = 32 * 1024
ENTRIES: Final = 256


class Recall(Protocol):
    """`recall(key, work)`: the result remembered under `key`, else `work()` (then remembered)."""

    def __call__(self, key: bytes, work: Callable[[], V]) -> V: ...


def fresh(key: bytes, work: Callable[[], V]) -> V:
    """Nothing remembered: every result is worked out."""
    return work()


def encoding(value: Any) -> bytes | None:
    """The value as compact JSON, keys in their own order: equal only for equal JSON values
    written in the same order (so a result that depends on key order is kept apart too); None
    for a value that is not JSON, or whose JSON is longer than MAX_VALUE_BYTES.

    orjson writes NaN and ±Infinity as `null`, so an encoding that has `null` in it is made
    again by the standard library, which spells them out; so is a value orjson refuses (an
    integer beyond 64 bits). `1` and `1.0`, `true` and `1` stay distinct in both.
    """
    try:
        encoded = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        encoded = b""
    if not encoded or b"null" in encoded:
        try:
            encoded = json.dumps(value, separators=(",", ":")).encode()
        except (TypeError, ValueError, RecursionError):
            return None
    return encoded if len(encoded) <= MAX_VALUE_BYTES else None


def digest(*parts: bytes) -> bytes:
    """A collision-resistant key for the concatenated parts (each length-prefixed)."""
    hasher = hashlib.blake2b(digest_size=DIGEST_BYTES)
    for part in parts:
        hasher.update(len(part).to_bytes(8, "little"))
        hasher.update(part)
    return hasher.digest()


class Memo:
    """A bounded least-recently-used table from digests to results; safe to share between
    threads. Results are shared too: callers must treat them as read-only. Results of different
    functions may share one table when their keys carry a different first part (`digest`)."""

    __slots__ = ("_entries", "_lock", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[bytes, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> object | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: bytes, value: object) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def recall(self, key: bytes, work: Callable[[], V]) -> V:
        """What `Recall` says; `work` runs outside the lock (two threads may both work out a new
        key: the results are equal)."""
        found = self.get(key)
        if found is None:
            found = work()
            self.put(key, found)
        return cast(V, found)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
