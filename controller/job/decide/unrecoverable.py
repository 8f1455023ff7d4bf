"""Errors a job cannot recover from by itself: it fails at once with the reason instead of
waiting Pending forever (volcano-sh/volcano#4691). The webhook denies all of these; a job that
reached the API server another way (no webhook, Volcano's) is judged here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from shared import labels, plugins
from shared.models import Job

NAME_TOO_LONG: Final = "NameTooLong"
INVALID_PLUGIN_CONFIG: Final = "InvalidPluginConfig"
# A DNS label (a Service name, a pod's hostname) and a DNS subdomain (a pod name).
DNS_LABEL_MAX: Final = 63
DNS_SUBDOMAIN_MAX: Final = 253


@dataclass(frozen=True)
class Unrecoverable:
    reason: str
    message: str


def _plugin_problem(job: Job) -> Unrecoverable | None:
    for name, args in sorted((job.spec.plugins or {}).items()):
        if plugins.get(name) is None:
            continue  # an unknown plugin is ignored with a Warning Event, as before
        parsed = plugins.parse_arguments(name, list(args or []))
        if parsed.errors:
            first = parsed.errors[0]
            return Unrecoverable(
                INVALID_PLUGIN_CONFIG,
                f"plugin {name}: argument {first.index} ({first.argument!r}): {first.detail}",
            )
        if name == "ray" and job.task(parsed.string("head")) is None:
            return Unrecoverable(
                INVALID_PLUGIN_CONFIG,
                f"plugin ray: the head task {parsed.string('head')!r} does not exist",
            )
    return None


def _name_problem(job: Job) -> Unrecoverable | None:
    hosts = "svc" in (job.spec.plugins or {})
    if hosts and len(job.name) > DNS_LABEL_MAX:
        return Unrecoverable(
            NAME_TOO_LONG,
            f"the svc plugin's Service would be named {job.name!r}, {len(job.name)} characters; "
            f"a Service name has at most {DNS_LABEL_MAX}",
        )
    limit = DNS_LABEL_MAX if hosts else DNS_SUBDOMAIN_MAX
    for task in job.spec.tasks:
        if task.replica_count == 0:
            continue
        longest = labels.pod_name(job.name, str(task.name), task.replica_count - 1)
        if len(longest) > limit:
            what = "a pod's host name (svc plugin)" if hosts else "a pod name"
            return Unrecoverable(
                NAME_TOO_LONG,
                f"pod {longest} is {len(longest)} characters; {what} has at most {limit}",
            )
    return None


def find(job: Job) -> Unrecoverable | None:
    """The first error that keeps the job from ever running, or None."""
    return _name_problem(job) or _plugin_problem(job)
