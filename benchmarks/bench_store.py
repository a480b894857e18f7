"""The persistent store on its own (issue 6).  A script that prints figures, not a test.

1. Group commit: 1 KiB records through ``GroupCommitter`` from 1 and 8 submitting
   threads, each waiting for a durable callback every 100 records (a producer with a
   receipt every 100 messages), and from one thread building batches with the
   ``MessageStore`` builders as the broker will.  Prints records/s, batches/s, the
   mean batch and the mean synced write.
2. Recovery: a child process fills a store with N 1 KiB messages (default 1,000,000)
   over a few queues and is killed with SIGKILL once they are durable.  Then, each in
   a fresh process: ``open()`` + ``recover()`` after that kill, and again after the
   clean close that follows; the time, the RSS it added, and the time to page the
   first 500 messages.

    python benchmarks/bench_store.py [--messages 1000000] [--records 40000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from store.api import Batch  # noqa: E402
from store.commit import GroupCommitter  # noqa: E402
from store.leveldb import LevelDB  # noqa: E402
from store.persistent import MessageStore  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable

RECEIPT_EVERY = 100
FILL_BATCH = 1000
PRIORITY = 4


def rss_kb(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


# -- group commit ------------------------------------------------------------------


def commit_threads(path: Path, threads: int, records: int, size: int) -> dict[str, float]:
    """``threads`` producers share ``records`` 1 KiB puts, each waiting every 100."""
    db = LevelDB(path, wipe=True, sync=True)
    committer = GroupCommitter(db, lambda callback: callback(), die)
    value = b"x" * size
    per_thread = records // threads

    def produce(t: int) -> None:
        for i in range(per_thread):
            key = b"k%02d%09d" % (t, i)
            if (i + 1) % RECEIPT_EVERY:
                committer.submit([(key, value)], [], _nothing)
            else:
                receipt = threading.Event()
                committer.submit([(key, value)], [], receipt.set)
                receipt.wait()

    start = time.perf_counter()
    workers = [threading.Thread(target=produce, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    committer.flush_wait()
    elapsed = time.perf_counter() - start
    committer.close()
    db.close()
    return figures(committer, elapsed)


def commit_builders(path: Path, records: int, size: int) -> dict[str, float]:
    """One owner thread building a batch per message with ``add_messages``, as the broker will."""
    store = MessageStore.open(path)
    committer = store.start_committer(lambda callback: callback(), die)
    batch = Batch()
    dest = store.add_destination(batch, "queue", "bench")
    committer.submit_batch(batch)
    value = b"x" * size
    start = time.perf_counter()
    for i, seq in enumerate(store.reserve_sequences(records)):
        batch = Batch()
        store.add_messages(batch, dest, [(PRIORITY, seq, value)])
        if (i + 1) % RECEIPT_EVERY:
            committer.submit_batch(batch, _nothing)
        else:
            receipt = threading.Event()
            committer.submit_batch(batch, receipt.set)
            receipt.wait()
    committer.flush_wait()
    elapsed = time.perf_counter() - start
    store.close()
    return figures(committer, elapsed)


def _nothing() -> None:
    return None


def die(exc: BaseException) -> None:
    """on_error, on the writer thread: end the process (``sys.exit`` would end the thread)."""
    print(f"store failed: {exc}", file=sys.stderr, flush=True)
    os._exit(1)


def figures(committer: GroupCommitter, elapsed: float) -> dict[str, float]:
    return {
        "records_per_s": committer.records / elapsed,
        "batches_per_s": committer.batches / elapsed,
        "mean_batch": committer.records / max(committer.batches, 1),
        "largest_batch": committer.largest_batch,
        "mean_write_ms": 1000 * committer.fsync_seconds / max(committer.batches, 1),
    }


# -- recovery ----------------------------------------------------------------------


def fill(path: Path, messages: int, size: int, destinations: int) -> None:
    """(child) Store ``messages`` over ``destinations`` queues, say so, and wait to be killed."""
    store = MessageStore.open(path)
    committer = store.start_committer(lambda callback: callback(), die)
    batch = Batch()
    dests = [store.add_destination(batch, "queue", f"bench.{i}") for i in range(destinations)]
    committer.submit_batch(batch)
    value = b"x" * size
    window = threading.Semaphore(8)
    for first in range(0, messages, FILL_BATCH):
        window.acquire()
        batch = Batch()
        seqs = store.reserve_sequences(min(FILL_BATCH, messages - first))
        dest = dests[first // FILL_BATCH % destinations]
        store.add_messages(batch, dest, [(PRIORITY, seq, value) for seq in seqs])
        committer.submit_batch(batch, window.release)
    committer.flush_wait()
    print("durable", flush=True)
    time.sleep(3600)


def measure(path: Path) -> None:
    """(child) Time open() + recover(), the RSS they add, and paging the first 500."""
    before = rss_kb()
    start = time.perf_counter()
    store = MessageStore.open(path)
    recovery = store.recover()
    opened = time.perf_counter() - start
    after = rss_kb()
    biggest = max(recovery.destinations, key=lambda d: sum(d.counts))
    start = time.perf_counter()
    rows = store.page(biggest.id, PRIORITY, 0, 500)
    paged = time.perf_counter() - start
    stored = sum(sum(d.counts) for d in recovery.destinations)
    store.close()
    result = {
        "stored": stored,
        "open_recover_s": opened,
        "rss_before_mb": before / 1024,
        "rss_delta_mb": (after - before) / 1024,
        "rss_peak_mb": rss_kb("VmHWM") / 1024,
        "page_500_ms": 1000 * paged,
        "paged": len(rows),
    }
    print(json.dumps(result), flush=True)


def child(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *args]


def recovery_figures(
    path: Path, messages: int, size: int, destinations: int
) -> list[tuple[str, dict[str, float]]]:
    start = time.perf_counter()
    filler = subprocess.Popen(
        child("--fill", str(path), str(messages), str(size), str(destinations)),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert filler.stdout is not None
    if filler.stdout.readline().strip() != "durable":
        filler.kill()
        sys.exit("the fill failed")
    filled = time.perf_counter() - start
    filler.send_signal(signal.SIGKILL)
    filler.wait()
    filler.stdout.close()
    print(f"filled {messages:,} x {size} B in {filled:.1f} s ({messages / filled:,.0f} msgs/s), then kill -9")
    out = []
    for label in ("after kill -9", "after a clean close"):
        result = subprocess.run(child("--measure", str(path)), capture_output=True, text=True, check=True)
        out.append((label, json.loads(result.stdout.splitlines()[-1])))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--records", type=int, default=40_000, help="records per group-commit run")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--destinations", type=int, default=4)
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to put the stores (default: a temp dir)"
    )
    parser.add_argument("--fill", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        path, messages, size, destinations = args.fill
        fill(Path(path), int(messages), int(size), int(destinations))
        return
    if args.measure:
        measure(Path(args.measure))
        return
    base = Path(tempfile.mkdtemp(prefix="bench-store-", dir=args.dir))
    try:
        run(base, args)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(base: Path, args: argparse.Namespace) -> None:
    print(f"{os.cpu_count()} CPUs; stores under {base}")
    print(f"\ngroup commit, {args.size} B records, a durable wait every {RECEIPT_EVERY} per producer")
    print(f"{'':28} {'records/s':>10} {'batches/s':>10} {'mean batch':>11} {'largest':>8} {'write ms':>9}")
    runs: list[tuple[str, Callable[[], dict[str, float]]]] = [
        ("GroupCommitter, 1 thread", lambda: commit_threads(base / "c1", 1, args.records, args.size)),
        ("GroupCommitter, 8 threads", lambda: commit_threads(base / "c8", 8, args.records, args.size)),
        ("MessageStore builders, 1", lambda: commit_builders(base / "b1", args.records, args.size)),
    ]
    for label, bench in runs:
        f = bench()
        print(
            f"{label:28} {f['records_per_s']:>10,.0f} {f['batches_per_s']:>10,.0f} {f['mean_batch']:>11.1f}"
            f" {f['largest_batch']:>8,.0f} {f['mean_write_ms']:>9.2f}"
        )
    print(f"\nrecovery, {args.messages:,} messages over {args.destinations} queues")
    for label, f in recovery_figures(base / "recovery", args.messages, args.size, args.destinations):
        print(
            f"{label:20} open+recover {f['open_recover_s'] * 1000:7.1f} ms  RSS +{f['rss_delta_mb']:.1f} MB"
            f" (process {f['rss_peak_mb']:.1f} MB peak)"
            f"  first {f['paged']} paged in {f['page_500_ms']:.1f} ms  [{f['stored']:,} stored]"
        )


if __name__ == "__main__":
    main()
