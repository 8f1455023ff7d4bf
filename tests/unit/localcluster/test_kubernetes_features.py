"""What the local cluster turns on per Kubernetes release (`controlplane.kubernetes_features`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localcluster import controlplane
from localcluster.controlplane import Pki, kubernetes_features

GATES = (
    "--feature-gates",
    "GenericWorkload=true,CompositePodGroup=true,TopologyAwareWorkloadScheduling=true,"
    "PodGroupPreemptionPolicy=true",
)
NO_PEER_PROXY = "UnknownVersionInteroperabilityProxy=false"


@pytest.mark.parametrize(
    ("version", "gates", "apiserver_gates", "runtime_config", "cloud_controllers_off"),
    [
        pytest.param(
            "v1.37.2",
            GATES,
            (GATES[0], f"{GATES[1]},{NO_PEER_PROXY}"),
            ("--runtime-config", "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"),
            False,
            id="1.37-serves-the-gang-api",
        ),
        pytest.param(
            "v1.36.3",
            (),
            ("--feature-gates", NO_PEER_PROXY),
            (),
            True,
            id="1.36-no-gang-and-no-peer-proxy",
        ),
        pytest.param("v1.35.4", (), (), (), True, id="1.35-as-before"),
    ],
)
def test_kubernetes_features(
    version: str,
    gates: tuple[str, ...],
    apiserver_gates: tuple[str, ...],
    runtime_config: tuple[str, ...],
    cloud_controllers_off: bool,
) -> None:
    features = kubernetes_features(version)
    assert tuple(features.gate_args()) == gates
    assert tuple(features.apiserver_gate_args()) == apiserver_gates
    assert tuple(features.runtime_config_args()) == runtime_config
    controllers = features.controllers_arg()[1]
    assert ("-cloud-node-lifecycle-controller" in controllers) is cloud_controllers_off
    assert "-node-ipam-controller" in controllers


def test_every_component_gets_the_gates(tmp_path: Path) -> None:
    features = kubernetes_features("v1.37.2")
    pki = Pki(tmp_path)
    kubeconfig = tmp_path / "kubeconfig"
    settings = controlplane.ApiServerSettings(port=1, etcd_port=2, pki=pki, features=features)
    for argv in (
        controlplane.controller_manager_args(kubeconfig, pki, features),
        controlplane.scheduler_args(kubeconfig, features),
    ):
        assert argv[argv.index("--feature-gates") + 1] == GATES[1]
    apiserver = controlplane.apiserver_args(settings)
    assert apiserver[apiserver.index("--feature-gates") + 1] == f"{GATES[1]},{NO_PEER_PROXY}"
    assert "--runtime-config" in controlplane.apiserver_args(settings)
