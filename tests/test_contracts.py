"""The import contracts (pyproject.toml) are allow-lists that hold: they name every module
there is, and one wrong import anywhere breaks them.

Each mutation adds one import to one module of a scratch copy of the tree and runs
``lint-imports`` there: it must fail.  The unchanged copy must pass, so that each
failure is the mutation's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "protocol",
    "config",
    "store",
    "broker",
    "perf",
    "adminctl",
    "spark_jobs",
    "export_format",
    "wildcards",
)

#: (module file, the import added to it): each must break a contract.
MUTATIONS = (
    ("broker/core/engine.py", "import config"),
    ("broker/core/base/message.py", "import config.model"),
    ("broker/core/delivery/queue.py", "import broker.security"),
    ("broker/core/handlers/sending.py", "import broker.policies"),
    ("broker/core/storage/cursor.py", "import broker.tls"),
    ("broker/core/engine.py", "import threading"),
    ("broker/core/handlers/flow.py", "import asyncio"),
    ("broker/core/storage/persistence.py", "import store.persistent"),
    ("broker/core/admin/service.py", "import broker.http"),
    ("broker/core/admin/readout.py", "import export_format.schema"),
    ("spark_jobs/report.py", "import broker.export"),
    ("spark_jobs/schema.py", "import config"),
    ("broker/io/connection.py", "import broker.export"),
    ("broker/io/outbox.py", "import broker.ws"),
    ("broker/ws/endpoint.py", "import broker.http.auth"),
    ("broker/http/api.py", "import broker.network"),
    ("broker/export/exporter.py", "import broker.app"),
    ("broker/network/crossing.py", "import store.persistent"),
    ("broker/security/guard.py", "import broker.io"),
    ("broker/app.py", "import broker.cli"),
    ("config/model.py", "import broker.core.base.settings"),
    ("config/loader.py", "import export_format"),
    ("protocol/parser.py", "import store"),
    ("store/api.py", "import protocol"),
    ("export_format/files.py", "import isal"),
    ("wildcards/__init__.py", "import config"),
    ("adminctl/cli.py", "import aiohttp"),
    # The allow-lists: imports no forbidden list named.
    ("protocol/parser.py", "import asyncio"),
    ("protocol/negotiation.py", "import aiohttp"),
    ("broker/core/engine.py", "import os"),
    ("broker/core/storage/swap.py", "import tempfile"),
    ("broker/core/admin/service.py", "import urllib.parse"),
    ("store/api.py", "import plyvel"),
    # The edges through the engine and the admin service only; no circle anywhere.
    ("broker/http/api.py", "import broker.core.delivery.queue"),
    ("broker/export/exporter.py", "import broker.core.engine"),
    ("broker/network/crossing.py", "import broker.core.delivery.subscription"),
    ("broker/io/connection.py", "from broker.core.storage import cursor"),
    ("broker/network/wire.py", "import broker.network.push"),
    ("store/keys.py", "import store.persistent"),
)


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _contract(name: str) -> dict[str, Any]:
    return next(c for c in _contracts() if c["name"] == name)


def _children(package: str) -> set[str]:
    path = ROOT / package.replace(".", "/")
    return {p.stem for p in path.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in path.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }


def test_the_core_s_allow_list_names_every_module_it_leaves_out() -> None:
    forbidden = set(
        _contract("broker core takes only protocol, store.api and wildcards")["forbidden_modules"]
    )  # type: ignore[call-overload]
    assert {f"store.{m}" for m in _children("store") - {"api"}} <= forbidden
    assert {f"broker.{m}" for m in _children("broker") - {"core", "__main__"}} <= forbidden
    leaves = set(PACKAGES) - {"broker", "protocol", "store", "wildcards"}
    assert leaves <= forbidden


def test_the_broker_s_layers_name_every_part_and_the_leaves_every_package() -> None:
    layers = next(c["layers"] for c in _contracts() if c.get("containers") == ["broker"])
    listed = {part.strip() for layer in layers for part in layer.split("|")}
    assert listed == _children("broker")
    sources = set(_contract("no leaf imports the broker")["source_modules"])
    assert sources == set(PACKAGES) - {"broker"}


def _copy(tmp: Path) -> Path:
    tree = tmp / "tree"
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__", "console")
        )
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    # The allow-list contract type lint-imports loads from the tree (pyproject's contract_types).
    (tree / "tests").mkdir()
    for name in ("__init__.py", "contract_types.py"):
        shutil.copy(ROOT / "tests" / name, tree / "tests" / name)
    return tree


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).parent / "lint-imports"
    # The copy first on the path: the installed (editable) package must not be the one read.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(lint) if lint.exists() else "lint-imports", "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = _copy(tmp_path_factory.mktemp("contracts"))
    unchanged = _lint(tree)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    return tree


@pytest.mark.parametrize(("module", "line"), MUTATIONS, ids=[f"{m}: {line}" for m, line in MUTATIONS])
def test_one_wrong_import_breaks_a_contract(tree: Path, module: str, line: str) -> None:
    path = tree / module
    original = path.read_text()
    path.write_text(original + f"\n{line}  # noqa\n")
    try:
        result = _lint(tree)
    finally:
        path.write_text(original)
    assert result.returncode != 0, f"{module} + {line!r} broke no contract:\n{result.stdout}"
    assert "BROKEN" in result.stdout
