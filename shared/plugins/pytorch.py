"""pytorch: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; optionally workers wait for the
master."""

from __future__ import annotations

from shared.fielderrors import FieldError
from shared.pluginargs import Flag, FlagKind
from shared.plugins.descriptor import PluginCheck, PluginDescriptor, port_in_range


def validate(check: PluginCheck) -> list[FieldError]:
    return port_in_range(check, "port")


DESCRIPTOR = PluginDescriptor(
    name="pytorch",
    flags={
        "master": Flag(FlagKind.STRING, "master"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "port": Flag(FlagKind.INT, 23456),
        "wait-master-enabled": Flag(FlagKind.BOOL, False),
        "wait-master-timeout": Flag(FlagKind.INT, 300),
        "wait-master-image": Flag(FlagKind.STRING, "busybox:1.36.1"),
    },
    implies=("svc",),
    validate=validate,
)
