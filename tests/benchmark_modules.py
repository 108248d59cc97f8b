"""Benchmark scripts loaded as modules for their tests, with what ``python benchmarks/NAME.py`` would import beside
them (``harness``, another script) registered under the same names, so no test edits ``sys.path``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str, *beside: str) -> ModuleType:
    """``benchmarks/NAME.py`` as a module, after ``harness`` and the scripts ``beside`` that it imports."""
    module = None
    for mod in ("harness", *beside, name):
        if mod in sys.modules and getattr(sys.modules[mod], "__file__", None) == str(BENCHMARKS / f"{mod}.py"):
            module = sys.modules[mod]
            continue
        spec = importlib.util.spec_from_file_location(mod, BENCHMARKS / f"{mod}.py")
        assert spec is not None and spec.loader is not None, f"benchmarks/{mod}.py"
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod] = module
        spec.loader.exec_module(module)
    assert module is not None
    return module
