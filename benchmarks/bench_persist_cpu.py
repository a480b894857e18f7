"""Broker CPU per persistent message, per thread: where a persistent SEND's cost goes.

    python benchmarks/bench_persist_cpu.py                      # 1 -> 1, 50,000 x 1 KiB
    python benchmarks/bench_persist_cpu.py --producers 8 --rounds 3
    python benchmarks/bench_persist_cpu.py --no-persistent      # the same, non-persistent

A script that prints figures, not a test.  It starts one stompd (our child, a fresh
data directory, ``--memory-limit 64mb``), runs a stompd-perf warm-up, then
``--rounds`` measured runs (``--persistent --receipt-every 100 --processes 2``), and
reads each broker thread's utime + stime (``/proc/PID/task/TID/stat``) before and
after each run: CPU microseconds per message, per thread and in all.  CPU time is the
figure that stays put on a shared machine; throughput swings with the neighbours.

Python threads do not name themselves in ``/proc`` on 3.11: the broker is started
through a wrapper that names each one (prctl PR_SET_NAME) after its ``threading``
name as it starts.  A native thread (LevelDB's compaction thread) inherits the name
of the thread that created it, so a second thread with the same name is shown with
``+``: LevelDB's background thread is started by the first write, the committer's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Names each Python thread after its ``threading`` name (15 bytes), then runs the broker.
_WRAPPER = """
import ctypes, runpy, sys, threading
_libc = ctypes.CDLL(None)
_run = threading.Thread.run
def _named_run(self):
    _libc.prctl(15, self.name.encode()[:15], 0, 0, 0)
    _run(self)
threading.Thread.run = _named_run
_libc.prctl(15, b"loop", 0, 0, 0)
sys.argv[0] = "broker"
runpy.run_module("broker", run_name="__main__", alter_sys=True)
"""

TICK = os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _threads(pid: int) -> dict[int, tuple[str, int]]:
    """tid -> (name, utime + stime ticks) of every thread of ``pid`` alive now."""
    out: dict[int, tuple[str, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        # Fields after the ")" that closes the name: utime and stime are the 12th and 13th.
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(task.name)] = (name, int(fields[11]) + int(fields[12]))
    return out


def _labels(threads: dict[int, tuple[str, int]]) -> dict[int, str]:
    labels: dict[int, str] = {}
    seen: dict[str, int] = {}
    for tid in sorted(threads):
        name = threads[tid][0]
        n = seen.get(name, 0)
        seen[name] = n + 1
        labels[tid] = name + "+" * n
    return labels


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the broker exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit("the broker did not listen in time")


def _perf(port: int, args: argparse.Namespace, messages: int, destination: str) -> dict[str, object]:
    argv = [sys.executable, "-m", "perf", "--port", str(port), "--destination", destination]
    argv += ["--producers", str(args.producers), "--consumers", "1", "--messages", str(messages)]
    argv += ["--size", str(args.size), "--processes", "2", "--json", "--quiet"]
    if args.persistent:
        argv += ["--persistent", "--receipt-every", str(args.receipt_every)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"stompd-perf failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--messages", type=int, default=50_000)
    p.add_argument("--warmup", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--producers", type=int, default=1)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--receipt-every", type=int, default=100)
    p.add_argument("--no-persistent", dest="persistent", action="store_false")
    p.add_argument("--json", action="store_true", help="one JSON line per round on stdout")
    args = p.parse_args()

    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="bench-persist-cpu-") as data:
        argv = [sys.executable, "-c", _WRAPPER, "--host", "127.0.0.1", "--port", str(port)]
        argv += ["--data-dir", data, "--http-port", "0", "--memory-limit", "64mb"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        log = (Path(data) / "broker.log").open("wb")
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            _wait_port(port, proc)
            _perf(port, args, args.warmup, "/queue/bench.cpu.warmup")
            for round_ in range(args.rounds):
                before = _threads(proc.pid)
                start = time.perf_counter()
                result = _perf(port, args, args.messages, f"/queue/bench.cpu.{round_}")
                wall = time.perf_counter() - start
                after = _threads(proc.pid)
                labels = _labels(after)
                per_thread = {
                    labels[tid]: (ticks - before.get(tid, (name, 0))[1]) / TICK * 1e6 / args.messages
                    for tid, (name, ticks) in after.items()
                }
                total = sum(per_thread.values())
                rate = float(result.get("msgs_per_s", 0.0))  # type: ignore[arg-type]
                if args.json:
                    print(
                        json.dumps(
                            {"round": round_, "msgs_per_s": rate, "cpu_us": per_thread, "total": total}
                        )
                    )
                shown = ", ".join(f"{name} {us:.1f}" for name, us in sorted(per_thread.items()) if us >= 0.05)
                print(
                    f"round {round_}: {rate:,.0f} msgs/s, broker CPU {total:.1f} us/msg ({shown}); "
                    f"wall {wall:.1f} s",
                    file=sys.stderr,
                )
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


if __name__ == "__main__":
    main()
