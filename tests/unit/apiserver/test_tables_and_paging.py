"""Printer columns, ages, field values, paging tokens, generation rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from localcluster.apiserver import errors, fieldselect, rest, tables, validation
from localcluster.apiserver.registry import BUILTIN_TYPES, types_from_crd

OBJ = {
    "metadata": {"name": "x"},
    "status": {"state": {"phase": "Running"}, "conditions": [{"type": "Ready", "status": "True"}]},
    "spec": {"tasks": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 3}]},
}

JSONPATH_CASES: list[tuple[str, str, list[Any]]] = [
    ("nested field", ".status.state.phase", ["Running"]),
    ("braces and dollar", "{$.status.state.phase}", ["Running"]),
    ("index", ".spec.tasks[1].name", ["b"]),
    ("wildcard", ".spec.tasks[*].replicas", [2, 3]),
    ("filter", '.status.conditions[?(@.type=="Ready")].status', ["True"]),
    ("missing", ".status.nothing", []),
]


@pytest.mark.parametrize(
    ("path", "expected"), [c[1:] for c in JSONPATH_CASES], ids=[c[0] for c in JSONPATH_CASES]
)
def test_jsonpath(path: str, expected: list[Any]) -> None:
    assert tables.evaluate_jsonpath(path, OBJ) == expected


DURATIONS = [
    (5, "5s"),
    (119, "119s"),
    (120, "2m"),
    (125, "2m5s"),
    (600, "10m"),
    (3 * 3600, "3h"),
    (3 * 3600 + 60, "3h1m"),
    (9 * 3600, "9h"),
    (50 * 3600, "2d2h"),
    (10 * 86400, "10d"),
    (3 * 365 * 86400, "3y"),
]


@pytest.mark.parametrize(("seconds", "text"), DURATIONS, ids=[d[1] for d in DURATIONS])
def test_human_duration(seconds: int, text: str) -> None:
    assert tables.human_duration(seconds) == text


CRD = {
    "metadata": {"name": "jobs.batch.example.com"},
    "spec": {
        "group": "batch.example.com",
        "scope": "Namespaced",
        "names": {"plural": "jobs", "kind": "Job", "shortNames": ["ej"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Phase", "type": "string", "jsonPath": ".status.state.phase"},
                    {
                        "name": "Tasks",
                        "type": "integer",
                        "jsonPath": ".spec.tasks[0].replicas",
                        "priority": 1,
                    },
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            },
            {"name": "v0", "served": False, "storage": False},
        ],
    },
}


def test_crd_printer_columns() -> None:
    (resource,) = types_from_crd(CRD)
    assert resource.qualified == "jobs.batch.example.com" and resource.has_status
    created = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = {**OBJ, "metadata": {"name": "x", "creationTimestamp": created}}
    table = tables.build_table(resource, [obj], {"resourceVersion": "5"})
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Phase", "Tasks", "Age"]
    assert [c["priority"] for c in table["columnDefinitions"]] == [0, 0, 1, 0]
    cells = table["rows"][0]["cells"]
    assert cells[:3] == ["x", "Running", 2]
    assert cells[3] in ("30s", "31s")
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_pod_columns() -> None:
    pods = next(t for t in BUILTIN_TYPES if t.plural == "pods")
    pod = {
        "metadata": {"name": "p", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c"}], "nodeName": "n1"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "containerStatuses": [{"ready": True, "restartCount": 2, "state": {"running": {}}}],
        },
    }
    row = tables.build_table(pods, [pod], {}, "Object")["rows"][0]
    assert row["cells"][:4] == ["p", "1/1", "Running", 2]
    assert row["cells"][5:7] == ["10.0.0.1", "n1"]
    assert row["object"] is pod


def test_field_values_and_unsupported_fields() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Pending"},
    }
    values = fieldselect.field_values("", "pods", pod)
    assert values["spec.nodeName"] == "n1" and values["status.phase"] == "Pending"
    assert values["spec.hostNetwork"] == "false", "an unset boolean selects as false"
    node = {"metadata": {"name": "n1"}, "spec": {}}
    assert fieldselect.field_values("", "nodes", node)["spec.unschedulable"] == "false"
    event = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "uid": "u"}}
    assert fieldselect.field_values("", "events", event)["involvedObject.uid"] == "u"
    with pytest.raises(errors.StatusError) as raised:
        fieldselect.parse("", "configmaps", "spec.nodeName=x")
    assert raised.value.message == "field label not supported: spec.nodeName"


def test_continue_tokens_round_trip_and_reject_garbage() -> None:
    token = rest.encode_continue(("ns", "name"), 42)
    assert rest.decode_continue(token) == (("ns", "name"), 42)
    with pytest.raises(errors.StatusError) as raised:
        rest.decode_continue("not-a-token")
    assert raised.value.code == 400


def test_generation_tracks_spec_not_metadata_or_status() -> None:
    before = {"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 1}, "status": {"x": 1}}
    relabelled = {"metadata": {"labels": {"a": "2"}}, "spec": {"replicas": 1}, "status": {"x": 2}}
    rescaled = {"metadata": {}, "spec": {"replicas": 2}}
    assert validation.spec_content(before) == validation.spec_content(relabelled)
    assert validation.spec_content(before) != validation.spec_content(rescaled)
    (crd_type,) = types_from_crd(CRD)
    configmaps = next(t for t in BUILTIN_TYPES if t.plural == "configmaps")
    assert rest.tracks_generation(crd_type) and not rest.tracks_generation(configmaps)


NAMES = [
    ("configmaps", "good-name.v1", True),
    ("configmaps", "Bad_Name", False),
    ("namespaces", "has.dot", False),
    ("services", "1starts-with-digit", False),
    ("pods", "", False),
]


@pytest.mark.parametrize(
    ("plural", "name", "ok"), NAMES, ids=[f"{n[0]}:{n[1] or 'empty'}" for n in NAMES]
)
def test_name_validation(plural: str, name: str, ok: bool) -> None:
    assert (validation.validate_name("", plural, name) == []) is ok


def test_invalid_status_words_causes_like_kube() -> None:
    from shared.fielderrors import FieldError, Path

    causes = [
        FieldError.required(Path.of("spec", "a")).as_cause(),
        FieldError.invalid(Path.of("spec", "b"), 5, "bad").as_cause(),
    ]
    status = errors.invalid("Job", "j", causes, "batch.example.com").to_status()
    assert (
        status["message"] == 'Job.batch.example.com "j" is invalid: '
        "[spec.a: Required value, spec.b: Invalid value: 5: bad]"
    )
    assert status["details"]["causes"][1] == {
        "field": "spec.b",
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 5: bad",
    }


def test_service_and_event_columns() -> None:
    services = next(t for t in BUILTIN_TYPES if t.plural == "services")
    service = {
        "metadata": {"name": "web", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "10.96.0.11",
            "ports": [{"port": 80, "protocol": "TCP"}],
        },
    }
    table = tables.build_table(services, [service], {})
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name",
        "Type",
        "Cluster-IP",
        "External-IP",
        "Port(s)",
    ]
    assert table["rows"][0]["cells"][:5] == ["web", "ClusterIP", "10.96.0.11", "<none>", "80/TCP"]
    events = next(t for t in BUILTIN_TYPES if t.plural == "events" and not t.group)
    event = {
        "metadata": {"name": "e", "creationTimestamp": "2020-01-01T00:00:00Z"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "type": "Normal",
        "reason": "Scheduled",
        "message": "assigned ",
    }
    cells = tables.build_table(events, [event], {})["rows"][0]["cells"]
    assert cells[1:5] == ["Normal", "Scheduled", "pod/p", "assigned"]
