"""Suite-wide setup: the pinned kubectl and helm in `.tools/bin` come first on PATH."""

from __future__ import annotations

import os
from pathlib import Path

TOOLS_BIN = Path(__file__).resolve().parent.parent / ".tools" / "bin"

if TOOLS_BIN.is_dir() and str(TOOLS_BIN) not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = f"{TOOLS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
