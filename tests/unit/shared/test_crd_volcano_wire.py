"""The generated CRDs are a field-for-field superset of Volcano's current schemas.

Each row is a field of Volcano's CRDs (config/crd/volcano/bases at ed72c7c8) with its type and,
where the CRD sets one, its default or bounds; the generated schema must carry the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from shared import crdgen

CRDS = {crd["metadata"]["name"]: crd for crd in crdgen.build_crds()}
JOB, COMMAND, PODGROUP, QUEUE = (
    "jobs.batch.volcano.sh",
    "commands.bus.volcano.sh",
    "podgroups.scheduling.volcano.sh",
    "queues.scheduling.volcano.sh",
)
QUANTITY = "quantity"
NT = {"mode": "string", "highestTierAllowed": "integer", "highestTierName": "string"}

# (crd, dotted path with [] for list items and {} for map values, type, extra keywords)
FIELDS: list[tuple[str, str, str, dict[str, Any]]] = [
    (JOB, "spec.schedulerName", "string", {}),
    (JOB, "spec.minAvailable", "integer", {}),
    (JOB, "spec.minSuccess", "integer", {"minimum": 1}),
    (JOB, "spec.queue", "string", {}),
    (JOB, "spec.maxRetry", "integer", {}),
    (JOB, "spec.ttlSecondsAfterFinished", "integer", {}),
    (JOB, "spec.priorityClassName", "string", {}),
    (JOB, "spec.plugins{}[]", "string", {}),
    (JOB, "spec.runningEstimate", "string", {}),
    (JOB, "spec.networkTopology.mode", "string", {"default": "hard", "enum": ["hard", "soft"]}),
    (JOB, "spec.networkTopology.highestTierAllowed", "integer", {"minimum": 0}),
    (JOB, "spec.networkTopology.highestTierName", "string", {"maxLength": 253}),
    (JOB, "spec.policies[].action", "string", {}),
    (JOB, "spec.policies[].event", "string", {}),
    (JOB, "spec.policies[].events[]", "string", {}),
    (JOB, "spec.policies[].exitCode", "integer", {}),
    (JOB, "spec.policies[].timeout", "string", {}),
    (JOB, "spec.volumes[].mountPath", "string", {}),
    (JOB, "spec.volumes[].volumeClaimName", "string", {}),
    (JOB, "spec.volumes[].volumeClaim.accessModes[]", "string", {}),
    (JOB, "spec.volumes[].volumeClaim.resources.requests{}", QUANTITY, {}),
    (JOB, "spec.volumes[].volumeClaim.storageClassName", "string", {}),
    (JOB, "spec.tasks[].name", "string", {}),
    (JOB, "spec.tasks[].replicas", "integer", {}),
    (JOB, "spec.tasks[].minAvailable", "integer", {}),
    (JOB, "spec.tasks[].maxRetry", "integer", {}),
    (JOB, "spec.tasks[].dependsOn.name[]", "string", {}),
    (JOB, "spec.tasks[].dependsOn.iteration", "string", {}),
    (JOB, "spec.tasks[].policies[].action", "string", {}),
    (
        JOB,
        "spec.tasks[].topologyPolicy",
        "string",
        {"enum": ["none", "best-effort", "restricted", "single-numa-node"]},
    ),
    (JOB, "spec.tasks[].partitionPolicy.totalPartitions", "integer", {"minimum": 1}),
    (JOB, "spec.tasks[].partitionPolicy.partitionSize", "integer", {"minimum": 1}),
    (JOB, "spec.tasks[].partitionPolicy.minPartitions", "integer", {"default": 0, "minimum": 0}),
    (JOB, "spec.tasks[].partitionPolicy.networkTopology.mode", "string", {"default": "hard"}),
    (JOB, "spec.tasks[].partitionPolicy.networkTopology.highestTierAllowed", "integer", {}),
    (JOB, "spec.tasks[].partitionPolicy.networkTopology.highestTierName", "string", {}),
    (JOB, "spec.tasks[].template.metadata.labels{}", "string", {}),
    (JOB, "spec.tasks[].template.metadata.annotations{}", "string", {}),
    (JOB, "spec.tasks[].template.metadata.name", "string", {}),
    (JOB, "spec.tasks[].template.spec.containers[].name", "string", {}),
    (JOB, "spec.tasks[].template.spec.containers[].imagePullPolicy", "string", {}),
    (JOB, "spec.tasks[].template.spec.containers[].resources.limits{}", QUANTITY, {}),
    (JOB, "spec.tasks[].template.spec.containers[].ports[].containerPort", "integer", {}),
    (JOB, "spec.tasks[].template.spec.initContainers[].image", "string", {}),
    (JOB, "spec.tasks[].template.spec.priorityClassName", "string", {}),
    (JOB, "spec.tasks[].template.spec.restartPolicy", "string", {}),
    (JOB, "spec.tasks[].template.spec.volumes[].emptyDir.sizeLimit", QUANTITY, {}),
    (JOB, "status.state.phase", "string", {}),
    (JOB, "status.state.reason", "string", {}),
    (JOB, "status.minAvailable", "integer", {}),
    (JOB, "status.retryCount", "integer", {}),
    (JOB, "status.runningDuration", "string", {}),
    (JOB, "status.controlledResources{}", "string", {}),
    (JOB, "status.conditions[].status", "string", {}),
    (COMMAND, "action", "string", {}),
    (COMMAND, "target.apiVersion", "string", {}),
    (COMMAND, "target.kind", "string", {}),
    (COMMAND, "target.name", "string", {}),
    (COMMAND, "target.uid", "string", {}),
    (COMMAND, "target.controller", "boolean", {}),
    (COMMAND, "target.blockOwnerDeletion", "boolean", {}),
    (COMMAND, "reason", "string", {}),
    (COMMAND, "message", "string", {}),
    (PODGROUP, "spec.minMember", "integer", {"minimum": 0}),
    (PODGROUP, "spec.minTaskMember{}", "integer", {}),
    (PODGROUP, "spec.queue", "string", {"default": "default", "maxLength": 253}),
    (PODGROUP, "spec.priorityClassName", "string", {"maxLength": 253}),
    (PODGROUP, "spec.minResources{}", QUANTITY, {}),
    *[(PODGROUP, f"spec.networkTopology.{k}", v, {}) for k, v in NT.items()],
    (PODGROUP, "spec.networkTopology.mode", "string", {"default": "hard"}),
    (PODGROUP, "spec.subGroupPolicy[].name", "string", {"maxLength": 253}),
    (PODGROUP, "spec.subGroupPolicy[].subGroupSize", "integer", {"default": 1, "minimum": 1}),
    (PODGROUP, "spec.subGroupPolicy[].minSubGroups", "integer", {"default": 0, "minimum": 0}),
    (PODGROUP, "spec.subGroupPolicy[].labelSelector.matchLabels{}", "string", {}),
    (PODGROUP, "spec.subGroupPolicy[].labelSelector.matchExpressions[].key", "string", {}),
    (PODGROUP, "spec.subGroupPolicy[].matchLabelKeys[]", "string", {}),
    *[(PODGROUP, f"spec.subGroupPolicy[].networkTopology.{k}", v, {}) for k, v in NT.items()],
    (
        PODGROUP,
        "status.phase",
        "string",
        {"enum": ["Pending", "Running", "Unknown", "Inqueue", "Completed"]},
    ),
    *[
        (PODGROUP, f"status.conditions[].{k}", "string", {})
        for k in ("type", "status", "transitionID", "lastTransitionTime", "reason", "message")
    ],
    *[(PODGROUP, f"status.{k}", "integer", {"minimum": 0}) for k in ("running", "succeeded")],
    (PODGROUP, "status.failed", "integer", {"minimum": 0}),
    (QUEUE, "spec.weight", "integer", {"default": 1, "minimum": 1, "maximum": 65535}),
    (QUEUE, "spec.capability{}", QUANTITY, {}),
    (QUEUE, "spec.deserved{}", QUANTITY, {}),
    (QUEUE, "spec.guarantee.resource{}", QUANTITY, {}),
    (QUEUE, "spec.reclaimable", "boolean", {}),
    (QUEUE, "spec.extendClusters[].name", "string", {}),
    (QUEUE, "spec.extendClusters[].weight", "integer", {}),
    (QUEUE, "spec.extendClusters[].capacity{}", QUANTITY, {}),
    *[
        (QUEUE, f"spec.affinity.{group}.{when}[]", "string", {})
        for group in ("nodeGroupAffinity", "nodeGroupAntiAffinity")
        for when in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        )
    ],
    (QUEUE, "spec.type", "string", {"maxLength": 253}),
    (QUEUE, "spec.parent", "string", {"maxLength": 253}),
    (QUEUE, "spec.priority", "integer", {"minimum": 0}),
    (
        QUEUE,
        "spec.dequeueStrategy",
        "string",
        {"default": "traverse", "enum": ["fifo", "traverse"]},
    ),
    (QUEUE, "status.state", "string", {"enum": ["Open", "Closed", "Closing", "Unknown"]}),
    *[
        (QUEUE, f"status.{k}", "integer", {"minimum": 0})
        for k in ("pending", "running", "inqueue", "unknown", "completed")
    ],
    (QUEUE, "status.reservation.nodes[]", "string", {}),
    (QUEUE, "status.reservation.resource{}", QUANTITY, {}),
    (QUEUE, "status.allocated{}", QUANTITY, {}),
]


def _node(crd: str, path: str) -> dict[str, Any]:
    node: dict[str, Any] = CRDS[crd]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for part in path.replace("[]", ".[]").replace("{}", ".{}").split("."):
        if part == "[]":
            node = node["items"]
        elif part == "{}":
            node = node["additionalProperties"]
        else:
            assert "properties" in node, f"{crd} {path}: no properties above {part!r}"
            assert part in node["properties"], f"{crd} {path}: {part!r} is missing"
            node = node["properties"][part]
    return node


@pytest.mark.parametrize(("crd", "path", "type_", "extra"), FIELDS, ids=lambda v: str(v))
def test_field_matches_volcano(crd: str, path: str, type_: str, extra: dict[str, Any]) -> None:
    node = _node(crd, path)
    if type_ == QUANTITY:
        assert node.get("x-kubernetes-int-or-string") is True
    else:
        assert node.get("type") == type_
    for key, value in extra.items():
        assert node.get(key) == value, f"{crd} {path}: {key}"


@pytest.mark.parametrize(
    ("crd", "subresources"),
    [(JOB, {"status": {}}), (COMMAND, None), (PODGROUP, None), (QUEUE, {"status": {}})],
)
def test_subresources_match_volcano(crd: str, subresources: dict[str, Any] | None) -> None:
    assert CRDS[crd]["spec"]["versions"][0].get("subresources") == subresources


def test_required_fields_match_volcano() -> None:
    partition = _node(JOB, "spec.tasks[].partitionPolicy")
    assert partition["required"] == ["totalPartitions", "partitionSize"]
    assert _node(JOB, "spec.tasks[].template.spec")["required"] == ["containers"]
    assert _node(COMMAND, "target")["required"] == ["apiVersion", "kind", "name", "uid"]


def test_tasks_need_at_least_one_item_and_events_include_the_internal_ones() -> None:
    assert _node(JOB, "spec.tasks")["minItems"] == 1
    assert set(_node(JOB, "spec.policies[].event")["enum"]) == {
        "*",
        "PodFailed",
        "PodEvicted",
        "PodPending",
        "Unknown",
        "TaskCompleted",
        "TaskFailed",
        "JobUpdated",
        "PodRunning",
        "OutOfSync",
        "CommandIssued",
    }
    assert _node(JOB, "status.conditions[]")["required"] == ["status"]


def test_embedded_template_metadata_keeps_only_five_fields() -> None:
    meta = _node(JOB, "spec.tasks[].template.metadata")
    assert sorted(meta["properties"]) == [
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    ]


def test_no_unknown_fields_are_preserved_anywhere() -> None:
    for crd in CRDS.values():
        assert "x-kubernetes-preserve-unknown-fields" not in crdgen.render(crd)


def test_restart_partition_is_a_valid_action_in_the_crd() -> None:
    assert "enum" not in _node(JOB, "spec.tasks[].policies[].action")
    assert "enum" not in _node(COMMAND, "action")
