"""What Volcano admits in a Job but is likely a mistake: admitted by vcjob too, with an admission
warning that names it (kubectl prints `Warning: …`).

- Plugin arguments that do not parse (an unknown flag such as `svc: --enable-networking`, a bad
  value, a stray word): Volcano's controller, like vcjob's, reads the flags before the first
  problem and leaves the rest at their defaults.
- Flags kept for compatibility that do nothing (`ssh: --no-root`).
- An event repeated in one policy's `events` list (it is read once).
"""

from __future__ import annotations

from typing import Any

from shared import plugins as plugins_registry
from shared.fielderrors import Path


def plugin_warnings(plugins: Any, path: Path) -> list[str]:
    if not isinstance(plugins, dict):
        return []
    warnings: list[str] = []
    for plugin, arguments in plugins.items():
        descriptor = plugins_registry.get(plugin)
        if descriptor is None or not isinstance(arguments, list):
            continue
        if not all(isinstance(a, str) for a in arguments):
            continue
        where = path.key(plugin)
        parsed = plugins_registry.parse_arguments(plugin, arguments)
        first = parsed.errors[0].index if parsed.errors else None
        for problem in parsed.errors:
            ignored = (
                "; the flags from here on keep their defaults"
                if problem.index == first
                else "; ignored"
            )
            warnings.append(
                f"{where.index(problem.index)}: {problem.argument!r}: {problem.detail}{ignored}"
            )
        for i, argument in enumerate(arguments):
            name = argument.lstrip("-").partition("=")[0]
            if argument.startswith("-") and name in descriptor.no_effect:
                warnings.append(
                    f"{where.index(i)}: {argument!r}: --{name} was removed from Volcano's "
                    f"{plugin} plugin and has no effect"
                )
    return warnings


def _policy_list_warnings(policies: Any, path: Path) -> list[str]:
    warnings: list[str] = []
    for j, policy in enumerate(policies if isinstance(policies, list) else []):
        if not isinstance(policy, dict):
            continue
        events: list[tuple[Any, Path]] = []
        if policy.get("event"):
            events.append((policy["event"], path.index(j).child("event")))
        listed = policy.get("events")
        for k, event in enumerate(listed if isinstance(listed, list) else []):
            events.append((event, path.index(j).child("events").index(k)))
        seen: set[Any] = set()
        for event, where in events:
            if not isinstance(event, str):
                continue
            if event in seen:
                warnings.append(
                    f"{where}: {event!r} is repeated in this policy and counts once; "
                    "remove the repetition"
                )
            seen.add(event)
    return warnings


def job_warnings(job: Any) -> list[str]:
    """Warnings for a Job being created or updated (the object as sent)."""
    spec = job.get("spec") if isinstance(job, dict) else None
    if not isinstance(spec, dict):
        return []
    base = Path.of("spec")
    warnings = plugin_warnings(spec.get("plugins"), base.child("plugins"))
    warnings += _policy_list_warnings(spec.get("policies"), base.child("policies"))
    tasks = spec.get("tasks")
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        if isinstance(task, dict):
            warnings += _policy_list_warnings(
                task.get("policies"), base.child("tasks").index(i).child("policies")
            )
    return warnings
