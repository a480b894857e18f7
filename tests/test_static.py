"""The code checks are tests too: ruff, mypy --strict, and the import-direction contracts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.tools import tool

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_clean() -> None:
    result = run(tool("ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts() -> None:
    result = run(tool("lint-imports"))
    assert result.returncode == 0, result.stdout + result.stderr
