"""Merge patch, strategic merge patch and server-side apply on plain dicts."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.apiserver import errors, patches
from localcluster.apiserver.errors import StatusError

MERGE_CASES: list[tuple[str, Any, Any, Any]] = [
    ("adds a key", {"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ("null deletes", {"a": 1, "b": 2}, {"b": None}, {"a": 1}),
    ("nested merge", {"a": {"x": 1, "y": 2}}, {"a": {"y": 3}}, {"a": {"x": 1, "y": 3}}),
    ("lists replace", {"l": [1, 2]}, {"l": [3]}, {"l": [3]}),
    ("scalar replaces object", {"a": {"x": 1}}, {"a": 5}, {"a": 5}),
]


@pytest.mark.parametrize(
    ("live", "patch", "expected"), [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES]
)
def test_json_merge_patch(live: Any, patch: Any, expected: Any) -> None:
    assert patches.json_merge_patch(live, patch) == expected


POD = {
    "spec": {
        "containers": [
            {
                "name": "a",
                "image": "a:1",
                "env": [{"name": "X", "value": "1"}],
                "ports": [{"containerPort": 80}],
            },
            {"name": "b", "image": "b:1"},
        ],
        "tolerations": [{"key": "t1"}],
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    "metadata": {"finalizers": ["x"]},
}

STRATEGIC_CASES: list[tuple[str, Any, Any]] = [
    (
        "containers merge by name",
        {"spec": {"containers": [{"name": "b", "image": "b:2"}]}},
        lambda r: [c["image"] for c in r["spec"]["containers"]] == ["a:1", "b:2"],
    ),
    (
        "new containers are appended",
        {"spec": {"containers": [{"name": "c", "image": "c:1"}]}},
        lambda r: [c["name"] for c in r["spec"]["containers"]] == ["a", "b", "c"],
    ),
    (
        "env merges by name inside a container",
        {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}},
        lambda r: [e["name"] for e in r["spec"]["containers"][0]["env"]] == ["X", "Y"],
    ),
    (
        "ports merge by containerPort",
        {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}},
        lambda r: r["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "name": "http"}],
    ),
    (
        "conditions merge by type",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        lambda r: r["status"]["conditions"] == [{"type": "Ready", "status": "True"}],
    ),
    (
        "tolerations (no merge key) replace",
        {"spec": {"tolerations": [{"key": "t2"}]}},
        lambda r: r["spec"]["tolerations"] == [{"key": "t2"}],
    ),
    (
        "$patch: delete removes a keyed item",
        {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
        lambda r: [c["name"] for c in r["spec"]["containers"]] == ["b"],
    ),
    (
        "$patch: replace replaces the list",
        {"spec": {"containers": [{"name": "z", "image": "z"}, {"$patch": "replace"}]}},
        lambda r: r["spec"]["containers"] == [{"name": "z", "image": "z"}],
    ),
    (
        "$setElementOrder reorders",
        {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}},
        lambda r: [c["name"] for c in r["spec"]["containers"]] == ["b", "a"],
    ),
    (
        "finalizers merge as a set",
        {"metadata": {"finalizers": ["y", "x"]}},
        lambda r: r["metadata"]["finalizers"] == ["x", "y"],
    ),
    (
        "$deleteFromPrimitiveList removes values",
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}},
        lambda r: r["metadata"]["finalizers"] == [],
    ),
    (
        "$retainKeys clears the keys it does not list",
        {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
        lambda r: r["spec"]["strategy"] == {"type": "Recreate"},
    ),
    (
        "null deletes a field",
        {"spec": {"tolerations": None}},
        lambda r: "tolerations" not in r["spec"],
    ),
]


def test_webhooks_merge_by_name_and_keep_what_the_patch_leaves_out() -> None:
    """helm's upgrade patch of a webhook configuration leaves out a caBundle someone else set."""
    live = {
        "webhooks": [
            {"name": "a", "timeoutSeconds": 5, "clientConfig": {"caBundle": "Q0E="}},
            {"name": "b", "timeoutSeconds": 5},
        ]
    }
    patch = {"webhooks": [{"name": "a", "timeoutSeconds": 9}]}
    assert patches.strategic_merge(live, patch)["webhooks"] == [
        {"name": "a", "timeoutSeconds": 9, "clientConfig": {"caBundle": "Q0E="}},
        {"name": "b", "timeoutSeconds": 5},
    ]


@pytest.mark.parametrize(
    ("patch", "check"), [c[1:] for c in STRATEGIC_CASES], ids=[c[0] for c in STRATEGIC_CASES]
)
def test_strategic_merge(patch: Any, check: Any) -> None:
    result = patches.strategic_merge(POD, patch)
    assert check(result), result
    assert POD["spec"]["containers"][1]["image"] == "b:1", "the live object is not mutated"


def test_json_patch_errors_are_status_errors() -> None:
    assert patches.apply_json_patch({"a": 1}, [{"op": "replace", "path": "/a", "value": 2}]) == {
        "a": 2
    }
    with pytest.raises(StatusError) as raised:
        patches.apply_json_patch({"a": 1}, [{"op": "remove", "path": "/missing"}])
    assert raised.value.code == 422
    with pytest.raises(StatusError):
        patches.apply_json_patch({"a": 1}, {"op": "add"})


def test_server_side_apply_removes_fields_the_manager_stopped_applying() -> None:
    applied = {
        "metadata": {"name": "x", "labels": {"a": "1", "b": "2"}},
        "data": {"k": "v", "old": "o"},
    }
    live = patches.server_side_apply(None, applied, "kubectl", "v1", "2024-01-01T00:00:00Z")
    assert live["metadata"]["managedFields"][0]["fieldsV1"]["f:data"] == {"f:k": {}, "f:old": {}}
    live["data"]["other"] = "kept"  # owned by nobody applying
    second = {"metadata": {"name": "x", "labels": {"a": "1"}}, "data": {"k": "v2"}}
    result = patches.server_side_apply(live, second, "kubectl", "v1", "2024-01-01T00:00:01Z")
    assert result["data"] == {"k": "v2", "other": "kept"}
    assert result["metadata"]["labels"] == {"a": "1"}
    assert len(result["metadata"]["managedFields"]) == 1


T0, T1 = "2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z"


def _applied_by_two() -> dict[str, Any]:
    config = {"metadata": {"name": "x"}, "data": {"a": "1"}}
    live = patches.server_side_apply(None, config, "m1", "v1", T0)
    return patches.server_side_apply(live, {**config, "data": {"a": "1", "b": "2"}}, "m2", "v1", T1)


def test_changing_a_field_another_applier_owns_is_a_conflict() -> None:
    live = _applied_by_two()
    changed = {"metadata": {"name": "x"}, "data": {"a": "9"}}
    with pytest.raises(errors.StatusError) as raised:
        patches.server_side_apply(live, changed, "m2", "v1", T1)
    assert raised.value.code == 409
    assert raised.value.message == 'Apply failed with 1 conflict: conflict with "m1": .data.a'
    assert raised.value.details == {
        "causes": [
            {"reason": "FieldManagerConflict", "message": 'conflict with "m1"', "field": ".data.a"}
        ]
    }


def test_forcing_takes_the_field_over() -> None:
    live = _applied_by_two()
    changed = {"metadata": {"name": "x"}, "data": {"a": "9"}}
    result = patches.server_side_apply(live, changed, "m2", "v1", T1, force=True)
    assert result["data"] == {"a": "9"}
    owners = {m["manager"]: m["fieldsV1"] for m in result["metadata"]["managedFields"]}
    assert "f:data" not in owners["m1"]
    assert owners["m2"]["f:data"] == {"f:a": {}}


def test_a_field_two_appliers_own_stays_when_one_lets_it_go() -> None:
    live = _applied_by_two()
    result = patches.server_side_apply(
        live, {"metadata": {"name": "x"}, "data": {"b": "2"}}, "m2", "v1", T1
    )
    assert result["data"] == {"a": "1", "b": "2"}, "m1 still owns data.a"


def test_applying_the_same_value_is_shared_ownership_not_a_conflict() -> None:
    live = _applied_by_two()
    assert patches.server_side_apply(
        live, {"metadata": {"name": "x"}, "data": {"a": "1"}}, "m3", "v1", T1
    )["data"] == {"a": "1", "b": "2"}


def test_field_set_keys_list_items_by_merge_key() -> None:
    fields = patches.field_set({"spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert fields == {
        "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:name": {}, "f:image": {}}}}
    }
