"""What every process knows about a Job plugin, whatever it does with it.

A `PluginDescriptor` is the declarative half of a plugin: its name, its flags with Volcano's
defaults, the flags that are accepted but do nothing, the plugins it brings along, its
admission rule, and the child objects and planner memory it owns. The webhook, the controller
and the command line loop over the registry (`shared.plugins`); what the controller does with
a plugin (pod and job hooks, the child objects' contents) lives in
`controller.job.decide.plugins`, keyed by the descriptor's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from shared.fielderrors import FieldError, Path
from shared.pluginargs import Flag, PluginArgs, parse

MAX_PORT = 65535


@dataclass(frozen=True)
class ChildObject:
    """An object the plugin creates for a job: its kind and its name, `<job><suffix>`."""

    kind: str
    suffix: str = ""

    def name(self, job_name: str) -> str:
        return f"{job_name}{self.suffix}"


@dataclass(frozen=True)
class PluginCheck:
    """What a plugin's admission rule reads: its arguments as written and as parsed, the job's
    task names, and the field path of the plugin's entry (`spec.plugins[<name>]`)."""

    arguments: Sequence[str]
    parsed: PluginArgs
    task_names: Set[str]
    path: Path


def no_rule(check: PluginCheck) -> list[FieldError]:
    return []


def port_in_range(check: PluginCheck, flag: str) -> list[FieldError]:
    """`--<flag>` (when given and an integer) is a TCP port."""
    value = check.parsed.values.get(flag)
    if isinstance(value, int) and not isinstance(value, bool) and not 1 <= value <= MAX_PORT:
        return [
            FieldError.invalid(
                check.path, check.arguments, f"--{flag} must be between 1 and {MAX_PORT}"
            )
        ]
    return []


def task_exists(check: PluginCheck, flag: str, role: str) -> list[FieldError]:
    """The task `--<flag>` names is one of the job's tasks."""
    task = check.parsed.string(flag)
    if task in check.task_names:
        return []
    return [
        FieldError.invalid(
            check.path,
            check.arguments,
            f'the {role} task "{task}" does not exist in spec.tasks (set it with --{flag}=<task>)',
        )
    ]


@dataclass(frozen=True)
class PluginDescriptor:
    name: str
    # Flags with Volcano's defaults, in the order the help text lists them.
    flags: Mapping[str, Flag] = field(default_factory=dict)
    # Flags accepted for compatibility that change nothing; admission warns about them.
    no_effect: frozenset[str] = frozenset()
    # Plugins the webhook adds when this one is present (in this order) and they are absent.
    implies: tuple[str, ...] = ()
    # The plugin's own admission rule, run after the arguments were parsed; argument problems
    # themselves are warnings (webhook.job.rules.job_warnings).
    validate: Callable[[PluginCheck], list[FieldError]] = no_rule
    # Objects the plugin creates for a job; they go when the job finishes.
    children: tuple[ChildObject, ...] = ()
    # Keys of the planner's memory the plugin writes; forgotten when the job finishes.
    memory_keys: tuple[str, ...] = ()

    def parse(self, arguments: Sequence[str]) -> PluginArgs:
        """The plugin's arguments read the way Go's flag package reads them."""
        return parse(self.name, self.flags, arguments)

    def child(self, kind: str) -> ChildObject:
        """The plugin's child object of `kind` (a descriptor owns at most one per kind)."""
        return next(c for c in self.children if c.kind == kind)
