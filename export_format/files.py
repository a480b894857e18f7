"""The export's files: names, run ids, appending, rotation by size and age, gzip on rotation.

spark_jobs/README.md ("Names, rotation, compression") is the contract:
``{kind}-{start_ms}-{run}-{index}.jsonl`` is the live file, ``.jsonl.gz`` a rotated one,
written to ``.jsonl.gz.tmp``, synced and renamed before the live file is removed.  The
broker's exporter (``broker.export.writer``, on its writer thread; its gzip is ISA-L's)
and the reference writer (``export_format.lines.ExportWriter``: tests, benchmarks)
both write through ``RotatingFile``.  Standard library only.
"""

from __future__ import annotations

import gzip
import os
import re
import secrets
import shutil
import time
from typing import IO, TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from export_format.schema import Kind

#: File names: ``{kind}-{start_ms:013d}-{run}-{index:06d}.jsonl`` while live, ``... .jsonl.gz`` once
#: rotated. ``start_ms`` is the ts of the file's first line.
FILE_NAME: Final = re.compile(
    r"^(?P<kind>events|metrics)-(?P<start>\d{13})-(?P<run>[A-Za-z0-9_.]{1,64})-(?P<index>\d{6})\.jsonl(?:\.gz)?$"
)
#: The same, as a Java regular expression for Spark's ``regexp_extract`` (group 1: start).
FILE_START_JAVA_REGEX: Final = r"^(?:events|metrics)-(\d{13})-[A-Za-z0-9_.]{1,64}-\d{6}\.jsonl(?:\.gz)?$"


def file_name(kind: Kind | str, start_ms: int, run: str, index: int) -> str:
    return f"{kind}-{start_ms:013d}-{run}-{index:06d}.jsonl"


#: Buffers one ``writev`` takes (Linux: 1024).
IOV_MAX: Final = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024


def new_run_id(now_ms: int | None = None) -> str:
    """Base-36 start time, a dot, 8 random hex digits: different at every start, sorted by time."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    digits = ""
    while ms:
        ms, rest = divmod(ms, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
    return f"{digits or '0'}.{secrets.token_hex(4)}"


#: gzip's level where a writer names none (zlib's default).
DEFAULT_LEVEL: Final = 6


def compress(live: Path, gzip_file: Callable[..., Any] = gzip.GzipFile, level: int = DEFAULT_LEVEL) -> Path:
    """``x.jsonl`` -> ``x.jsonl.gz`` (via ``.gz.tmp``, synced, renamed), then ``x.jsonl`` goes.

    Between the rename and the removal both files exist: a reader then sees every line
    twice and drops the second copy by its (run, seq) key.  ``gzip_file``: a
    ``gzip.GzipFile`` or one like it (the broker's: ISA-L's).
    """
    done = live.with_name(live.name + ".gz")
    tmp = live.with_name(live.name + ".gz.tmp")
    with live.open("rb") as src, tmp.open("wb") as raw:
        with gzip_file(fileobj=raw, mode="wb", compresslevel=level, mtime=0) as gz:
            shutil.copyfileobj(src, gz, 1 << 20)
        raw.flush()
        os.fsync(raw.fileno())
    tmp.replace(done)
    live.unlink()
    return done


def finish_rotations(
    directory: Path, current_run: str, compressor: Callable[[Path], Path] = compress
) -> list[Path]:
    """At start-up: compress the live files earlier runs left, delete interrupted ``.gz.tmp``."""
    for stale in directory.glob("*.jsonl.gz.tmp"):
        stale.unlink()
    done = []
    for path in sorted(directory.glob("*.jsonl")):
        match = FILE_NAME.match(path.name)
        if match and match["run"] != current_run:
            done.append(compressor(path))
    return done


def _lines_in(parts: Sequence[bytes], size: int) -> int:
    """The lines wholly within the first ``size`` bytes of ``parts``: each ends with the
    only newline it holds."""
    lines = 0
    for part in parts:
        if size <= 0:
            break
        lines += part.count(b"\n", 0, size)
        size -= len(part)
    return lines


class WriteFailed(Exception):
    """A write stopped part-way: ``lines`` of the batch are on disk, the rest are lost."""

    def __init__(self, lines: int, error: OSError) -> None:
        super().__init__(str(error))
        self.lines = lines
        self.error = error


class RotatingFile:
    """The live file of one kind for one run.

    ``write`` appends a batch of ``(ts, line)`` with one system call per file it lands in.
    Before a line that would take the file past ``max_bytes`` (a file holds at least one
    line), or whose ``ts`` is ``max_age_ms`` or more past the file's first line, the file
    is rotated (closed and handed to ``compressor``); ``tick`` rotates an idle file on
    age; ``close`` rotates.  A failed write
    (a full disk) raises ``WriteFailed`` saying how many lines made it; the file is then
    closed as it is (its last line may be cut: a reader counts it corrupt) and the next
    write starts a new one.
    """

    def __init__(
        self,
        directory: Path,
        kind: str,
        run: str,
        max_bytes: int,
        max_age_ms: int,
        compressor: Callable[[Path], object] = compress,
        compress_now: Callable[[Path], object] = compress,
    ) -> None:
        #: What compresses the files failures left, at ``close`` (``compressor`` may
        #: only queue the work for a thread of its own).
        self._compress = compress_now
        self.directory = directory
        self.compressor = compressor
        self.kind = kind
        self.run = run
        self.max_bytes = max_bytes
        self.max_age_ms = max_age_ms
        self.index = 0
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self._start = 0
        self._size = 0
        #: Files closed after a failed write or rotation, compressed at ``close`` if there is room.
        self._abandoned: list[Path] = []

    def write(self, items: list[tuple[int, bytes]]) -> None:
        pending: list[bytes] = []
        written = 0
        try:
            for ts, line in items:
                if self._file is not None and (
                    (self._size and self._size + len(line) > self.max_bytes)
                    or ts - self._start >= self.max_age_ms
                ):
                    written += self._put(pending)
                    pending = []
                    self.rotate()
                if self._file is None:
                    self._open(ts)
                pending.append(line)
                self._size += len(line)
            written += self._put(pending)
        except WriteFailed as failed:
            self._abandon()
            raise WriteFailed(written + failed.lines, failed.error) from None
        except OSError as exc:
            self._abandon()
            raise WriteFailed(written, exc) from None

    def write_lines(
        self, parts: Sequence[bytes], ends: tuple[int, int], stamps: Callable[[], list[int]]
    ) -> None:
        """``write`` for lines already joined: ``parts``, one after the other, hold one line
        per ``stamps()`` item (each part whole lines).

        A batch that fits the live file (or a new one), by size and by the age of its first
        and last lines (``ends``), goes in one ``writev`` without splitting or copying: the
        usual case, a file holds thousands of batches.  Only a batch that does not fit asks
        for each line's ts (``stamps``) and is split where the file rotates.
        """
        size = sum(map(len, parts))
        if not size:
            return
        if self.fits(size, ends):
            if self._file is None:
                self._open(ends[0])
            try:
                self._size += size
                self._put_parts(parts)
            except WriteFailed:
                self._abandon()
                raise
            return
        lines = [line + b"\n" for line in b"".join(parts).split(b"\n")[:-1]]
        self.write(list(zip(stamps(), lines, strict=True)))

    def fits(self, size: int, ends: tuple[int, int]) -> bool:
        """Whether ``size`` bytes of lines whose first and last ts are ``ends`` go in the
        live file (or a new one) as they are, without a rotation."""
        first, last = ends
        if self._file is None:
            return size <= self.max_bytes and max(first, last) - first < self.max_age_ms
        return self._size + size <= self.max_bytes and max(first, last) - self._start < self.max_age_ms

    def _open(self, ts: int) -> None:
        self.index += 1
        self._start = ts
        self._size = 0
        self._path = self.directory / file_name(self.kind, ts, self.run, self.index)
        self._file = self._path.open("ab", buffering=0)

    def _put(self, lines: list[bytes]) -> int:
        """Write ``lines`` to the live file; returns how many (raises WriteFailed part-way)."""
        if not lines or self._file is None:
            return 0
        self._put_data(b"".join(lines))
        return len(lines)

    def _put_data(self, joined: bytes) -> None:
        self._put_parts((joined,))

    def _put_parts(self, parts: Sequence[bytes]) -> None:
        """``parts`` appended in order: one system call for all of them (``writev``, at most
        ``IOV_MAX`` at a time), and more only for what a short write left."""
        assert self._file is not None
        fd = self._file.fileno()
        pending: list[bytes | memoryview] = list(parts)
        done = 0
        try:
            while pending:
                n = os.writev(fd, pending[:IOV_MAX])
                done += n
                # Parts wholly written leave the list; a part cut short goes on from there.
                while pending and n >= len(pending[0]):
                    n -= len(pending.pop(0))
                if n:
                    pending[0] = memoryview(pending[0])[n:]
        except OSError as exc:
            raise WriteFailed(_lines_in(parts, done), exc) from None

    @property
    def live_path(self) -> Path | None:
        """The live file (None: none is open)."""
        return self._path

    def tick(self, now_ms: int) -> None:
        if self._file is not None and now_ms - self._start >= self.max_age_ms:
            self.rotate()

    def rotate(self) -> None:
        file, path = self._file, self._path
        if file is None or path is None:
            return
        self._file = self._path = None
        try:
            file.close()
            self.compressor(path)
        except OSError:
            self._abandoned.append(path)
            raise

    def _abandon(self) -> None:
        file, path = self._file, self._path
        self._file = self._path = None
        if file is not None:
            try:
                file.close()
            except OSError:
                pass
        if path is not None:
            self._abandoned.append(path)

    def leave_live(self) -> None:
        """Close the live file as it is, not rotated (as a crash leaves it)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def close(self) -> None:
        """Rotate the live file, and compress what failures left, if there is room now."""
        try:
            self.rotate()
        finally:
            for path in self._abandoned:
                try:
                    self._compress(path)
                except OSError:
                    pass
            self._abandoned.clear()
