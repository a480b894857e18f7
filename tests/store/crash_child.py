"""The writer that test_crash.py kills with SIGKILL: ``python -m tests.store.crash_child PATH SEED``.

Stores messages on three queues through the group committer and acks some of those
already durable, as a broker would.  Prints ``D seq`` once a message's batch is
durable and ``X seq`` once its ack's is, each line in one unbuffered write: what was
printed is what a broker would have receipted.  ``A seq`` comes before an ack is
submitted.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections import deque
from pathlib import Path

from store.api import Batch
from store.persistent import MessageStore

#: Submissions in flight before the producer waits: a bounded window, like receipts.
WINDOW = 64


def main(path: Path, seed: int) -> None:
    rng = random.Random(seed)
    store = MessageStore.open(path, seq_block=100)
    committer = store.start_committer(lambda callback: callback(), die)
    batch = Batch()
    dests = [store.add_destination(batch, "queue", f"q{i}") for i in range(3)]
    committer.submit_batch(batch)
    durable: deque[tuple[int, int, int, int]] = deque()
    window = threading.Semaphore(WINDOW)
    while True:
        window.acquire()
        batch = Batch()
        (seq,) = store.reserve_sequences(1)
        value = b"%d:" % seq + b"x" * rng.randrange(300)
        entry = (rng.choice(dests), rng.randrange(10), seq, len(value))
        store.add_messages(batch, entry[0], [(entry[1], seq, value)])
        line = f"D {seq}\n"
        if durable and rng.random() < 0.4:
            dest, priority, acked, size = durable.popleft()
            store.remove_messages(batch, dest, [(priority, acked, size)])
            # Said before the write: from here on the message may be gone.
            say(f"A {acked}\n")
            line += f"X {acked}\n"

        def done(line: str = line, entry: tuple[int, int, int, int] = entry) -> None:
            say(line)
            durable.append(entry)
            window.release()

        committer.submit_batch(batch, done)


def die(exc: BaseException) -> None:
    """on_error, on the writer thread: end the process (``sys.exit`` would end the thread)."""
    os.write(sys.stderr.fileno(), f"store failed: {exc}\n".encode())
    os._exit(1)


def say(lines: str) -> None:
    # One unbuffered write: two threads speak, and sys.stdout is not safe to share.
    os.write(sys.stdout.fileno(), lines.encode())


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
