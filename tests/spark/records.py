"""Records and lines for the format tests, drawn from export_format.schema itself.

``records_st()`` makes valid records of either kind (hypothesis); ``mutations(field)``
the ways a value of that field can be wrong; ``BAD_EVENT_LINES`` hand-written corrupt
lines with the reason the validator gives.
"""

from __future__ import annotations

import json
from typing import Any, Final

from hypothesis import strategies as st

from export_format import schema
from export_format.schema import DISCRIMINATOR, Field, is_required

DESTINATIONS: Final = ("/queue/a", "/topic/prices.eu", "/temp-queue/x", "/queue/ü ö")


def _value_st(f: Field) -> st.SearchStrategy[Any]:
    if f.type == "pairs":
        name = st.text(min_size=1, max_size=12)
        return st.lists(st.lists(name, min_size=2, max_size=2), min_size=1, max_size=4)
    if f.type == "bool":
        return st.booleans()
    if f.type == "float":
        return st.floats(min_value=f.minimum or 0, max_value=1e12, allow_nan=False)
    if f.type == "int":
        return st.integers(
            f.minimum if f.minimum is not None else schema.INT_MIN,
            f.maximum if f.maximum is not None else schema.INT_MAX,
        )
    if f.allowed is not None:
        return st.sampled_from(f.allowed)
    if f.prefix is not None:
        return st.sampled_from(DESTINATIONS) | st.text(min_size=1, max_size=12).map(lambda s: "/queue/" + s)
    if f.pattern is not None:
        return st.from_regex(f"^(?:{f.pattern})$", fullmatch=True)
    return st.text(min_size=1 if f.nonempty else 0, max_size=16)


def fits(f: Field, what: str, record: dict[str, Any]) -> bool:
    """Whether a valid line with this event/type and version may carry ``f`` (``auto``: v2
    and v3 acks; ``auto_acked``: v3 enqueues)."""
    version = record.get("v", f.since)
    needed = f.needs is None or record.get(f.needs) is not None
    return (f.only_on is None or what in f.only_on) and f.since <= version and needed


@st.composite
def records_st(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A valid record: ("events" | "metrics", fields), optional fields sometimes left out."""
    kind = draw(st.sampled_from(schema.KINDS))
    disc = schema.fields(kind)[[f.name for f in schema.fields(kind)].index(DISCRIMINATOR[kind])]
    assert disc.allowed is not None
    what = draw(st.sampled_from(disc.allowed))
    record: dict[str, Any] = {}
    for f in schema.fields(kind):
        if f.name == disc.name:
            record[f.name] = what
        elif f.name == "v" and what in schema.CONNECTION_EVENTS:
            record[f.name] = draw(st.integers(4, schema.VERSION))  # a connect line is v4's
        elif is_required(f, what) or (fits(f, what, record) and draw(st.booleans())):
            record[f.name] = draw(_value_st(f))
    return kind, record


def mutations(f: Field, required: bool) -> list[Any]:
    """Values that make a line corrupt in both the Python validator and the Spark job.

    Left out on purpose: a JSON number in a string field, which Spark reads as its text
    (README.md, "How a reader sorts lines").
    """
    bad: list[Any] = []
    if required:
        bad.append(None)
    if f.type == "int":
        bad += ["1", 1.5, True, 2**63]
    elif f.type == "float":
        bad += ["1.5", False]
    elif f.type == "bool":
        bad += [1, "yes"]
    elif f.type == "pairs":
        bad += ["c1", [], ["c1", "s1"], [["c1"]], [["c1", "s1", "x"]]]
        bad += [[["c1", ""]], [["", "s1"]], [[None, "s1"]]]
    if f.minimum is not None:
        bad.append(f.minimum - 1)
    if f.maximum is not None and f.maximum < schema.INT_MAX:
        bad.append(f.maximum + 1)
    if f.allowed is not None:
        bad.append("no-such-" + f.name)
    if f.pattern is not None:
        bad += ["", "bad!chars"]
    if f.prefix is not None:
        bad += ["", f.prefix, "queue/no-slash"]
    if f.nonempty and f.type != "pairs":
        bad.append("")
    return bad


def _line(**changes: Any) -> str:
    record = {
        "v": 1,
        "run": "r1",
        "seq": 7,
        "ts": 1_767_225_600_000,
        "event": "ack",
        "destination": "/queue/a",
        "message_id": "m1",
        "size": 10,
        "priority": 4,
        "persistent": False,
        "consumer": "c1",
        "latency_ms": 3,
    }
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v is not None})


BAD_EVENT_LINES: Final = (
    ("this is not json", "not JSON"),
    ("", "not JSON"),
    ('{"v":1,"run":"r1"', "not JSON"),
    ("[1, 2, 3]", "not a JSON object"),
    ("null", "not a JSON object"),
    (_line().replace('"size": 10', '"size": NaN'), "not JSON"),
    (_line().replace('"', "'"), "not JSON"),
    (_line(v=5), "v: 5 > 4"),
    (_line(v=0), "v: 0 < 1"),
    (_line(auto=True), "auto: only on version 2 lines and later"),
    (_line(v=2, auto="true"), "auto: not a boolean"),
    (_line(v=2, auto=True, event="dispatch"), "auto: only on ack lines"),
    (_line(v=2, auto=True, event="enqueue"), "auto: only on ack lines"),
    (_line(v=2, event="enqueue", auto_acked=[["c1", "s1"]]), "auto_acked: only on version 3 lines"),
    (_line(v=3, auto_acked=[["c1", "s1"]]), "auto_acked: only on enqueue lines"),
    (_line(v=3, event="enqueue", auto_acked=[]), "auto_acked: empty"),
    (_line(v=3, event="enqueue", auto_acked=[["c1", "s1"], ["c2"]]), "auto_acked: ['c2'] is not a pair"),
    (_line(v=3, event="enqueue", auto_acked={"c1": "s1"}), "auto_acked: not an array"),
    (
        _line(v=3, event="enqueue", auto_acked=[["c1", "s1"]], latency_ms=None),
        "auto_acked: only with latency_ms",
    ),
    (_line(event="teleport"), "event: 'teleport' is not one of"),
    (_line(latency_ms=None), "latency_ms: missing"),
    (_line(consumer=None), "consumer: missing"),
    (_line(ts=1_767_225_600), "ts: 1767225600 < 946684800000"),
    (_line(ts=1_767_225_600_000_000), "ts: 1767225600000000 > 4102444799999"),
    (_line(size="10"), "size: not a number"),
    (_line(size=10.0), "size: not a 64-bit integer"),
    (_line(size=-1), "size: -1 < 0"),
    (_line(priority=True), "priority: not a number"),
    (_line(persistent="false"), "persistent: not a boolean"),
    (_line(seq=0), "seq: 0 < 1"),
    (_line(run="has space"), "run: 'has space' does not match"),
    (_line(destination="queue/a"), "destination: 'queue/a' is not '/' followed by a name"),
    (_line(destination="/"), "destination: '/' is not '/' followed by a name"),
    (_line(message_id=""), "message_id: empty"),
    (_line(message_id=7), "message_id: not a string"),
)
