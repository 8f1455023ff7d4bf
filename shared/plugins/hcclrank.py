"""hcclrank: the `hccl/rankIndex` pod annotation Ascend's HCCL reads."""

from __future__ import annotations

from shared.pluginargs import Flag, FlagKind
from shared.plugins.descriptor import PluginDescriptor

DESCRIPTOR = PluginDescriptor(
    name="hcclrank",
    flags={
        "master": Flag(FlagKind.STRING, "master"),
        "worker": Flag(FlagKind.STRING, "worker"),
    },
)
