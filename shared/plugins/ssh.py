"""ssh: one key pair per job in the Secret `<job>-ssh`; the key the controller generated is
remembered (`sshKey`) until that Secret exists."""

from __future__ import annotations

from shared.pluginargs import Flag, FlagKind
from shared.plugins.descriptor import ChildObject, PluginDescriptor

MEMORY_KEY = "sshKey"

DESCRIPTOR = PluginDescriptor(
    name="ssh",
    flags={
        "ssh-key-file-path": Flag(FlagKind.STRING, "/root/.ssh"),
        "ssh-private-key": Flag(FlagKind.STRING, ""),
        "ssh-public-key": Flag(FlagKind.STRING, ""),
        "ssh-port": Flag(FlagKind.INT, 22),
        # Removed from Volcano's ssh plugin in 2020 and ignored since, but still passed by
        # Volcano's own e2e suites: known, so it does not stop the parsing, and without effect.
        "no-root": Flag(FlagKind.BOOL, False),
    },
    no_effect=frozenset({"no-root"}),
    children=(ChildObject("Secret", "-ssh"),),
    memory_keys=(MEMORY_KEY,),
)
