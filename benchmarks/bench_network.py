"""Networks of brokers (issue 31): stompd nodes joined by <networkConnectors>, measured
with stompd-perf.  Prints one figure per scenario; benchmarks/README.md has the runs.

Scenarios (each on fresh ``python -m broker`` processes, data in a temporary directory):

* ``single``: one node, persistent queue 1->1, a receipt every 100 SENDs: the baseline.
* ``hop``: the same load with the producer on A and the consumer on B (A's connector to B):
  every message crosses one bridge, stored on A, then on B (store and forward).
* ``spread``: N producers and N consumers over two nodes joined by a duplex connector,
  against the same load on one node (``--pairs``, non-persistent and persistent).
* ``line-kill``: A -> B -> C (duplex connectors, networkTTL 2), producer on A, consumer
  on C; B is killed with SIGKILL mid-burst and started again: lost and duplicated.

    python benchmarks/bench_network.py                       # all of them
    python benchmarks/bench_network.py --scenarios hop,single --messages 100000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from peers import ROOT, cpu_seconds, end_child, free_port, stomp_ready

OPTIONS = "initialReconnectDelay=100&amp;maxReconnectDelay=1000"


class Node:
    """One ``python -m broker --config`` process with its own data directory."""

    def __init__(self, directory: Path, name: str, connectors: list[tuple[str, int]], ttl: int = 1) -> None:
        self.name = name
        self.port = free_port()
        self.directory = directory / name
        self.directory.mkdir()
        self.connectors = connectors
        self.ttl = ttl
        self.proc: subprocess.Popen[bytes] | None = None

    def config(self) -> Path:
        network = "".join(
            f'<networkConnector name="{self.name}-{i}" uri="static:(stomp://127.0.0.1:{port})?{OPTIONS}" '
            f'duplex="{"true" if duplex == "duplex" else "false"}" networkTTL="{self.ttl}"/>'
            for i, (duplex, port) in enumerate(self.connectors)
        )
        file = self.directory / "activemq.xml"
        file.write_text(
            '<beans xmlns="http://www.springframework.org/schema/beans">\n'
            f'<broker xmlns="http://activemq.apache.org/schema/core" brokerName="{self.name}">\n'
            f'<transportConnectors><transportConnector uri="stomp://127.0.0.1:{self.port}"/>'
            "</transportConnectors>\n"
            + (f"<networkConnectors>{network}</networkConnectors>\n" if network else "")
            + "</broker>\n</beans>\n"
        )
        return file

    def start(self) -> None:
        argv = [sys.executable, "-m", "broker", "--config", str(self.config())]
        argv += ["--data-dir", str(self.directory / "data"), "--http-port", "0", "--log-level", "WARNING"]
        with open(self.directory / "broker.log", "ab") as log:
            self.proc = subprocess.Popen(
                argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        if not stomp_ready(self.port, 60):
            raise RuntimeError(f"node {self.name} did not start: see {self.directory / 'broker.log'}")

    def cpu(self) -> float:
        assert self.proc is not None
        return cpu_seconds(self.proc.pid)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            end_child(proc, 30)


def perf(args: list[str], timeout: float = 600) -> dict[str, Any]:
    """One stompd-perf run (its own process group); its JSON summary."""
    argv = [sys.executable, "-m", "perf", "--json", "--quiet", "--processes", "2", *args]
    proc = subprocess.run(
        argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"stompd-perf printed nothing: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def wait_demand(producer_port: int, consumer_port: int, destination: str) -> None:
    """Until a message sent on one node reaches a consumer on the other (the demand has
    crossed), so the measured run starts with the bridges ready."""
    probe = [
        "--producer-ports",
        str(producer_port),
        "--consumer-ports",
        str(consumer_port),
        "--destination",
        destination,
        "--messages",
        "10",
        "--timeout",
        "30",
    ]
    perf(probe)


def run_nodes(nodes: list[Node]) -> None:
    for node in reversed(nodes):
        node.start()


def stop_nodes(nodes: list[Node]) -> None:
    for node in nodes:
        node.stop()


def figure(result: dict[str, Any], cpu: float | None = None) -> dict[str, Any]:
    out = {
        "msgs_per_s": round(result["msgs_per_s"]),
        "sent": result["sent"],
        "received": result["received"],
        "lost": result["lost"],
        "duplicated": result["duplicated"],
        "errors": result["errors"],
    }
    if cpu is not None:
        out["broker_cpu_s_per_10k"] = round(cpu / max(result["received"], 1) * 10_000, 3)
    return out


def single(tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    node = Node(tmp, "S", [])
    node.start()
    try:
        before = node.cpu()
        result = perf(load(args, node.port, node.port))
        return figure(result, node.cpu() - before)
    finally:
        node.stop()


def two_nodes(tmp: Path, args: argparse.Namespace, link: str) -> list[Node]:
    """A and B (A's connector to B), started, with a demand that has crossed."""
    b = Node(tmp, "B", [])
    a = Node(tmp, "A", [(link, b.port)])
    nodes = [a, b]
    run_nodes(nodes)
    try:
        wait_demand(a.port, b.port, args.destination)
    except BaseException:
        stop_nodes(nodes)
        raise
    return nodes


def hop(tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    nodes = two_nodes(tmp, args, "push")
    a, b = nodes
    try:
        before = a.cpu() + b.cpu()
        result = perf(load(args, a.port, b.port))
        return figure(result, a.cpu() + b.cpu() - before)
    finally:
        stop_nodes(nodes)


def load(args: argparse.Namespace, producer_port: int, consumer_port: int, pairs: int = 1) -> list[str]:
    out = [
        "--destination",
        args.destination,
        "--messages",
        str(args.messages),
        "--size",
        "1024",
        "--producers",
        str(pairs),
        "--consumers",
        str(pairs),
        "--producer-ports",
        str(producer_port),
        "--consumer-ports",
        str(consumer_port),
        "--timeout",
        "30",
    ]
    if args.persistent:
        out += ["--persistent", "--receipt-every", "100"]
    return out


def spread(tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """N producers and N consumers: all on one node, then spread over two."""
    pairs = args.pairs
    one = Node(tmp, "S", [])
    one.start()
    try:
        single_result = perf(load(args, one.port, one.port, pairs))
    finally:
        one.stop()
    nodes = two_nodes(tmp, args, "duplex")
    a, b = nodes
    try:
        ports = f"{a.port},{b.port}"
        spread_args = load(args, a.port, b.port, pairs)
        spread_args[spread_args.index("--producer-ports") + 1] = ports
        spread_args[spread_args.index("--consumer-ports") + 1] = ports
        spread_result = perf(spread_args)
    finally:
        stop_nodes(nodes)
    return {
        "pairs": pairs,
        "one_node": figure(single_result),
        "two_nodes": figure(spread_result),
        "ratio": round(spread_result["msgs_per_s"] / max(single_result["msgs_per_s"], 1), 2),
    }


def line_kill(tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    c = Node(tmp, "C", [], ttl=2)
    b = Node(tmp, "B", [("duplex", c.port)], ttl=2)
    a = Node(tmp, "A", [("duplex", b.port)], ttl=2)
    nodes = [a, b, c]
    run_nodes(nodes)
    try:
        wait_demand(a.port, c.port, args.destination)
        killed: dict[str, float] = {}

        def kill_mid_burst() -> None:
            time.sleep(args.kill_after)
            b.kill()
            killed["at"] = time.monotonic()
            b.start()
            killed["back_s"] = round(time.monotonic() - killed["at"], 2)

        killer = threading.Thread(target=kill_mid_burst)
        started = time.monotonic()
        killer.start()
        persistent = argparse.Namespace(**{**vars(args), "persistent": True})
        result = perf(load(persistent, a.port, c.port))
        killer.join()
        out = figure(result)
        out["killed_after_s"] = round(killed["at"] - started, 2)
        out["restart_s"] = killed["back_s"]
        return out
    finally:
        stop_nodes(nodes)


SCENARIOS = {"single": single, "hop": hop, "spread": spread, "line-kill": line_kill}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", default="single,hop,spread,line-kill")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--destination", default="/queue/bench-network")
    parser.add_argument("--no-persistent", dest="persistent", action="store_false")
    parser.add_argument("--pairs", type=int, default=2, help="spread: producers (and consumers)")
    parser.add_argument("--kill-after", type=float, default=1.0, help="line-kill: seconds into the run")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    for name in args.scenarios.split(","):
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="bench-network-") as tmp:
                result = SCENARIOS[name](Path(tmp), args)
            print(json.dumps({"scenario": name, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
