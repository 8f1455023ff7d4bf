"""What the processes keep of `metadata.managedFields`, and what they send of it.

kube-apiserver's field sets (`fieldsV1`) are the largest part of a cached object (about a third
of a pod decoded) and nothing here reads them: the job controller reads only who wrote a Job's
status and when. So every watch and list keeps each entry without its field set, and every write
leaves managedFields out: the server then keeps its own, where a body carrying the slimmed
entries would replace them.
"""

from __future__ import annotations

from typing import Final

from shared.wire import WireObject

FIELD_SET_KEYS: Final = ("fieldsV1",)


def drop_field_sets(obj: WireObject) -> WireObject:
    """The object as the caches keep it: each managedFields entry without its field set (in
    place: the object is fresh from a decode). Returns it."""
    metadata = obj.get("metadata")
    entries = metadata.get("managedFields") if isinstance(metadata, dict) else None
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, dict):
                for key in FIELD_SET_KEYS:
                    entry.pop(key, None)
    return obj


def without_managed_fields(body: WireObject) -> WireObject:
    """The body as a write sends it: without metadata.managedFields (a shallow copy when it had
    them; the caller's object is left alone)."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return body
    sent = dict(body)
    sent["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return sent
