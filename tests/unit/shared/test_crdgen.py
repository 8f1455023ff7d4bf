"""The CRDs are generated from the models, structural, valid, and equal to the chart's files."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from shared import crdgen

REPO = Path(__file__).resolve().parents[3]
CHART_CRDS = REPO / "charts" / "vcjob" / "files" / "crds"
CRDS = {crd["metadata"]["name"]: crd for crd in crdgen.build_crds()}
# Volcano's CRDs preserve unknown fields nowhere; ours only inside the pod template's free-form
# Kubernetes objects (none today).
PRESERVED: set[tuple[str, str]] = set()
INT_OR_STRING = "x-kubernetes-int-or-string"


def _nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _nodes(child, f"{path}.{name}" if path else name)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _nodes(schema["additionalProperties"], f"{path}[*]")
    if "items" in schema:
        yield from _nodes(schema["items"], f"{path}[*]")


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = CRDS[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_the_eight_crds_are_generated() -> None:
    assert sorted(CRDS) == [
        "commands.bus.volcano.sh",
        "cronjobs.batch.volcano.sh",
        "hypernodes.topology.volcano.sh",
        "jobflows.flow.volcano.sh",
        "jobs.batch.volcano.sh",
        "jobtemplates.flow.volcano.sh",
        "podgroups.scheduling.volcano.sh",
        "queues.scheduling.volcano.sh",
    ]


def test_hypernode_selectors_carry_the_api_servers_rules() -> None:
    members = CRDS["hypernodes.topology.volcano.sh"]["spec"]["versions"][0]["schema"][
        "openAPIV3Schema"
    ]["properties"]["spec"]["properties"]["members"]
    assert members["minItems"] == 1
    selector = members["items"]["properties"]["selector"]
    assert [r["message"] for r in selector["x-kubernetes-validations"]] == [
        "Either ExactMatch or RegexMatch or LabelMatch must be specified",
        "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified",
    ]


@pytest.mark.parametrize("name", sorted(CRDS))
def test_chart_files_match_the_models(name: str) -> None:
    committed = CHART_CRDS / f"{name}.yaml"
    assert committed.is_file(), f"run: vcjob crds --write {CHART_CRDS.relative_to(REPO)}"
    assert yaml.safe_load(committed.read_text()) == CRDS[name], (
        f"{committed} is stale; run: vcjob crds --write {CHART_CRDS.relative_to(REPO)}"
    )


def test_chart_folder_holds_no_other_crds() -> None:
    assert sorted(p.stem for p in CHART_CRDS.glob("*.yaml")) == sorted(CRDS)


@pytest.mark.parametrize("name", sorted(CRDS))
def test_crd_is_a_valid_apiextensions_v1_object(name: str) -> None:
    kubernetes_validate.validate(CRDS[name], "1.31", strict=True)


@pytest.mark.parametrize("name", sorted(CRDS))
def test_schema_is_structural(name: str) -> None:
    for path, node in _nodes(_schema(name)):
        if node.get(INT_OR_STRING):
            # Quantities: controller-gen's int-or-string form, the only place anyOf may appear.
            assert "type" not in node, path
            assert node.get("anyOf", [{"type": "integer"}, {"type": "string"}]) == [
                {"type": "integer"},
                {"type": "string"},
            ], path
            continue
        assert "type" in node, f"{name}: {path or '<root>'} has no type"
        assert not {"$ref", "anyOf", "oneOf", "allOf", "title"} & node.keys(), path
        assert node.get("additionalProperties", {}) is not True, path
        assert not ("properties" in node and "additionalProperties" in node), path


@pytest.mark.parametrize("name", sorted(CRDS))
def test_unknown_fields_are_preserved_only_where_intended(name: str) -> None:
    preserved = {
        (name, path) for path, node in _nodes(_schema(name)) if node.get(crdgen.PRESERVE_KEY)
    }
    assert preserved == {p for p in PRESERVED if p[0] == name}


def test_optional_fields_are_nullable_and_keep_their_constraints() -> None:
    task = _schema("jobs.batch.volcano.sh")["properties"]["spec"]["properties"]["tasks"]["items"]
    assert task["properties"]["replicas"] == {
        "type": "integer",
        "description": "The number of pods of the task.",
        "minimum": 0,
        "nullable": True,
    }
    assert task["properties"]["topologyPolicy"]["enum"] == [
        "none",
        "best-effort",
        "restricted",
        "single-numa-node",
    ]
    spec = _schema("jobs.batch.volcano.sh")["properties"]["spec"]["properties"]
    rules = spec["successPolicy"]["properties"]["rules"]
    assert (rules["minItems"], rules["maxItems"]) == (1, 20)
    assert rules["items"]["properties"]["succeededIndexes"]["maxLength"] == 64 * 1024


def test_job_spec_schema_is_the_job_crds_spec() -> None:
    assert crdgen.job_spec_schema() == _schema("jobs.batch.volcano.sh")["properties"]["spec"]


@pytest.mark.parametrize("name", sorted(CRDS))
def test_every_field_is_described_for_kubectl_explain(name: str) -> None:
    schema = _schema(name)
    assert crdgen.undescribed_fields(schema) == []
    assert schema["description"]
    assert schema["properties"]["spec"]["description"] if "spec" in schema["properties"] else True


def test_an_undescribed_field_is_found() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "description": "A."},
            "b": {"type": "array", "items": {"type": "object", "properties": {"c": {}}}},
            "d": {
                "type": "object",
                "description": "D.",
                "additionalProperties": {"properties": {"e": {"description": " "}}},
            },
        },
    }
    assert crdgen.undescribed_fields(schema) == ["b", "b[*].c", "d{*}.e"]


def test_cronjob_columns_are_kubernetes_cronjobs() -> None:
    version = CRDS["cronjobs.batch.volcano.sh"]["spec"]["versions"][0]
    printed = version["additionalPrinterColumns"]
    columns = [(c["name"], c["jsonPath"], c.get("priority", 0)) for c in printed]
    assert columns == [
        ("SCHEDULE", ".spec.schedule", 0),
        ("TIMEZONE", ".spec.timeZone", 1),
        ("SUSPEND", ".spec.suspend", 0),
        ("ACTIVE", ".status.active[*].name", 0),
        ("LAST SCHEDULE", ".status.lastScheduleTime", 0),
        ("AGE", ".metadata.creationTimestamp", 0),
    ]


def test_job_names_scope_subresource_and_columns() -> None:
    crd = CRDS["jobs.batch.volcano.sh"]
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["shortNames"] == ["vcjob", "vj"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "STATUS",
        "MINAVAILABLE",
        "RUNNINGS",
        "AGE",
        "QUEUE",
        "REASON",
        "SUSPENDED",
    ]
    assert columns["REASON"]["jsonPath"] == ".status.reason"
    assert "priority" not in columns["REASON"]
    assert columns["STATUS"]["jsonPath"] == ".status.state.phase"
    assert columns["MINAVAILABLE"]["jsonPath"] == ".status.minAvailable"
    assert columns["RUNNINGS"]["jsonPath"] == ".status.running"
    assert columns["AGE"]["jsonPath"] == ".metadata.creationTimestamp"
    assert columns["QUEUE"] == {
        "name": "QUEUE",
        "type": "string",
        "jsonPath": ".spec.queue",
        "priority": 1,
    }


@pytest.mark.parametrize(
    ("name", "group", "version", "scope", "short_names", "status"),
    [
        ("commands.bus.volcano.sh", "bus.volcano.sh", "v1alpha1", "Namespaced", None, False),
        (
            "podgroups.scheduling.volcano.sh",
            "scheduling.volcano.sh",
            "v1beta1",
            "Namespaced",
            ["pg", "podgroup-v1beta1"],
            False,
        ),
        (
            "queues.scheduling.volcano.sh",
            "scheduling.volcano.sh",
            "v1beta1",
            "Cluster",
            ["q", "queue-v1beta1"],
            True,
        ),
    ],
)
def test_other_crds(
    name: str, group: str, version: str, scope: str, short_names: list[str] | None, status: bool
) -> None:
    spec = CRDS[name]["spec"]
    assert (spec["group"], spec["versions"][0]["name"], spec["scope"]) == (group, version, scope)
    assert spec["names"].get("shortNames") == short_names
    assert ("subresources" in spec["versions"][0]) is status


def test_render_all_is_a_multi_document_stream_of_every_crd() -> None:
    docs = list(yaml.safe_load_all(crdgen.render_all()))
    assert [d for d in docs if d] == crdgen.build_crds()
    assert "&id" not in crdgen.render_all()


def test_write_all_writes_one_file_per_crd(tmp_path: Path) -> None:
    paths = crdgen.write_all(tmp_path / "out")
    assert [p.name for p in paths] == [f"{name}.yaml" for name in CRDS]
    for path in paths:
        assert yaml.safe_load(path.read_text()) == CRDS[path.stem]


def test_free_form_objects_must_be_typed_or_preserved() -> None:
    with pytest.raises(crdgen.SchemaError, match="free-form object"):
        crdgen._convert({"type": "object", "additionalProperties": True}, {}, "x")


def test_jobflow_and_jobtemplate_names_columns_and_patch_schema() -> None:
    flow = CRDS["jobflows.flow.volcano.sh"]["spec"]
    template = CRDS["jobtemplates.flow.volcano.sh"]["spec"]
    assert flow["names"]["shortNames"] == ["jf"]
    assert template["names"]["shortNames"] == ["jt"]
    (version,) = flow["versions"]
    assert [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("Status", ".status.state.phase"),
        ("Age", ".metadata.creationTimestamp"),
    ]
    assert "additionalPrinterColumns" not in template["versions"][0]
    flows = _schema("jobflows.flow.volcano.sh")["properties"]["spec"]["properties"]["flows"]
    patch = flows["items"]["properties"]["patch"]["properties"]["jobSpec"]
    # A patch is typed like a Job's spec but defaults nothing (maxRetry would overwrite the
    # template's) and requires nothing.
    assert patch["properties"]["tasks"]["items"]["properties"]["replicas"]["type"] == "integer"
    assert "default" not in patch["properties"]["maxRetry"]
    assert "minItems" not in patch["properties"]["tasks"]
    template_spec = _schema("jobtemplates.flow.volcano.sh")["properties"]["spec"]
    assert template_spec == crdgen.job_spec_schema()


def _descriptions(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        if isinstance(node.get("description"), str):
            yield path, node["description"]
        for key, child in node.items():
            yield from _descriptions(child, f"{path}.{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _descriptions(child, f"{path}[{index}]")


@pytest.mark.parametrize("name", sorted(CRDS))
def test_no_description_breaks_a_word_at_a_hyphen(name: str) -> None:
    """A docstring wrapped after a hyphen ("single-numa-\\nnode") reads "single-numa- node" once
    its lines are joined."""
    broken = [
        f"{path}: {match.group(0)!r}"
        for path, text in _descriptions(CRDS[name])
        for match in re.finditer(r"\w+-\s+[a-z]\w*", text)
    ]
    assert broken == []
