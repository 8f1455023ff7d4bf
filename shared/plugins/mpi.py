"""mpi: MPI_HOST on the master; the workers are reached over ssh, so mpi brings ssh along."""

from __future__ import annotations

from shared.fielderrors import FieldError
from shared.pluginargs import Flag, FlagKind
from shared.plugins.descriptor import PluginCheck, PluginDescriptor, port_in_range, task_exists


def validate(check: PluginCheck) -> list[FieldError]:
    return port_in_range(check, "port") + task_exists(check, "master", "mpi master")


DESCRIPTOR = PluginDescriptor(
    name="mpi",
    flags={
        "master": Flag(FlagKind.STRING, "master"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "port": Flag(FlagKind.INT, 22),
    },
    implies=("svc", "ssh"),
    validate=validate,
)
