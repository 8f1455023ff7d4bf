"""Object metadata rules shared by every type: names, labels, generation, timestamps."""

from __future__ import annotations

import datetime as dt
import re
import secrets
import string
from typing import Any

from localcluster.apiserver import cron
from shared.fielderrors import FieldError, Path

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)

# Resources whose names are DNS-1123 labels or DNS-1035 labels rather than subdomains.
LABEL_NAMED = frozenset({("", "namespaces")})
DNS1035_NAMED = frozenset({("", "services")})
# Resources whose names only need to be valid path segments (RBAC allows `system:foo`).
PATH_SEGMENT_NAMED = frozenset(
    {
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
    }
)


def now_rfc3339(offset_seconds: int = 0) -> str:
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset_seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_suffix() -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(secrets.choice(alphabet) for _ in range(5))


def random_uid() -> str:
    import uuid

    return str(uuid.uuid4())


def validate_name(group: str, plural: str, name: str) -> list[FieldError]:
    path = Path.of("metadata", "name")
    if not name:
        return [FieldError.required(path, "name or generateName is required")]
    if (group, plural) in PATH_SEGMENT_NAMED:
        if name in (".", "..") or "/" in name or "%" in name:
            return [FieldError.invalid(path, name, "may not contain '/' or '%'")]
        return []
    if (group, plural) in LABEL_NAMED:
        if len(name) > 63:
            return [FieldError.invalid(path, name, "must be no more than 63 characters")]
        return [] if _LABEL.match(name) else [FieldError.invalid(path, name, LABEL_MESSAGE)]
    if (group, plural) in DNS1035_NAMED:
        if len(name) > 63:
            return [FieldError.invalid(path, name, "must be no more than 63 characters")]
        return [] if _DNS1035.match(name) else [FieldError.invalid(path, name, DNS1035_MESSAGE)]
    if len(name) > 253:
        return [FieldError.invalid(path, name, "must be no more than 253 characters")]
    return [] if _SUBDOMAIN.match(name) else [FieldError.invalid(path, name, SUBDOMAIN_MESSAGE)]


def _validate_qualified_key(path: Path, key: str) -> list[FieldError]:
    prefix, _, name = key.rpartition("/")
    problems: list[FieldError] = []
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        problems.append(FieldError.invalid(path, key, "prefix part " + SUBDOMAIN_MESSAGE))
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        problems.append(
            FieldError.invalid(
                path,
                key,
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )
        )
    return problems


def validate_metadata(meta: dict[str, Any]) -> list[FieldError]:
    problems: list[FieldError] = []
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        return [FieldError.invalid(Path.of("metadata", "labels"), labels, "must be a map")]
    for key, value in labels.items():
        path = Path.of("metadata", "labels")
        problems.extend(_validate_qualified_key(path, str(key)))
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            problems.append(
                FieldError.invalid(
                    path,
                    value,
                    "a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                )
            )
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, dict):
        for key, value in annotations.items():
            problems.extend(_validate_qualified_key(Path.of("metadata", "annotations"), str(key)))
            if not isinstance(value, str):
                problems.append(
                    FieldError.invalid(
                        Path.of("metadata", "annotations"), value, "must be a string"
                    )
                )
    return problems


def spec_content(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but metadata and status: what `metadata.generation` tracks."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


ALNUM = string.ascii_lowercase + string.digits


# Built-in kinds whose pod template sits at spec.template.spec.
_TEMPLATED = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
    }
)


def _validate_pod_spec(spec: Any, path: Path) -> list[FieldError]:
    """The fields kube requires of every pod spec (its type checks ran when decoding)."""
    problems: list[FieldError] = []
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not containers:
        return [FieldError.required(path.child("containers"))]
    for index, container in enumerate(containers):
        where = path.child("containers").index(index)
        for field in ("name", "image"):
            if not (isinstance(container, dict) and container.get(field)):
                problems.append(FieldError.required(where.child(field)))
    return problems


JOB_RESTART_POLICIES = ("OnFailure", "Never")


def _validate_selector_matches(
    selector: dict[str, Any], labels: dict[str, Any], path: Path
) -> list[FieldError]:
    """The pod template's labels must satisfy the controller's selector."""
    if all(labels.get(k) == v for k, v in selector.items()):
        return []
    rendered = ",".join(f"{k}={v}" for k, v in labels.items())
    return [
        FieldError.invalid(path, rendered, "`selector` does not match template `labels`"),
    ]


def _validate_job_spec(spec: Any, path: Path) -> list[FieldError]:
    """ValidateJobSpec's common rules: a pod template that does not restart, and counts that
    are not negative."""
    if not isinstance(spec, dict):
        return [FieldError.required(path)]
    problems: list[FieldError] = []
    for field in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            problems.append(
                FieldError.invalid(path.child(field), value, "must be greater than or equal to 0")
            )
    template = spec.get("template") or {}
    template_path = path.child("template", "spec")
    problems.extend(_validate_pod_spec(template.get("spec"), template_path))
    restart = (template.get("spec") or {}).get("restartPolicy")
    if restart not in JOB_RESTART_POLICIES:
        problems.append(
            FieldError.not_supported(
                template_path.child("restartPolicy"), restart, JOB_RESTART_POLICIES
            )
        )
    if spec.get("manualSelector"):
        match_labels = (spec.get("selector") or {}).get("matchLabels") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        problems.extend(
            _validate_selector_matches(
                match_labels, labels, path.child("template", "metadata", "labels")
            )
        )
    return problems


def validate_cron_schedule(schedule: Any, path: Path) -> list[FieldError]:
    """A five-field cron line or an `@`-descriptor, as kube's CronJob validation parses it."""
    if not isinstance(schedule, str) or not schedule.strip():
        return [FieldError.required(path)]
    if schedule.strip().startswith(("TZ=", "CRON_TZ=")):
        return [
            FieldError.invalid(
                path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            )
        ]
    try:
        cron.parse(schedule)
    except ValueError as exc:
        return [FieldError.invalid(path, schedule, str(exc))]
    return []


def _validate_cronjob(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [FieldError.required(Path.of("spec"))]
    problems = validate_cron_schedule(spec.get("schedule"), Path.of("spec", "schedule"))
    policy = spec.get("concurrencyPolicy")
    if policy not in ("Allow", "Forbid", "Replace"):
        problems.append(
            FieldError.not_supported(
                Path.of("spec", "concurrencyPolicy"), policy, ("Allow", "Forbid", "Replace")
            )
        )
    job_spec = (spec.get("jobTemplate") or {}).get("spec")
    problems.extend(_validate_job_spec(job_spec, Path.of("spec", "jobTemplate", "spec")))
    return problems


def _validate_replication_controller(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec") or {}
    problems: list[FieldError] = []
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas < 0:
        problems.append(
            FieldError.invalid(
                Path.of("spec", "replicas"), replicas, "must be greater than or equal to 0"
            )
        )
    selector = spec.get("selector") or {}
    if not selector:
        problems.append(FieldError.required(Path.of("spec", "selector")))
    template = spec.get("template")
    if not isinstance(template, dict):
        return [*problems, FieldError.required(Path.of("spec", "template"))]
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector:
        problems.extend(
            _validate_selector_matches(
                selector, labels, Path.of("spec", "template", "metadata", "labels")
            )
        )
    problems.extend(_validate_pod_spec(template.get("spec"), Path.of("spec", "template", "spec")))
    return problems


def _validate_api_service(obj: dict[str, Any]) -> list[FieldError]:
    """ValidateAPIService: named `<version>.<group>`, with positive priorities."""
    spec = obj.get("spec") or {}
    name = str((obj.get("metadata") or {}).get("name") or "")
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    problems: list[FieldError] = []
    expected = f"{version}.{group}" if group else version
    if name and name != expected:
        problems.append(
            FieldError.invalid(Path.of("metadata", "name"), name, f"must be {expected}")
        )
    if not version:
        problems.append(FieldError.required(Path.of("spec", "version")))
    for field, limit in (("groupPriorityMinimum", 20000), ("versionPriority", 1000)):
        value = spec.get(field)
        if not isinstance(value, int) or value <= 0:
            problems.append(
                FieldError.invalid(Path.of("spec", field), value, "must be positive and non-zero")
            )
        elif field == "groupPriorityMinimum" and value > limit:
            problems.append(
                FieldError.invalid(Path.of("spec", field), value, f"must be less than {limit}")
            )
    return problems


def validate_builtin_spec(group: str, plural: str, obj: dict[str, Any]) -> list[FieldError]:
    if (group, plural) == ("", "pods"):
        return _validate_pod_spec(obj.get("spec"), Path.of("spec"))
    if (group, plural) in _TEMPLATED:
        template = (obj.get("spec") or {}).get("template") or {}
        return _validate_pod_spec(template.get("spec"), Path.of("spec", "template", "spec"))
    if (group, plural) == ("batch", "jobs"):
        return _validate_job_spec(obj.get("spec"), Path.of("spec"))
    if (group, plural) == ("batch", "cronjobs"):
        return _validate_cronjob(obj)
    if (group, plural) == ("", "replicationcontrollers"):
        return _validate_replication_controller(obj)
    if (group, plural) == ("apiregistration.k8s.io", "apiservices"):
        return _validate_api_service(obj)
    return []
