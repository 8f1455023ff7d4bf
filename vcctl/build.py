"""The objects the CLI creates, as pure functions: Commands, the `job run` Job, Queues."""

from __future__ import annotations

import secrets
import string
from typing import Final

from shared import labels, quantity
from shared.models import FINISHED_PHASES, JobPhase, PolicyAction
from shared.wire import WireObject, phase_of

_SUFFIX_ALPHABET: Final = string.ascii_lowercase + string.digits
COMMAND_NAMESPACE: Final = "default"
# The phases in which the controller carries out a Command of the CLI (controller.job.decide.
# state.TRANSITIONS); in any other phase the Command is consumed without effect. A job with no
# phase yet (never reconciled) gets its Command: the controller takes it once it has one.
SUSPENDABLE: Final = frozenset({JobPhase.PENDING, JobPhase.RUNNING, JobPhase.RESTARTING})
SUSPENDED: Final = frozenset({JobPhase.ABORTING, JobPhase.ABORTED})
FINISHING: Final = frozenset({JobPhase.COMPLETING, JobPhase.TERMINATING})


def command_name(target: str, action: str) -> str:
    """`<target>-<action>-<5 random characters>`, as the API server's generateName would make."""
    suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
    return f"{target}-{action.lower()}-{suffix}"


def _controller_ref(obj: WireObject, kind: str, api_version: str) -> WireObject:
    meta = obj["metadata"]
    return {
        "apiVersion": obj.get("apiVersion") or api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def build_command(job: WireObject, action: str) -> WireObject:
    """A Command addressed to (and owned by) a Job: AbortJob, ResumeJob, …"""
    owner = _controller_ref(job, labels.JOB_KIND, labels.BATCH_API_VERSION)
    meta = job["metadata"]
    return {
        "apiVersion": labels.BUS_API_VERSION,
        "kind": labels.COMMAND_KIND,
        "metadata": {
            "name": command_name(meta["name"], action),
            "namespace": meta["namespace"],
            "ownerReferences": [owner],
        },
        "action": action,
        "target": owner,
        "reason": "CommandIssued",
        "message": f"{action} issued by vcjob",
    }


def command_refusal(job: WireObject, action: str) -> str | None:
    """Why a suspend (AbortJob) or resume (ResumeJob) Command could do nothing for the job in its
    current phase; None when the controller will carry it out."""
    meta = job.get("metadata") or {}
    raw = phase_of(job)
    try:
        phase = JobPhase(raw)
    except ValueError:
        return None
    job_ref = f"job {meta.get('namespace')}/{meta.get('name')} is {phase}"
    if action == PolicyAction.ABORT_JOB:
        if phase in SUSPENDABLE:
            return None
        if phase in SUSPENDED:
            return f"{job_ref}: it is already suspended"
    elif action == PolicyAction.RESUME_JOB:
        if phase in SUSPENDED:
            return None
        if phase in SUSPENDABLE:
            return f"{job_ref}: only a suspended (Aborting or Aborted) job can be resumed"
    else:
        return None
    verb = "suspended" if action == PolicyAction.ABORT_JOB else "resumed"
    if phase in FINISHED_PHASES:
        return f"{job_ref}: a finished job cannot be {verb}"
    if phase in FINISHING:
        return f"{job_ref}: a finishing job cannot be {verb}"
    return None


def build_queue_command(queue: WireObject, action: str) -> WireObject:
    """A Command addressed to (and owned by) a Queue, created in `default` as vcctl does."""
    owner = _controller_ref(queue, labels.QUEUE_KIND, labels.SCHEDULING_API_VERSION)
    return {
        "apiVersion": labels.BUS_API_VERSION,
        "kind": labels.COMMAND_KIND,
        "metadata": {
            "name": command_name(queue["metadata"]["name"], action),
            "namespace": COMMAND_NAMESPACE,
            "ownerReferences": [owner],
        },
        "action": action,
        "target": owner,
    }


def parse_resources(text: str, flag: str) -> dict[str, str]:
    """`cpu=1000m,memory=100Mi` as a ResourceList; every quantity must parse."""
    out: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{flag}: expected name=quantity, got {item!r}")
        if quantity.try_parse(value.strip()) is None:
            raise ValueError(f"{flag}: {value.strip()!r} is not a quantity")
        out[key.strip()] = value.strip()
    return out


def build_run_job(
    *,
    name: str,
    namespace: str,
    image: str,
    min_available: int,
    replicas: int,
    requests: dict[str, str],
    limits: dict[str, str],
    scheduler: str,
) -> WireObject:
    """The Job of `vcctl job run -N …`: one unnamed task (the webhook names it `default0`)."""
    return {
        "apiVersion": labels.BATCH_API_VERSION,
        "kind": labels.JOB_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "minAvailable": min_available,
            "schedulerName": scheduler,
            "tasks": [
                {
                    "replicas": replicas,
                    "template": {
                        "metadata": {"name": name, "labels": {"job.volcano.sh": name}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": name,
                                    "image": image,
                                    "imagePullPolicy": "IfNotPresent",
                                    "resources": {"requests": requests, "limits": limits},
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


def build_queue(name: str, weight: int, state: str) -> WireObject:
    return {
        "apiVersion": labels.SCHEDULING_API_VERSION,
        "kind": labels.QUEUE_KIND,
        "metadata": {"name": name},
        "spec": {"weight": weight},
        "status": {"state": state},
    }
