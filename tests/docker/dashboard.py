"""The Grafana dashboard's queries, and the series they read: the list ``/metrics`` must serve.

``dashboard_series()`` is that list, read from docker/grafana/dashboards/stompd.json
itself (every ``stompd_*`` name in a panel query or a variable query), so the dashboard
and the list cannot drift apart.  tests/docker/test_dashboard.py checks it against the
export schema now and against a live broker's ``/metrics`` (test_metrics_serves_...).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tests.docker.image import DOCKER

DASHBOARD = DOCKER / "grafana" / "dashboards" / "stompd.json"
_SERIES = re.compile(r"\bstompd_[a-z0-9_]+\b")
#: Labels a query may use: Prometheus adds instance and job; stompd's per-destination
#: series carry destination and type; histogram buckets carry le.
LABELS = frozenset({"instance", "job", "destination", "type", "le"})


@dataclass(frozen=True)
class Query:
    where: str
    expr: str


def load() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dashboard


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows included."""
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def queries(dashboard: dict[str, Any] | None = None) -> list[Query]:
    """Every PromQL query: panel targets, and the selectors of label_values() variables."""
    dashboard = dashboard or load()
    out = [
        Query(f"panel {panel['title']!r} target {target['refId']}", target["expr"])
        for panel in panels(dashboard)
        for target in panel.get("targets", [])
    ]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["query"]["query"])
            assert match, f"variable {variable['name']}: expected label_values(SELECTOR, LABEL)"
            out.append(Query(f"variable {variable['name']}", f"count by ({match[2]}) ({match[1]})"))
    return out


def dashboard_series() -> frozenset[str]:
    """The sample names the dashboard reads (``_total``, ``_bucket`` ... as /metrics writes them)."""
    return frozenset(name for query in queries() for name in _SERIES.findall(query.expr))


def grafana_variables_replaced(expr: str, rate_interval: str = "1m") -> str:
    """A query as Grafana sends it with every variable at "All" (``.*``)."""
    expr = expr.replace("$__rate_interval", rate_interval)
    return re.sub(r"\$(\w+)", ".*", expr)
