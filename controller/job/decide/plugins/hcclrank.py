"""hcclrank plugin: the `hccl/rankIndex` pod annotation Ascend's HCCL reads."""

from __future__ import annotations

from controller.job.decide.plugins.base import JobPlugin
from shared.models import TaskSpec
from shared.plugins import hcclrank as hcclrank_descriptor
from shared.wire import WireObject

RANK_ANNOTATION = "hccl/rankIndex"


def template_rank(pod: WireObject) -> str | None:
    """A literal `RANK` env value in a regular container, in container order."""
    for container in pod["spec"].get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == "RANK" and "value" in env:
                return str(env["value"])
    return None


class HcclrankPlugin(JobPlugin):
    DESCRIPTOR = hcclrank_descriptor.DESCRIPTOR

    def on_pod(self, pod: WireObject, task: TaskSpec, index: int) -> None:
        annotations = pod["metadata"].setdefault("annotations", {})
        if RANK_ANNOTATION in annotations:
            return
        rank = template_rank(pod)
        if rank is None:
            master_name = self.args.string("master")
            if task.name == master_name:
                rank = str(index)
            elif task.name == self.args.string("worker"):
                master = self.job.task(master_name)
                rank = str((master.replica_count if master is not None else 0) + index)
        if rank is not None:
            annotations[RANK_ANNOTATION] = rank
