"""vcctl's JobFlow and JobTemplate tables, `describe`, kubectl's ages and the documents of a
manifest file."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from vcctl.manifests import flow_documents, with_namespace
from vcctl.render import human_duration, since
from vcctl.render_flows import describe, described, jobflow_table, jobtemplate_table

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)


def obj(kind: str, name: str, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    created = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
        **extra,
    }


def flow(name: str, namespace: str = "default", phase: str | None = "Running") -> dict[str, Any]:
    status = {"state": {"phase": phase}} if phase else {}
    return obj("JobFlow", name, namespace, spec={"flows": [{"name": "a"}]}, status=status)


def test_jobflow_table_pads_each_column_to_its_longest_cell_plus_four() -> None:
    text = jobflow_table([flow("diamond", "team-a"), flow("x", phase=None)], NOW)
    assert text.splitlines() == [
        "Name       Namespace    Phase      Age",
        "diamond    team-a       Running    5m",
        "x          default                 5m",
    ]


def test_jobtemplate_table_has_name_and_namespace_only() -> None:
    text = jobtemplate_table([obj("JobTemplate", "a-very-long-template", "ml")])
    assert text.splitlines() == [
        "Name                    Namespace",
        "a-very-long-template    ml",
    ]


def test_empty_tables_and_describe_say_no_resources_found() -> None:
    assert jobflow_table([], NOW) == "No resources found"
    assert jobtemplate_table([]) == "No resources found"
    assert describe([], "JobFlow", "yaml") == "No resources found"


def test_describe_drops_managed_fields_and_fills_in_kind() -> None:
    listed = flow("diamond")
    del listed["apiVersion"], listed["kind"]
    listed["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    shown = described(listed, "JobFlow")
    assert (shown["apiVersion"], shown["kind"]) == ("flow.volcano.sh/v1alpha1", "JobFlow")
    assert "managedFields" not in shown["metadata"]
    assert listed["metadata"]["managedFields"] == [{"manager": "kubectl"}]  # a copy is changed


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_describe_separates_objects_with_two_empty_lines(output: str) -> None:
    text = describe([flow("a"), flow("b")], "JobFlow", output)
    first, second = text.split("\n\n\n")
    load = json.loads if output == "json" else yaml.safe_load
    assert load(first)["metadata"]["name"] == "a"
    assert load(second)["metadata"]["name"] == "b"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (5 * 60 + 3, "5m3s"),
        (47 * 60 + 59, "47m"),
        (3 * 3600 + 20 * 60, "3h20m"),
        (5 * 3600, "5h"),
        (30 * 3600 + 59 * 60, "30h"),
        (4 * 86400 + 2 * 3600, "4d2h"),
        (7 * 86400, "7d"),
        (200 * 86400, "200d"),
        (3 * 365 * 86400 + 14 * 86400, "3y14d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration_is_kubectls_age(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_since_an_absent_stamp_is_unknown() -> None:
    assert since(None, NOW) == "<unknown>"
    assert since("not a time", NOW) == "<unknown>"
    assert since("2026-03-04T11:59:30Z", NOW) == "30s"


MANIFEST = """\
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: a, namespace: team}
spec: {flows: [{name: x}]}
---
# a comment only: an empty document
---
metadata: {name: b}
spec: {flows: []}
"""


def test_flow_documents_reads_every_document_and_fills_in_kind() -> None:
    documents = flow_documents(MANIFEST, "JobFlow", "f.yaml")
    assert [(d["kind"], d["apiVersion"], d["metadata"]["name"]) for d in documents] == [
        ("JobFlow", "flow.volcano.sh/v1alpha1", "a"),
        ("JobFlow", "flow.volcano.sh/v1alpha1", "b"),
    ]


def test_a_separator_inside_a_string_does_not_cut_a_document() -> None:
    text = 'metadata: {name: a, annotations: {note: "x --- y"}}\n'
    (document,) = flow_documents(text, "JobTemplate", "f.yaml")
    assert document["metadata"]["annotations"]["note"] == "x --- y"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: JobTemplate\nmetadata: {name: a}\n", "f.yaml: document 1 is a JobTemplate, not a"),
        ("apiVersion: batch.volcano.sh/v1alpha1\n", "document 1 has apiVersion batch.volcano.sh"),
        ("metadata: {name: a}\n---\n- b\n", "f.yaml: document 2 is not a JobFlow (not a mapping)"),
        ("metadata: [a]\n", "document 1: metadata is not a mapping"),
        ("metadata: {name: a\n", "f.yaml is not valid YAML: "),
        ("---\n---\n", "f.yaml holds no JobFlow"),
    ],
)
def test_flow_documents_refuses_what_is_not_the_kind(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        flow_documents(text, "JobFlow", "f.yaml")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_with_namespace_keeps_the_documents_own_else_the_default() -> None:
    own = {"metadata": {"name": "a", "namespace": "team"}}
    assert with_namespace(own, "ctx")[:2] == ("team", "a")
    namespace, name, placed = with_namespace({"metadata": {"name": "b"}}, "ctx")
    assert (namespace, name, placed["metadata"]["namespace"]) == ("ctx", "b", "ctx")


def test_documents_to_delete_must_be_named() -> None:
    text = "metadata: {name: a}\n---\nmetadata: {generateName: b-}\n"
    assert len(flow_documents(text, "JobFlow", "f.yaml")) == 2
    with pytest.raises(ValueError, match=r"^f\.yaml: document 2 has no metadata\.name$"):
        flow_documents(text, "JobFlow", "f.yaml", named=True)
