"""Put the `localcluster` package into regular wheels of this distribution.

The package sits at the repository's top level (`../../localcluster`), or at the root of an
sdist built from here. Editable installs get none of it: `dev-mode-dirs` points them at the
checkout, so an edit to `localcluster/` is live and no stale copy shadows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        root = Path(self.root)
        for candidate in (root / "localcluster", root.parent.parent / "localcluster"):
            if (candidate / "__init__.py").is_file():
                build_data["force_include"][str(candidate.resolve())] = "localcluster"
                return
        raise FileNotFoundError(f"no localcluster package beside {root}")
