"""Long operations and browsing through the real HTTP server, over a stand-in admin service.

The engine answers 501 for these until the core's admin operations land
(test_http_api.py checks that); here ``tests.fake_admin.FakeOps`` stands in for the
core, so what the API promises (202 and polling, progress, cancel, failure, paging
with an opaque cursor, the result's field names) is checked now.
"""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest

from tests.clients import eventually
from tests.fake_admin import FakeOps, FakeServer, messages
from tests.http_support import call

pytestmark = pytest.mark.integration


def test_a_quick_operation_answers_with_its_result() -> None:
    ops = FakeOps({"/queue/a": messages(100)})
    with FakeServer(ops) as server:
        reply = call(
            server.url, "POST", "/api/v1/destinations/a/move", {"to": "b", "selector": "n >= 90", "max": 4}
        )
        assert reply.status == 200
        result = reply.body
        assert (result["kind"], result["state"]) == ("move", "done")
        assert (result["destination"], result["target"]) == ("/queue/a", "/queue/b")
        assert (result["matched"], result["moved"], result["scanned"], result["total"]) == (4, 4, 100, 100)
        assert (result["selector"], result["max"], result["error"]) == ("n >= 90", 4, None)
        assert result["finished"] >= result["started"]
    assert [m.id for m in ops.held["/queue/b"]] == ["m-90", "m-91", "m-92", "m-93"]
    assert len(ops.held["/queue/a"]) == 96


@pytest.mark.parametrize(
    ("kind", "body", "applied", "left", "target"),
    [
        ("copy", {"to": "/queue/b", "selector": "kind = 'odd'"}, ("copied", 5), 10, 5),
        ("remove", {"selector": "n < 3"}, ("removed", 3), 7, None),
        ("purge", {}, ("removed", 10), 0, None),
        ("count", {"selector": "n BETWEEN 2 AND 4"}, None, 10, None),
    ],
)
def test_each_operation_reports_what_it_did(
    kind: str, body: dict[str, object], applied: tuple[str, int] | None, left: int, target: int | None
) -> None:
    ops = FakeOps({"/queue/a": messages(10)})
    with FakeServer(ops) as server:
        reply = call(server.url, "POST", f"/api/v1/destinations/a/{kind}", body)
    assert reply.status == 200
    assert reply.body["state"] == "done"
    if applied is not None:
        assert reply.body[applied[0]] == applied[1]
    else:
        assert reply.body["matched"] == 3
        assert not {"moved", "copied", "removed"} & set(reply.body)
    assert len(ops.held["/queue/a"]) == left
    if target is not None:
        assert len(ops.held["/queue/b"]) == target


def test_a_long_operation_is_polled_until_done() -> None:
    ops = FakeOps({"/queue/deep": messages(50)}, batch=10)
    with FakeServer(ops) as server:
        gate = asyncio.Event()
        ops.gate = gate
        started = call(
            server.url, "POST", "/api/v1/destinations/deep/remove", {"selector": "n > 10", "wait": 0}
        )
        assert started.status == 202
        op_id = started.body["id"]
        assert started.headers["Location"] == f"/api/v1/operations/{op_id}"
        assert started.body["state"] == "running"
        # Still held at its first batch: polling without waiting sees it running.
        polled = call(server.url, "GET", f"/api/v1/operations/{op_id}?wait=0")
        assert (polled.status, polled.body["state"], polled.body["scanned"]) == (202, "running", 0)
        listed = call(server.url, "GET", "/api/v1/operations").body["operations"]
        assert [op["id"] for op in listed] == [op_id]
        server.call(gate.set)
        done = call(server.url, "GET", f"/api/v1/operations/{op_id}?wait=10")
    assert done.status == 200
    assert (done.body["state"], done.body["matched"], done.body["removed"], done.body["scanned"]) == (
        "done",
        39,
        39,
        50,
    )
    assert len(ops.held["/queue/deep"]) == 11


def test_a_running_operation_can_be_cancelled_between_batches() -> None:
    ops = FakeOps({"/queue/deep": messages(100)}, batch=10)
    with FakeServer(ops) as server:
        permits = asyncio.Semaphore(2)
        ops.permits = permits
        body = {"to": "x", "selector": "n >= 0", "wait": 0}
        op_id = call(server.url, "POST", "/api/v1/destinations/deep/move", body).body["id"]
        # Two batches go through, then it waits for a third permit: cancel it there.
        eventually(lambda: call(server.url, "GET", f"/api/v1/operations/{op_id}").body["scanned"] == 20)
        cancelled = call(server.url, "DELETE", f"/api/v1/operations/{op_id}")
        assert cancelled.status == 202
        server.call(lambda: [permits.release() for _ in range(10)])
        final = call(server.url, "GET", f"/api/v1/operations/{op_id}?wait=10").body
    assert final["state"] == "cancelled"
    assert (final["moved"], final["scanned"]) == (20, 20)
    # Nothing lost, nothing duplicated: what was not moved is still there.
    assert len(ops.held["/queue/deep"]) == 80
    assert len(ops.held["/queue/x"]) == 20


def test_an_operation_that_fails_half_way_says_why() -> None:
    from broker.core.admin.errors import Conflict

    ops = FakeOps({"/queue/a": messages(30)}, fail_with=Conflict("the target was deleted meanwhile"))
    with FakeServer(ops) as server:
        reply = call(server.url, "POST", "/api/v1/destinations/a/move", {"to": "b", "selector": "n >= 0"})
    assert reply.status == 200
    assert reply.body["state"] == "failed"
    assert reply.body["error"] == {
        "status": 409,
        "code": "conflict",
        "message": "the target was deleted meanwhile",
    }
    assert reply.body["moved"] == 10


def test_browse_pages_with_an_opaque_cursor() -> None:
    body = b"x" * 300
    ops = FakeOps({"/queue/a": messages(7)})
    ops.held["/queue/a"][0].body = body
    ops.held["/queue/a"][1].body = b"\xff\xfe binary"
    with FakeServer(ops) as server:
        first = call(server.url, "GET", "/api/v1/destinations/a/messages?limit=3&preview=100")
        assert first.status == 200
        page = first.body
        assert page["destination"] == "/queue/a"
        assert [m["id"] for m in page["messages"]] == ["m-0", "m-1", "m-2"]
        big = page["messages"][0]
        assert (big["body"], big["body_size"], big["truncated"], big["body_encoding"]) == (
            "x" * 100,
            300,
            True,
            "utf-8",
        )
        assert page["messages"][1]["body_encoding"] == "base64"
        assert page["messages"][2]["headers"] == {"n": "2", "kind": "even"}
        second = call(
            server.url, "GET", f"/api/v1/destinations/a/messages?limit=3&cursor={quote(page['next'])}"
        ).body
        assert [m["id"] for m in second["messages"]] == ["m-3", "m-4", "m-5"]
        third = call(
            server.url, "GET", f"/api/v1/destinations/a/messages?limit=3&cursor={quote(second['next'])}"
        ).body
        assert ([m["id"] for m in third["messages"]], third["next"]) == (["m-6"], None)
        selected = call(
            server.url, "GET", "/api/v1/destinations/a/messages?selector=" + quote("kind = 'odd'")
        ).body
        assert [m["id"] for m in selected["messages"]] == ["m-1", "m-3", "m-5"]
        bad = call(server.url, "GET", "/api/v1/destinations/a/messages?cursor=zzz")
        assert bad.status == 400
    # Browsing consumed nothing.
    assert len(ops.held["/queue/a"]) == 7


def test_at_most_sixteen_operations_run_at_once() -> None:
    ops = FakeOps({"/queue/a": messages(5)})
    with FakeServer(ops) as server:
        gate = asyncio.Event()
        ops.gate = gate
        for _ in range(16):
            assert call(server.url, "POST", "/api/v1/destinations/a/count", {"wait": 0}).status == 202
        busy = call(server.url, "POST", "/api/v1/destinations/a/count", {"wait": 0})
        assert busy.status == 429
        assert busy.error["code"] == "too_many_operations"
        server.call(gate.set)
