"""svc: a headless Service and NetworkPolicy named after the job, and the hosts ConfigMap."""

from __future__ import annotations

from shared.pluginargs import Flag, FlagKind
from shared.plugins.descriptor import ChildObject, PluginDescriptor

DESCRIPTOR = PluginDescriptor(
    name="svc",
    flags={
        "publish-not-ready-addresses": Flag(FlagKind.BOOL, False),
        "disable-network-policy": Flag(FlagKind.BOOL, False),
        "inject-hosts-env": Flag(FlagKind.BOOL, True),
    },
    children=(
        ChildObject("ConfigMap", "-svc"),
        ChildObject("Service"),
        ChildObject("NetworkPolicy"),
    ),
)
