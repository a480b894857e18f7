"""Persistence, stompd beside ActiveMQ 5.17: durable throughput and recovery after kill -9.

    python benchmarks/bench_persistence.py                  # 50k messages, 1,000,000 stored
    python benchmarks/bench_persistence.py --quick          # 20k messages, 100,000 stored
    python benchmarks/bench_persistence.py --brokers activemq --scenarios recovery --stored 300000
    python benchmarks/bench_persistence.py --quick --json   # table to stderr, one JSON line on stdout

A script that prints figures, not a test.  Scenarios (1 KiB bodies, persistent:true,
each producer asks a RECEIPT on every 100th SEND and waits for it, --receipt-window 1):

  persistent-1-1  1 producer -> 1 consumer, --messages in total (stompd-perf, via compare.py)
  persistent-8-1  8 producers -> 1 consumer, the same total
  recovery        --fill-producers producers and no consumer store --stored messages in one
                  queue; then the broker gets SIGKILL and is launched again on the same
                  data: seconds from launch to the first CONNECTED (a raw CONNECT every
                  20 ms), the broker's VmRSS at that moment, seconds from launch to the
                  first MESSAGE (SUBSCRIBE right after CONNECTED, ack:client, prefetch 1,
                  never acked), then a stompd-perf drain (--producers 0) counts what is
                  left: lost = receipted - drained.

Each scenario gets a fresh broker: stompd as our child (`python -m broker --port P
--data-dir TMP --memory-limit 64mb`, relaunched on the same TMP after the kill);
ActiveMQ through ../shared/peers/activemq.sh `fresh`, its JVM (`activemq.sh pid`) killed
with SIGKILL and relaunched with `activemq.sh start`, timed from the moment `start` is
invoked (the script compiles a small Java class before it launches the JVM).  Every
process started here is stopped by its pid, on Ctrl-C and SIGTERM too.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compare import RSS_LABEL, Figure, Outcome, Scenario, log, machine, measure, run_tool, table
from peers import PEERS_DIR, ROOT, ActiveMQ, Broker, RssSampler, Stompd, Unavailable, memory_kb

if TYPE_CHECKING:
    from collections.abc import Callable

MEMORY_LIMIT = "64mb"
RECOVERY_QUEUE = "/queue/bench.recovery"
POLL_S = 0.02  # CONNECT attempts while the broker comes back

THROUGHPUT = Figure("msgs/s", lambda s: float(s["msgs_per_s"]), True)
ACCEPTED = Figure("send msgs/s", lambda s: float(s["send_msgs_per_s"]), True)


def _filled_in(label: str, digits: int = 0, higher_is_better: bool = False) -> Figure:
    """A figure the recovery scenario sets itself (compare.measure never reads it)."""
    return Figure(label, lambda s: math.nan, higher_is_better, digits)


FILL = _filled_in("fill msgs/s", higher_is_better=True)
RSS_FULL = _filled_in("RSS MB before kill -9")
TO_CONNECTED = _filled_in("s to CONNECTED", 2)
RSS_CONNECTED = _filled_in("RSS MB at CONNECTED")
TO_MESSAGE = _filled_in("s to first MESSAGE", 2)
RECEIPTED = _filled_in("stored (receipted)", higher_is_better=True)
DRAINED = _filled_in("drained after restart", higher_is_better=True)
LOST = _filled_in("lost")
RECOVERY_FIGURES = (FILL, RSS_FULL, TO_CONNECTED, RSS_CONNECTED, TO_MESSAGE, RECEIPTED, DRAINED, LOST)


@dataclasses.dataclass
class Settings:
    messages: int
    stored: int
    receipt_every: int
    receipt_window: int
    fill_producers: int
    processes: int
    warmup: float
    connect_timeout: float
    message_timeout: float
    drain_timeout: float
    drain: bool


def throughput_scenarios(st: Settings) -> list[Scenario]:
    common: tuple[str, ...] = ("--persistent", "--size", "1024", "--messages", str(st.messages))
    common += ("--timeout", "30", "--receipt-every", str(st.receipt_every))
    common += ("--receipt-window", str(st.receipt_window))
    every = f"receipt every {st.receipt_every}"
    return [
        Scenario(
            "persistent-1-1",
            f"queue 1→1, 1 KiB, persistent, {every}",
            common,
            (THROUGHPUT, ACCEPTED),
            memory_limit=MEMORY_LIMIT,
        ),
        Scenario(
            "persistent-8-1",
            f"queue 8→1, 1 KiB, persistent, {every}",
            ("--producers", "8", *common),
            (THROUGHPUT, ACCEPTED),
            memory_limit=MEMORY_LIMIT,
        ),
    ]


def recovery_scenario(st: Settings) -> Scenario:
    return Scenario(
        "recovery",
        f"kill -9 with {st.stored:,} x 1 KiB stored, relaunch",
        (),
        RECOVERY_FIGURES,
        memory_limit=MEMORY_LIMIT,
    )


# --- brokers that can be killed and relaunched on the same data ------------------------------


class StompdCrash(Stompd):
    """stompd as our child; kill9() and relaunch() keep the data directory."""

    def __init__(self) -> None:
        super().__init__()
        self._memory_limit: str | None = None

    def start(self, memory_limit: str | None = None) -> None:
        self._memory_limit = memory_limit
        super().start(memory_limit)

    def kill9(self) -> None:
        assert self._proc is not None
        self._proc.kill()
        self._proc.wait(30)

    def relaunch(self) -> None:
        """Launch on the same data and port; does not wait for it."""
        assert self._data is not None
        data = Path(self._data.name)
        with open(data / "broker.log", "ab") as out:
            self._proc = subprocess.Popen(
                self.argv(str(data / "data"), self._memory_limit),
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                start_new_session=True,
            )

    def launched_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stall_hint(self) -> str | None:
        return None

    def launch_failed(self) -> str | None:
        if self._proc is None or self._proc.poll() is None:
            return None
        assert self._data is not None
        log_path = Path(self._data.name) / "broker.log"
        tail = " / ".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])
        return f"exited with status {self._proc.returncode}: {tail}"


class ActiveMQCrash(ActiveMQ):
    """ActiveMQ through activemq.sh; kill9() SIGKILLs its JVM, relaunch() runs `start` (not `fresh`)."""

    def __init__(self) -> None:
        super().__init__()
        self._starter: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0
        self._killed: int | None = None
        self.jvm_after: float | None = None  # seconds from `start` to its pid file naming a new JVM

    @property
    def pidfile(self) -> Path:
        # common.sh: $PEERS_ROOT/activemq/activemq.pid
        return Path(os.environ.get("PEERS_ROOT", "/tmp/peers")) / "activemq" / "activemq.pid"

    def stall_hint(self) -> str | None:
        """Why producers blocked, if ActiveMQ's log says its store limit was reached."""
        log_path = self.pidfile.parent / "data" / "activemq.log"
        with contextlib.suppress(OSError):
            with open(log_path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
                tail = f.read().decode(errors="replace")
            if "Usage(default:store) percentUsage=100%" in tail:
                return "ActiveMQ's storeUsage limit (1 gb in peers/activemq.xml) is full: producers blocked"
        return None

    def kill9(self) -> None:
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        self._killed = pid
        # The JVM is not our child (setsid'd by the script, then orphaned), so whoever reaps
        # orphans here must do it.  Until then it is a zombie, `kill -0` still succeeds and
        # `activemq.sh start` would answer "already running".
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            log(f"  activemq: pid {pid} still a zombie after 30 s; removing the stale {self.pidfile}")
            self.pidfile.unlink(missing_ok=True)

    def relaunch(self) -> None:
        self.jvm_after = None
        self._starter = subprocess.Popen(
            ["bash", str(PEERS_DIR / self.script), "start"],
            stdout=subprocess.PIPE,  # a few lines: it cannot fill the pipe
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # The script's own CONNECT wait gives up (and stops the broker) after
            # START_TIMEOUT; ours decides instead.
            env={**os.environ, "START_TIMEOUT": "3600"},
            start_new_session=True,
        )
        self._started_at = time.monotonic()

    def launched_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            pid = int(self.pidfile.read_text().strip())
            if pid != self._killed:
                if self.jvm_after is None:
                    self.jvm_after = time.monotonic() - self._started_at
                return pid
        return None

    def launch_failed(self) -> str | None:
        if self._starter is None or self._starter.poll() is None:
            return None
        if self._starter.returncode == 0 and self.launched_pid() is not None:
            return None
        assert self._starter.stdout is not None
        out = self._starter.stdout.read().decode(errors="replace").strip()
        return f"activemq.sh start exited {self._starter.returncode}: {out[-300:]}"

    def stop(self) -> None:
        starter, self._starter = self._starter, None
        if starter is not None and starter.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(starter.pid, signal.SIGTERM)
            try:
                starter.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(starter.pid, signal.SIGKILL)
                starter.wait(10)
        if starter is not None and starter.stdout is not None:
            starter.stdout.close()
        super().stop()


CrashBroker = StompdCrash | ActiveMQCrash
BROKERS: dict[str, type[StompdCrash] | type[ActiveMQCrash]] = {
    "stompd": StompdCrash,
    "activemq": ActiveMQCrash,
}


def _alive(pid: int) -> bool:
    """True while /proc has the pid, zombie or not (what `kill -0` sees)."""
    return Path(f"/proc/{pid}").exists()


# --- the raw STOMP probe ---------------------------------------------------------------------


class ProbeFailed(Exception):
    pass


def _recv_until(
    sock: socket.socket, buf: bytearray, done: Callable[[bytearray], bool], deadline: float
) -> bool:
    """Read into buf until done(buf); False at the deadline or when the broker hangs up."""
    while not done(buf):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        sock.settimeout(min(remaining, 0.5))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            return False
        buf += chunk
    return True


def _command(buf: bytearray) -> bytes | None:
    """The command line of the next frame in buf, once it is complete (heart-beat EOLs skipped)."""
    head = bytes(buf).lstrip(b"\r\n")
    if b"\n" not in head:
        return None
    return head.split(b"\n", 1)[0].rstrip(b"\r")


@dataclasses.dataclass
class Recovery:
    connected_s: float | None = None
    rss_connected_kb: int | None = None
    first_message_s: float | None = None
    problems: list[str] = dataclasses.field(default_factory=list)


def probe_recovery(
    broker: CrashBroker, port: int, vhost: str, started: float, st: Settings
) -> tuple[Recovery, int | None]:
    """Poll CONNECT until CONNECTED, then SUBSCRIBE and wait for the first MESSAGE.

    Times count from `started`, the moment the relaunch was invoked.  Returns the result
    and the broker's pid (for RSS sampling) once known.
    """
    result = Recovery()
    connect = (
        f"CONNECT\naccept-version:1.0,1.1,1.2\nhost:{vhost}\nlogin:guest\npasscode:guest\n"
        "heart-beat:0,0\n\n\0"
    ).encode()
    deadline = started + st.connect_timeout
    sock: socket.socket | None = None
    buf = bytearray()
    while sock is None:
        broker.launched_pid()  # notes when ActiveMQ's JVM appears
        why = broker.launch_failed()
        if why:
            raise ProbeFailed(why)
        if time.monotonic() > deadline:
            raise ProbeFailed(f"no CONNECTED within {st.connect_timeout:g} s of the relaunch")
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            time.sleep(POLL_S)
            continue
        try:
            s.sendall(connect)
            buf.clear()
            if _recv_until(s, buf, lambda b: b"\0" in b, deadline) and _command(buf) == b"CONNECTED":
                result.connected_s = time.monotonic() - started
                sock = s
                break
        except OSError:
            pass
        s.close()
        time.sleep(POLL_S)
    pid = broker.launched_pid()
    if pid is not None:
        result.rss_connected_kb = memory_kb(pid)[0]
    try:
        del buf[: buf.index(b"\0") + 1]
        sock.sendall(
            (
                f"SUBSCRIBE\nid:probe\ndestination:{RECOVERY_QUEUE}\nack:client\n"
                "activemq.prefetchSize:1\nprefetch-count:1\n\n\0"
            ).encode()
        )
        until = time.monotonic() + st.message_timeout
        if _recv_until(sock, buf, lambda b: _command(b) is not None, until):
            command = _command(buf)
            if command == b"MESSAGE":
                result.first_message_s = time.monotonic() - started
            else:
                result.problems.append(f"{command!r} instead of a MESSAGE: {bytes(buf[:200])!r}")
        else:
            result.problems.append(f"no MESSAGE within {st.message_timeout:g} s after CONNECTED")
        # The one message it holds is not acked, so it goes back to the queue for the drain.
        with contextlib.suppress(OSError):
            sock.sendall(b"DISCONNECT\n\n\0")
    except OSError as exc:
        result.problems.append(f"probe connection failed: {exc}")
    finally:
        sock.close()
    return result, pid


# --- the recovery scenario --------------------------------------------------------------------


def measure_recovery(
    broker: CrashBroker, scenario: Scenario, st: Settings, outcome: Outcome, detail: dict[str, Any]
) -> None:
    """Fills in `outcome` and `detail` as it goes, so an interrupted run still shows its figures."""
    problems: list[str] = []
    fig = outcome.figures
    try:
        broker.start(scenario.memory_limit)
    except Unavailable as exc:
        outcome.problem = str(exc)
        return
    try:
        # 1. Fill: producers only, every producer's last SEND carries a receipt.
        total = st.stored  # a multiple of fill_producers x receipt_every
        fill_args = ["--persistent", "--producers", str(st.fill_producers), "--consumers", "0"]
        fill_args += ["--messages", str(total), "--size", "1024", "--timeout", "60"]
        fill_args += ["--receipt-every", str(st.receipt_every), "--receipt-window", str(st.receipt_window)]
        fill = run_tool(broker, RECOVERY_QUEUE, fill_args, st.processes, 7200)
        outcome.runs.append(fill)
        detail["fill"] = fill
        sent = int(fill["sent"])
        fig[FILL.label] = float(fill["send_msgs_per_s"])
        log(f"  {broker.name:<9} fill: sent {sent:,} of {total:,} at {fill['send_msgs_per_s']:,.0f} msgs/s")
        if fill.get("ok") and sent == total:
            receipted = sent
        else:
            # What was written after the last RECEIPT may or may not be stored.
            receipted = max(0, sent - st.fill_producers * st.receipt_window * st.receipt_every)
            samples = "; ".join(fill.get("error_samples", [])[:2])
            problems.append(f"fill stopped at {sent:,} of {total:,} sent ({samples or 'errors'})")
            problems.append("fill msgs/s includes the time the producers waited")
            hint = broker.stall_hint()
            if hint:
                problems.append(hint)
        fig[RECEIPTED.label] = receipted
        pid = broker.pid()
        fig[RSS_FULL.label] = memory_kb(pid)[0] / 1024

        # 2. kill -9, relaunch on the same data, probe.
        log(f"  {broker.name:<9} kill -9 pid {pid}, relaunch")
        broker.kill9()
        started = time.monotonic()
        broker.relaunch()
        recovery, new_pid = probe_recovery(broker, broker.port, broker.vhost, started, st)
        problems += recovery.problems
        fig[TO_CONNECTED.label] = recovery.connected_s
        if recovery.rss_connected_kb is not None:
            fig[RSS_CONNECTED.label] = recovery.rss_connected_kb / 1024
        fig[TO_MESSAGE.label] = recovery.first_message_s
        detail["recovery"] = dataclasses.asdict(recovery)
        if isinstance(broker, ActiveMQCrash):
            detail["jvm_launched_after_s"] = broker.jvm_after
        log(
            f"  {broker.name:<9} CONNECTED after {recovery.connected_s:.2f} s "
            f"(RSS {fig.get(RSS_CONNECTED.label) or 0:.0f} MB), first MESSAGE after "
            + (f"{recovery.first_message_s:.2f} s" if recovery.first_message_s is not None else "n/a")
        )

        # 3. Drain and count.
        if st.drain and new_pid is not None:
            with RssSampler(new_pid) as rss:
                drain_args = ["--producers", "0", "--consumers", "1", "--timeout", f"{st.drain_timeout:g}"]
                drain = run_tool(broker, RECOVERY_QUEUE, drain_args, 1, 7200)
            outcome.runs.append(drain)
            detail["drain"] = drain
            drained = int(drain["foreign"])  # everything from an earlier run counts as "foreign"
            fig[DRAINED.label] = drained
            fig[LOST.label] = max(0, receipted - drained)
            fig[RSS_LABEL] = rss.peak_kb / 1024
            log(f"  {broker.name:<9} drained {drained:,} of {receipted:,} receipted")
            if drained < receipted:
                problems.append(f"lost {receipted - drained:,} of {receipted:,} receipted messages")
            if drain.get("errors"):
                problems.append(f"drain errors: {'; '.join(drain.get('error_samples', [])[:2])}")
        elif not st.drain:
            detail["drain"] = "skipped (--no-drain)"
        else:
            problems.append("broker pid unknown after the relaunch: no drain")
    except ProbeFailed as exc:
        problems.append(str(exc))
    except (RuntimeError, ValueError, OSError, subprocess.SubprocessError) as exc:
        problems.append(f"run failed: {exc}")
    except KeyboardInterrupt:
        problems.append("interrupted")
        raise
    finally:
        outcome.problem = "; ".join(problems) or None
        broker.stop()


# --- housekeeping -----------------------------------------------------------------------------


def _our_children() -> list[int]:
    """Live direct children of this process (from /proc)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == me and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def _end_leftovers() -> None:
    """Last resort, after the brokers are stopped: a child still running (say a stompd-perf
    run interrupted by Ctrl-C) was started in its own session, so end its group by its pid."""
    children = _our_children()
    for pid in children:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:
                log(f"stopping leftover process group {pid}")
                os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive_child(pid) for pid in children):
        time.sleep(0.1)
    for pid in children:
        if _alive_child(pid):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def _alive_child(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    return _alive(pid)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", default="stompd,activemq", help="comma-separated, of: stompd, activemq")
    p.add_argument(
        "--scenarios", default="all", help="comma-separated, of: persistent-1-1, persistent-8-1, recovery"
    )
    p.add_argument("--quick", action="store_true", help="20,000 messages, 100,000 stored, 5 s warm-up")
    p.add_argument("--messages", type=int, help="throughput scenarios, in total (default 50,000)")
    p.add_argument("--stored", type=int, help="recovery: messages stored before kill -9 (default 1,000,000)")
    p.add_argument("--receipt-every", type=int, default=100, help="a RECEIPT every K-th SEND (100)")
    p.add_argument("--receipt-window", type=int, default=1, help="receipts a producer may await (1)")
    p.add_argument("--fill-producers", type=int, default=4, help="recovery: producers filling the queue (4)")
    p.add_argument("--processes", type=int, default=2, help="stompd-perf --processes (2)")
    p.add_argument("--warmup", type=float, help="s of untimed 1→1 load before throughput runs (15; quick 5)")
    p.add_argument("--connect-timeout", type=float, default=600, help="s from relaunch to CONNECTED (600)")
    p.add_argument("--message-timeout", type=float, default=60, help="s from CONNECTED to a MESSAGE (60)")
    p.add_argument("--drain-timeout", type=float, default=20, help="drain ends after S s with nothing (20)")
    p.add_argument("--no-drain", action="store_true", help="recovery: do not drain and count")
    p.add_argument("--json", action="store_true", help="table to stderr; one JSON object on stdout")
    args = p.parse_args(argv)

    st = Settings(
        messages=args.messages or (20_000 if args.quick else 50_000),
        stored=args.stored or (100_000 if args.quick else 1_000_000),
        receipt_every=args.receipt_every,
        receipt_window=args.receipt_window,
        fill_producers=args.fill_producers,
        processes=args.processes,
        warmup=args.warmup if args.warmup is not None else (5.0 if args.quick else 15.0),
        connect_timeout=args.connect_timeout,
        message_timeout=args.message_timeout,
        drain_timeout=args.drain_timeout,
        drain=not args.no_drain,
    )
    if st.warmup <= 0:
        p.error("--warmup must be above 0")
    if min(st.messages, st.stored, st.receipt_every, st.receipt_window, st.fill_producers) < 1:
        p.error("--messages, --stored, --receipt-every, --receipt-window and --fill-producers must be >= 1")
    # Every fill producer ends on a receipted SEND, so what it sent is all receipted.
    batch = st.fill_producers * st.receipt_every
    st.stored = math.ceil(st.stored / batch) * batch
    every = [*throughput_scenarios(st), recovery_scenario(st)]
    keys = [s.key for s in every] if args.scenarios == "all" else args.scenarios.split(",")
    names = args.brokers.split(",")
    unknown = sorted(set(keys) - {s.key for s in every}) + sorted(set(names) - set(BROKERS))
    if unknown:
        p.error(f"unknown: {', '.join(unknown)}")
    chosen = [s for s in every if s.key in keys]
    brokers: list[Broker] = [BROKERS[name]() for name in names]

    # SIGTERM ends the run like Ctrl-C, so the finally clauses stop what we started; and
    # Ctrl-C works even when started with SIGINT ignored (a background job of a script).
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    info = machine()
    log(f"machine: {info}")
    results: dict[tuple[str, str], Outcome] = {}
    details: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    started = time.monotonic()
    try:
        for broker in brokers:
            why = broker.available()
            if why is not None:
                skipped[broker.name] = why
                log(f"skipping {broker.label}: {why}")
                continue
            for scenario in chosen:
                log(f"{broker.label}: {scenario.key}")
                if scenario.key == "recovery":
                    assert isinstance(broker, StompdCrash | ActiveMQCrash)
                    results[scenario.key, broker.name] = Outcome()
                    details[f"{scenario.key}/{broker.name}"] = {}
                    measure_recovery(
                        broker,
                        scenario,
                        st,
                        results[scenario.key, broker.name],
                        details[f"{scenario.key}/{broker.name}"],
                    )
                else:
                    results[scenario.key, broker.name] = measure(broker, scenario, 1, st.processes, st.warmup)
    except KeyboardInterrupt:
        log("interrupted: brokers stopped; partial table follows")
    finally:
        _end_leftovers()
    elapsed = time.monotonic() - started

    out = sys.stderr if args.json else sys.stdout
    lines = [
        f"machine: {info}",
        f"stompd-perf --processes {st.processes}; receipt every {st.receipt_every}, window "
        f"{st.receipt_window}; warm-up {st.warmup:g} s; took {elapsed:.0f} s",
        "",
        *table(chosen, brokers, results),
    ]
    lines += [f"- {name} not measured: {why}" for name, why in skipped.items()]
    lines += [f"- {b.label}: {b.note}" for b in brokers if b.note and b.name not in skipped]
    if any(s.key == "recovery" for s in chosen):
        lines += [
            "- recovery: times count from the relaunch (stompd: exec of python; ActiveMQ: "
            "`activemq.sh start`); peak RSS is the relaunched broker's, through the drain",
        ]
        for name in names:
            jvm = details.get(f"recovery/{name}", {}).get("jvm_launched_after_s")
            if jvm is not None:
                lines.append(
                    f"- recovery, {name}: the JVM was launched {jvm:.2f} s after `start` was invoked"
                )
        if not st.drain:
            lines.append("- recovery: not drained (--no-drain), so nothing counted after the restart")
    print("\n".join(lines), file=out)
    if args.json:
        dump = {
            f"{k[0]}/{k[1]}": {
                "problem": o.problem,
                "figures": o.figures,
                "runs": o.runs,
                **({"detail": details[f"{k[0]}/{k[1]}"]} if f"{k[0]}/{k[1]}" in details else {}),
            }
            for k, o in results.items()
        }
        config = {**dataclasses.asdict(st), "brokers": names, "scenarios": [s.key for s in chosen]}
        print(
            json.dumps({"machine": info, "elapsed_s": round(elapsed, 1), "config": config, "results": dump})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
