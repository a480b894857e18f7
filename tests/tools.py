"""The test extras' commands (ruff, lint-imports, hadolint, promtool...): the
virtualenv's own, else the PATH's (moved here from test_static.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest


def tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return found
