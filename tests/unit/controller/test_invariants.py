"""Property test: whatever happens to the pods and whatever commands arrive, the planner keeps
its invariants."""

from __future__ import annotations

from datetime import timedelta

from builders import World, created_pods, job
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TERMINAL = {"Completed", "Failed", "Terminated"}

step_kinds = st.one_of(
    st.tuples(
        st.just("pod"),
        st.integers(0, 2),
        st.sampled_from(["Running", "Succeeded", "Failed", "Pending"]),
    ),
    st.tuples(st.just("evict"), st.integers(0, 2), st.just("")),
    st.tuples(
        st.just("command"),
        st.just(0),
        st.sampled_from(["AbortJob", "ResumeJob", "RestartJob", "TerminateJob", "CompleteJob"]),
    ),
    st.tuples(st.just("admit"), st.just(0), st.just("")),
    st.tuples(st.just("wait"), st.just(0), st.just("")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step_kinds, min_size=1, max_size=25), st.integers(0, 3))
def test_planner_invariants(steps: list[tuple[str, int, str]], max_retry: int) -> None:
    world = World(
        job("j")
        .task("w", 3, min_available=2)
        .min_available(2)
        .max_retry(max_retry)
        .policy(event="PodFailed", action="RestartJob")
        .policy(event="PodEvicted", action="RestartPod", timeout="10s")
        .build()
    )
    world.step()
    last_version = 0
    last_retry = 0
    finished_phase: str | None = None
    for serial, (kind, index, arg) in enumerate(steps):
        name = f"j-w-{index}"
        if kind == "pod" and name in world.pods:
            world.set_pod(name, arg, exit_code=1 if arg == "Failed" else None)
        elif kind == "evict" and name in world.pods:
            world.evict(name)
        elif kind == "command":
            world.command(arg, name=f"c{serial}")
        elif kind == "admit" and world.pod_group is not None:
            world.admit()
        plan = world.step(timedelta(seconds=6))
        status = world.status
        phase = status["state"]["phase"]
        assert status["retryCount"] <= max(max_retry, 1)
        assert status["version"] >= last_version
        assert status["retryCount"] - last_retry in (0, 1), "one retry per restart"
        last_retry = status["retryCount"]
        last_version = status["version"]
        assert status["conditions"][-1]["status"] == phase
        counted = sum(status[k] for k in ("pending", "running", "succeeded", "failed", "unknown"))
        assert counted == len(world.pods), "counters describe the pods that exist"
        if finished_phase is not None:
            assert phase == finished_phase, "terminal phases never change"
            assert created_pods(plan) == []
            # The terminal phase is written first; the reconcile after it cleans up.
            assert world.pod_group is None
        if phase in TERMINAL:
            finished_phase = phase
            assert all(p["status"]["phase"] in ("Succeeded", "Failed") for p in world.pods.values())
