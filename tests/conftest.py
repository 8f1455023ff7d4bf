"""Suite-wide setup: the pinned kubectl and helm in `.tools/bin` come first on PATH (after the
binaries of the Kubernetes release VCJOB_KUBERNETES_VERSION names, in its manual lane)."""

from __future__ import annotations

import os

from localcluster.tools import bin_dirs

_on_path = os.environ.get("PATH", "").split(os.pathsep)
for _folder in reversed(bin_dirs()):
    if _folder.is_dir() and str(_folder) not in _on_path:
        os.environ["PATH"] = f"{_folder}{os.pathsep}{os.environ.get('PATH', '')}"
