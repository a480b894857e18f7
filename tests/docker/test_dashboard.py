"""The Grafana dashboard (docker/grafana/dashboards/stompd.json): valid, every query real
PromQL that returns data from series named as listed, and the list itself.

The series list is ``tests.docker.dashboard.dashboard_series()``, read from the
dashboard's queries.  It must equal the export schema's metric fields with the
``stompd_`` prefix (the schema says the two use the same words) plus the latency
histogram; ``test_metrics_serves_every_series_the_dashboard_reads`` checks it against a
live broker's ``/metrics``.
"""

from __future__ import annotations

import re
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from export_format.schema import fields
from tests.docker.dashboard import (
    LABELS,
    Query,
    dashboard_series,
    grafana_variables_replaced,
    load,
    panels,
    queries,
)
from tests.http_support import start_http_broker
from tests.stomp_raw import RawClient
from tests.tools import tool

#: The histogram of end-to-end latency, enqueue to ack (not a snapshot field: the event
#: log has each message's latency_ms).
LATENCY = "stompd_message_latency_seconds"
#: Per-destination snapshot fields -> their series (labels destination and type).
DESTINATION_SERIES = {
    "enqueued_total": "stompd_destination_messages_enqueued_total",
    "dequeued_total": "stompd_destination_messages_dequeued_total",
    "dispatched_total": "stompd_destination_messages_dispatched_total",
    "expired_total": "stompd_destination_messages_expired_total",
    "redelivered_total": "stompd_destination_messages_redelivered_total",
    "dead_lettered_total": "stompd_destination_messages_dead_lettered_total",
    "messages": "stompd_destination_messages",
    "inflight": "stompd_destination_messages_inflight",
    "consumers": "stompd_destination_consumers",
    "producers": "stompd_destination_producers",
    "memory_bytes": "stompd_destination_memory_bytes",
    "disk_bytes": "stompd_destination_disk_bytes",
}
_COUNTER_SUFFIXES = ("_total", "_bucket", "_sum", "_count")


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return load()


def test_the_dashboard_is_a_grafana_dashboard(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "stompd" and dashboard["title"] == "stompd"
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    every = panels(dashboard)
    ids = [p["id"] for p in every]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for panel in every:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not mine & cells, f"panel {panel['title']!r} overlaps another"
        cells |= mine
        if panel["type"] == "row":
            continue
        assert panel["type"] in {"stat", "gauge", "timeseries", "heatmap", "table"}, panel["type"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert all(t["expr"].strip() for t in panel["targets"])
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert (
        variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    )
    text = "\n".join(q.expr for q in queries(dashboard))
    assert set(re.findall(r"\$(\w+)", text)) <= set(variables) | {"__rate_interval"}


def _labels_in(expr: str) -> set[str]:
    matchers = {
        name for body in re.findall(r"\{([^}]*)\}", expr) for name in re.findall(r"(\w+)\s*[=!]~?", body)
    }
    grouping = {
        name.strip()
        for body in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr)
        for name in body.split(",")
    }
    return matchers | grouping


def test_queries_use_only_the_labels_the_series_carry(dashboard: dict[str, Any]) -> None:
    for query in queries(dashboard):
        assert _labels_in(query.expr) <= LABELS, query
    legends = [t.get("legendFormat", "") for p in panels(dashboard) for t in p.get("targets", [])]
    assert set(re.findall(r"\{\{\s*(\w+)\s*\}\}", "".join(legends))) <= LABELS


def test_counters_are_only_read_through_rate_and_gauges_never(dashboard: dict[str, Any]) -> None:
    for query in queries(dashboard):
        through_rate = re.findall(r"\b(?:rate|increase)\(\s*(stompd_\w+)", query.expr)
        plain = set(re.findall(r"\bstompd_\w+", query.expr)) - set(through_rate)
        assert all(name.endswith(_COUNTER_SUFFIXES) for name in through_rate), query
        assert not any(name.endswith(_COUNTER_SUFFIXES) for name in plain), query


def test_the_series_follow_prometheus_naming() -> None:
    """Prefix stompd_, base units (bytes, seconds; never ms or kb), _total only at the end."""
    for name in dashboard_series():
        assert re.fullmatch(r"stompd_[a-z][a-z0-9_]*[a-z0-9]", name), name
        words = name.split("_")
        assert not {"ms", "millis", "milliseconds", "kb", "mb", "kib", "mib", "percent"} & set(words), name
        assert "total" not in words[:-1], name
        if "seconds" in words:
            assert re.search(r"_seconds(_total|_bucket|_sum|_count)?$", name), name


def test_the_series_are_the_export_schema_fields_plus_the_latency_histogram() -> None:
    metrics = fields("metrics")
    broker = {f"stompd_{f.name}" for f in metrics if f.required == ("broker",)}
    destination = {f.name for f in metrics if set(f.required) == {"queue", "topic"}} - {"destination"}
    assert destination == DESTINATION_SERIES.keys(), "a snapshot field the dashboard does not map"
    histogram = {f"{LATENCY}_{suffix}" for suffix in ("bucket", "sum", "count")}
    assert dashboard_series() == broker | set(DESTINATION_SERIES.values()) | histogram


def _input_series() -> list[dict[str, str]]:
    """Synthetic samples, every 15 s, for each listed series with the labels /metrics gives it."""
    target = 'instance="stompd:8161", job="stompd"'
    out = []
    for name in sorted(dashboard_series()):
        labels = target
        if name.startswith("stompd_destination_"):
            labels += ', destination="/queue/orders", type="queue"'
        counter = name.endswith(_COUNTER_SUFFIXES)
        if name.endswith("_bucket"):
            for i, le in enumerate(("0.005", "0.05", "0.5", "+Inf")):
                out.append({"series": f'{name}{{{labels}, le="{le}"}}', "values": f"0+{2 * (i + 1)}x40"})
            continue
        values = "0+10x40" if counter else ("1000+0x40" if "limit" in name else "5+0x40")
        out.append({"series": f"{name}{{{labels}}}", "values": values})
    return out


def test_every_query_returns_data_from_series_named_as_listed(
    dashboard: dict[str, Any], tmp_path: Path
) -> None:
    """promtool evaluates each query (Grafana's variables at "All") on synthetic series: an
    alert per query fires when the query returns at least one series."""
    found = queries(dashboard)
    rules = [
        {"alert": f"q{i}", "expr": f"count({grafana_variables_replaced(q.expr)}) > 0"}
        for i, q in enumerate(found)
    ]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    tests = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": _input_series(),
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": f"q{i}", "exp_alerts": [{"exp_labels": {}}]}
                    for i in range(len(found))
                ],
            }
        ],
    }
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        [tool("promtool"), "test", "rules", "tests.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    failed = sorted(
        {int(n) for n in re.findall(r'(?:alertname: |")q(\d+)[,"]', result.stdout + result.stderr)}
    )
    assert result.returncode == 0, (
        "queries that return nothing or do not parse:\n"
        + "\n".join(f"  {found[n].where}: {found[n].expr}" for n in failed)
        + f"\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    )


class MetricsEndpointMissing(Exception):
    """The broker answers 404 for /metrics: the Prometheus endpoint is not there yet."""


def _workload(port: int) -> None:
    """A queue message sent and acked, a topic message to one subscriber: every per-destination
    series and the latency histogram then have something to say."""
    client = RawClient(port)
    client.connect()
    client.send("SUBSCRIBE", {"destination": "/queue/docker", "id": "q", "ack": "client-individual"})
    client.send("SUBSCRIBE", {"destination": "/topic/docker", "id": "t", "ack": "auto"})
    client.send("SEND", {"destination": "/queue/docker", "receipt": "s1"}, b"q")
    client.send("SEND", {"destination": "/topic/docker", "receipt": "s2"}, b"t")
    frames = [client.recv() for _ in range(4)]
    queued = next(f for f in frames if f.command == "MESSAGE" and f.headers["subscription"] == "q")
    client.send("ACK", {"id": queued.headers["ack"], "receipt": "a1"})
    assert client.recv().command == "RECEIPT"
    client.close()


@pytest.mark.integration
def test_metrics_serves_every_series_the_dashboard_reads(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    broker = start_http_broker(tmp_path / "data")
    try:
        _workload(broker.port)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{broker.http_port}/metrics", timeout=10) as reply:
                text = reply.read().decode()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise MetricsEndpointMissing from exc
            raise
    finally:
        broker.stop()
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    served = {s.name for s in samples}
    assert dashboard_series() <= served, f"not served: {sorted(dashboard_series() - served)}"
    for sample in samples:
        if sample.name.startswith("stompd_destination_"):
            assert sample.labels["type"] in ("queue", "topic") and sample.labels["destination"].startswith(
                "/"
            )
    destinations = {s.labels.get("destination") for s in samples if s.name == "stompd_destination_messages"}
    assert {"/queue/docker", "/topic/docker"} <= destinations


def test_queries_are_read_from_targets_and_variables(dashboard: dict[str, Any]) -> None:
    found = queries(dashboard)
    assert (
        Query(
            "variable destination",
            'count by (destination) (stompd_destination_messages{instance=~"$instance", type=~"$type"})',
        )
        in found
    )
    assert len([q for q in found if q.where.startswith("panel")]) == sum(
        len(p.get("targets", [])) for p in panels(dashboard)
    )
