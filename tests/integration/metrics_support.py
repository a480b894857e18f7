"""``/metrics`` scraped over real HTTP and parsed with prometheus-client's own parser
(moved here from test_metrics.py)."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.broker_thread import BrokerThread

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(thread: BrokerThread) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{thread.http_port}/metrics", timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = reply.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def dest(samples: Samples, series: str, destination: str, kind: str) -> float:
    return samples[(series, (("destination", destination), ("type", kind)))]
