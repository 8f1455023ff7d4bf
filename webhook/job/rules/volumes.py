"""`spec.volumes`: a mount path each, unique, and either an existing claim or a new one whose
spec fits Kubernetes' PersistentVolumeClaimSpec."""

from __future__ import annotations

from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec
from webhook.job import podtemplate
from webhook.job.reading import Readable, everything
from webhook.job.rules.names import subdomain_errors


def validate_volumes(
    spec: JobSpec, path: Path, readable: Readable = everything
) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, volume in enumerate(spec.volumes or []):
        where = path.child("volumes").index(i)
        mount = volume.mount_path
        if readable(where.child("mountPath")):
            if not mount:
                errors.append(
                    FieldError.required(where.child("mountPath"), "mountPath is required")
                )
            elif ":" in mount:
                errors.append(
                    FieldError.invalid(where.child("mountPath"), mount, "must not contain ':'")
                )
            elif mount in seen:
                errors.append(
                    FieldError.duplicate(
                        where.child("mountPath"), mount, f"duplicated mountPath: {mount}"
                    )
                )
            seen.add(mount)
        claim_name, claim = volume.volume_claim_name, volume.volume_claim
        name_path = where.child("volumeClaimName")
        if not claim_name and claim is None:
            if readable(name_path) and readable(where.child("volumeClaim")):
                errors.append(
                    FieldError.required(
                        name_path, "either VolumeClaim or VolumeClaimName must be specified"
                    )
                )
        elif claim_name and claim is not None:
            errors.append(
                FieldError.forbidden(
                    name_path,
                    "must not be set together with volumeClaim: set only volumeClaimName to use "
                    "an existing PVC, or only volumeClaim to create a new one",
                )
            )
        elif claim_name:
            errors.extend(subdomain_errors(name_path, claim_name))
        if claim is not None and readable(where.child("volumeClaim")):
            errors.extend(podtemplate.claim_schema_errors(claim, where.child("volumeClaim")))
    return errors
