"""Memory no limit counted (issue 35 item 3): subscriptions, destinations, transactions.

    python benchmarks/bench_limits.py                                  # every case
    python benchmarks/bench_limits.py --cases subs,subs-bridge --subs 100000
    python benchmarks/bench_limits.py --cases destinations --destinations 50000
    python benchmarks/bench_limits.py --cases transaction --json-out /tmp/limits.json

A script that prints figures, not a test; a sibling of bench_many.py, whose pinger,
memory watch, worker processes and stompd child it uses (its docstring says how a stall
is seen: the pinger's round trips, a SEND and its RECEIPT, during a phase).  Each case
runs against a fresh stompd child on free ports:

  subs          one connection SUBSCRIBEs --subs times to one topic (1,000 frames a write,
                a receipt on the last of each; phase `subscribe`), then DISCONNECTs
                (`teardown`).  Figures: the pinger's stall max / p99 while they go in, the
                broker's peak RSS, memoryUsage after (GET /api/v1/usage).
  subs-bridge   the same with a second stompd whose <networkConnector> bridges to this one:
                its bridge subscribes to this broker's consumer advisories, so each
                SUBSCRIBE publishes one (with the topic's consumer count).
  destinations  one connection SENDs a 1-byte message to each of --destinations new queues
                (a receipt every 1,000, at most two batches outstanding) under
                --dest-memory-limit (64mb); the creation stops when the limit is full (no
                receipt for --stop-after s).  Then --dest-watch s (two 10 s history
                samples) watching GET /api/v1/usage once a second.  Figures: queues made,
                memoryUsage's highest (the meter's peak) and last percent of the limit, the
                peak RSS from the start of the creation to the end of the watch, beside
                the limit + 100 MB.
  transaction   BEGIN, --tx-messages SENDs of --tx-size bytes in it (each with a receipt),
                no COMMIT, under --tx-memory-limit (256mb); then another connection SENDs
                one message with a receipt.  Figures: how many of the transaction's SENDs
                were receipted (until --stop-after s pass without one) and in how long,
                memoryUsage then, the RSS before and at its peak, and whether the other
                producer's SEND was receipted within --stop-after s.

The load average is printed with each case (the machine is shared: compare figures
taken at similar load).  Everything it starts it stops by pid.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import bench_many as many
from peers import Unavailable

from perf.client import StompFailure
from perf.frames import encode

if TYPE_CHECKING:
    from collections.abc import Iterator
    from multiprocessing.connection import Connection
    from multiprocessing.context import SpawnContext

CASES = ("subs", "subs-bridge", "destinations", "transaction")
PREFIX = "bench.limits"
MB = 1 << 20


class LimitsWorker(many.WorkerState):
    """bench_many's worker, and a transaction that is never committed."""

    async def op_transaction(self, destination: str, count: int, size: int, timeout: float) -> many.Reply:
        """BEGIN, then `count` SENDs of `size` bytes in it, each with a receipt; no COMMIT.
        Stops after `timeout` s without progress (a broker that holds the SENDs back
        stops reading too: the writes wait)."""
        conn = await self._one("tx", timeout)
        body = b"x" * size
        t0 = time.monotonic()
        conn.write(encode("BEGIN", {"transaction": "tx1"}))
        waits: list[asyncio.Future[None]] = []

        async def send_all() -> None:
            for _ in range(count):
                receipt_id, fut = conn.new_receipt()
                waits.append(fut)
                headers = {"destination": destination, "transaction": "tx1", "receipt": receipt_id.decode()}
                conn.write(encode("SEND", {**headers, "content-length": str(size)}, body))
                await conn.drain()

        sending = asyncio.ensure_future(send_all())
        receipted = 0
        last = time.monotonic()
        while receipted < count and time.monotonic() - last < timeout:
            if receipted < len(waits):
                try:
                    await asyncio.wait_for(asyncio.shield(waits[receipted]), 0.1)
                except TimeoutError:
                    continue
                except StompFailure as exc:
                    sending.cancel()
                    return {"t0": t0, "t1": time.monotonic(), "receipted": receipted, "note": str(exc)}
                receipted += 1
                last = time.monotonic()
            else:
                await asyncio.sleep(0.01)
        sending.cancel()
        return {"t0": t0, "t1": last, "receipted": receipted}

    async def op_send_one(self, group: str, destination: str, timeout: float) -> many.Reply:
        conn = await self._one(group, timeout)
        t0 = time.monotonic()
        try:
            await conn.request("SEND", {"destination": destination}, timeout)
        except (TimeoutError, StompFailure) as exc:
            return {"t0": t0, "t1": time.monotonic(), "receipted": False, "note": str(exc)}
        return {"t0": t0, "t1": time.monotonic(), "receipted": True}


def worker_main(pipe: Connection, port: int, vhost: str) -> None:
    many.raise_fd_limit()
    many.install_uvloop()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    asyncio.run(LimitsWorker(pipe, port, vhost).serve())


class Worker(many.Worker):
    def __init__(self, ctx: SpawnContext, name: str, port: int, vhost: str) -> None:
        self.name = name
        self.pipe, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, port, vhost), daemon=True, name=name)
        self.proc.start()
        child.close()
        self._next = 0


def bridge_config(name: str, remote_port: int) -> str:
    """A broker with one bridge to 127.0.0.1:remote_port (it reads that broker's advisories)."""
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}">
    <networkConnectors>
      <networkConnector name="to-bench" uri="static:(stomp://127.0.0.1:{remote_port})"/>
    </networkConnectors>
  </broker>
</beans>
"""


class Bench(many.Bench):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        #: The case's --memory-limit (each case has its own).
        self.memory_limit: str | None = None

    def target_for(self, case: str) -> many.Target:
        return many.Stompd(self.memory_limit, root=self.args.broker_root)

    @contextlib.contextmanager
    def run(self, name: str, n: str, memory_limit: str | None) -> Iterator[tuple[many.Case, Run]]:
        self.memory_limit = memory_limit
        with self.case(name, n) as case, Run(self, case) as started:
            case.figures["memory_limit"] = memory_limit or "default (1 gb)"
            yield case, cast("Run", started)

    def usage(self, run: Run) -> dict[str, Any]:
        assert run.target.http_port is not None
        return dict(json.loads(many.http_get(run.target.http_port, "/api/v1/usage", self.cap)))

    def _usage_figures(self, case: many.Case, run: Run, prefix: str = "memory") -> dict[str, Any]:
        usage = self.usage(run)
        memory = usage["memory"]
        case.figures[f"{prefix}_used_mb"] = round(memory["used"] / MB, 1)
        case.figures[f"{prefix}_peak_pct"] = round(100 * memory["peak"] / memory["limit"], 1)
        return usage

    # -- subscriptions ----------------------------------------------------------------------
    def subscriptions(self, n: int, bridge: bool) -> None:
        name = "subs-bridge" if bridge else "subs"
        with self.run(name, f"{n:,}", self.args.subs_memory_limit) as (case, run):
            other: many.Stompd | None = None
            try:
                if bridge:
                    config = bridge_config("bench-bridge", run.target.port)
                    other = many.Stompd(None, self.args.broker_root, config)
                    other.start()
                    self._wait_bridged(run, other)
                w = run.worker("w")
                where = f"/topic/{PREFIX}.prices"
                before = run.settle_rss(1)
                try:
                    run.phase(
                        "subscribe",
                        lambda: self.ask(w, "subscribe_many", group="one", destination=where, n=n),
                    )
                except many.Stop:
                    # Held back (the memory limit): how far it got.
                    case.figures["subscribed"] = self._subscribed(run)
                    self._usage_figures(case, run)
                    raise
                after = run.settle_rss(1)
                case.figures["rss_per_subscription_kb"] = round((after - before) * 1024 / n, 2)
                self._usage_figures(case, run)
                run.phase("teardown", lambda: self.ask(w, "disconnect", group="one"))
            finally:
                if other is not None:
                    other.stop(self.cap)

    def _subscribed(self, run: Run) -> int:
        """How many subscriptions the broker's connections have."""
        assert run.target.http_port is not None
        listing = json.loads(many.http_get(run.target.http_port, "/api/v1/connections", self.cap))
        rows = listing["connections"] if isinstance(listing, dict) else listing
        return sum(int(row.get("subscriptions", 0)) for row in rows)

    def _wait_bridged(self, run: Run, other: many.Stompd) -> None:
        """Until this broker has the bridge's two advisory subscriptions."""
        assert run.target.http_port is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._subscribed(run) >= 2 + 1:  # + the pinger's sink
                return
            time.sleep(0.2)
        raise Unavailable("the bridge did not subscribe to the advisories within 60 s")

    # -- destinations -----------------------------------------------------------------------
    def many_destinations(self, n: int) -> None:
        limit = self.args.dest_memory_limit
        with self.run("destinations", f"{n:,}", limit) as (case, run):
            before, start, reply = self._timed(run, "create", kind="queue-send", prefix=f"{PREFIX}.q", n=n)
            case.figures["created"] = int(reply.get("done", 0))
            case.figures["creation_s"] = round(reply["t1"] - reply["t0"], 2)
            if reply.get("timed_out"):
                case.figures["creation_stopped"] = reply.get("note", "")
            highest = 0.0
            for _ in range(int(self.args.dest_watch)):
                time.sleep(1)
                usage = self.usage(run)
                memory = usage["memory"]
                highest = max(highest, 100 * memory["used"] / memory["limit"])
            usage = self._usage_figures(case, run)
            case.figures["memory_pct_seen"] = round(highest, 1)
            case.figures["destinations"] = usage["destinations"]
            assert run.memory is not None
            peak = run.memory.peak_mb(start, time.monotonic())
            case.figures.update(rss_before_mb=round(before, 1), rss_peak_mb=round(peak or 0, 1))
            case.figures["rss_bound_mb"] = round(_mb(limit) + 100, 1)
            many.log(f"  {case.figures}")

    def _timed(self, run: Run, op: str, **kwargs: Any) -> tuple[float, float, many.Reply]:
        """A worker of its own does ``op`` (each wait in it at most --stop-after s): the RSS
        before, when it started, its reply."""
        w = run.worker("w")
        before = run.settle_rss(1)
        start = time.monotonic()
        reply = w.call(op, self.args.stop_after + self.cap, timeout=self.args.stop_after, **kwargs)
        return before, start, reply

    # -- an open transaction ----------------------------------------------------------------
    def transaction(self) -> None:
        args = self.args
        label = f"{args.tx_messages} x {args.tx_size:,} B"
        with self.run("transaction", label, args.tx_memory_limit) as (case, run):
            destination = f"/queue/{PREFIX}.tx"
            before, start, reply = self._timed(
                run, "transaction", destination=destination, count=args.tx_messages, size=args.tx_size
            )
            w = run.workers[0]
            case.figures["tx_receipted"] = int(reply["receipted"])
            case.figures["tx_s"] = round(reply["t1"] - reply["t0"], 2)
            if reply.get("note"):
                case.figures["tx_note"] = reply["note"]
            self._usage_figures(case, run)
            other = w.call(
                "send_one",
                args.stop_after + self.cap,
                group="other",
                destination=f"/queue/{PREFIX}.other",
                timeout=args.stop_after,
            )
            case.figures["other_producer_receipted"] = bool(other["receipted"])
            assert run.memory is not None
            peak = run.memory.peak_mb(start, time.monotonic())
            case.figures.update(rss_before_mb=round(before, 1), rss_peak_mb=round(peak or 0, 1))
            many.log(f"  {case.figures}")


class Run(many.Run):
    def worker(self, name: str) -> Worker:
        worker = Worker(self.bench.ctx, f"{self.case.case}-{name}", self.target.port, self.target.vhost)
        self.workers.append(worker)
        return worker


def _mb(size: str) -> float:
    text = size.lower().replace(" ", "")
    for unit, scale in (("gb", 1024), ("mb", 1), ("kb", 1 / 1024)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float(text) / MB


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated, of: " + ", ".join(CASES))
    p.add_argument("--subs", default="100000", help="SUBSCRIBEs on one connection (100000; a list)")
    p.add_argument("--subs-memory-limit", help="stompd --memory-limit for the subs cases (default 1 gb)")
    p.add_argument("--destinations", type=int, default=50_000)
    p.add_argument("--dest-memory-limit", default="64mb")
    p.add_argument("--dest-watch", type=float, default=25.0, help="s watching usage after the creation")
    p.add_argument("--tx-messages", type=int, default=400)
    p.add_argument("--tx-size", type=int, default=MB)
    p.add_argument("--tx-memory-limit", default="256mb")
    p.add_argument("--stop-after", type=float, default=15.0, help="s without a receipt: stopped (15)")
    p.add_argument("--cap", type=float, default=120.0, help="longest wait for any one thing, s (120)")
    p.add_argument("--settle", type=float, default=1.0, help="s added to a phase's window after it (1)")
    p.add_argument("--ping-interval", type=float, default=0.001, help="s between ping starts (0.001)")
    p.add_argument(
        "--broker-root",
        type=Path,
        default=many.ROOT,
        help="the checkout stompd runs from (another one: its figures, say a BEFORE); this one's by default",
    )
    p.add_argument("--json-out", type=Path)
    args = p.parse_args(argv)
    args.broker = "stompd"
    args.memory_limit = None  # each case says its own (bench_many.report reads this)
    chosen = args.cases.split(",")
    unknown = sorted(set(chosen) - set(CASES))
    if unknown:
        p.error(f"unknown: {', '.join(unknown)}")
    signal.signal(signal.SIGTERM, many._interrupt)
    many.raise_fd_limit()
    bench = Bench(args)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    many.log(f"bench_limits.py, load {many.load()}")
    try:
        for case in chosen:
            if case in ("subs", "subs-bridge"):
                for n in many.sizes(args.subs):
                    bench.subscriptions(n, bridge=case == "subs-bridge")
            elif case == "destinations":
                bench.many_destinations(args.destinations)
            elif case == "transaction":
                bench.transaction()
    except KeyboardInterrupt:
        many.log("interrupted: what was started is stopped; partial figures follow")
    finally:
        bench.close()
    print(many.report(bench, started).replace("bench_many.py --broker stompd", "bench_limits.py"))
    if args.json_out:
        many.write_json(args.json_out, bench, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
