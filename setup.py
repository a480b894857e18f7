"""The hot path compiled with mypyc where a C compiler is there (issue 41).

The modules listed in pyproject's ``[tool.stompd.compiled]`` are built into C extensions
beside their sources (``protocol/parser.cpython-311-x86_64-linux-gnu.so`` next to
``protocol/parser.py``), which Python imports before the ``.py``.  The sources stay the
program: without a compiler, without mypyc, or with ``STOMPD_PURE=1``, nothing is built
and the same package runs as pure Python.  ``scripts/compile.sh`` builds them in place
for a checkout (``scripts/setup-tests.sh`` runs it); the test suite rebuilds them when a
source is newer than its build (``tests/compiled.py``).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent


def compiled_modules() -> list[str]:
    with open(HERE / "pyproject.toml", "rb") as file:
        return list(tomllib.load(file)["tool"]["stompd"]["compiled"]["modules"])


def can_compile() -> str | None:
    """Why the pure build is used, or None when the compiled one can be made."""
    if os.environ.get("STOMPD_PURE", "") not in ("", "0"):
        return "STOMPD_PURE is set"
    if sys.implementation.name != "cpython":
        return f"{sys.implementation.name} is not CPython"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python.h (the Python development headers)"
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return "mypyc is not installed"
    return None


def ext_modules() -> list[object]:
    reason = can_compile()
    if reason is not None:
        print(f"stompd: pure-Python build ({reason})", file=sys.stderr)
        return []
    from mypyc.build import mypycify

    paths = [module.replace(".", "/") + ".py" for module in compiled_modules()]
    # One group (shared C runtime); -O2 is within noise of -O3 here and builds faster.
    return list(mypycify(paths, opt_level=os.environ.get("STOMPD_OPT_LEVEL", "2")))


setup(ext_modules=ext_modules())
