import pytest

from controller.job.decide import effectorder, kueue, nativegang
from shared import labels


def obj(api_version: str, kind: str, name: str = "x") -> dict[str, object]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}


KUEUE_WORKLOAD = obj(kueue.API_VERSION, "Workload")
PODGROUP = obj(labels.SCHEDULING_API_VERSION, labels.PODGROUP_KIND)
PVC = obj("v1", "PersistentVolumeClaim")
NATIVE_WORKLOAD = obj(nativegang.API_VERSION, nativegang.WORKLOAD_KIND)
NATIVE_PODGROUP = obj(nativegang.API_VERSION, nativegang.PODGROUP_KIND)
COMPOSITE = obj(nativegang.COMPOSITE_API_VERSION, nativegang.COMPOSITE_KIND)
CONFIGMAP = obj("v1", "ConfigMap")
SERVICE = obj("v1", "Service")
NETWORK_POLICY = obj("networking.k8s.io/v1", "NetworkPolicy")
POD = obj("v1", "Pod")


@pytest.mark.parametrize(
    ("planned", "written"),
    [
        ([POD, PODGROUP], [PODGROUP, POD]),
        ([PVC, PODGROUP, KUEUE_WORKLOAD], [KUEUE_WORKLOAD, PODGROUP, PVC]),
        ([POD, CONFIGMAP, NATIVE_WORKLOAD], [NATIVE_WORKLOAD, CONFIGMAP, POD]),
        ([SERVICE, NETWORK_POLICY, PVC], [PVC, SERVICE, NETWORK_POLICY]),
        # one rank keeps the plan's order: a gang's Workload before its PodGroup
        (
            [NATIVE_WORKLOAD, COMPOSITE, NATIVE_PODGROUP, PODGROUP],
            [PODGROUP, NATIVE_WORKLOAD, COMPOSITE, NATIVE_PODGROUP],
        ),
        ([], []),
    ],
)
def test_creates_are_written_by_kind(
    planned: list[dict[str, object]], written: list[dict[str, object]]
) -> None:
    assert effectorder.creates_in_order(planned) == written


def test_pods_keep_their_planned_order() -> None:
    pods = [obj("v1", "Pod", f"p-{i}") for i in (2, 0, 1)]
    assert effectorder.creates_in_order([*pods, PODGROUP]) == [PODGROUP, *pods]


@pytest.mark.parametrize(
    ("planned", "written"),
    [
        ([PODGROUP, CONFIGMAP], [CONFIGMAP, PODGROUP]),
        ([PODGROUP, NATIVE_PODGROUP, SERVICE], [SERVICE, PODGROUP, NATIVE_PODGROUP]),
        ([CONFIGMAP, SERVICE], [CONFIGMAP, SERVICE]),
    ],
)
def test_plugin_objects_are_updated_before_the_podgroup(
    planned: list[dict[str, object]], written: list[dict[str, object]]
) -> None:
    assert effectorder.updates_in_order(planned) == written
