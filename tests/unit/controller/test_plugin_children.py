"""What the plugins' descriptors own goes when the job finishes: their children (only those the
job controls) and their planner memory."""

from __future__ import annotations

from typing import Any

from tests.unit.controller.builders import UID, job, plan_for

Wire = dict[str, Any]


def child(kind: str, name: str, owner: str = UID) -> Wire:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{kind}-{name}",
            "ownerReferences": [{"kind": "Job", "name": "j", "uid": owner, "controller": True}],
        },
    }


def test_a_finished_job_deletes_every_plugin_child_it_controls() -> None:
    finished = (
        job("j")
        .task("head", 1)
        .task("worker", 1)
        .plugin("svc")
        .plugin("ssh")
        .plugin("ray")
        .phase("Failed")
        .build()
    )
    children = {
        (o["kind"], o["metadata"]["name"]): o
        for o in (
            child("ConfigMap", "j-svc"),
            child("Service", "j"),
            child("NetworkPolicy", "j"),
            child("Secret", "j-ssh"),
            # ray's head Service goes too, as Volcano's ray plugin deletes it (OnJobDelete).
            child("Service", "j-head-svc"),
            # Not the job's: kept.
            child("Secret", "j-svc", owner="someone-else"),
            child("ConfigMap", "unrelated"),
        )
    }
    memory = {"sshKey": {"private": "k", "public": "p"}}
    plan = plan_for(finished, [], children=children, memory=memory)
    deleted = sorted((r.kind, r.name) for r in plan.delete if r.kind != "PodGroup")
    assert deleted == [
        ("ConfigMap", "j-svc"),
        ("NetworkPolicy", "j"),
        ("Secret", "j-ssh"),
        ("Service", "j"),
        ("Service", "j-head-svc"),
    ]
    assert "sshKey" not in plan.memory
