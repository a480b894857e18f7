"""The compiled hot path (issue 41): which modules, whether their build is current, building it.

``python scripts/compiled.py status`` says which build runs (pure, compiled, or compiled
from older sources); ``build`` makes the compiled one in place when it is not current
(setup.py with this Python's mypyc; where that cannot be done, the stale extensions go and
the pure sources run); ``clean`` removes the extensions.  ``scripts/setup-tests.sh`` runs
``build``; the test suite runs ``ensure`` before anything is imported (tests/conftest.py),
so it never tests an extension older than its source.  ``STOMPD_PURE=1`` asks for the
pure build: nothing is compiled and extensions already there are removed.

An extension is current when every source mypyc read to make it is as it was then: the
fingerprint of those sources is kept beside the build (``build/compiled-sources.json``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "build" / "compiled-sources.json"
#: The one library holding every compiled module's code (mypyc's group; the modules
#: themselves are small shims importing it), inside a package so that an editable
#: install finds it from any directory.
GROUP = "broker._hot"
#: What the compiled modules are made from: their sources and those mypyc reads to know
#: the types they use (the core imports only these of ours).
SOURCE_DIRS = ("protocol", "broker/core", "store", "wildcards")
PACKAGES = (
    "protocol", "config", "store", "broker", "perf", "adminctl", "spark_jobs", "export_format", "wildcards",
)  # fmt: skip


def modules() -> list[str]:
    """The compiled modules, as pyproject's ``[tool.stompd.compiled]`` lists them."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        return list(tomllib.load(file)["tool"]["stompd"]["compiled"]["modules"])


def why_pure() -> str | None:
    """Why the pure build is what can be had here, or None where the compiled one can be made."""
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
        return "mypyc is not installed (it comes with mypy)"
    return None


def extensions() -> list[Path]:
    """Every compiled extension in the tree, the group's library included."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    # (A group's library once built outside the packages, too.)
    found = list(ROOT.glob(f"*__mypyc{suffix}"))
    for package in PACKAGES:
        found += (ROOT / package).rglob(f"*{suffix}")
    return sorted(found)


def fingerprint() -> str:
    """A digest of every source the build reads, the module list and the Python it is for."""
    digest = hashlib.sha256()
    digest.update(repr((modules(), sys.version, sysconfig.get_config_var("EXT_SUFFIX"))).encode())
    for folder in SOURCE_DIRS:
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")) if base.is_dir() else []:
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def state() -> str:
    """``pure`` (no extension), ``compiled`` (current) or ``stale``."""
    if not extensions():
        return "pure"
    try:
        kept = json.loads(MANIFEST.read_text())["fingerprint"]
    except (OSError, ValueError, KeyError):
        return "stale"
    return "compiled" if kept == fingerprint() else "stale"


def record() -> None:
    """Say the extensions now in the tree are made from the sources as they are now."""
    MANIFEST.parent.mkdir(exist_ok=True)
    MANIFEST.write_text(json.dumps({"fingerprint": fingerprint(), "modules": modules()}))


def clean() -> None:
    for path in extensions():
        path.unlink()
    MANIFEST.unlink(missing_ok=True)


def build() -> str:
    """Make the compiled build current (or, where it cannot be made, the pure one); say which."""
    reason = why_pure()
    if reason is not None:
        if extensions():
            clean()
        return f"pure-Python build ({reason})"
    if state() == "compiled":
        return "compiled build, current"
    started = time.monotonic()
    # Extensions of modules no longer listed must not shadow their sources.
    clean()
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        clean()
        # mypy's type errors come on stdout, the compiler's on stderr.
        said = (done.stdout + done.stderr)[-4000:]
        raise SystemExit(f"compiled.py: the mypyc build failed:\n{said}")
    return f"compiled build made in {time.monotonic() - started:.0f} s ({len(modules())} modules)"


def ensure() -> str | None:
    """What the test suite runs first: never an extension older than its source."""
    current = state()
    if current == "stale" or (current == "compiled" and why_pure() == "STOMPD_PURE is set"):
        return build()
    return None


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "status":
        print(f"{state()} ({len(extensions())} extensions; {why_pure() or 'a compiler and mypyc are here'})")
    elif command == "build":
        print(build())
    elif command == "clean":
        clean()
    else:
        print("usage: compiled.py [status|build|clean]", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
