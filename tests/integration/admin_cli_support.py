"""``stompd-admin`` as a child process against a broker's admin server, and its last
JSON line (moved here from test_admin_cli.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.broker_thread import BrokerThread

ROOT = Path(__file__).resolve().parents[2]


def admin(url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adminctl", "--url", url, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def last_json(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    parsed: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return parsed


def url_of(thread: BrokerThread) -> str:
    return f"http://127.0.0.1:{thread.http_port}"
