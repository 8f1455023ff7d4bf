"""The benchmarks' pure parts live as scripts in bench/ (beside a bench/controller.py that would
shadow the controller package): tests load them by file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[3] / "bench"


def load(name: str) -> ModuleType:
    # As each script runs: its folder last on the path, so the modules find each other.
    if str(BENCH) not in sys.path:
        sys.path.append(str(BENCH))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
