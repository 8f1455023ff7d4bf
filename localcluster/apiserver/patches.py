"""The four PATCH content types, as pure functions over plain dicts.

- JSON Patch (RFC 6902) through `jsonpatch`;
- JSON merge patch (RFC 7386);
- strategic merge patch: lists of the common Kubernetes fields merge by key (containers by
  `name`, ports by `containerPort`, conditions by `type`, ...), `$patch` and
  `$setElementOrder` directives are understood, other lists are replaced;
- server-side apply, simplified: the applied configuration is merged like a strategic merge
  patch and the fields a manager applied before but no longer applies are removed, tracked in
  `managedFields` as kube's `FieldsV1` sets.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch

from localcluster.apiserver import errors

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

# Merge keys of well-known list fields, by field name (as in the Go types' patchMergeKey tags).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "ports": "containerPort",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "webhooks": "name",  # Mutating/ValidatingWebhookConfiguration
    "addresses": "type",  # NodeStatus
}
# Primitive lists that merge as sets.
MERGE_PRIMITIVE_LISTS = frozenset({"finalizers"})


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def apply_json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    if not isinstance(operations, list):
        raise errors.bad_request("json patch must be a list of operations")
    try:
        result = jsonpatch.JsonPatch(operations).apply(target)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise errors.StatusError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from exc
    except (TypeError, KeyError, IndexError, ValueError) as exc:
        raise errors.bad_request(f"invalid json patch: {exc}") from exc
    if not isinstance(result, dict):
        raise errors.bad_request("json patch must produce an object")
    return result


def _ports_key(item: dict[str, Any]) -> Any:
    # Service ports merge by `port`, container ports by `containerPort`.
    if "containerPort" in item:
        return ("containerPort", item.get("containerPort"), item.get("protocol", "TCP"))
    return ("port", item.get("port"), item.get("protocol", "TCP"))


def _item_key(field: str, item: Any) -> Any:
    if not isinstance(item, dict):
        return None
    if field == "ports":
        return _ports_key(item)
    key = MERGE_KEYS[field]
    return item.get(key)


def _merge_list(
    field: str, live: list[Any], patch: list[Any], order: list[Any] | None
) -> list[Any]:
    if field in MERGE_PRIMITIVE_LISTS:
        additions: list[Any] = []
        for value in patch:
            if isinstance(value, dict) and "$patch" in value:
                continue
            additions.append(value)
        result = list(live)
        for value in additions:
            if value not in result:
                result.append(value)
        return result
    if field not in MERGE_KEYS:
        return [strategic_merge({}, v) if isinstance(v, dict) else v for v in patch]
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    result = [copy.deepcopy(v) for v in live]
    for item in patch:
        if not isinstance(item, dict):
            continue
        directive = item.get("$patch")
        key = _item_key(field, item)
        index = next(
            (i for i, existing in enumerate(result) if _item_key(field, existing) == key), None
        )
        if directive == "delete":
            if index is not None:
                result.pop(index)
            continue
        if index is None:
            result.append(strategic_merge({}, item))
        else:
            result[index] = strategic_merge(result[index], item)
    return _reorder(field, result, order)


def _reorder(field: str, items: list[Any], order: list[Any] | None) -> list[Any]:
    if not order or field not in MERGE_KEYS:
        return items
    keyed = {_item_key(field, i): i for i in items}
    ordered = [keyed.pop(_item_key(field, o)) for o in order if _item_key(field, o) in keyed]
    return ordered + list(keyed.values())


def strategic_merge(live: Any, patch: Any) -> Any:
    """Apply a strategic merge patch to `live`, returning a new object."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = copy.deepcopy(live) if isinstance(live, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [v for v in result[name] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            order = patch.get(f"$setElementOrder/{key}")
            current = result.get(key)
            merged = _merge_list(key, current if isinstance(current, list) else [], value, order)
            result[key] = merged
        elif isinstance(value, dict):
            merged_value = strategic_merge(result.get(key), value)
            if merged_value is None:
                result.pop(key, None)
            else:
                result[key] = merged_value
        else:
            result[key] = value
    for key, order in patch.items():
        name = key.removeprefix("$setElementOrder/")
        if name != key and name not in patch and isinstance(result.get(name), list):
            result[name] = _reorder(name, result[name], order)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


# -- server-side apply ------------------------------------------------------------------------


def _list_map_key(field: str, item: Any) -> str | None:
    if not isinstance(item, dict) or field not in MERGE_KEYS:
        return None
    if field == "ports":
        name = "containerPort" if "containerPort" in item else "port"
        return json.dumps({name: item.get(name)}, separators=(",", ":"))
    key = MERGE_KEYS[field]
    if key not in item:
        return None
    return json.dumps({key: item[key]}, separators=(",", ":"))


def field_set(obj: Any, field: str = "") -> dict[str, Any]:
    """The FieldsV1 set of an applied configuration (`{"f:spec": {"f:replicas": {}}}`)."""
    out: dict[str, Any] = {}
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("apiVersion", "kind"):
                continue
            out[f"f:{key}"] = field_set(value, key)
    elif isinstance(obj, list) and field in MERGE_KEYS:
        for item in obj:
            key = _list_map_key(field, item)
            if key is not None:
                entry = field_set(item, "")
                entry["."] = {}
                out[f"k:{key}"] = entry
    return out


def _remove_fields(obj: Any, stale: dict[str, Any], keep: dict[str, Any], field: str = "") -> None:
    """Remove from `obj` the fields present in `stale` but not in `keep`."""
    for entry, children in stale.items():
        if entry == ".":
            continue
        if entry.startswith("f:") and isinstance(obj, dict):
            name = entry[2:]
            if entry not in keep:
                obj.pop(name, None)
            elif children and name in obj:
                _remove_fields(obj[name], children, keep[entry], name)
        elif entry.startswith("k:") and isinstance(obj, list):
            for index, item in enumerate(list(obj)):
                if _list_map_key(field, item) == entry[2:]:
                    if entry not in keep:
                        obj.remove(item)
                    elif children:
                        _remove_fields(obj[index], children, keep[entry], "")


def _leaves(fields: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The owned leaf fields of a FieldsV1 set, each as its path of entries."""
    out: list[tuple[str, ...]] = []
    for entry, children in fields.items():
        if entry == ".":
            continue
        path = (*prefix, entry)
        nested = {k: v for k, v in (children or {}).items() if k != "."}
        out.extend(_leaves(nested, path) if nested else [path])
    return out


def _value_at(obj: Any, path: tuple[str, ...]) -> Any:
    field = ""
    for entry in path:
        if entry.startswith("f:") and isinstance(obj, dict):
            field = entry[2:]
            obj = obj.get(field)
        elif entry.startswith("k:") and isinstance(obj, list):
            obj = next((i for i in obj if _list_map_key(field, i) == entry[2:]), None)
        else:
            return None
    return obj


def _render_path(path: tuple[str, ...]) -> str:
    """`.data.a`, `.spec.containers[name="main"].image`: how kube names a conflicting field."""
    text = ""
    for entry in path:
        if entry.startswith("f:"):
            text += "." + entry[2:]
        else:
            key = json.loads(entry[2:])
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]"
    return text


def _union(*sets: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for one in sets:
        for entry, children in one.items():
            out[entry] = _union(out.get(entry) or {}, children or {})
    return out


def _without(fields: dict[str, Any], path: tuple[str, ...]) -> None:
    if not path or not isinstance(fields, dict):
        return
    if len(path) == 1:
        fields.pop(path[0], None)
        return
    child = fields.get(path[0])
    if isinstance(child, dict):
        _without(child, path[1:])
        if not {k for k in child if k != "."}:
            fields.pop(path[0], None)


def _conflicts(
    live: dict[str, Any], applied: dict[str, Any], fields: dict[str, Any], others: list[Any]
) -> list[tuple[str, tuple[str, ...]]]:
    """(manager, field) pairs where another applier owns a field this apply sets differently."""
    found = []
    applied_leaves = _leaves(fields)
    for other in others:
        owned = set(_leaves(other.get("fieldsV1") or {}))
        for path in applied_leaves:
            if path in owned and _value_at(live, path) != _value_at(applied, path):
                found.append((str(other.get("manager")), path))
    return found


def server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str,
    api_version: str,
    now: str,
    lists_merge: bool = True,
    force: bool = False,
) -> dict[str, Any]:
    """Merge an applied configuration into the live object and record the manager's fields.

    A field another applier owns and this apply would change is a conflict (409) unless `force`
    takes it over. Update managers are recorded as owning their whole object here, so they are
    not held against an apply (kube would; it also tracks their fields exactly).
    """
    fields = field_set(applied)
    fields.get("f:metadata", {}).pop("f:managedFields", None)
    entry = {
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if live is None:
        result = copy.deepcopy(applied)
        result.setdefault("metadata", {})["managedFields"] = [entry]
        return result
    result = copy.deepcopy(live)
    managed = copy.deepcopy(list((result.get("metadata") or {}).get("managedFields") or []))
    previous = next(
        (m for m in managed if m.get("manager") == manager and m.get("operation") == "Apply"), None
    )
    others = [m for m in managed if m.get("operation") == "Apply" and m is not previous]
    conflicts = _conflicts(result, applied, fields, others)
    if conflicts and not force:
        raise errors.StatusError(
            409,
            "Conflict",
            f"Apply failed with {len(conflicts)} conflict{'s' if len(conflicts) > 1 else ''}: "
            + "; ".join(f'conflict with "{who}": {_render_path(p)}' for who, p in conflicts),
            {
                "causes": [
                    {
                        "reason": "FieldManagerConflict",
                        "message": f'conflict with "{who}"',
                        "field": _render_path(p),
                    }
                    for who, p in conflicts
                ]
            },
        )
    for who, path in conflicts:  # forced: the fields change hands
        owner = next(m for m in others if m.get("manager") == who)
        _without(owner.get("fieldsV1") or {}, path)
    if previous is not None:
        # A field another applier still owns stays, even when this manager let it go.
        keep = _union(fields, *(m.get("fieldsV1") or {} for m in others))
        _remove_fields(result, previous.get("fieldsV1") or {}, keep)
    if lists_merge:
        merged = strategic_merge(result, applied)
    else:
        merged = _merge_replacing_lists(result, applied)
    managed = [m for m in managed if m is not previous] + [entry]
    merged.setdefault("metadata", {})["managedFields"] = managed
    return dict(merged)


def _merge_replacing_lists(live: Any, patch: Any) -> Any:
    if not isinstance(patch, dict) or not isinstance(live, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(live)
    for key, value in patch.items():
        if value is None:
            continue
        result[key] = _merge_replacing_lists(result.get(key), value)
    return result
