"""Shared-store master/slave failover, stompd beside ActiveMQ 5.17's shared-file-locker.

    python benchmarks/bench_failover.py                                  # both, 1,000,000 stored, 20 kills
    python benchmarks/bench_failover.py --stored 100000 --rounds 5       # a shorter takeover run
    python benchmarks/bench_failover.py --brokers stompd --scenarios kills --kills 20 --json

A script that prints figures, not a test.  Each broker runs as a pair: two processes on
one shared directory, each with its own STOMP port, lockAcquireSleepInterval 500 ms and
lockKeepAlivePeriod 2000 ms (../shared/peers/activemq-ha.xml's).  stompd: `python -m
broker --data-dir SHARED --port P --http-port 0 --lock-acquire-sleep-interval 500
--lock-keep-alive-period 2000`; ActiveMQ: `activemq_node.sh --config activemq-ha.xml
-Dshared.dir=SHARED -Dstomp.port=P -Dopenwire.port=O` (its log goes to a directory of
its own, -Dactivemq.data).  A node is the standby once its log says it waits for the
lock.  Every process started here is ended by its pid.

takeover  --fill-producers producers store --stored 1 KiB persistent messages, each
          RECEIPT awaited (every 100th SEND asks for one); then --rounds times: kill -9
          the master, and time from the kill to the standby answering CONNECT (a raw
          CONNECT every 20 ms), then launch the killed node again and wait until it is
          the standby.  The standby's RSS is taken while it waits.  Then a drain
          counts what is left: lost = receipted - drained (--no-drain skips it).

kills     a stompd-perf run through the failover list (--failover P1,P2; 1 producer ->
          1 consumer, persistent, a RECEIPT every 10th SEND with 2 awaited at most,
          ack client-individual; as fast as that goes, or --rate), during which the
          master is killed -9 --kills times, each time --kill-every seconds after the
          pair is whole again (the killed node launched again as the standby).  stompd-perf says what was
          lost (messages a RECEIPT confirmed that never arrived), sent again,
          duplicated, and the longest gap between two deliveries.  The same load
          without kills, --steady seconds, before and after: the throughput before
          and after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compare import log, machine
from peers import PEERS_DIR, ROOT, free_port, memory_kb

QUEUE = "/queue/bench.failover"
POLL_S = 0.02
INTERVAL_MS = 500
KEEP_ALIVE_MS = 2000
#: Seconds a kill, its takeover and the relaunch of the killed node as the standby take,
#: about (measured here): what the load's duration allows for each kill.
CYCLE_S = {"stompd": 3.0, "activemq": 15.0}


def answers_connect(port: int, timeout: float = 2.0) -> bool:
    """One raw CONNECT to 127.0.0.1:port: True if CONNECTED comes back."""
    frame = b"CONNECT\naccept-version:1.0,1.1,1.2\nhost:/\nlogin:guest\npasscode:guest\n\n\0"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(frame)
            data = b""
            while b"\0" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    return False
                data += chunk
            ok = data.lstrip(b"\r\n").startswith(b"CONNECTED")
            with contextlib.suppress(OSError):
                s.sendall(b"DISCONNECT\n\n\0")
            return ok
    except OSError:
        return False


class Node:
    """One broker of a pair: launched, killed and launched again on the shared directory."""

    standby_text = ""

    def __init__(self, name: str, shared: Path, work: Path) -> None:
        self.name = name
        self.shared = shared
        self.work = work
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        #: Where it logs (stompd: its standard output).
        self.log_path = self.console_path
        self._log_mark = 0

    def argv(self) -> list[str]:
        raise NotImplementedError

    def launch(self) -> None:
        assert self.proc is None
        self._log_mark = self.log_size()
        with open(self.console_path, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv(),
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                start_new_session=True,
            )

    @property
    def console_path(self) -> Path:
        return self.work / f"{self.name}.out"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_since_launch(self) -> str:
        with contextlib.suppress(OSError), open(self.log_path, "rb") as f:
            f.seek(self._log_mark)
            return f.read().decode(errors="replace")
        return ""

    def is_standby(self) -> bool:
        return self.standby_text in self.log_since_launch()

    def wait_standby(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.is_standby():
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not the standby after {timeout:g} s: {self.tail()}")
            time.sleep(POLL_S)

    def wait_serving(self, timeout: float) -> float:
        """Seconds until it answers CONNECT."""
        started = time.monotonic()
        while not answers_connect(self.port, 1.0):
            self._check_alive()
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"{self.name} not serving after {timeout:g} s: {self.tail()}")
            time.sleep(POLL_S)
        return time.monotonic() - started

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self.tail()}")

    def kill9(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(30)
            self.proc = None

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def tail(self) -> str:
        text = ""
        for path in (self.log_path, self.console_path):
            with contextlib.suppress(OSError):
                text += path.read_text(errors="replace")[-600:]
        return " / ".join(text.strip().splitlines()[-4:])


class StompdNode(Node):
    standby_text = "this broker is the standby"

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "broker",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--http-port",
            "0",
            "--data-dir",
            str(self.shared),
            "--lock-acquire-sleep-interval",
            str(INTERVAL_MS),
            "--lock-keep-alive-period",
            str(KEEP_ALIVE_MS),
        ]


class ActiveMQNode(Node):
    standby_text = "waiting a lock to be acquired"

    def __init__(self, name: str, shared: Path, work: Path) -> None:
        super().__init__(name, shared, work)
        self.openwire = free_port()
        self.data = work / f"{name}-activemq"
        self.data.mkdir(exist_ok=True)
        self.log_path = self.data / "activemq.log"

    def argv(self) -> list[str]:
        return [
            "bash",
            str(PEERS_DIR / "activemq_node.sh"),
            "--config",
            str(PEERS_DIR / "activemq-ha.xml"),
            f"-Dshared.dir={self.shared}",
            f"-Dstomp.port={self.port}",
            f"-Dopenwire.port={self.openwire}",
            # Its log here rather than in the script's own temporary directory.
            f"-Dactivemq.data={self.data}",
        ]


NODES: dict[str, type[Node]] = {"stompd": StompdNode, "activemq": ActiveMQNode}


def available(name: str) -> str | None:
    if name == "activemq":
        if not Path("/usr/share/activemq/bin/activemq.jar").exists():
            return "not installed (apt-get install -y activemq)"
        for script in ("activemq_node.sh", "activemq-ha.xml"):
            if not (PEERS_DIR / script).exists():
                return f"{PEERS_DIR / script} missing"
    return None


@dataclass
class Pair:
    nodes: list[Node]
    #: Index of the master in ``nodes``.
    master: int = 0

    @property
    def serving(self) -> Node:
        return self.nodes[self.master]

    @property
    def waiting(self) -> Node:
        return self.nodes[1 - self.master]

    def start(self, timeout: float) -> None:
        first, second = self.nodes
        first.launch()
        first.wait_serving(timeout)
        second.launch()
        second.wait_standby(timeout)

    def takeover(self, timeout: float) -> float:
        """kill -9 the master; seconds until the standby answers CONNECT.  The killed node is
        launched again, and this returns once it waits as the standby."""
        old, new = self.serving, self.waiting
        old.kill9()
        seconds = new.wait_serving(timeout)
        self.master = 1 - self.master
        old.launch()
        old.wait_standby(timeout)
        return seconds

    def stop(self) -> None:
        # The standby first, so that it does not take over from the master being stopped.
        for node in (self.waiting, self.serving):
            node.stop()


PERF = [sys.executable, "-m", "perf", "--json", "--quiet", "--login", "guest", "--passcode", "guest"]


def perf(args: list[str], timeout: float) -> dict[str, Any]:
    proc = start_perf(args)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    return perf_summary(out, err)


def start_perf(args: list[str]) -> subprocess.Popen[str]:
    """stompd-perf on the benchmark's queue, in a session of its own (stopped as a group)."""
    return subprocess.Popen(
        [*PERF, "--destination", QUEUE, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )


def perf_summary(out: str, err: str) -> dict[str, Any]:
    """The JSON summary stompd-perf prints last."""
    lines = out.strip().splitlines()
    if not lines:
        raise RuntimeError(f"stompd-perf printed no summary: {err.strip()[-400:]}")
    summary: dict[str, Any] = json.loads(lines[-1])
    return summary


@dataclass
class Settings:
    stored: int
    rounds: int
    fill_producers: int
    kills: int
    kill_every: float
    load: float
    rate: int
    steady: float
    timeout: float
    drain: bool


@dataclass
class Result:
    figures: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def fill(pair: Pair, st: Settings, result: Result) -> int:
    """Store st.stored messages through the master; returns how many were receipted."""
    args = ["--host", "127.0.0.1", "--port", str(pair.serving.port), "--persistent", "--consumers", "0"]
    args += ["--producers", str(st.fill_producers), "--messages", str(st.stored), "--size", "1024"]
    args += ["--receipt-every", "100", "--timeout", "120", "--processes", "2"]
    started = time.monotonic()
    summary = perf(args, 7200)
    sent = int(summary["sent"])
    result.figures["fill_msgs_per_s"] = round(sent / (time.monotonic() - started))
    if not summary.get("ok") or sent != st.stored:
        result.problems.append(
            f"fill: {sent:,} of {st.stored:,} sent ({'; '.join(summary['error_samples'][:2])})"
        )
        return max(0, sent - st.fill_producers * 100)
    return sent


def takeover(name: str, work: Path, st: Settings) -> Result:
    result = Result()
    shared = work / "shared"
    pair = Pair([NODES[name]("a", shared, work), NODES[name]("b", shared, work)])
    try:
        pair.start(st.timeout)
        receipted = fill(pair, st, result) if st.stored else 0
        result.figures["stored"] = receipted
        log(f"  {name:<9} stored {receipted:,} at {result.figures.get('fill_msgs_per_s', 0):,} msgs/s")
        result.figures["standby_rss_mb"] = round(memory_kb(pair.waiting.pid)[0] / 1024, 1)
        result.figures["master_rss_mb"] = round(memory_kb(pair.serving.pid)[0] / 1024, 1)
        times = []
        for n in range(st.rounds):
            seconds = pair.takeover(st.timeout)
            times.append(seconds)
            log(f"  {name:<9} takeover {n + 1}/{st.rounds}: kill -9 -> CONNECTED {seconds:.3f} s")
        result.figures["takeover_s"] = [round(t, 3) for t in times]
        result.figures["takeover_s_median"] = round(statistics.median(times), 3)
        result.figures["takeover_s_max"] = round(max(times), 3)
        if st.drain and receipted:
            args = ["--host", "127.0.0.1", "--port", str(pair.serving.port), "--producers", "0"]
            args += ["--consumers", "1", "--timeout", "30", "--prefetch", "1000"]
            drain = perf(args, 7200)
            drained = int(drain["foreign"])  # messages of an earlier run: all of them
            result.figures["drained"] = drained
            result.figures["lost"] = max(0, receipted - drained)
            log(f"  {name:<9} drained {drained:,} of {receipted:,} receipted")
    except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as exc:
        log(f"  {name:<9} failed: {exc}")
        result.problems.append(str(exc))
    finally:
        pair.stop()
    return result


def kills(name: str, work: Path, st: Settings) -> Result:
    result = Result()
    shared = work / "shared"
    pair = Pair([NODES[name]("a", shared, work), NODES[name]("b", shared, work)])
    brokers = ",".join(f"127.0.0.1:{node.port}" for node in pair.nodes)
    load = ["--failover", brokers, "--persistent", "--receipt-every", "10", "--receipt-window", "2"]
    load += ["--ack", "client-individual", "--prefetch", "100", "--timeout", "60"]
    load += ["--reconnect-timeout", "120", "--processes", "2"]
    if st.rate:
        load += ["--rate", str(st.rate)]
    try:
        pair.start(st.timeout)
        before = perf([*load, "--duration", str(st.steady)], st.steady + 300)
        result.figures["before"] = _brief(before)
        log(f"  {name:<9} before: {before['msgs_per_s']:,.0f} msgs/s, lost {before['lost']}")
        # Each kill comes --kill-every seconds after the pair is whole again; the load lasts
        # long enough for all of them (a broker's cycle: its takeover, then its relaunch).
        duration = st.load or st.kills * (st.kill_every + CYCLE_S[name]) + st.kill_every
        proc = start_perf([*load, "--duration", f"{duration:g}"])
        takeovers = []
        try:
            for n in range(st.kills):
                time.sleep(st.kill_every)
                if proc.poll() is not None:
                    raise RuntimeError(f"the load ended before kill {n + 1}: give a longer --load")
                seconds = pair.takeover(st.timeout)
                takeovers.append(seconds)
                log(
                    f"  {name:<9} kill {n + 1}/{st.kills}: the standby answered CONNECT after {seconds:.3f} s"
                )
            out, err = proc.communicate(timeout=duration + 600)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.communicate(timeout=60)
        during = perf_summary(out, err)
        result.figures["during"] = {**_brief(during), "failover": during.get("failover")}
        result.figures["takeover_s_median"] = round(statistics.median(takeovers), 3) if takeovers else None
        result.figures["takeover_s_max"] = round(max(takeovers), 3) if takeovers else None
        log(
            f"  {name:<9} during {st.kills} kills: {during['msgs_per_s']:,.0f} msgs/s, "
            f"sent {during['sent']:,}, lost {during['lost']}, duplicated {during['duplicated']}, "
            f"errors {during['errors']}"
        )
        after = perf([*load, "--duration", str(st.steady)], st.steady + 300)
        result.figures["after"] = _brief(after)
        log(f"  {name:<9} after: {after['msgs_per_s']:,.0f} msgs/s, lost {after['lost']}")
        for label, summary in (("before", before), ("during", during), ("after", after)):
            if summary["lost"] or summary["errors"]:
                samples = "; ".join(summary.get("error_samples", [])[:2])
                result.problems.append(
                    f"{label}: lost {summary['lost']}, errors {summary['errors']} {samples}"
                )
    except (RuntimeError, OSError, subprocess.SubprocessError, ValueError) as exc:
        log(f"  {name:<9} failed: {exc}")
        result.problems.append(str(exc))
    finally:
        pair.stop()
    return result


def _brief(summary: dict[str, Any]) -> dict[str, Any]:
    keys = ("sent", "received", "lost", "duplicated", "errors", "msgs_per_s", "elapsed_s")
    out = {key: summary.get(key) for key in keys}
    out["latency_ms_p99"] = summary.get("latency_ms", {}).get("p99")
    return out


def show(results: dict[tuple[str, str], Result]) -> list[str]:
    lines = []
    for (broker, scenario), result in results.items():
        f = result.figures
        if scenario == "takeover" and "takeover_s" in f:
            each = ", ".join(f"{t:.2f}" for t in f["takeover_s"])
            lines.append(
                f"{broker:<9} takeover with {f.get('stored', 0):,} stored: median "
                f"{f['takeover_s_median']:.3f} s, max {f['takeover_s_max']:.3f} s ({each}); standby RSS "
                f"{f.get('standby_rss_mb')} MB (master {f.get('master_rss_mb')} MB); "
                f"lost {f.get('lost', 'n/a')}"
            )
        elif scenario == "kills" and "after" in f:
            during, failover = f["during"], f["during"].get("failover") or {}
            lines.append(
                f"{broker:<9} kills: takeover median {f['takeover_s_median']} s, "
                f"max {f['takeover_s_max']} s; "
                f"{failover.get('reconnects')} reconnects; lost {during['lost']}, sent again "
                f"{failover.get('resent')}, duplicated {during['duplicated']}, longest gap "
                f"{failover.get('longest_gap_s')} s; msgs/s before {f['before']['msgs_per_s']:,.0f}, "
                f"during {during['msgs_per_s']:,.0f}, after {f['after']['msgs_per_s']:,.0f}"
            )
        lines.extend(f"{broker:<9} {scenario}: {problem}" for problem in result.problems)
    return lines


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", default="stompd,activemq", help="comma-separated, of: stompd, activemq")
    p.add_argument("--scenarios", default="takeover,kills", help="comma-separated, of: takeover, kills")
    p.add_argument(
        "--stored", type=int, default=1_000_000, help="takeover: messages stored first (1,000,000)"
    )
    p.add_argument("--rounds", type=int, default=5, help="takeover: kill -9s timed (5)")
    p.add_argument("--fill-producers", type=int, default=4, help="takeover: producers filling (4)")
    p.add_argument("--kills", type=int, default=20, help="kills: kill -9s under load (20)")
    p.add_argument(
        "--kill-every",
        type=float,
        default=4.0,
        help="kills: seconds of load between a pair whole again and a kill (4)",
    )
    p.add_argument(
        "--load", type=float, default=0, help="kills: seconds of load with kills (default: enough)"
    )
    p.add_argument("--rate", type=int, default=0, help="kills: msgs/s sent (0: as fast as receipts allow)")
    p.add_argument("--steady", type=float, default=15.0, help="kills: seconds of load before and after (15)")
    p.add_argument("--timeout", type=float, default=600, help="s a takeover or a start may take (600)")
    p.add_argument("--no-drain", action="store_true", help="takeover: do not drain and count")
    p.add_argument("--json", action="store_true", help="lines to stderr; one JSON object on stdout")
    args = p.parse_args(argv)
    st = Settings(
        stored=math.ceil(args.stored / (args.fill_producers * 100)) * args.fill_producers * 100,
        rounds=args.rounds,
        fill_producers=args.fill_producers,
        kills=args.kills,
        kill_every=args.kill_every,
        load=args.load,
        rate=args.rate,
        steady=args.steady,
        timeout=args.timeout,
        drain=not args.no_drain,
    )
    names = args.brokers.split(",")
    scenarios = args.scenarios.split(",")
    unknown = sorted(set(names) - set(NODES)) + sorted(set(scenarios) - {"takeover", "kills"})
    if unknown:
        p.error(f"unknown: {', '.join(unknown)}")
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    info = machine()
    log(f"machine: {info}")
    log(f"pairs: lockAcquireSleepInterval {INTERVAL_MS} ms, lockKeepAlivePeriod {KEEP_ALIVE_MS} ms")
    results: dict[tuple[str, str], Result] = {}
    for name in names:
        why = available(name)
        if why:
            log(f"{name}: skipped: {why}")
            continue
        for scenario in scenarios:
            log(f"{name}: {scenario}")
            with tempfile.TemporaryDirectory(prefix=f"bench-failover-{name}-") as work:
                run = takeover if scenario == "takeover" else kills
                results[name, scenario] = run(name, Path(work), st)
    lines = show(results)
    for line in lines:
        log(line)
    if args.json:
        print(
            json.dumps(
                {
                    "machine": info,
                    "settings": st.__dict__,
                    "results": {f"{b}/{s}": r.__dict__ for (b, s), r in results.items()},
                }
            )
        )
    return 0 if all(not r.problems for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
