"""`spec.plugins`: every plugin is a registered one (`shared.plugins`) and passes its own
rule. Argument problems are warnings (webhook.job.rules.job_warnings): Volcano admits them and its
controller reads the flags up to the first one, as vcjob's does."""

from __future__ import annotations

from shared import plugins as registry
from shared.fielderrors import FieldError, Path
from shared.models.job import JobSpec
from shared.plugins import PluginCheck


def validate_plugins(spec: JobSpec, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    task_names = {t.name for t in spec.tasks if t.name}
    for plugin, arguments in (spec.plugins or {}).items():
        where = path.child("plugins").key(plugin)
        descriptor = registry.get(plugin)
        if descriptor is None:
            errors.append(FieldError.not_supported(where, plugin, registry.names()))
            continue
        parsed = registry.parse_arguments(plugin, arguments)
        errors.extend(descriptor.validate(PluginCheck(arguments, parsed, task_names, where)))
    return errors
