"""``stompd``'s small edges: ``--version``, the usage line, ``--log-level``'s help, and the
start-up warning about settings checked but not applied yet, in the XML's names with
file:line as ``--check-config`` shows them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from broker.cli import main

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

NOT_APPLIED = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="edges" dataDirectory="{data}">
    <destinationPolicy><policyMap><policyEntries>
      <policyEntry queue="orders.>" prioritizedMessages="true">
        <pendingQueuePolicy><vmQueueCursor/></pendingQueuePolicy>
      </policyEntry>
    </policyEntries></policyMap></destinationPolicy>
    <plugins><redeliveryPlugin fallbackToDeadLetter="false"/></plugins>
    <transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/></transportConnectors>
    <httpServer port="0"/>
  </broker>
</beans>
"""


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert re.fullmatch(r"stompd \d+\.\d+\S*\n", capsys.readouterr().out)


def test_usage_names_hash_password_and_log_level_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    usage = out.split("\n\n")[0]
    assert usage.startswith("usage: stompd [--config FILE | --check-config FILE]")
    assert "\n       stompd hash-password [--scheme {scrypt,pbkdf2-sha256}]" in usage
    assert re.search(r"--log-level \{DEBUG,INFO,WARNING,ERROR\}\s+log messages of this level", out)
    # A bad argument shows the same usage.
    with pytest.raises(SystemExit):
        main(["--bogus"])
    assert "stompd hash-password" in capsys.readouterr().err


def test_settings_not_applied_are_named_as_in_the_file_at_start(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(NOT_APPLIED.format(data=tmp_path / "data"))
    process = subprocess.Popen(
        [sys.executable, "-m", "broker", "--config", str(path)],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        for line in process.stderr:
            lines.append(line)
            if "stompd listening on" in line:
                break
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    warned = [
        line.split(" WARNING stompd: ", 1)[1].rstrip("\n") for line in lines if " WARNING stompd: " in line
    ]
    tail = ": checked but not applied yet (stompd --check-config shows every setting)"
    assert f"{path}:5: policyEntry queue='orders.>': pendingQueuePolicy = vm{tail}" in warned
    assert f"{path}:8: redeliveryPlugin defaultEntry: fallbackToDeadLetter = false{tail}" in warned
    assert not any("policies." in line or "redelivery." in line for line in lines), lines
    # --check-config marks the same settings on the same lines.
    checked = subprocess.run(
        [sys.executable, "-m", "broker", "--check-config", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert re.search(
        rf"pendingQueuePolicy += vm +{re.escape(str(path))}:5  \[not applied yet\]", checked.stdout
    )
