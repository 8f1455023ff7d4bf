"""tensorflow: TF_CONFIG with the cluster spec and each pod's role and index."""

from __future__ import annotations

from shared.fielderrors import FieldError
from shared.pluginargs import Flag, FlagKind
from shared.plugins.descriptor import PluginCheck, PluginDescriptor, port_in_range


def validate(check: PluginCheck) -> list[FieldError]:
    return port_in_range(check, "port")


DESCRIPTOR = PluginDescriptor(
    name="tensorflow",
    flags={
        "ps": Flag(FlagKind.STRING, "ps"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "chief": Flag(FlagKind.STRING, "chief"),
        "evaluator": Flag(FlagKind.STRING, "evaluator"),
        "port": Flag(FlagKind.INT, 2222),
    },
    implies=("svc",),
    validate=validate,
)
