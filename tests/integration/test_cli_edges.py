"""``stompd``'s small edges: ``--version``, the usage line, ``--log-level``'s help, and the
start-up warning about settings checked but not applied yet, in the XML's names with
file:line as ``--check-config`` shows them."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from broker.cli import main, warn_not_applied
from config.loader import load

pytestmark = pytest.mark.integration

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


def test_settings_not_applied_are_named_as_in_the_file_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(NOT_APPLIED.format(data=tmp_path / "data"))
    caplog.set_level(logging.WARNING, logger="stompd")
    warn_not_applied(load(path).config)
    tail = ": checked but not applied yet (stompd --check-config shows every setting)"
    assert [record.getMessage() for record in caplog.records] == [
        f"{path}:5: policyEntry queue='orders.>': pendingQueuePolicy = vm{tail}",
    ]
    # --check-config marks the same settings on the same lines.
    assert main(["--check-config", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"pendingQueuePolicy += vm +{re.escape(str(path))}:5  \[not applied yet\]$", out, re.M)
    # fallbackToDeadLetter is applied: listed with its line, not marked.
    assert re.search(rf"fallbackToDeadLetter += false +{re.escape(str(path))}:8$", out, re.M)
