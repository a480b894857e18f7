"""The store limits fitted to their disks at start (broker/io/space.py, store/space.py):
said once, at info, when ActiveMQ's defaults are lowered; a warning only for a limit
someone chose that the disk cannot give half of.  The free space is the test's."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.core.base.usage import UsageMeter
from broker.io.space import DiskWatch
from store import space

GB = 1 << 30
STORE_DEFAULT, TEMP_DEFAULT = 100 * GB, 50 * GB


@pytest.fixture
def free(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Free bytes on the (pretend) disk, as the test sets it."""
    disk = {"free": 60 * GB + space.RESERVE}
    monkeypatch.setattr(space, "free_bytes", lambda path: disk["free"])
    return disk


def start(tmp_path: Path, store: int, temp: int) -> tuple[UsageMeter, UsageMeter]:
    """What the broker does at start: both stores watched, then the one report."""
    watch = DiskWatch()
    meters = UsageMeter("store", store), UsageMeter("temp", temp)
    watch.watch("Store", meters[0], tmp_path / "store", lambda: None, STORE_DEFAULT)
    watch.watch("Temporary Store", meters[1], tmp_path / "tmp", lambda: None, TEMP_DEFAULT)
    watch.report()
    return meters


def said(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level and r.name == "stompd.space"]


def test_activemq_s_defaults_on_a_smaller_disk_are_one_line_at_info(
    tmp_path: Path, free: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "stompd")
    store, temp = start(tmp_path, STORE_DEFAULT, TEMP_DEFAULT)
    assert store.limit == temp.limit == 30 * GB
    assert said(caplog, logging.WARNING) == []
    (line,) = said(caplog, logging.INFO)
    assert line.startswith("store limits fitted to the disks, as ActiveMQ does: Store 100.0 gb -> 30.0 gb (")
    assert "Temporary Store 50.0 gb -> 30.0 gb (60.0 gb free on the disk of " in line
    # Nothing at all when the disk holds what was asked.
    caplog.clear()
    free["free"] = 400 * GB
    start(tmp_path, STORE_DEFAULT, TEMP_DEFAULT)
    assert said(caplog, logging.INFO) == said(caplog, logging.WARNING) == []


def test_a_chosen_limit_the_disk_cannot_give_half_of_is_a_warning(
    tmp_path: Path, free: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "stompd")
    # 80 gb asked, 30 gb possible: a warning; 50 gb temp (the default) stays at info.
    start(tmp_path, 80 * GB, TEMP_DEFAULT)
    (warning,) = said(caplog, logging.WARNING)
    assert warning.startswith(
        "Store limit 80.0 gb (activemq.xml) is more than twice what its disk can hold, 30.0 gb (60.0 gb free"
    )
    assert len(said(caplog, logging.INFO)) == 1
    # 40 gb asked, 30 gb possible: lowered a little, said at info only.
    caplog.clear()
    start(tmp_path, 40 * GB, TEMP_DEFAULT)
    assert said(caplog, logging.WARNING) == []
    assert "Store 40.0 gb -> 30.0 gb" in said(caplog, logging.INFO)[0]
