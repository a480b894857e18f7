"""The admin API's routes on one message, sending, and the broker itself (what ActiveMQ's
console has: Send, a message's page with Delete, Move and Retry, the broker's name,
version and uptime).  Registered beside ``api.routes`` (``server``)."""

from __future__ import annotations

import base64
from dataclasses import asdict
from typing import Any

from aiohttp import web

from broker.core.admin.errors import Invalid
from broker.http import slices
from broker.http.api import (
    PREFIX,
    USER,
    dest_of,
    destination_json,
    done,
    int_field,
    message_json,
    ops_of,
    parse_destination,
    parse_selector,
)
from broker.http.request_body import MAX_MESSAGE_KEY, body_of, message_limit
from broker.io.limits import DEFAULT_MAX_FRAME_SIZE

routes = web.RouteTableDef()

#: Headers an admin SEND takes from the request's own fields, or that are the session's.
_NOT_HEADERS = frozenset({"destination", "receipt", "transaction", "content-length"})
_SEND_FIELDS = {"headers", "body", "body_encoding", "persistent", "priority", "delay"}


@routes.post(PREFIX + "/destinations/{dest}/messages")
async def send(request: web.Request) -> web.Response:
    name = dest_of(request)
    most = request.app.get(MAX_MESSAGE_KEY, DEFAULT_MAX_FRAME_SIZE)
    why = f"a message body of up to {most:,} bytes, the broker's maxFrameSize, in base64"
    body = await body_of(request, _SEND_FIELDS, message_limit(most), why)
    headers = _send_headers(body)
    payload = _send_body(body.get("body", ""), body.get("body_encoding", "utf-8"))
    ops = ops_of(request)
    await done(ops, ops.messages.send(request.get(USER), name, headers, payload))
    out: dict[str, Any] = {"sent": name, "body_size": len(payload), "headers": headers}
    return web.json_response(out, status=201)


def _send_headers(body: dict[str, Any]) -> dict[str, str]:
    raw = body.get("headers") or {}
    if not isinstance(raw, dict):
        raise Invalid("headers must be a JSON object of header names to values")
    headers: dict[str, str] = {}
    for key, value in raw.items():
        if not key or not isinstance(value, str | int | float) or isinstance(value, bool):
            raise Invalid(f"header {key!r} needs a name and a string or number value")
        if key in _NOT_HEADERS:
            raise Invalid(f"header {key!r} is not the sender's to set here")
        headers[key] = str(value)
    persistent = body.get("persistent")
    if persistent is not None:
        if not isinstance(persistent, bool):
            raise Invalid("persistent must be true or false")
        headers["persistent"] = "true" if persistent else "false"
    if body.get("priority") is not None:
        headers["priority"] = str(int_field(body["priority"], "priority", 0, 9))
    delay = int_field(body.get("delay") or 0, "delay", 0)
    if delay:
        headers["AMQ_SCHEDULED_DELAY"] = str(delay)
    return headers


def _send_body(text: Any, encoding: Any) -> bytes:
    if not isinstance(text, str):
        raise Invalid("body must be a string")
    if encoding == "utf-8":
        return text.encode()
    if encoding == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except ValueError:
            raise Invalid("body is not valid base64") from None
    raise Invalid(f"body_encoding must be utf-8 or base64, not {encoding!r}")


@routes.get(PREFIX + "/destinations/{dest}/messages/{id}")
async def get_message(request: web.Request) -> web.Response:
    name = dest_of(request)
    ops = ops_of(request)
    message = await done(ops, ops.messages.get(name, request.match_info["id"]))
    return web.json_response({"destination": name, **message_json(message)})


@routes.delete(PREFIX + "/destinations/{dest}/messages/{id}")
async def remove_message(request: web.Request) -> web.Response:
    name, message_id = dest_of(request), request.match_info["id"]
    ops = ops_of(request)
    await done(ops, ops.messages.remove(name, message_id))
    return web.json_response({"removed": message_id, "destination": name})


async def _target_of(request: web.Request, name: str, verb: str, hint: str) -> str:
    """The queue a move or copy of one message of ``name`` goes to (the body's ``to``)."""
    raw = (await body_of(request, {"to"})).get("to")
    if not isinstance(raw, str):
        raise Invalid(f"to (the queue to {verb} the message to) is required")
    target = parse_destination(raw)
    if target == name:
        raise Invalid(f"the message is on {name} already{hint}")
    return target


@routes.post(PREFIX + "/destinations/{dest}/messages/{id}/move")
async def move_message(request: web.Request) -> web.Response:
    name, message_id = dest_of(request), request.match_info["id"]
    target = await _target_of(request, name, "move", "")
    ops = ops_of(request)
    await done(ops, ops.messages.move(name, message_id, target))
    return web.json_response({"moved": message_id, "destination": name, "target": target})


@routes.post(PREFIX + "/destinations/{dest}/messages/{id}/copy")
async def copy_message(request: web.Request) -> web.Response:
    name, message_id = dest_of(request), request.match_info["id"]
    target = await _target_of(request, name, "copy", ": copy it to another queue")
    ops = ops_of(request)
    await done(ops, ops.messages.copy(name, message_id, target))
    return web.json_response({"copied": message_id, "destination": name, "target": target})


@routes.post(PREFIX + "/destinations/{dest}/messages/{id}/retry")
async def retry_message(request: web.Request) -> web.Response:
    name, message_id = dest_of(request), request.match_info["id"]
    await body_of(request, set())
    ops = ops_of(request)
    target = await done(ops, ops.messages.retry(name, message_id))
    return web.json_response({"retried": message_id, "destination": name, "target": target})


# -- a queue's dispatch, a destination's consumers and producers ----------------------------


@routes.post(PREFIX + "/destinations/{dest}/pause")
async def pause(request: web.Request) -> web.Response:
    """ActiveMQ's QueueView.pause(): taken and stored still, dispatched to nobody."""
    await body_of(request, set())
    return web.json_response(destination_json(ops_of(request).queues.pause(dest_of(request))))


@routes.post(PREFIX + "/destinations/{dest}/resume")
async def resume(request: web.Request) -> web.Response:
    await body_of(request, set())
    return web.json_response(destination_json(ops_of(request).queues.resume(dest_of(request))))


@routes.get(PREFIX + "/destinations/{dest}/consumers")
async def queue_consumers(request: web.Request) -> web.StreamResponse:
    name = dest_of(request)
    ops = ops_of(request)
    rows = await done(ops, ops.queues.consumers(name))
    return await slices.json_list(request, "consumers", rows, asdict, {"destination": name})


@routes.get(PREFIX + "/destinations/{dest}/producers")
async def destination_producers(request: web.Request) -> web.StreamResponse:
    name = dest_of(request)
    ops = ops_of(request)
    rows = await done(ops, ops.queues.producers(name, ops.connections.peers()))
    return await slices.json_list(request, "producers", rows, asdict, {"destination": name})


@routes.post(PREFIX + "/subscriptions")
async def create_subscription(request: web.Request) -> web.Response:
    """ActiveMQ's "Create Durable Topic Subscriber": an offline durable subscription."""
    body = await body_of(request, {"client_id", "name", "destination", "selector"})
    client_id, name, raw = body.get("client_id"), body.get("name"), body.get("destination")
    if not isinstance(client_id, str) or not isinstance(name, str) or not isinstance(raw, str):
        raise Invalid("client_id, name and destination (a /topic/) are required, as strings")
    selector = parse_selector(body.get("selector"))
    ops = ops_of(request)
    info = ops.subscriptions.create(
        request.get(USER), client_id, name, parse_destination(raw), selector.text if selector else ""
    )
    return web.json_response(asdict(info), status=201)


@routes.get(PREFIX + "/broker")
async def broker_info(request: web.Request) -> web.Response:
    return web.json_response(asdict(ops_of(request).broker()))
