"""The JSON admin API, ``/api/v1``: request parsing and validation, then one call to the
core's admin service (``broker.core.admin.service.AdminService``, acting as the request's
user), its ``Steps`` run by the engine's chores (``slices.finish``).

A destination in a path is one URL-encoded segment written as in STOMP
(``/api/v1/destinations/%2Fqueue%2Forders``); a bare name means a queue
(``/api/v1/destinations/orders``).  docs/http-api.md describes every route.
"""

from __future__ import annotations

import base64
import logging
import math
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from aiohttp import web

from broker.core.admin.errors import AdminError, Invalid, NotFound
from broker.core.admin.requests import check_target
from broker.core.admin.views import DestinationInfo
from broker.core.base import names
from broker.core.base.errors import LONG_MAX, InvalidDestination
from broker.core.base.selector import InvalidSelector, compile_selector
from broker.core.base.selector.stomp_names import refuse_stomp_names
from broker.http import slices
from broker.http.operations import RUNNING, Operation, Operations
from broker.http.request_body import body_of
from broker.http.statuses import status_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from broker.core.admin.service import AdminService
    from broker.core.admin.views import BrowsedMessage, BrowsePage, Meter, Progress
    from broker.core.base.chores import Steps
    from broker.core.base.selector import Selector

T = TypeVar("T")

log = logging.getLogger("stompd.http")

PREFIX = "/api/v1"
OPS_KEY = web.AppKey("ops", object)
OPERATIONS_KEY = web.AppKey("operations", Operations)
#: The request key the admin server's guard puts the authenticated user under (None: no
#: users are configured).
USER: web.RequestKey[str | None] = web.RequestKey("user")

BROWSE_DEFAULT, BROWSE_MAX = 50, 1000
SUBSCRIBERS_MAX = 100_000
PREVIEW_DEFAULT, PREVIEW_MAX = 256, 64 * 1024
#: How long a POST waits for its operation by default, and at most (seconds).
WAIT_DEFAULT, WAIT_MAX = 5.0, 60.0
_CREATABLE = (names.QUEUE, names.TOPIC)


def error_body(status: int, code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"status": status, "code": code, "message": message, **extra}}


def json_error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    return web.json_response(error_body(status, code, message, **extra), status=status)


def ops_of(request: web.Request) -> AdminService:
    """The broker's admin service, acting as the request's user: what it may do to
    destinations is what its authorization entries allow (broker/core/admin/rights.py)."""
    ops: AdminService = request.app[OPS_KEY]  # type: ignore[assignment]
    return ops.acting_as(request.get(USER))


async def done(ops: AdminService, work: Steps[T]) -> T:
    """``work``'s answer, once the engine's chores have run it (``slices.finish``)."""
    return await slices.finish(ops.chores, work)


# -- parsing --------------------------------------------------------------------------


def parse_destination(text: str) -> str:
    """A STOMP destination name, its full name: a name without a known prefix is a queue
    (``orders``, ``/custom/x``), as a SEND's.  Raises Invalid."""
    text = text.strip()
    if not text:
        raise Invalid("empty destination name")
    try:
        parts = names.split_destination(text)
    except InvalidDestination as exc:
        raise Invalid(str(exc)) from None
    if len(parts) != 1:
        raise Invalid(f"{text} names several destinations; name one")
    kind, bare = parts[0]
    return kind + bare


def parse_selector(text: Any) -> Selector | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise Invalid("selector must be a string")
    if not text.strip():
        return None
    selector = compile_selector(text)  # InvalidSelector: a 400 with its position
    # Valid, but it would match nothing: a 400 naming the JMS name to use.
    refuse_stomp_names(text)
    return selector


def int_field(value: Any, name: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise Invalid(f"{name} must be an integer, got {value!r}") from None
    if not isinstance(value, int) or isinstance(value, bool):
        raise Invalid(f"{name} must be an integer")
    if value < lo or (hi is not None and value > hi):
        raise Invalid(f"{name} must be {lo}..{hi}" if hi is not None else f"{name} must be at least {lo}")
    return value


def _wait(value: Any) -> float:
    if value is None:
        return WAIT_DEFAULT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise Invalid(f"wait must be a number of seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise Invalid("wait must be 0 or more seconds")
    return min(seconds, WAIT_MAX)


# -- JSON views -----------------------------------------------------------------------


def destination_json(info: DestinationInfo) -> dict[str, Any]:
    # Field by field, not ``asdict`` (its deep copy costs half as much again, per row).
    out = {name: getattr(info, name) for name in _DESTINATION_FIELDS}
    out["memory_percent"] = (
        round(100.0 * info.memory_bytes / info.memory_limit, 2) if info.memory_limit else 0.0
    )
    return out


_DESTINATION_FIELDS = tuple(f.name for f in fields(DestinationInfo))


def _meter_json(meter: Meter) -> dict[str, Any]:
    return {"used": meter.used, "limit": meter.limit, "peak": meter.peak, "percent": round(meter.percent, 2)}


# -- routes ---------------------------------------------------------------------------

routes = web.RouteTableDef()


@routes.get(PREFIX)
async def index(request: web.Request) -> web.Response:
    return web.json_response(
        {
            "api": "v1",
            "destinations": f"{PREFIX}/destinations",
            "connections": f"{PREFIX}/connections",
            "subscriptions": f"{PREFIX}/subscriptions",
            "operations": f"{PREFIX}/operations",
            "scheduled": f"{PREFIX}/scheduled",
            "usage": f"{PREFIX}/usage",
            "network": f"{PREFIX}/network",
            "broker": f"{PREFIX}/broker",
            "health": "/health",
        }
    )


@routes.get(PREFIX + "/destinations")
async def list_destinations(request: web.Request) -> web.StreamResponse:
    kind = request.query.get("kind")
    ops = ops_of(request)
    infos = await done(ops, ops.destinations.every())
    if kind:
        infos = [info for info in infos if info.kind == kind]
    return await slices.json_list(request, "destinations", infos, destination_json)


@routes.post(PREFIX + "/destinations")
async def create_destination(request: web.Request) -> web.Response:
    body = await body_of(request, {"name"})
    raw = body.get("name")
    if not isinstance(raw, str):
        raise Invalid("name (a destination such as /queue/orders) is required")
    name = parse_destination(raw)
    if not name.startswith(_CREATABLE):
        raise Invalid(f"only /queue/ and /topic/ destinations can be created, not {name}")
    info = ops_of(request).destinations.create(name)
    return web.json_response(
        destination_json(info), status=201, headers={"Location": f"{PREFIX}/destinations/{_quote(name)}"}
    )


@routes.get(PREFIX + "/destinations/{dest}")
async def get_destination(request: web.Request) -> web.Response:
    return web.json_response(destination_json(ops_of(request).destinations.get(dest_of(request))))


@routes.get(PREFIX + "/destinations/{dest}/history")
async def destination_history(request: web.Request) -> web.Response:
    """The last hour at 10 s: each sample's depth, and its in and out as rates per second."""
    history = ops_of(request).destinations.history(dest_of(request))
    seconds = history.interval_ms / 1000
    return web.json_response(
        {
            "name": history.name,
            "interval_ms": history.interval_ms,
            "now": history.now,
            "samples": [
                {
                    "time": sample.time,
                    "depth": sample.depth,
                    "in_rate": round(sample.came / seconds, 3),
                    "out_rate": round(sample.went / seconds, 3),
                }
                for sample in history.samples
            ],
        }
    )


@routes.delete(PREFIX + "/destinations/{dest}")
async def delete_destination(request: web.Request) -> web.Response:
    name = dest_of(request)
    ops = ops_of(request)
    removed = await done(ops, ops.destinations.delete(name))
    return web.json_response({"deleted": name, "removed": removed})


@routes.get(PREFIX + "/destinations/{dest}/messages")
async def browse(request: web.Request) -> web.Response:
    name = dest_of(request)
    selector, limit, preview, cursor = _browse_query(request)
    ops = ops_of(request)
    page = await done(ops, ops.queues.browse(name, selector, limit, cursor, preview))
    return _page_response(name, page)


def _browse_query(request: web.Request) -> tuple[Selector | None, int, int, str | None]:
    """(selector, limit, preview, cursor) of a browse request."""
    query = request.query
    selector = parse_selector(query.get("selector"))
    limit = int_field(query.get("limit", BROWSE_DEFAULT), "limit", 1, BROWSE_MAX)
    preview = int_field(query.get("preview", PREVIEW_DEFAULT), "preview", 0, PREVIEW_MAX)
    return selector, limit, preview, query.get("cursor") or None


def _page_response(name: str, page: BrowsePage) -> web.Response:
    messages = [message_json(message) for message in page.messages]
    return web.json_response({"destination": name, "messages": messages, "next": page.next})


def message_json(message: BrowsedMessage) -> dict[str, Any]:
    body, encoding = _preview(message.preview)
    return {
        "id": message.id,
        "priority": message.priority,
        "persistent": message.persistent,
        "timestamp": message.timestamp,
        "expires": message.expires,
        "redelivered": message.redelivered,
        "headers": message.headers,
        "body_size": message.body_size,
        "body": body,
        "body_encoding": encoding,
        "truncated": len(message.preview) < message.body_size,
    }


def _preview(data: bytes) -> tuple[str, str]:
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


@routes.post(PREFIX + "/destinations/{dest}/count")
async def count(request: web.Request) -> web.Response:
    name = dest_of(request)
    body = await body_of(request, {"selector", "wait"})
    selector = parse_selector(body.get("selector"))
    ops = ops_of(request)
    operation = Operation(_new_id(request), "count", name, selector=_text(selector))
    return await _start(
        request, ops, operation, lambda p: ops.queues.count(name, selector, p), body.get("wait")
    )


@routes.post(PREFIX + "/destinations/{dest}/move")
async def move(request: web.Request) -> web.Response:
    return await _transfer(request, "move")


@routes.post(PREFIX + "/destinations/{dest}/copy")
async def copy(request: web.Request) -> web.Response:
    return await _transfer(request, "copy")


async def _transfer(request: web.Request, kind: str) -> web.Response:
    source = dest_of(request)
    body = await body_of(request, {"to", "selector", "max", "wait"})
    raw_target = body.get("to")
    if not isinstance(raw_target, str):
        raise Invalid(f"to (the destination to {kind} messages to) is required")
    target = parse_destination(raw_target)
    check_target(kind, target)
    if target == source:
        raise Invalid(f"source and target are both {source}")
    selector = parse_selector(body.get("selector"))
    limit = _limit(body.get("max"))
    ops = ops_of(request)
    method = ops.queues.move if kind == "move" else ops.queues.copy
    operation = Operation(
        _new_id(request), kind, source, target=target, selector=_text(selector), limit=limit
    )
    return await _start(
        request, ops, operation, lambda p: method(source, target, selector, limit, p), body.get("wait")
    )


@routes.post(PREFIX + "/destinations/{dest}/remove")
async def remove(request: web.Request) -> web.Response:
    name = dest_of(request)
    body = await body_of(request, {"selector", "max", "wait"})
    selector = parse_selector(body.get("selector"))
    limit = _limit(body.get("max"))
    ops = ops_of(request)
    operation = Operation(_new_id(request), "remove", name, selector=_text(selector), limit=limit)
    return await _start(
        request, ops, operation, lambda p: ops.queues.remove(name, selector, limit, p), body.get("wait")
    )


@routes.post(PREFIX + "/destinations/{dest}/purge")
async def purge(request: web.Request) -> web.Response:
    name = dest_of(request)
    body = await body_of(request, {"wait"})
    ops = ops_of(request)
    operation = Operation(_new_id(request), "purge", name)
    return await _start(request, ops, operation, lambda p: ops.queues.purge(name, p), body.get("wait"))


def _limit(value: Any) -> int | None:
    return None if value is None else int_field(value, "max", 1)


def _text(selector: Selector | None) -> str | None:
    return selector.text if selector is not None else None


def _new_id(request: web.Request) -> str:
    return request.app[OPERATIONS_KEY].new_id()


async def _start(
    request: web.Request,
    ops: AdminService,
    operation: Operation,
    begin: Callable[[Progress], Steps[None]],
    wait: Any,
) -> web.Response:
    """Start a long operation (``begin(progress)`` checks its arguments at once), and wait
    up to ``wait`` seconds for it."""
    seconds = _wait(wait)
    operations = request.app[OPERATIONS_KEY]
    operations.start(operation, lambda progress: done(ops, begin(progress)))
    await operations.wait(operation, seconds)
    return _operation_response(operation)


def _operation_response(operation: Operation) -> web.Response:
    if operation.state == RUNNING:
        return web.json_response(
            operation.to_json(), status=202, headers={"Location": f"{PREFIX}/operations/{operation.id}"}
        )
    return web.json_response(operation.to_json())


@routes.get(PREFIX + "/operations")
async def list_operations(request: web.Request) -> web.Response:
    return web.json_response({"operations": [op.to_json() for op in request.app[OPERATIONS_KEY]]})


@routes.get(PREFIX + "/operations/{id}")
async def get_operation(request: web.Request) -> web.Response:
    operation = _operation(request)
    wait = request.query.get("wait")
    await Operations.wait(operation, _wait(wait) if wait is not None else 0.0)
    return _operation_response(operation)


@routes.delete(PREFIX + "/operations/{id}")
async def cancel_operation(request: web.Request) -> web.Response:
    operation = _operation(request)
    request.app[OPERATIONS_KEY].cancel(operation)
    return _operation_response(operation)


def _operation(request: web.Request) -> Operation:
    op_id = request.match_info["id"]
    operation = request.app[OPERATIONS_KEY].get(op_id)
    if operation is None:
        raise NotFound(f"no operation {op_id} (finished ones are kept for a while only)")
    return operation


@routes.get(PREFIX + "/connections")
async def list_connections(request: web.Request) -> web.StreamResponse:
    ops = ops_of(request)
    infos = await done(ops, ops.connections.every())
    return await slices.json_list(request, "connections", infos, asdict)


@routes.get(PREFIX + "/connections/{id}")
async def get_connection(request: web.Request) -> web.Response:
    connections = ops_of(request).connections
    info, subs = connections.get(request.match_info["id"])
    out = asdict(info)
    out["subscription_list"] = [asdict(sub) for sub in subs]
    out["producer_list"] = connections.producers(info.id)
    return web.json_response(out)


@routes.delete(PREFIX + "/connections/{id}")
async def close_connection(request: web.Request) -> web.Response:
    connection_id = request.match_info["id"]
    ops_of(request).connections.close(connection_id)
    return web.json_response({"closed": connection_id})


@routes.get(PREFIX + "/subscriptions")
async def list_subscriptions(request: web.Request) -> web.StreamResponse:
    ops = ops_of(request)
    return await slices.json_list(
        request, "subscriptions", await done(ops, ops.subscriptions.every()), asdict
    )


@routes.get(PREFIX + "/subscriptions/{client}/{name}/messages")
async def browse_subscription(request: web.Request) -> web.Response:
    client_id, name = request.match_info["client"], request.match_info["name"]
    selector, limit, preview, cursor = _browse_query(request)
    ops = ops_of(request)
    page = await done(ops, ops.subscriptions.browse(client_id, name, selector, limit, cursor, preview))
    return _page_response(f"{client_id}/{name}", page)


@routes.post(PREFIX + "/subscriptions/{client}/{name}/purge")
async def purge_subscription(request: web.Request) -> web.Response:
    client_id, name = request.match_info["client"], request.match_info["name"]
    body = await body_of(request, {"wait"})
    ops = ops_of(request)
    operation = Operation(_new_id(request), "purge", f"{client_id}/{name}")
    return await _start(
        request, ops, operation, lambda p: ops.subscriptions.purge(client_id, name, p), body.get("wait")
    )


@routes.delete(PREFIX + "/subscriptions/{client}/{name}")
async def delete_subscription(request: web.Request) -> web.Response:
    client_id, name = request.match_info["client"], request.match_info["name"]
    removed = ops_of(request).subscriptions.delete(client_id, name)
    return web.json_response({"deleted": {"client_id": client_id, "name": name}, "removed": removed})


@routes.get(PREFIX + "/destinations/{dest}/subscribers")
async def topic_subscribers(request: web.Request) -> web.StreamResponse:
    name = dest_of(request)
    limit = int_field(request.query.get("limit", SUBSCRIBERS_MAX), "limit", 1, SUBSCRIBERS_MAX)
    ops = ops_of(request)
    rows, total = await done(ops, ops.subscriptions.of_topic(name, limit))
    return await slices.json_list(request, "subscribers", rows, asdict, {"total": total})


@routes.get(PREFIX + "/network")
async def network(request: web.Request) -> web.Response:
    ops = ops_of(request)
    bridges = await done(ops, ops.network())
    return web.json_response({"bridges": [asdict(info) for info in bridges]})


@routes.get(PREFIX + "/scheduled")
async def list_scheduled(request: web.Request) -> web.Response:
    query = request.query
    limit = int_field(query.get("limit", BROWSE_DEFAULT), "limit", 1, BROWSE_MAX)
    preview = int_field(query.get("preview", PREVIEW_DEFAULT), "preview", 0, PREVIEW_MAX)
    ops = ops_of(request)
    page = await done(ops, ops.scheduled.page(limit, query.get("cursor") or None, preview))
    jobs = []
    for job in page.jobs:
        body, encoding = _preview(job.preview)
        out = asdict(job)
        del out["preview"]
        out.update(body=body, body_encoding=encoding, truncated=len(job.preview) < job.body_size)
        jobs.append(out)
    return web.json_response({"jobs": jobs, "next": page.next})


@routes.delete(PREFIX + "/scheduled")
async def remove_all_scheduled(request: web.Request) -> web.Response:
    query = request.query
    start, end = query.get("start"), query.get("end")
    if (start is None) != (end is None):
        raise Invalid("start and end go together: a window of due times needs both ends")
    window = None
    if start is not None and end is not None:
        # Epoch ms a job's due time can be (the store's LONG_MAX): a 400 past it.
        window = int_field(start, "start", 0, LONG_MAX), int_field(end, "end", 0, LONG_MAX)
    ops = ops_of(request)
    removed = await done(ops, ops.scheduled.remove(None, window))
    return web.json_response({"removed": removed})


@routes.delete(PREFIX + "/scheduled/{id}")
async def remove_scheduled(request: web.Request) -> web.Response:
    job_id = request.match_info["id"]
    ops = ops_of(request)
    removed = await done(ops, ops.scheduled.remove(job_id, None))
    if not removed:
        raise NotFound(f"no scheduled job {job_id}")
    return web.json_response({"removed": removed, "id": job_id})


@routes.get(PREFIX + "/usage")
async def usage(request: web.Request) -> web.Response:
    info = ops_of(request).usage()
    return web.json_response(
        {
            "memory": {**_meter_json(info.memory), "destinations": info.destinations_bytes},
            "store": _meter_json(info.store),
            "temp": _meter_json(info.temp),
            "connections": info.connections,
            "destinations": info.destinations,
            "blocked_producers": info.blocked_producers,
        }
    )


async def health(request: web.Request) -> web.Response:
    info = ops_of(request).health()
    body = {
        "status": "ok" if info.ok else "failing",
        "problems": list(info.problems),
        "role": info.role,
        "since": info.since,
    }
    return web.json_response(body, status=200 if info.ok else 503)


def dest_of(request: web.Request) -> str:
    return parse_destination(request.match_info["dest"])


def _quote(name: str) -> str:
    return quote(name, safe="")


# -- errors ---------------------------------------------------------------------------


@web.middleware
async def json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every failure under /api/ is a JSON error with a fitting status, never a traceback."""
    try:
        return await handler(request)
    except InvalidSelector as exc:
        return json_error(
            400,
            "invalid_selector",
            str(exc),
            selector=exc.selector,
            position=exc.position,
            problem=exc.problem,
        )
    except AdminError as exc:
        return json_error(status_of(exc), exc.code, str(exc))
    except web.HTTPException as exc:
        if not request.path.startswith(PREFIX) or exc.status < 400:
            raise
        response = json_error(exc.status, exc.reason.lower().replace(" ", "_"), exc.reason)
        if "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response
    except Exception as exc:
        if not request.path.startswith(PREFIX):
            raise
        log.error("admin API: %s %s failed", request.method, request.path, exc_info=exc)
        return json_error(500, "internal", "internal error (the broker logged it)")
