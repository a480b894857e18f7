"""stompd against ActiveMQ and RabbitMQ (and the tool's own ceiling), same scenarios, one table.

    python benchmarks/compare.py                    # everything, full size (~15 min)
    python benchmarks/compare.py --repeat 3         # median of 3 runs (~35 min)
    python benchmarks/compare.py --quick            # a tenth of the messages (~5 min)
    python benchmarks/compare.py --brokers stompd,activemq --scenarios queue-1-1,latency

Every scenario gets a fresh broker (stompd and the sink as our children with a new data
directory; ActiveMQ and RabbitMQ through ../shared/peers/NAME.sh fresh / stop), an
untimed warm-up (--warmup, 15 s of 1→1 load: ActiveMQ's JIT needs ~500k messages to
reach its steady rate; Python's figures barely move), then the measured run(s) of
stompd-perf.  Peak RSS is the broker process's VmHWM, with VmRSS polled as well.  A
broker that is not installed, does not start, or rejects an option (stompd's
--memory-limit, until it exists) shows "n/a", with the reason under the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peers import BROKERS, ROOT, Broker, RssSampler, Unavailable

if TYPE_CHECKING:
    from collections.abc import Callable

Summary = dict[str, Any]


@dataclass(frozen=True)
class Figure:
    label: str
    read: Callable[[Summary], float]
    higher_is_better: bool
    digits: int = 0


THROUGHPUT = Figure("msgs/s", lambda s: float(s["msgs_per_s"]), True)
DELIVERIES = Figure("deliveries/s", lambda s: float(s["msgs_per_s"]), True)
FILL = Figure("fill msgs/s", lambda s: float(s["send_msgs_per_s"]), True)
DRAIN = Figure("drain msgs/s", lambda s: float(s["msgs_per_s"]), True)
P50 = Figure("p50 ms", lambda s: float(s["latency_ms"]["p50"]), False, 2)
P99 = Figure("p99 ms", lambda s: float(s["latency_ms"]["p99"]), False, 2)
P999 = Figure("p99.9 ms", lambda s: float(s["latency_ms"]["p99_9"]), False, 2)
RSS_LABEL = "peak RSS MB"


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    args: tuple[str, ...]
    figures: tuple[Figure, ...]
    kind: str = "queue"
    memory_limit: str | None = None
    timeout: float = 900.0
    #: stompd-perf's processes for this scenario, whatever ``--processes`` says.
    processes: int | None = None


def scenarios(scale: float, rate: int, latency_seconds: float, backlog: int) -> list[Scenario]:
    n = max(1000, int(200_000 * scale))  # non-persistent
    np_ = max(1000, int(50_000 * scale))  # persistent: a fsync-bound broker is slow
    kib = ("--size", "1024")
    return [
        Scenario("queue-1-1", "queue 1→1, 1 KiB", ("--messages", str(n), *kib), (THROUGHPUT,)),
        Scenario(
            "queue-4-4",
            "queue 4→4, 1 KiB",
            ("--producers", "4", "--consumers", "4", "--messages", str(n), *kib),
            (THROUGHPUT,),
        ),
        Scenario(
            "queue-1-1-persistent",
            "queue 1→1, 1 KiB, persistent",
            ("--persistent", "--messages", str(np_), *kib),
            (THROUGHPUT,),
        ),
        Scenario(
            "queue-4-4-persistent",
            "queue 4→4, 1 KiB, persistent",
            ("--persistent", "--producers", "4", "--consumers", "4", "--messages", str(np_), *kib),
            (THROUGHPUT,),
        ),
        Scenario(
            "queue-8-1-persistent",
            "queue 8→1, 1 KiB, persistent",
            ("--persistent", "--producers", "8", "--consumers", "1", "--messages", str(np_), *kib),
            (THROUGHPUT,),
        ),
        Scenario(
            "topic-1-4",
            "topic 1→4, 1 KiB",
            ("--consumers", "4", "--messages", str(n // 2), *kib),
            (DELIVERIES,),
            kind="topic",
        ),
        Scenario(
            "backlog",
            f"backlog of {backlog:,} x 256 B, memory limit 64 MB",
            ("--backlog", "--messages", str(backlog), "--size", "256", "--timeout", "60"),
            (FILL, DRAIN),
            memory_limit="64mb",
            timeout=3600.0,
        ),
        Scenario(
            "latency",
            f"latency at {rate:,} msgs/s, queue 1→1, 1 KiB",
            ("--rate", str(rate), "--duration", f"{latency_seconds:g}", "--warmup", "2", *kib),
            (P50, P99, P999),
            # One process has room to spare at this rate; two, beside the broker, are three
            # busy processes on a 2-core machine, and the tail then measures the scheduler
            # (benchmarks/README.md, issue 41: the sink's own p99 5.6-8.3 ms with 2, 0.19 with 1).
            processes=1,
        ),
    ]


@dataclass
class Outcome:
    """One broker in one scenario."""

    figures: dict[str, float | None] = field(default_factory=dict)
    problem: str | None = None  # why figures are missing, or what went wrong (lost, errors)
    runs: list[Summary] = field(default_factory=list)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_tool(broker: Broker, destination: str, args: list[str], processes: int, timeout: float) -> Summary:
    """stompd-perf --json against `broker`; the parsed summary (a partial one if it timed out)."""
    argv = [sys.executable, "-m", "perf", "--host", "127.0.0.1", "--port", str(broker.port)]
    argv += ["--vhost", broker.vhost, "--login", "guest", "--passcode", "guest", "--json", "--quiet"]
    argv += ["--destination", destination, "--processes", str(processes), *args]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,  # its own group: on timeout we end it and its workers, nothing else
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the tool reports what it has on SIGTERM
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    lines = out.strip().splitlines()
    if not lines:
        raise RuntimeError(f"stompd-perf printed nothing (status {proc.returncode}): {err.strip()[-500:]}")
    summary: Summary = json.loads(lines[-1])
    return summary


def measure(
    broker: Broker, scenario: Scenario, repeat: int, processes: int, warmup_seconds: float
) -> Outcome:
    outcome = Outcome()
    processes = scenario.processes or processes
    try:
        broker.start(scenario.memory_limit)
    except Unavailable as exc:
        outcome.problem = str(exc)
        if scenario.memory_limit and "memory-limit" in str(exc):
            outcome.problem = f"rejects --memory-limit {scenario.memory_limit}"
        return outcome
    try:
        with RssSampler(broker.pid()) as rss:
            # Receipts bound what the warm-up keeps in flight: it should heat the JIT, not
            # leave a backlog (and its memory) behind for the scenario to be charged with.
            warm = ["--duration", f"{warmup_seconds:g}", "--size", "1024", "--timeout", "30"]
            warm += ["--receipt-every", "100", "--receipt-window", "8"]
            run_tool(broker, "/queue/bench.warmup", warm, processes, 600)
            for i in range(repeat):
                destination = f"/{scenario.kind}/bench.{scenario.key}.{i}"
                summary = run_tool(broker, destination, list(scenario.args), processes, scenario.timeout)
                outcome.runs.append(summary)
                log(f"  {broker.name:<9} {scenario.key:<22} run {i + 1}: {_brief(summary)}")
        outcome.figures[RSS_LABEL] = rss.peak_kb / 1024
    except (RuntimeError, ValueError, OSError) as exc:
        outcome.problem = f"run failed: {exc}"
    finally:
        broker.stop()
    for figure in scenario.figures:
        values = [figure.read(s) for s in outcome.runs]
        outcome.figures[figure.label] = statistics.median(values) if values else None
    bad = [s for s in outcome.runs if not s.get("ok", False)]
    if bad:
        worst = max(bad, key=lambda s: (s["lost"], s["errors"]))
        samples = "; ".join(worst.get("error_samples", [])[:2])
        outcome.problem = f"lost {worst['lost']:,}, errors {worst['errors']}" + (
            f" ({samples})" if samples else ""
        )
    return outcome


def _brief(s: Summary) -> str:
    lat = s["latency_ms"]
    return (
        f"sent {s['sent']:,} recv {s['received']:,} lost {s['lost']:,} errors {s['errors']} | "
        f"{s['msgs_per_s']:,.0f} msgs/s (send {s['send_msgs_per_s']:,.0f}/s) | "
        f"p50 {lat['p50']} p99 {lat['p99']} p99.9 {lat['p99_9']} ms"
    )


def _cell(value: float | None, digits: int, problem: str | None) -> str:
    if value is None:
        return "n/a"
    text = f"{value:,.{digits}f}"
    return text + " !" if problem else text


def table(
    chosen: list[Scenario], brokers: list[Broker], results: dict[tuple[str, str], Outcome]
) -> list[str]:
    names = [b.name for b in brokers]
    ratio = "stompd" in names and "activemq" in names
    ceiling = "stompd" in names and "forwarder" in names
    head = ["scenario", "figure", *(b.label for b in brokers)]
    head += (["stompd / ActiveMQ"] if ratio else []) + (["stompd / ceiling"] if ceiling else [])
    rows = [head, ["---"] * len(head)]
    notes: list[str] = []
    for scenario in chosen:
        lines = [(f.label, f.digits) for f in scenario.figures] + [(RSS_LABEL, 0)]
        for i, (label, digits) in enumerate(lines):
            row = [scenario.title if i == 0 else "", label]
            values: dict[str, float | None] = {}
            for b in brokers:
                outcome = results.get((scenario.key, b.name))
                value = outcome.figures.get(label) if outcome else None
                values[b.name] = value
                row.append(_cell(value, digits, outcome.problem if outcome else None))
            for shown, other in ((ratio, "activemq"), (ceiling, "forwarder")):
                if shown:
                    s, a = values.get("stompd"), values.get(other)
                    row.append(f"{s / a:.2f}" if s is not None and a else "n/a")
            rows.append(row)
        for b in brokers:
            outcome = results.get((scenario.key, b.name))
            if outcome and outcome.problem:
                notes.append(f"- {scenario.key}, {b.label}: {outcome.problem}")
    widths = [max(len(r[c]) for r in rows) for c in range(len(head))]
    text = ["| " + " | ".join(cell.ljust(widths[c]) for c, cell in enumerate(r)) + " |" for r in rows]
    if notes:
        text += [
            "",
            "Notes (n/a: not measured; ! marks a figure from a run that lost messages or had errors):",
        ]
        text += notes
    return text


def machine() -> str:
    cpu = "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {mem_gb:.0f} GiB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", default=",".join(BROKERS), help="comma-separated, of: " + ", ".join(BROKERS))
    p.add_argument("--scenarios", default="all", help="comma-separated scenario keys, or all")
    p.add_argument(
        "--quick", action="store_true", help="a tenth of the messages, 100k backlog, 5 s of latency"
    )
    p.add_argument("--scale", type=float, help="multiply message counts by this (default 1, --quick 0.1)")
    p.add_argument("--backlog-messages", type=int, help="backlog size (default 1,000,000; --quick 100,000)")
    p.add_argument("--rate", type=int, default=5000, help="msgs/s of the latency scenario (default 5000)")
    p.add_argument("--repeat", type=int, default=1, help="measured runs per scenario; the median is shown")
    p.add_argument(
        "--processes", type=int, default=2, help="stompd-perf --processes (default 2; latency: always 1)"
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=15.0,
        help="seconds of untimed 1→1 load on each fresh broker (default 15)",
    )
    p.add_argument("--json-out", type=Path, help="also write every run's summary here")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = p.parse_args(argv)

    scale = args.scale if args.scale is not None else (0.1 if args.quick else 1.0)
    backlog = args.backlog_messages or (100_000 if args.quick else 1_000_000)
    every = scenarios(scale, args.rate, 5.0 if args.quick else 10.0, backlog)
    if args.list:
        for s in every:
            print(f"{s.key:<22} {s.title}: stompd-perf {' '.join(s.args)}")
        return 0
    keys = [s.key for s in every] if args.scenarios == "all" else args.scenarios.split(",")
    unknown = sorted(set(keys) - {s.key for s in every}) + sorted(set(args.brokers.split(",")) - set(BROKERS))
    if unknown:
        p.error(f"unknown: {', '.join(unknown)}")
    chosen = [s for s in every if s.key in keys]
    brokers = [BROKERS[name]() for name in args.brokers.split(",")]

    # SIGTERM ends the run like Ctrl-C, so the finally clauses stop what we started.
    signal.signal(signal.SIGTERM, _interrupt)
    log(f"machine: {machine()}")
    results: dict[tuple[str, str], Outcome] = {}
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
                results[scenario.key, broker.name] = measure(
                    broker, scenario, args.repeat, args.processes, args.warmup
                )
    except KeyboardInterrupt:
        log("interrupted: brokers stopped; partial table follows")
    print(f"machine: {machine()}")
    elapsed = time.monotonic() - started
    tool = f"stompd-perf --processes {args.processes}"
    overrides = ", ".join(f"{s.key}: {s.processes}" for s in chosen if s.processes)
    tool += f" ({overrides})" if overrides else ""
    print(f"{tool}; repeat {args.repeat} (median); took {elapsed:.0f} s")
    print()
    print("\n".join(table(chosen, brokers, results)))
    for name, why in skipped.items():
        print(f"- {name} not measured: {why}")
    for b in brokers:
        if b.note and b.name not in skipped:
            print(f"- {b.label}: {b.note}")
    if args.json_out:
        dump = {
            f"{k[0]}/{k[1]}": {"problem": o.problem, "figures": o.figures, "runs": o.runs}
            for k, o in results.items()
        }
        args.json_out.write_text(json.dumps({"machine": machine(), "results": dump}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
