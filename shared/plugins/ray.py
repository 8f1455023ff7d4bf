"""ray: the head runs the GCS, dashboard and client server behind the Service
`<job>-head-svc`; the workers join it."""

from __future__ import annotations

from shared.fielderrors import FieldError
from shared.pluginargs import Flag, FlagKind
from shared.plugins.descriptor import (
    ChildObject,
    PluginCheck,
    PluginDescriptor,
    port_in_range,
    task_exists,
)


def validate(check: PluginCheck) -> list[FieldError]:
    # A missing head task: Volcano admits it and then fails every sync of the job.
    return (
        port_in_range(check, "port")
        + task_exists(check, "head", "ray head")
        + port_in_range(check, "dashboardPort")
        + port_in_range(check, "clientPort")
    )


DESCRIPTOR = PluginDescriptor(
    name="ray",
    # Ray's flag names are camelCase in Volcano.
    flags={
        "head": Flag(FlagKind.STRING, "head"),
        "headContainer": Flag(FlagKind.STRING, "head"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "workerContainer": Flag(FlagKind.STRING, "worker"),
        "port": Flag(FlagKind.INT, 6379),
        "dashboardPort": Flag(FlagKind.INT, 8265),
        "clientPort": Flag(FlagKind.INT, 10001),
    },
    implies=("svc",),
    validate=validate,
    children=(ChildObject("Service", "-head-svc"),),
)
