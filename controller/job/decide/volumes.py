"""Job volumes: PVCs named by the user must exist; PVCs from `volumeClaim` are created and owned
by the job, with a generated name written back into the spec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.job.decide.podgen import child_metadata, name_suffix
from shared.models import Job
from shared.wire import WireObject


def generated_claim_name(job: Job, index: int) -> str:
    """`<job>-pvc-<12 [0-9a-z]>`, Volcano's format (GenPVCName), derived from the job UID and the
    volume's position: stable across re-plans, so a reconcile before the name is written back into
    the spec never creates a second claim."""
    return f"{job.name}-pvc-{name_suffix(f'{job.uid}/{index}')}"


@dataclass
class VolumePlan:
    creates: list[WireObject] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # (mountPath, claimName) for pods.
    claims: list[tuple[str, str]] = field(default_factory=list)
    # The full `spec.volumes` to write back when names were generated, else None.
    spec_volumes: list[dict[str, Any]] | None = None
    controlled: dict[str, str] = field(default_factory=dict)


def plan_volumes(
    job: Job,
    raw_volumes: list[dict[str, Any]],
    children: Mapping[tuple[str, str], WireObject],
    missing_pvcs: frozenset[str],
) -> VolumePlan:
    out = VolumePlan()
    written_back = [dict(v) for v in raw_volumes]
    for i, volume in enumerate(job.spec.volumes or []):
        claim = volume.volume_claim_name
        if volume.volume_claim is not None:
            if not claim:
                claim = generated_claim_name(job, i)
                written_back[i]["volumeClaimName"] = claim
                out.spec_volumes = written_back
            if ("PersistentVolumeClaim", claim) not in children:
                out.creates.append(
                    {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "metadata": child_metadata(job, claim),
                        "spec": dict(volume.volume_claim),
                    }
                )
        elif not claim:
            continue
        elif claim in missing_pvcs:
            out.missing.append(claim)
            continue
        out.claims.append((volume.mount_path, claim))
        out.controlled[f"volume-pvc-{claim}"] = claim
    return out
