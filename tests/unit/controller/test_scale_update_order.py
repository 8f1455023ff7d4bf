"""A scaled Job's plugin objects are written before its PodGroup: the PodGroup's update may meet
a conflict (the scheduler writes its status often), and the hosts ConfigMap must not wait for
the retry (Volcano's jobp suite reads it right after scaling)."""

from __future__ import annotations

from typing import Any

from builders import World, job

from controller.job.decide import effectorder


def test_the_hosts_configmap_is_updated_before_the_podgroup_on_scale_down() -> None:
    world = World(job("j").task("w", 2).plugin("svc").build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    world.job["spec"]["minAvailable"] = 1
    world.job["spec"]["tasks"][0].update(replicas=1, minAvailable=1)
    plan = world.step()
    kinds = [str(o.get("kind")) for o in effectorder.updates_in_order(plan.update)]
    assert "PodGroup" in kinds and "ConfigMap" in kinds
    assert kinds.index("ConfigMap") < kinds.index("PodGroup")
    hosts: dict[str, Any] = next(o for o in plan.update if o["kind"] == "ConfigMap")["data"]
    assert hosts["VC_W_NUM"] == "1"
