"""What `vcjob local up` prints once the cluster is up: where everything is, and the lines to paste
to use it (PATH for the pinned kubectl and helm and for `vcjob`, KUBECONFIG, kubectl's cache in the
cluster's folder rather than in ~/.kube, first commands)."""

from __future__ import annotations

import shutil
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from localcluster.children import Child
from localcluster.tools import TOOLS_BIN

if TYPE_CHECKING:
    from localcluster.options import UpOptions


def render(options: UpOptions, api_port: int, children: Mapping[str, Child]) -> str:
    kubeconfig = options.kubeconfig.resolve()
    shape = options.node_shape
    lines = [
        "",
        "vcjob local cluster is up",
        f"  API server  https://127.0.0.1:{api_port}",
    ]
    webhook = children.get("webhook")
    lines.append(
        f"  webhook     https://127.0.0.1:{webhook.port}" if webhook else "  webhook     off"
    )
    lines.append("  controller  " + ("running" if "controller" in children else "off"))
    if "simulator" in children:
        gpus = f", {shape.gpu} nvidia.com/gpu" if shape.gpu else ""
        lines.append(
            f"  simulator   {options.nodes} nodes ({shape.cpu} cpu, {shape.memory}{gpus}); "
            f"pods run {options.pod_runtime}"
        )
    else:
        lines.append("  simulator   off")
    lines += [
        f"  logs        {options.logs.resolve()}",
        f"  kubeconfig  {kubeconfig}",
        "",
        *path_export_lines(),
        f"  export KUBECONFIG={kubeconfig}",
        f"  export KUBECACHEDIR={options.kube_cache.resolve()}   # kubectl's cache, not ~/.kube",
        *(
            [
                "  # bare: no CRDs, webhook or controller; install the chart:",
                "  helm install vcjob charts/vcjob -n vcjob-system --create-namespace",
            ]
            if options.bare
            else [
                "  kubectl get nodes,queues",
                "  kubectl create -f examples/demo-job.yaml",
                "  kubectl get vcjob,pods -w",
            ]
        ),
        "",
        "Press Ctrl-C to stop.",
    ]
    return "\n".join(lines)


def path_export_lines() -> list[str]:
    """The PATH line to print unless PATH already finds the pinned kubectl and helm (`make
    cluster`, `make tools`) and this installation's `vcjob` and `kubectl-vcjob` (what `kubectl
    vcjob` runs): one line that puts both folders first."""
    wanted: dict[str, Path] = {}
    if (TOOLS_BIN / "kubectl").exists():
        wanted["kubectl"] = TOOLS_BIN / "kubectl"
    scripts = Path(sysconfig.get_path("scripts"))
    for command in ("vcjob", "kubectl-vcjob"):
        if (scripts / command).exists():
            wanted[command] = scripts / command
    if all(
        (found := shutil.which(command)) is not None and Path(found).resolve() == path.resolve()
        for command, path in wanted.items()
    ):
        return []
    folders = list(dict.fromkeys(str(path.parent) for path in wanted.values()))
    return [f"  export PATH={':'.join(folders)}:$PATH   # kubectl, helm, vcjob, kubectl vcjob"]
