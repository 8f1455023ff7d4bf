"""The registry of Job plugins: one `PluginDescriptor` per plugin (`shared.plugins.<name>`).

The webhook (names, implied plugins, admission rules, warnings), the controller (which plugins
run, the child objects and memory to clean up) and the command line read the plugin set here
and nowhere else. `register` adds a plugin at run time: every process sees it at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from shared.pluginargs import Flag, FlagKind, PluginArgs
from shared.plugins import env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow
from shared.plugins.descriptor import ChildObject, PluginCheck, PluginDescriptor

__all__ = [
    "ChildObject",
    "Flag",
    "FlagKind",
    "PluginArgs",
    "PluginCheck",
    "PluginDescriptor",
    "all_descriptors",
    "get",
    "names",
    "parse_arguments",
    "register",
    "unregister",
]

# In Volcano's order (its list of supported plugins in admission messages).
_REGISTRY: dict[str, PluginDescriptor] = {
    d.name: d
    for d in (
        env.DESCRIPTOR,
        svc.DESCRIPTOR,
        ssh.DESCRIPTOR,
        tensorflow.DESCRIPTOR,
        pytorch.DESCRIPTOR,
        mpi.DESCRIPTOR,
        ray.DESCRIPTOR,
        hcclrank.DESCRIPTOR,
    )
}


def get(name: str) -> PluginDescriptor | None:
    return _REGISTRY.get(name)


def names() -> tuple[str, ...]:
    """The supported plugins' names, in registration order."""
    return tuple(_REGISTRY)


def all_descriptors() -> Iterator[PluginDescriptor]:
    return iter(tuple(_REGISTRY.values()))


def register(descriptor: PluginDescriptor) -> None:
    """Add a plugin; a name registered twice is a programming error. Register before the
    webhook serves: its memo (`webhook.job.review.MEMO`) keeps answers by spec."""
    if descriptor.name in _REGISTRY:
        raise ValueError(f"plugin {descriptor.name!r} is already registered")
    unknown = [p for p in descriptor.implies if p not in _REGISTRY]
    if unknown:
        raise ValueError(f"plugin {descriptor.name!r} implies unknown plugins {unknown}")
    _REGISTRY[descriptor.name] = descriptor


def unregister(name: str) -> None:
    """Remove a plugin added with `register`."""
    _REGISTRY.pop(name, None)


def parse_arguments(name: str, arguments: Sequence[str]) -> PluginArgs:
    """A registered plugin's arguments, parsed (KeyError for a plugin vcjob does not know)."""
    descriptor = get(name)
    if descriptor is None:
        raise KeyError(name)
    return descriptor.parse(arguments)
