"""From the workers' raw results to the figures a person or a script reads.

Loss and duplicates are decided here, not in the workers: on a queue any consumer in
any process may receive any message, so only the union of every worker's "seen" maps
says which messages arrived and how many arrived twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from perf.histogram import Histogram

if TYPE_CHECKING:
    from perf.settings import Settings
    from perf.workload import WorkerResult

PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9))


@dataclass(slots=True)
class RunInfo:
    """What the parent saw of the run, besides the workers' results."""

    start_ns: int
    consumers_go_ns: int = 0  # backlog mode: when consumers were let in
    end_ns: int = 0
    stalled: bool = False
    errors: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Summary:
    sent: int
    received: int
    expected: int
    lost: int
    duplicated: int
    out_of_order: int
    foreign: int
    msgs_per_s: float
    mb_per_s: float
    send_msgs_per_s: float
    latency: Histogram
    errors: int
    error_samples: list[str]
    elapsed_s: float
    stalled: bool
    settings: Settings
    #: With --failover: what the lost connections cost (see ``failover_figures``).
    failover: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.errors == 0

    def latency_ms(self) -> dict[str, float]:
        figures = {name: self.latency.percentile(pct) / 1e6 for name, pct in PERCENTILES}
        figures["max"] = self.latency.max / 1e6
        figures["mean"] = self.latency.mean() / 1e6
        return {name: round(value, 3) for name, value in figures.items()}

    def to_json(self) -> dict[str, Any]:
        s = self.settings
        return {
            "sent": self.sent,
            "received": self.received,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "out_of_order": self.out_of_order,
            "msgs_per_s": round(self.msgs_per_s, 1),
            "mb_per_s": round(self.mb_per_s, 3),
            "latency_ms": self.latency_ms(),
            "errors": self.errors,
            "expected": self.expected,
            "foreign": self.foreign,
            "send_msgs_per_s": round(self.send_msgs_per_s, 1),
            "latency_samples": self.latency.total,
            "elapsed_s": round(self.elapsed_s, 3),
            "stalled": self.stalled,
            "error_samples": self.error_samples,
            "failover": self.failover,
            "ok": self.ok,
            "config": {
                "host": s.host,
                "port": s.port,
                "failover": [f"{host}:{port}" for host, port in s.failover],
                "destination": s.destination,
                "producers": s.producers,
                "consumers": s.consumers,
                "messages": s.messages,
                "duration": s.duration,
                "size": s.size,
                "persistent": s.persistent,
                "ack": s.ack,
                "ack_receipts": s.ack_receipts,
                "prefetch": s.prefetch,
                "transacted": s.transacted,
                "receipt_every": s.receipt_every,
                "priority_mix": s.priority_mix,
                "selector": s.selector,
                "rate": s.rate,
                "warmup": s.warmup,
                "processes": s.processes,
                "backlog": s.backlog,
            },
        }


def summarize(settings: Settings, results: list[WorkerResult], info: RunInfo) -> Summary:
    sent_by_producer: dict[int, int] = {}
    for r in results:
        sent_by_producer.update(r.sent)
    sent = sum(sent_by_producer.values())
    received = sum(n for r in results for n in r.received.values())

    # Union of the "seen" maps: per (consumer, producer) on a topic, where every consumer
    # should see everything; per producer on a queue, where they share the messages.
    merged: dict[tuple[int, int], int] = {}
    for r in results:
        for (group, producer), bits in r.seen.items():
            key = (group, producer) if settings.is_topic else (0, producer)
            merged[key] = merged.get(key, 0) | int.from_bytes(bits, "little")
    distinct = sum(v.bit_count() for v in merged.values())
    # Only sequences below what the producer sent are owed (a stray bit past it is not).
    delivered = sum(
        (v & ((1 << sent_by_producer.get(producer, 0)) - 1)).bit_count()
        for (_, producer), v in merged.items()
    )
    expected = settings.expected(sent)

    latency = Histogram()
    for r in results:
        if r.latency:  # empty when the worker failed before it could report
            latency.merge(Histogram.from_sparse(r.latency))

    warm_ns = info.start_ns + int(settings.warmup * 1e9)
    rx_from = max(warm_ns, info.consumers_go_ns or info.start_ns)
    rx_until = max((r.last_receive_ns for r in results), default=0)
    rx_seconds = (rx_until - rx_from) / 1e9
    window_received = sum(r.window_received for r in results)
    window_bytes = sum(r.window_bytes for r in results)
    tx_until = max((r.producers_done_ns for r in results), default=0)
    tx_seconds = (tx_until - warm_ns) / 1e9

    samples = list(info.errors)
    for r in results:
        samples.extend(r.error_samples)
    return Summary(
        sent=sent,
        received=received,
        expected=expected,
        lost=max(0, expected - delivered),
        duplicated=received - distinct,
        out_of_order=sum(r.out_of_order for r in results),
        foreign=sum(r.foreign for r in results),
        msgs_per_s=window_received / rx_seconds if rx_seconds > 0 else 0.0,
        mb_per_s=window_bytes / rx_seconds / 1e6 if rx_seconds > 0 else 0.0,
        send_msgs_per_s=sum(r.sent_in_window for r in results) / tx_seconds if tx_seconds > 0 else 0.0,
        latency=latency,
        errors=len(info.errors) + sum(r.errors for r in results),
        error_samples=samples[:10],
        elapsed_s=(info.end_ns - info.start_ns) / 1e9,
        stalled=info.stalled,
        settings=settings,
        failover=failover_figures(results, info.start_ns) if settings.failover else None,
    )


def failover_figures(results: list[WorkerResult], start_ns: int) -> dict[str, Any]:
    """What --failover saw: every lost connection (seconds from the start: noticed, a broker
    answered CONNECT again, the first RECEIPT or MESSAGE after), the messages sent again,
    and the gap: the longest wait between two deliveries to one consumer."""
    outages = sorted(o for r in results for o in r.outages)
    back = sorted((o[1] - o[0]) / 1e9 for o in outages)

    def at(ns: int) -> float | None:
        return round((ns - start_ns) / 1e9, 3) if ns else None

    return {
        "reconnects": len(outages),
        "resent": sum(r.resent for r in results),
        "longest_gap_s": round(max((r.longest_gap_ns for r in results), default=0) / 1e9, 3),
        "reconnect_s_p50": round(back[len(back) // 2], 3) if back else None,
        "reconnect_s_max": round(back[-1], 3) if back else None,
        "outages": [{"down_s": at(d), "back_s": at(b), "resumed_s": at(r)} for d, b, r in outages],
    }


def format_human(summary: Summary) -> str:
    s = summary.settings
    kind = "topic" if s.is_topic else "queue"
    mode = "persistent" if s.persistent else "non-persistent"
    lat = summary.latency_ms()
    where = ",".join(f"{host}:{port}" for host, port in s.brokers_of("producer", 0))
    where = f"failover:({where})" if s.failover else where
    lines = [
        f"stompd-perf: {s.destination} ({kind}) on {where}, {s.producers} producer(s) -> "
        f"{s.consumers} consumer(s), {s.size} B {mode}, ack {s.ack}, {s.processes} process(es)",
        f"  sent          {summary.sent:>12,}   ({summary.send_msgs_per_s:,.0f} msgs/s accepted)",
        f"  received      {summary.received:>12,}   (expected {summary.expected:,})",
        f"  lost          {summary.lost:>12,}",
        f"  duplicated    {summary.duplicated:>12,}",
        f"  out of order  {summary.out_of_order:>12,}",
        f"  throughput    {summary.msgs_per_s:>12,.0f} msgs/s   {summary.mb_per_s:,.2f} MB/s (received)",
        f"  latency ms    p50 {lat['p50']:.3f}  p90 {lat['p90']:.3f}  p99 {lat['p99']:.3f}  "
        f"p99.9 {lat['p99_9']:.3f}  max {lat['max']:.3f}  ({summary.latency.total:,} samples)",
        f"  errors        {summary.errors:>12,}",
    ]
    failover = summary.failover
    if failover is not None:
        p50, most = failover["reconnect_s_p50"], failover["reconnect_s_max"]
        reconnect = f"; reconnected after p50 {p50:.3f} s, max {most:.3f} s" if failover["reconnects"] else ""
        lines.append(
            f"  failover      {failover['reconnects']:>12,} reconnect(s), {failover['resent']:,} sent again "
            f"(no RECEIPT before the loss); longest gap between deliveries {failover['longest_gap_s']:.3f} s"
            + reconnect
        )
    if summary.foreign:
        lines.append(f"  ignored {summary.foreign:,} messages not sent by this run")
    if summary.stalled:
        lines.append(f"  stalled: nothing was sent or received for {s.timeout:g} s")
    lines.extend(f"    {text}" for text in summary.error_samples)
    lines.append("  result: " + ("OK" if summary.ok else "FAILED (lost messages or errors)"))
    return "\n".join(lines)
