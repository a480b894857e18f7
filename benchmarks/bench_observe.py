"""The message path's cost of observation: queue 1->1 and topic 1->4 with ``stompd-perf``
against a real broker, with the export off and on (``--export-dir``), and optionally
against an older checkout (``--base DIR``, say ``git archive main | tar -x -C DIR``) to
show that the counters and the event hooks cost nothing measurable with export off
(``--base-export``: the older checkout with its export on too, to compare exporters).

Each round starts a fresh broker per variant (its own data directory) and runs each
scenario once; variants take turns within a round, in reverse order every other round
(a variant's place in the round matters on this host: up to 5 % between two builds of
the same code), so a neighbour's load on a shared machine spreads over all of them.
Prints every run, then the median per variant and scenario, and on/off and off/base
ratios: the ratio of the medians, and the median of each round's own on/off (a round's
runs are a minute apart at most, so the host's slow drift cancels out of it).  Beside
each rate, the broker's CPU per message sent (its process and its children, such as an
older checkout's export writer process, from /proc: µs of user + system time over the
run, divided by the messages the producer sent): a figure the machine's other load
moves far less than the rate.

Run: ``python benchmarks/bench_observe.py [--base DIR [--base-export]] [--rounds 5] [--messages 100000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peers import free_port

ROOT = Path(__file__).resolve().parent.parent
PERF = str(Path(sys.executable).with_name("stompd-perf"))


def start_broker(code: Path, data: Path, export: bool) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "broker",
        "--port",
        str(port),
        "--http-port",
        "0",
        "--data-dir",
        str(data),
    ]
    if export:
        command += ["--export-dir", str(data / "export")]
    env = dict(os.environ, PYTHONPATH=str(code))
    proc = subprocess.Popen(command, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"broker from {code} did not start")


TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process and of its children, live or reaped (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 after the name.
    total = sum(int(value) for value in fields[11:15]) * TICK_S
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        total += sum(cpu_seconds(int(child)) for child in children)
    return total


def perf(port: int, scenario: str, messages: int) -> float:
    args = ["--messages", str(messages), "--size", "1024", "--processes", "2", "--json", "--quiet"]
    if scenario == "queue-1-1":
        args += ["--destination", "/queue/bench"]
    else:
        args += ["--destination", "/topic/bench", "--consumers", "4"]
        args[1] = str(messages // 4)
    done = subprocess.run(
        [PERF, "--port", str(port), *args], capture_output=True, text=True, timeout=600, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    # Topic: deliveries per second (what the four consumers received together).
    return float(figures["msgs_per_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, help="an older checkout to compare with (export off)")
    parser.add_argument(
        "--base-export", action="store_true", help="run the older checkout with the export on too"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    variants = [("export off", ROOT, False), ("export on", ROOT, True)]
    if args.base is not None:
        variants.insert(0, ("base", args.base.resolve(), False))
        if args.base_export:
            variants.insert(1, ("base on", args.base.resolve(), True))
    scenarios = ("queue-1-1", "topic-1-4")
    results: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    for round_ in range(1, args.rounds + 1):
        for name, code, export in variants if round_ % 2 else variants[::-1]:
            with tempfile.TemporaryDirectory(prefix="bench-observe-") as tmp:
                proc, port = start_broker(code, Path(tmp), export)
                try:
                    for scenario in scenarios:
                        before = cpu_seconds(proc.pid)
                        rate = perf(port, scenario, args.messages)
                        sent = args.messages if scenario == "queue-1-1" else args.messages // 4
                        us = (cpu_seconds(proc.pid) - before) * 1e6 / sent
                        results.setdefault((name, scenario), []).append(rate)
                        cpu.setdefault((name, scenario), []).append(us)
                        print(
                            f"round {round_} {name:<10} {scenario:<10} {rate:>10,.0f} msgs/s"
                            f" {us:6.1f} µs CPU a message",
                            flush=True,
                        )
                finally:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(30)
    print(f"\nmedians of {args.rounds} rounds (msgs/s; topic: deliveries/s)")
    medians = {key: statistics.median(rates) for key, rates in results.items()}
    for scenario in scenarios:
        line = "  ".join(f"{name}: {medians[(name, scenario)]:>9,.0f}" for name, _, _ in variants)
        on_off = medians[("export on", scenario)] / medians[("export off", scenario)]
        ons, offs = results[("export on", scenario)], results[("export off", scenario)]
        paired = statistics.median(on / off for on, off in zip(ons, offs, strict=True))
        extra = f"  on/off {on_off:.3f} (round by round {paired:.3f})"
        if args.base is not None:
            extra += f"  off/base {medians[('export off', scenario)] / medians[('base', scenario)]:.3f}"
        if ("base on", scenario) in medians:
            extra += f"  base on/base {medians[('base on', scenario)] / medians[('base', scenario)]:.3f}"
        print(f"{scenario:<10} {line}{extra}")
    print("broker CPU, µs a message sent (process and children), medians")
    cpu_medians = {key: statistics.median(values) for key, values in cpu.items()}
    for scenario in scenarios:
        line = "  ".join(f"{name}: {cpu_medians[(name, scenario)]:6.1f}" for name, _, _ in variants)
        on_off = cpu_medians[("export on", scenario)] - cpu_medians[("export off", scenario)]
        print(f"{scenario:<10} {line}  on - off {on_off:+.1f}")


if __name__ == "__main__":
    main()
