"""``stompd --config`` / ``--check-config`` / ``hash-password``: output, exit codes, a real broker."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from broker.cli import main
from broker.settings_bridge import broker_options
from config import passwords
from config.loader import load
from config.overrides import Override, apply
from tests.broker_thread import BrokerThread
from tests.clients import client

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "activemq.xml.example"

SMALL = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="small" dataDirectory="${data}">
    <managementContext><managementContext createConnector="false"/></managementContext>
    <systemUsage><systemUsage>
      <memoryUsage><memoryUsage limit="${memory:32 mb}"/></memoryUsage>
      <tempUsage><tempUsage limit="1 gb"/></tempUsage>
    </systemUsage></systemUsage>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:61616"/>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:0?wireFormat.maxFrameSize=1mb"/>
    </transportConnectors>
    <persistenceAdapter><levelDB directory="${data}/leveldb"/></persistenceAdapter>
    <httpServer port="0"/>
  </broker>
</beans>
"""


def small_file(tmp_path: Path) -> Path:
    path = tmp_path / "activemq.xml"
    path.write_text(SMALL)
    return path


def test_check_config_prints_every_setting_with_its_origin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check-config", str(EXAMPLE)]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"^  memoryUsage limit\s+= 1 gb\s+\S*activemq\.xml\.example:\d+$", out, re.M)
    assert re.search(r"^  maxPageSize\s+= 500\s+default$", out, re.M)
    assert re.search(
        r"^  directory\s+= \S+/data/store\s+\S*activemq\.xml\.example:\d+ \(\$\{activemq\.data\}\)$",
        out,
        re.M,
    )
    # Everything the example sets is applied (issue 27 applied the last of it).
    assert "policyEntry topic='PRICES.>'" in out and "[not applied yet]" not in out
    # The whole report on stdout, the verdict too (``> report.txt`` keeps it all).
    assert out.strip().endswith(f"{EXAMPLE}: OK")
    assert err == ""


def test_check_config_shows_flags_and_defines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = small_file(tmp_path)
    code = main(["--check-config", str(path), f"-Ddata={tmp_path}/d", "-Dmemory=48mb", "--temp-limit", "2gb"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert re.search(r"^  memoryUsage limit\s+= 48 mb\s+\S+activemq\.xml:5 \(\$\{memory\}\)$", out, re.M)
    assert re.search(r"^  tempUsage limit\s+= 2 gb\s+flag --temp-limit$", out, re.M)
    assert re.search(rf"^  dataDirectory\s+= {re.escape(str(tmp_path))}/d\s", out, re.M)
    assert "OpenWire is not STOMP" in out and "JMX" in out and "2 warning(s)" in out


def test_check_config_on_a_bad_file_names_every_error_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(
        SMALL.replace('limit="1 gb"', 'limit="1 zb"').replace(
            "wireFormat.maxFrameSize=1mb", "maximumConnections=-3"
        )
    )
    assert main(["--check-config", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{path}: 2 error(s)" in err
    assert f'{path}:6: <broker/systemUsage/systemUsage/tempUsage/tempUsage>: limit="1 zb"' in err
    assert (
        f"{path}:10: <broker/transportConnectors/transportConnector>: URI option maximumConnections=-3" in err
    )
    assert "Traceback" not in err


def test_check_config_on_a_hostile_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bomb.xml"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE b [\n<!ENTITY a "aaaaaaaa">\n]>\n<beans>&a;</beans>')
    assert main(["--check-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:3: " in err and "declares an entity ('a')" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--check-config", "x.xml", "--config", "y.xml"], "not both"),
        (["--check-config", "x.xml", "-Dnovalue"], "-D takes NAME=VALUE"),
        (["--heartbeat-grace", "0.5"], "at least 1.0"),
        (["--cursor-memory-high-water-mark", "0"], "1-100"),
    ],
)
def test_bad_arguments_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_missing_config_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "nope.xml")]) == 1
    assert "cannot read the configuration" in capsys.readouterr().err


def test_hash_password_makes_a_hash_the_loader_accepts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("open sesame\n"))
    assert main(["hash-password", "--scheme", "pbkdf2-sha256"]) == 0
    text = capsys.readouterr().out.strip()
    assert passwords.verify(passwords.parse(text), "open sesame")
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))
    assert main(["hash-password"]) == 1


def test_a_broker_runs_from_a_file_in_process(tmp_path: Path) -> None:
    config = load(small_file(tmp_path), defines={"data": str(tmp_path / "d")}).config
    options = broker_options(apply(config, [Override("store_limit", 1 << 30, "--store-limit")]))
    assert options.listeners[0].limits.max_frame_size == 1 << 20 and options.core.memory_limit == 32 << 20
    thread = BrokerThread(options).start()
    try:
        with client(thread.port) as c:
            c.subscribe("/queue/configured")
            c.send("/queue/configured", "hello", sync=True)
            assert c.listener.wait_messages(1)[0].body == "hello"
        assert (tmp_path / "d" / "leveldb").is_dir() and not (tmp_path / "d" / "store").exists()
        # The temp store is made at its first swap write (nothing swapped here).
        assert not (tmp_path / "d" / "tmp_storage").exists()
    finally:
        thread.stop()


def test_stompd_config_runs_a_real_broker_process(tmp_path: Path) -> None:
    path = small_file(tmp_path)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "--config",
            str(path),
            f"-Ddata={tmp_path}/d",
            "--memory-limit",
            "16mb",
        ],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        port = 0
        for line in process.stderr:
            lines.append(line)
            match = re.search(r"stompd listening on 127\.0\.0\.1:(\d+)", line)
            if match:
                port = int(match.group(1))
                break
        assert port, "".join(lines)
        assert any("OpenWire is not STOMP" in line for line in lines)
        assert not any("not applied yet" in line for line in lines)
        with client(port) as c:
            c.subscribe("/topic/configured")
            c.send("/topic/configured", "from a file", sync=True)
            assert c.listener.wait_messages(1)[0].body == "from a file"
    finally:
        process.send_signal(signal.SIGTERM)
        rest = process.communicate(timeout=30)[1]
    assert process.returncode == 0, "".join(lines) + rest
    assert "Traceback" not in "".join(lines) + rest


#: A properties file of placeholders that expand each other: 10^7 copies from ~400 bytes.
BOMB = "\n".join([*(f"p{i}=" + f"${{p{i + 1}}}" * 10 for i in range(7)), "p7=x", "name=${p0}"])

CONFIGURER = """<beans xmlns="http://www.springframework.org/schema/beans">
  <bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer">
    <property name="location" value="file:{properties}"/>
  </bean>
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="${{name}}" dataDirectory="{data}"/>
</beans>
"""


def special_file(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A configuration that never ends, and the start of the one error line it must get."""
    if kind == "/dev/zero":
        return Path("/dev/zero"), "/dev/zero: not a regular file (a character device)"
    if kind == "fifo":
        fifo = tmp_path / "activemq.xml"
        os.mkfifo(fifo)
        return fifo, f"{fifo}: not a regular file (a FIFO)"
    if kind == "directory":
        return tmp_path, f"{tmp_path}: not a regular file (a directory)"
    path = tmp_path / "activemq.xml"
    properties = tmp_path / "bomb.properties"
    if kind == "properties fifo":
        os.mkfifo(properties)
        why = f"{path}:3: <bean/property>: file:{properties}: not a regular file (a FIFO)"
    else:
        properties.write_text(BOMB)
        why = f"{path}:5: <broker>: brokerName: placeholders expand past 20000 substitutions"
    path.write_text(CONFIGURER.format(properties=properties, data=tmp_path / "data"))
    return path, why


@pytest.mark.parametrize(
    ("flag", "kind"),
    [
        ("--check-config", "/dev/zero"),
        ("--check-config", "fifo"),
        ("--check-config", "directory"),
        ("--check-config", "properties fifo"),
        ("--check-config", "bomb"),
        ("--config", "/dev/zero"),
        ("--config", "fifo"),
        ("--config", "bomb"),
    ],
)
def test_a_file_that_never_ends_is_one_error_line(tmp_path: Path, flag: str, kind: str) -> None:
    path, why = special_file(tmp_path, kind)
    # The timeout only stops a hang from hanging the suite; the broker must not wait at all.
    done = subprocess.run(
        [sys.executable, "-m", "broker", flag, str(path), "--port", "0", "--http-port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert f"{path}: 1 error(s):" in lines, done.stderr
    error = lines[lines.index(f"{path}: 1 error(s):") + 1 :]
    assert len(error) == 1 and error[0].startswith("  " + why), done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists()
