"""A long operation (count, move, copy, remove, purge) followed to its end, its progress
on stderr."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from adminctl.client import AdminClient, AdminClientError
from adminctl.common import CommandFailed

if TYPE_CHECKING:
    import argparse

#: Seconds each poll of a running operation waits on the server for it to finish.
POLL_WAIT = 1.0
APPLIED = {"move": "moved", "copy": "copied", "remove": "removed", "purge": "removed"}


def run_operation(
    client: AdminClient, args: argparse.Namespace, path: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Start an operation and follow it to the end, showing progress on stderr."""
    op: dict[str, Any] = client.post(path, {**body, "wait": POLL_WAIT})
    progress = ProgressLine(sys.stderr, quiet=args.quiet)
    try:
        while op["state"] == "running":
            progress.show(op)
            op = client.get("/operations/" + op["id"], wait=POLL_WAIT)
    except KeyboardInterrupt:
        progress.clear()
        try:
            client.delete("/operations/" + op["id"])
        except AdminClientError:
            pass
        raise
    progress.clear()
    if op["state"] == "failed":
        error = op.get("error") or {}
        raise CommandFailed(f"{op['kind']} failed: {error.get('message', 'unknown error')}", op)
    if op["state"] == "cancelled":
        applied = APPLIED.get(op["kind"])
        done = f" after {op[applied]} message(s) {applied}" if applied else ""
        raise CommandFailed(f"{op['kind']} was cancelled{done}", op)
    return op


class ProgressLine:
    """One status line on stderr: redrawn in place on a terminal, a line per update otherwise."""

    def __init__(self, stream: TextIO, quiet: bool) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._quiet = quiet
        self._shown = False
        self._last = 0.0

    def show(self, op: dict[str, Any]) -> None:
        now = time.monotonic()
        if self._quiet or (not self._tty and now - self._last < 2.0):
            return
        self._last = now
        total = op.get("total")
        scanned = f"{op['scanned']}" + (f"/{total} ({100 * op['scanned'] // total}%)" if total else "")
        parts = [f"{op['kind']} {op['destination']}", f"scanned {scanned}", f"matched {op['matched']}"]
        applied = APPLIED.get(op["kind"])
        if applied:
            parts.append(f"{applied} {op[applied]}")
        text = ", ".join(parts) + f" ({op['elapsed_ms'] / 1000:.0f} s)"
        if self._tty:
            self._stream.write("\r\x1b[K" + text)
        else:
            self._stream.write(text + "\n")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        if self._shown and self._tty:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
