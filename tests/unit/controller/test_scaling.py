"""Scaling in place (controller.md "Scaling")."""

from __future__ import annotations

from builders import World, job

from shared import labels


def running_world(replicas: int = 3, **plugins: list[str]) -> World:
    builder = job("j").task("w", replicas)
    for name, args in plugins.items():
        builder.plugin(name, *args)
    world = World(builder.build())
    world.step()
    world.admit("Running")
    world.step()
    world.set_all("Running")
    world.step()
    assert world.phase == "Running"
    return world


def scale(world: World, replicas: int, min_available: int | None = None) -> None:
    world.job["spec"]["tasks"][0]["replicas"] = replicas
    world.job["spec"]["tasks"][0]["minAvailable"] = min(
        replicas, world.job["spec"]["tasks"][0]["minAvailable"]
    )
    world.job["spec"]["minAvailable"] = (
        min_available
        if min_available is not None
        else world.job["spec"]["tasks"][0]["minAvailable"]
    )
    world.job["metadata"]["generation"] += 1


def test_scale_down_deletes_the_highest_indexes_first() -> None:
    world = running_world(4)
    scale(world, 2)
    plan = world.step()
    assert [r.name for r in plan.delete if r.kind == "Pod"] == ["j-w-3", "j-w-2"]
    assert sorted(world.pods) == ["j-w-0", "j-w-1"]
    assert world.pod_group is not None
    assert world.pod_group["spec"]["minMember"] == 2
    assert world.pod_group["spec"]["minTaskMember"] == {"w": 2}
    assert world.phase == "Running"


def test_scale_up_creates_missing_indexes_and_updates_the_hosts() -> None:
    world = running_world(2, svc=[])
    scale(world, 4, min_available=2)
    plan = world.step()
    assert sorted(o["metadata"]["name"] for o in plan.create if o["kind"] == "Pod") == [
        "j-w-2",
        "j-w-3",
    ]
    cm = world.children[("ConfigMap", "j-svc")]
    assert cm["data"]["VC_W_NUM"] == "4"
    assert world.pods["j-w-3"]["metadata"]["annotations"][labels.JOB_VERSION_KEY] == "0"


def test_scaling_to_zero_keeps_the_phase() -> None:
    world = running_world(2)
    scale(world, 0, min_available=0)
    world.step()
    world.step()
    assert world.pods == {}
    assert world.phase == "Running"


def test_scale_raises_job_updated_for_policies() -> None:
    world = running_world(2)
    world.job["spec"]["policies"] = [{"event": "JobUpdated", "action": "RestartJob"}]
    scale(world, 3, min_available=2)
    world.step()
    assert world.phase == "Restarting"
