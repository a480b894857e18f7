"""Files that never end: only regular files are read, up to a cap, and placeholders that
expand each other are stopped; each is one error naming the file, and memory stays bounded."""

from __future__ import annotations

import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from config.files import MAX_BYTES, FileRefused, read_regular
from config.issues import ConfigError, ConfigIssue
from config.loader import load
from config.placeholders import MAX_DEPTH, ExpansionError, Placeholders
from tests.config.helpers import HEADER

CONFIGURER = """<beans xmlns="http://www.springframework.org/schema/beans">
  <bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer">
    <property name="location" value="file:{properties}"/>
  </bean>
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="${{name:b}}"/>
</beans>
"""


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def in_thread(work: object) -> BaseException | None:
    """Run ``work`` in a thread that must come back (a FIFO read would never return)."""
    assert callable(work)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the read blocked"
    return outcome[0]


def load_errors(path: Path) -> list[ConfigIssue]:
    with pytest.raises(ConfigError) as raised:
        load(path)
    return raised.value.errors


# -- read_regular -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda tmp: Path("/dev/zero"), "a character device"),
        (fifo, "a FIFO"),
        (lambda tmp: tmp, "a directory"),
    ],
)
def test_only_regular_files_are_read(tmp_path: Path, make: object, kind: str) -> None:
    assert callable(make)
    path = make(tmp_path)
    error = in_thread(lambda: read_regular(path))
    assert isinstance(error, FileRefused)
    assert str(error) == f"not a regular file ({kind}): only regular files are read"


def test_a_fifo_with_a_writer_is_refused_too(tmp_path: Path) -> None:
    path = fifo(tmp_path)
    # A writer that keeps it open: a read of it would wait for more for ever.
    writer = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(writer, b"<beans/>")
        assert isinstance(in_thread(lambda: read_regular(path)), FileRefused)
    finally:
        os.close(writer)


def test_the_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_regular(path, limit=10) == b"x" * 10
    with pytest.raises(FileRefused, match="larger than 9 b"):
        read_regular(path, limit=9)
    # A sparse file: refused from its size, before a byte is read.
    with path.open("wb") as sparse:
        sparse.truncate(MAX_BYTES + 1)
    with pytest.raises(FileRefused, match="larger than 16 mb: too big for a configuration file"):
        read_regular(path)


def test_missing_files_are_the_os_error_they_are(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "nope")


# -- the configuration file -------------------------------------------------------------------


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir"])
def test_a_special_configuration_file_is_one_error_naming_it(tmp_path: Path, special: str) -> None:
    path = {"/dev/zero": Path("/dev/zero"), "fifo": fifo(tmp_path), "dir": tmp_path}[special]
    outcome = in_thread(lambda: load(path))
    assert isinstance(outcome, ConfigError)
    [error] = outcome.errors
    assert str(error).startswith(f"{path}: not a regular file (")


def test_a_configuration_file_over_16_mb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    path.write_bytes(HEADER.encode() + b" " * MAX_BYTES)
    [error] = load_errors(path)
    assert str(error) == f"{path}: larger than 16 mb: too big for a configuration file"


# -- properties files named by a placeholder configurer --------------------------------------


@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir", "big"])
def test_a_special_properties_file_is_one_error_naming_it(tmp_path: Path, special: str) -> None:
    big = tmp_path / "big.properties"
    with big.open("wb") as sparse:
        sparse.truncate(MAX_BYTES + 1)
    made = {"/dev/zero": Path("/dev/zero"), "dir": tmp_path, "big": big}
    properties = fifo(tmp_path) if special == "fifo" else made[special]
    path = tmp_path / "activemq.xml"
    path.write_text(CONFIGURER.format(properties=properties))
    outcome = in_thread(lambda: load(path))
    assert isinstance(outcome, ConfigError)
    [error] = outcome.errors
    assert error.line == 3
    assert str(error).startswith(f"{path}:3: <bean/property>: file:{properties}: ")
    assert ("larger than 16 mb" if special == "big" else "not a regular file") in error.reason


def test_a_missing_properties_file_stays_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(CONFIGURER.format(properties=tmp_path / "nope.properties"))
    loaded = load(path)
    assert "cannot read" in str(loaded.warnings[0])


# -- placeholder expansion ---------------------------------------------------------------------


def bomb(levels: int, fan_out: int) -> str:
    """Each name refers to the next ``fan_out`` times: fan_out ** levels copies of the last."""
    lines = [f"p{i}=" + f"${{p{i + 1}}}" * fan_out for i in range(levels)]
    return "\n".join([*lines, f"p{levels}=x", "name=${p0}"]) + "\n"


def test_placeholders_that_expand_each_other_are_stopped(tmp_path: Path) -> None:
    properties = tmp_path / "bomb.properties"
    properties.write_text(bomb(7, 10))  # 10^7 copies, in about 450 bytes
    assert properties.stat().st_size < 600
    path = tmp_path / "activemq.xml"
    path.write_text(CONFIGURER.format(properties=properties))
    tracemalloc.start()
    try:
        errors = load_errors(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(errors) == 1
    assert str(errors[0]).startswith(f"{path}:5: <broker>: brokerName: placeholders expand past 20000")
    assert "\n" not in str(errors[0])
    assert peak < 64 << 20


def test_a_long_value_repeated_is_stopped_by_size(tmp_path: Path) -> None:
    p = Placeholders({"big": "x" * (1 << 20), "twice": "${big}" * 20}, {}, tmp_path, tmp_path)
    with pytest.raises(ExpansionError, match="16 MiB"):
        p.resolve("${twice}")


def test_circular_placeholders() -> None:
    p = Placeholders({"a": "<${b}>", "b": "${a}"}, {}, Path("/"), Path("/"))
    cycle = r"circular placeholder reference: \$\{a\} -> \$\{b\} -> \$\{a\}"
    with pytest.raises(ExpansionError, match=cycle):
        p.resolve("${a}")


def test_nesting_depth() -> None:
    chain = {f"n{i}": f"${{n{i + 1}}}" for i in range(MAX_DEPTH)}
    p = Placeholders({**chain, f"n{MAX_DEPTH}": "end"}, {}, Path("/"), Path("/"))
    # MAX_DEPTH values that hold placeholders, then a plain one: allowed.
    assert p.resolve("${n0}").text == "end"
    deeper = Placeholders({**chain, f"n{MAX_DEPTH}": "${last}", "last": "end"}, {}, Path("/"), Path("/"))
    with pytest.raises(ExpansionError, match=f"nest deeper than {MAX_DEPTH} levels"):
        deeper.resolve("${n0}")


def test_after_a_failed_expansion_the_file_gets_one_error(tmp_path: Path) -> None:
    properties = tmp_path / "loop.properties"
    properties.write_text("a=${b}\nb=${a}\n")
    path = tmp_path / "activemq.xml"
    path.write_text(
        CONFIGURER.format(properties=properties).replace(
            'brokerName="${name:b}"', 'brokerName="${a}" dataDirectory="${b}" persistent="false"'
        )
    )
    [error] = load_errors(path)
    assert "brokerName: circular placeholder reference" in str(error)
