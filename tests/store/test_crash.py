"""Crash safety: a writer killed with SIGKILL at random moments loses nothing it reported durable."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from store import keys
from store.persistent import MessageStore

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 8


def run_and_kill(path: Path, seed: int, rng: random.Random) -> list[str]:
    """Start the writer, let it report a random number of durable ids, then SIGKILL it."""
    errors = path.with_suffix(".stderr")
    with errors.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.store.crash_child", str(path), str(seed)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    assert child.stdout is not None
    lines: list[str] = []
    # The only reader of the pipe, to its end: what the child said before dying counts.
    reader = threading.Thread(target=lambda: lines.extend(child.stdout))  # type: ignore[arg-type]
    reader.start()
    wanted = rng.randrange(20, 2000)
    deadline = time.monotonic() + 10
    while len(lines) < wanted and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(rng.uniform(0, 0.03))
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    reader.join(10)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL, errors.read_text()
    assert len(lines) >= wanted, errors.read_text()
    return lines


def test_every_id_reported_durable_survives_a_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "store"
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    seen: dict[str, set[int]] = {"D": set(), "A": set(), "X": set()}
    for round_ in range(ROUNDS):
        for line in run_and_kill(path, seed + round_, rng):
            kind, seq = line.split()
            seen[kind].add(int(seq))
        store = MessageStore.open(path)
        try:
            found, counted = scan(store)
            recovery = store.recover()
        finally:
            store.close()
        context = f"seed {seed}, round {round_}"
        # Receipted and never acked: there.  Ack durable: gone.  Ack submitted: either.
        assert seen["D"] - seen["A"] <= set(found), context
        assert not seen["X"] & set(found), context
        for dest in recovery.destinations:
            levels = Counter(p for d, p in found.values() if d == dest.id)
            assert list(dest.counts) == [levels[p] for p in range(10)], context
            assert dest.bytes == counted[dest.id], context
        assert recovery.next_seq > max(found, default=0), context
    assert len(seen["D"]) > ROUNDS * 20


def scan(store: MessageStore) -> tuple[dict[int, tuple[int, int]], Counter[int]]:
    """Every stored message, read the slow way: seq -> (dest, priority); bytes per dest."""
    found: dict[int, tuple[int, int]] = {}
    counted: Counter[int] = Counter()
    for key, value in store.db.range(keys.MESSAGE, keys.prefix_end(keys.MESSAGE)):
        dest, priority, seq = keys.unpack_message_key(key)
        assert value.startswith(b"%d:" % seq)
        found[seq] = (dest, priority)
        counted[dest] += len(value)
    return found, counted
