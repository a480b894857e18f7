"""Writing and checking export lines in pure Python (no pyspark): a reference for the exporter.

The broker's exporter must not import this package at run time; it implements
README.md, and this module is the small executable version of the same rules: the tests
and the benchmark write their files with it, and a test of the exporter can check the
broker's output with ``check_line``.

* ``problems(kind, record)`` lists what makes a record corrupt (empty: valid);
* ``check_line(kind, line)`` the same for one raw line, as a reader sees it;
* ``encode(kind, record)`` one line, compact UTF-8 JSON ending in ``\\n``;
* ``Records`` stamps ``v``, ``run`` and ``seq`` on new records of one run;
* ``ExportWriter`` appends lines to the live file, rotates it by size and age, and
  compresses a rotated file to ``.jsonl.gz`` (written to ``.gz.tmp``, then renamed, so a
  reader never sees half a gzip file).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import secrets
import shutil
import time
from typing import TYPE_CHECKING, Any, Final

from spark_jobs.schema import (
    DISCRIMINATOR,
    FILE_NAME,
    INT_MAX,
    INT_MIN,
    OLDEST_VERSION,
    VERSION,
    Field,
    Kind,
    fields,
    file_name,
    is_required,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
DEFAULT_MAX_AGE_MS: Final = 3_600_000
_PATTERNS: dict[str, re.Pattern[str]] = {}


def new_run_id() -> str:
    """A run id that sorts by start time: base-36 epoch ms, then 8 random hex digits."""
    ms = int(time.time() * 1000)
    digits = ""
    while ms:
        ms, rest = divmod(ms, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
    return f"{digits}.{secrets.token_hex(4)}"


def problems(kind: Kind, record: Mapping[str, Any]) -> list[str]:
    """Why a record is corrupt under schema version 3, 2 or 1 (an empty list: it is valid)."""
    what = record.get(DISCRIMINATOR[kind])
    version = record.get("v")
    found: list[str] = []
    for f in fields(kind):
        value = record.get(f.name)
        if value is None:
            if is_required(f, what if isinstance(what, str) else None):
                found.append(f"{f.name}: missing")
            continue
        problem = _problem(f, value) or _misplaced(f, record, what, version)
        if problem:
            found.append(f"{f.name}: {problem}")
    return found


def _misplaced(f: Field, record: Mapping[str, Any], what: object, version: object) -> str | None:
    """Why a field is not allowed on this line (its event, its version, a field it needs
    missing), if it is not."""
    if f.only_on is not None and what not in f.only_on:
        return f"only on {', '.join(f.only_on)} lines"
    if f.since > OLDEST_VERSION and (type(version) is not int or version < f.since):
        return f"only on version {f.since} lines and later"
    if f.needs is not None and record.get(f.needs) is None:
        return f"only with {f.needs}"
    return None


def _problem(f: Field, value: object) -> str | None:
    if f.type == "str":
        if not isinstance(value, str):
            return "not a string"
        if f.nonempty and not value:
            return "empty"
        if f.allowed is not None and value not in f.allowed:
            return f"{value!r} is not one of {', '.join(f.allowed)}"
        if f.pattern is not None:
            pattern = _PATTERNS.setdefault(f.pattern, re.compile(f.pattern))
            if not pattern.fullmatch(value):
                return f"{value!r} does not match {f.pattern}"
        if f.prefix is not None and (len(value) <= len(f.prefix) or not value.startswith(f.prefix)):
            return f"{value!r} is not {f.prefix!r} followed by a name"
        return None
    if f.type == "bool":
        return None if isinstance(value, bool) else "not a boolean"
    if f.type == "pairs":
        return _pairs_problem(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "not a number"
    if f.type == "int" and (not isinstance(value, int) or not INT_MIN <= value <= INT_MAX):
        return "not a 64-bit integer"
    if not math.isfinite(value):
        return "not finite"
    if f.minimum is not None and value < f.minimum:
        return f"{value} < {f.minimum}"
    if f.maximum is not None and value > f.maximum:
        return f"{value} > {f.maximum}"
    return None


def _pairs_problem(value: object) -> str | None:
    if not isinstance(value, list):
        return "not an array"
    if not value:
        return "empty"
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) and s for s in pair)):
            return f"{pair!r} is not a pair of non-empty strings"
    return None


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def check_line(kind: Kind, line: bytes | str) -> list[str]:
    """Why a raw line is corrupt, as the Spark job decides it (an empty list: valid)."""
    try:
        record = json.loads(line, parse_constant=_no_constants)
    except ValueError as exc:  # JSONDecodeError and bad UTF-8 are both ValueErrors
        return [f"not JSON: {exc}"]
    if not isinstance(record, dict):
        return ["not a JSON object"]
    return problems(kind, record)


def encode(kind: Kind, record: Mapping[str, Any], *, check: bool = True) -> bytes:
    """One line: compact JSON, UTF-8, ``\\n``-terminated; null fields left out."""
    if check:
        found = problems(kind, record)
        if found:
            raise ValueError(f"invalid {kind} record: {'; '.join(found)}")
    present = {k: v for k, v in record.items() if v is not None}
    return (json.dumps(present, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode()


class Records:
    """New records of one broker run: ``v``, ``run`` and the next ``seq`` of their kind.

    ``version``: the ``v`` stamped (an older one to write what an older broker did).
    """

    __slots__ = ("_seq", "run", "version")

    def __init__(self, run: str | None = None, version: int = VERSION) -> None:
        self.run = run or new_run_id()
        self.version = version
        self._seq: dict[Kind, int] = {"events": 0, "metrics": 0}

    def _stamp(self, kind: Kind, ts: int, fields_: dict[str, Any]) -> dict[str, Any]:
        self._seq[kind] += 1
        return {"v": self.version, "run": self.run, "seq": self._seq[kind], "ts": ts, **fields_}

    def last_seq(self, kind: Kind) -> int:
        return self._seq[kind]

    def event(self, ts: int, event: str, destination: str, **more: Any) -> dict[str, Any]:
        return self._stamp("events", ts, {"event": event, "destination": destination, **more})

    def metric(self, ts: int, row_type: str, destination: str | None = None, **more: Any) -> dict[str, Any]:
        return self._stamp("metrics", ts, {"type": row_type, "destination": destination, **more})


class ExportWriter:
    """Appends one kind of line for one run to ``directory``, rotating and compressing.

    The live file is ``{kind}-{start_ms}-{run}-{index}.jsonl``; ``start_ms`` is the ts of
    its first line. Before a line that would take the file past ``max_bytes``, or whose
    ts is ``max_age_ms`` or more after ``start_ms``, the live file is rotated: compressed
    to ``.jsonl.gz`` and removed. ``tick(now_ms)`` rotates an idle file on age alone;
    ``close()`` rotates too, so a clean stop leaves only ``.jsonl.gz`` files.
    """

    def __init__(
        self,
        directory: Path,
        kind: Kind,
        run: str,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_age_ms: int = DEFAULT_MAX_AGE_MS,
        check: bool = True,
    ) -> None:
        self.directory = directory
        self.kind: Kind = kind
        self.run = run
        self.max_bytes = max_bytes
        self.max_age_ms = max_age_ms
        self.check = check
        self.index = 0
        self.rotated: list[Path] = []
        self._file: Any = None
        self._path: Path | None = None
        self._start = 0
        self._size = 0
        directory.mkdir(parents=True, exist_ok=True)

    @property
    def live_path(self) -> Path | None:
        return self._path

    def write(self, record: Mapping[str, Any]) -> None:
        line = encode(self.kind, record, check=self.check)
        ts = int(record["ts"])
        if self._file is not None and (
            (self._size and self._size + len(line) > self.max_bytes) or ts - self._start >= self.max_age_ms
        ):
            self.rotate()
        if self._file is None:
            self.index += 1
            self._start = ts
            self._path = self.directory / file_name(self.kind, ts, self.run, self.index)
            self._file = self._path.open("ab")
            self._size = 0
        self._file.write(line)
        self._size += len(line)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def tick(self, now_ms: int) -> None:
        if self._file is not None and now_ms - self._start >= self.max_age_ms:
            self.rotate()

    def rotate(self) -> None:
        if self._file is None or self._path is None:
            return
        self._file.close()
        self._file = None
        self.rotated.append(compress(self._path))
        self._path = None

    def close(self, *, rotate: bool = True) -> None:
        """Rotate the live file; with ``rotate=False`` just close it, leaving it live (as a crash would)."""
        if rotate:
            self.rotate()
        elif self._file is not None:
            self._file.close()
            self._file = None


def compress(live: Path) -> Path:
    """``x.jsonl`` -> ``x.jsonl.gz`` via ``x.jsonl.gz.tmp`` and a rename; removes ``x.jsonl``.

    Between the rename and the removal both files exist: a reader then sees every line
    twice and drops the second copy by its (run, seq) key.
    """
    done = live.with_name(live.name + ".gz")
    tmp = live.with_name(live.name + ".gz.tmp")
    with live.open("rb") as src, tmp.open("wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz:
            shutil.copyfileobj(src, gz, 1 << 20)
        raw.flush()
        os.fsync(raw.fileno())
    tmp.replace(done)
    live.unlink()
    return done


def finish_rotations(directory: Path, current_run: str) -> list[Path]:
    """At start-up: compress live files that earlier runs left, remove stale ``.gz.tmp``."""
    for stale in directory.glob("*.jsonl.gz.tmp"):
        stale.unlink()
    done: list[Path] = []
    for path in sorted(directory.glob("*.jsonl")):
        match = FILE_NAME.match(path.name)
        if match and match["run"] != current_run:
            done.append(compress(path))
    return done
