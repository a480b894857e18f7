"""The store's lock (store/lock.py): one holder at a time, who holds it, and the checks
that tell a master it lost it.

Open file description locks conflict between two descriptors of one process as between
two processes, so these tests hold the lock from two ``StoreLock`` objects here; a lock
taken in another process is checked too, and the pair's tests (tests/integration/
test_pair.py) run real brokers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import plyvel
import pytest

from store.errors import StoreLocked
from store.leveldb import LevelDB
from store.lock import LOCK_FILE, Owner, StoreLock


def test_one_holder_at_a_time_and_the_other_reads_who(tmp_path: Path) -> None:
    first, second = StoreLock(tmp_path / "store"), StoreLock(tmp_path / "store")
    assert first.try_acquire().acquired
    assert first.owner is not None and first.owner.pid == os.getpid()
    attempt = second.try_acquire()
    assert not attempt.acquired
    assert attempt.holder == first.owner
    assert not second.held
    first.release()
    assert second.try_acquire().acquired
    assert second.check() is None
    second.release()


def test_the_record_is_one_line_with_host_pid_since_and_token(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path)
    lock.try_acquire()
    record = (tmp_path / LOCK_FILE).read_bytes()
    assert record.endswith(b"\n") and record.count(b"\n") == 1
    owner = Owner.decode(record)
    assert owner == lock.owner
    assert owner is not None and f"pid {os.getpid()}" in str(owner)
    lock.release()
    # A clean release leaves no stale holder behind.
    assert (tmp_path / LOCK_FILE).read_bytes() == b""


def test_a_lock_taken_in_another_process_keeps_this_one_out(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from store.lock import StoreLock\n"
        "lock = StoreLock(Path(sys.argv[1])); assert lock.try_acquire().acquired\n"
        "print(lock.owner.pid, flush=True); sys.stdin.read()\n"
    )
    root = Path(__file__).resolve().parents[2]
    with subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            pid = int(child.stdout.readline())
            attempt = StoreLock(tmp_path).try_acquire()
            assert not attempt.acquired
            assert attempt.holder is not None and attempt.holder.pid == pid == child.pid
        finally:
            child.kill()  # kill -9: the lock goes with the process
            child.wait(10)
    lock = StoreLock(tmp_path)
    assert lock.try_acquire().acquired
    lock.release()


def test_check_finds_the_file_removed(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path)
    lock.try_acquire()
    (tmp_path / LOCK_FILE).unlink()
    assert "removed or replaced" in (lock.check() or "")
    # Now another broker can lock a new file by that name: the old holder must stop.
    other = StoreLock(tmp_path)
    assert other.try_acquire().acquired
    lock.close()
    other.release()


def test_check_finds_the_file_replaced(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path)
    lock.try_acquire()
    replacement = tmp_path / "new"
    replacement.write_bytes(b"")
    replacement.replace(tmp_path / LOCK_FILE)
    assert "removed or replaced" in (lock.check() or "")
    lock.close()


def test_check_finds_another_holder_in_the_same_file(tmp_path: Path) -> None:
    """What a master whose NFS lease expired finds: another broker locked the very file
    and wrote its own record in it."""
    lock = StoreLock(tmp_path)
    lock.try_acquire()
    intruder = Owner("elsewhere", 4242, 0.0, "0123456789abcdef")
    (tmp_path / LOCK_FILE).write_bytes(intruder.encode())
    reason = lock.check() or ""
    assert "names host elsewhere pid 4242" in reason and "not this broker" in reason
    # Not ours any more: a release must not clear the other's record.
    lock.release()
    assert Owner.decode((tmp_path / LOCK_FILE).read_bytes()) == intruder


def test_a_garbled_record_is_no_holder(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_bytes(b"not json")
    assert Owner.decode(b"not json") is None
    assert Owner.decode(b'{"host": "h"}') is None
    lock = StoreLock(tmp_path)
    assert lock.try_acquire().acquired
    assert lock.check() is None
    lock.release()


def test_an_unusable_directory_is_an_os_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OSError):
        StoreLock(tmp_path / "file").try_acquire()


def test_the_lock_is_not_leveldbs_and_survives_its_reopen(tmp_path: Path) -> None:
    """LevelDB lets its own LOCK go when the store is reopened: ours is held throughout,
    and LevelDB ignores our file in its directory."""
    lock = StoreLock(tmp_path)
    lock.try_acquire()
    db = LevelDB(tmp_path, sync=True)
    db.write([(b"k", b"v")])
    db.reopen()
    assert not StoreLock(tmp_path).try_acquire().acquired
    assert lock.check() is None
    db.close()
    assert lock.check() is None
    lock.release()


def test_a_store_open_in_another_handle_is_store_locked(tmp_path: Path) -> None:
    """LevelDB's own LOCK is the second fence: a new master cannot open the store that the
    old one still has open."""
    held = plyvel.DB(str(tmp_path), create_if_missing=True)
    try:
        with pytest.raises(StoreLocked):
            LevelDB(tmp_path)
    finally:
        held.close()


def test_still_ours_is_one_stat_of_the_path_from_any_thread(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path)
    assert lock.still_ours() == "the lock is not held"
    assert lock.try_acquire().acquired
    assert lock.still_ours() is None
    (tmp_path / LOCK_FILE).rename(tmp_path / "moved")
    assert lock.still_ours() == f"the lock file {tmp_path / LOCK_FILE} was removed"
    (tmp_path / LOCK_FILE).write_bytes(b"")
    assert lock.still_ours() == f"the lock file {tmp_path / LOCK_FILE} was replaced"
    lock.close()
    assert lock.still_ours() == "the lock is not held"


def test_a_lock_file_made_beside_a_store_is_fresh(tmp_path: Path) -> None:
    """A store's lock file is made once, with the store: one this broker had to make in a
    directory holding anything else was removed, maybe under a master still writing."""
    first = StoreLock(tmp_path)
    attempt = first.try_acquire()
    assert attempt.acquired and not attempt.fresh  # a new store: nothing beside it
    (tmp_path / "CURRENT").write_bytes(b"MANIFEST-000001\n")
    first.release()
    again = StoreLock(tmp_path)
    attempt = again.try_acquire()
    assert attempt.acquired and not attempt.fresh  # the file was there (a clean stop)
    again.close()
    (tmp_path / LOCK_FILE).unlink()
    third = StoreLock(tmp_path)
    attempt = third.try_acquire()
    assert attempt.acquired and attempt.fresh
    third.close()
