"""Imported first by tests/conftest.py, before any module of ours: the suite never tests a
compiled extension older than its source (setup.py, issue 41).  Where one is, the
compiled build is made again (``scripts/compiled.py ensure``), or, where it cannot be
(no compiler; ``STOMPD_PURE=1``), the extensions go and the pure sources run.  Only in
the process that starts the run: pytest-xdist's workers start after it, on its build."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "compiled.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stompd_compiled_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if "PYTEST_XDIST_WORKER" not in os.environ:
    said = load_script().ensure()
    if said is not None:
        print(f"tests: {said}", file=sys.stderr)
