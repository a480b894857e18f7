"""Writing and checking export lines in pure Python (no pyspark): a reference for the exporter.

The broker's exporter writes its lines its own, faster way (msgspec, a chunk at a time);
this module is the small executable version of the same rules: the tests and the
benchmarks write their files with it, and a test of the exporter can check the
broker's output with ``check_line``.

* ``problems(kind, record)`` lists what makes a record corrupt (empty: valid);
* ``check_line(kind, line)`` the same for one raw line, as a reader sees it;
* ``encode(kind, record)`` one line, compact UTF-8 JSON ending in ``\\n``;
* ``Records`` stamps ``v``, ``run`` and ``seq`` on new records of one run;
* ``ExportWriter`` appends lines to the live file, rotates it by size and age, and
  compresses a rotated file to ``.jsonl.gz`` (``files.RotatingFile``, as the broker does).
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, Final

from export_format.files import RotatingFile, compress, new_run_id
from export_format.schema import (
    DISCRIMINATOR,
    INT_MAX,
    INT_MIN,
    OLDEST_VERSION,
    VERSION,
    Field,
    Kind,
    fields,
    is_required,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
DEFAULT_MAX_AGE_MS: Final = 3_600_000
_PATTERNS: dict[str, re.Pattern[str]] = {}


def problems(kind: Kind, record: Mapping[str, Any]) -> list[str]:
    """Why a record is corrupt under schema version 4, 3, 2 or 1 (an empty list: it is valid)."""
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

    def event(self, ts: int, event: str, destination: str | None, **more: Any) -> dict[str, Any]:
        return self._stamp("events", ts, {"event": event, "destination": destination, **more})

    def metric(self, ts: int, row_type: str, destination: str | None = None, **more: Any) -> dict[str, Any]:
        return self._stamp("metrics", ts, {"type": row_type, "destination": destination, **more})


class ExportWriter:
    """Appends one kind of line for one run to ``directory``, rotating and compressing.

    The live file is ``{kind}-{start_ms}-{run}-{index}.jsonl``; ``start_ms`` is the ts of
    its first line. Before a line that would take the file past ``max_bytes``, or whose
    ts is ``max_age_ms`` or more after ``start_ms``, the live file is rotated: compressed
    to ``.jsonl.gz`` and removed (``files.RotatingFile``). ``tick(now_ms)`` rotates an
    idle file on age alone; ``close()`` rotates too, so a clean stop leaves only
    ``.jsonl.gz`` files.  Each line is written as it comes (one system call).
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
        self.check = check
        self.rotated: list[Path] = []
        directory.mkdir(parents=True, exist_ok=True)
        self._file = RotatingFile(directory, kind, run, max_bytes, max_age_ms, self._compressed)

    def _compressed(self, live: Path) -> None:
        self.rotated.append(compress(live))

    @property
    def index(self) -> int:
        return self._file.index

    @property
    def live_path(self) -> Path | None:
        return self._file.live_path

    def write(self, record: Mapping[str, Any]) -> None:
        self._file.write([(int(record["ts"]), encode(self.kind, record, check=self.check))])

    def tick(self, now_ms: int) -> None:
        self._file.tick(now_ms)

    def rotate(self) -> None:
        self._file.rotate()

    def close(self, *, rotate: bool = True) -> None:
        """Rotate the live file; with ``rotate=False`` just close it, leaving it live (as a crash would)."""
        if rotate:
            self._file.close()
        else:
            self._file.leave_live()


__all__ = ["ExportWriter", "Records", "check_line", "encode", "new_run_id", "problems"]
