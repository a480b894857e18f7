"""The hot path compiled with mypyc where a C compiler is there (issue 41).

The modules listed in pyproject's ``[tool.stompd.compiled]`` are built into C extensions
beside their sources (``protocol/parser.cpython-311-x86_64-linux-gnu.so`` next to
``protocol/parser.py``), which Python imports before the ``.py``.  The sources stay the
program: without a compiler, without mypyc, or with ``STOMPD_PURE=1``, nothing is built
and the same package runs as pure Python.  ``pip install -e .`` builds them;
``scripts/compiled.py build`` (which ``scripts/setup-tests.sh`` runs) builds them in place
with the virtualenv's own mypyc, and only when a source changed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))
import compiled

#: The commands that build (the metadata ones, which pip runs first, compile nothing).
BUILDING = {"build", "build_ext", "bdist_wheel", "editable_wheel", "develop", "install"}


def ext_modules() -> list[object]:
    if BUILDING.isdisjoint(sys.argv):
        return []
    reason = compiled.why_pure()
    if reason is not None:
        print(f"stompd: pure-Python build ({reason})", file=sys.stderr)
        return []
    from mypyc.build import mypycify

    paths = [module.replace(".", "/") + ".py" for module in compiled.modules()]
    return list(mypycify(paths, opt_level=os.environ.get("STOMPD_OPT_LEVEL", "2"), group_name=compiled.GROUP))


built = ext_modules()
setup(ext_modules=built)
if built and not {"build_ext", "editable_wheel"}.isdisjoint(sys.argv):
    # In place: the tree's extensions are now those of its sources as they are.
    compiled.record()
