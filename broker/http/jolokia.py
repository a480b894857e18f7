"""A read-only Jolokia at ``/api/jolokia/``, where ActiveMQ 5.17 serves its own (Jolokia
1.7), for the tools that read ActiveMQ through it: Hawtio, Telegraf's ``jolokia2``,
Metricbeat's ``activemq`` module, the Helm chart's ServiceMonitor, scripts.

Jolokia's protocol (version 7): ``GET /api/jolokia/read/<mbean>[/<attribute>[,<more>]]``,
``search/<pattern>``, ``list[/<domain>[/<keys>[/attr]]]``, ``version``, and ``POST`` of
one such request as JSON (``{"type":"read","mbean":...,"attribute":...}``) or a list of
them.  Each answer is Jolokia's envelope, ``{"request":...,"value":...,"timestamp":...,
"status":200}``, or an error's, ``{"request":...,"error_type":...,"error":...,
"status":...}``, always over HTTP 200, as Jolokia answers.  Names in answers are
canonical (keys sorted), an ``ObjectName`` value is ``{"objectName": ...}``, a pattern's
read is a map by MBean name.  The MBeans are ``broker.core.admin.mbeans``'s.

ActiveMQ's own ``jolokia-access.xml`` allows read, list, search and version only; so does
this: ``exec``, ``write`` and the rest are refused with the 403 that policy gives.  The
admin server's guard (its credentials, or loopback only) covers every path here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from broker.core.admin.mbeans import DOMAIN, MBEAN_DESCRIPTION, MBean
from broker.core.admin.objectnames import MalformedObjectName, ObjectName, parse
from broker.http import api, slices
from broker.http.request_body import read_body

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.admin.service import AdminService

PREFIX: Final = "/api/jolokia"
#: Jolokia's default answer type (its ``mimeType`` processing parameter).
CONTENT_TYPE: Final = "text/plain;charset=utf-8"
#: The Jolokia agent ActiveMQ 5.17 ships, and the protocol version it speaks.
AGENT: Final = "1.7.1"
PROTOCOL: Final = "7.2"
#: What ActiveMQ's jolokia-access.xml lets through; every other type is refused.
_ALLOWED: Final = ("read", "list", "search", "version")
_TYPES: Final = ("read", "write", "exec", "list", "version", "search", "notification")

routes = web.RouteTableDef()
log = logging.getLogger("stompd.http")


class JolokiaError(Exception):
    """A request Jolokia answers with an error: its status and Java exception type."""

    status = 500
    java = "java.lang.Exception"

    def envelope(self, request: dict[str, Any] | None) -> dict[str, Any]:
        message = str(self)
        body: dict[str, Any] = {
            "error_type": self.java,
            "error": self.java + (f" : {message}" if message else ""),
            "status": self.status,
        }
        if request is not None:
            body["request"] = request
        return body


class IllegalArgument(JolokiaError):
    status = 400
    java = "java.lang.IllegalArgumentException"


class InstanceNotFound(JolokiaError):
    status = 404
    java = "javax.management.InstanceNotFoundException"


class AttributeNotFound(JolokiaError):
    status = 404
    java = "javax.management.AttributeNotFoundException"


class Refused(JolokiaError):
    # Jolokia drops a SecurityException's type and trace: a plain Exception is said.
    status = 403
    java = "java.lang.Exception"


# -- requests -------------------------------------------------------------------------


def _object_name(text: object) -> ObjectName:
    if not isinstance(text, str):
        raise IllegalArgument("No MBean name given")
    try:
        return parse(text)
    except MalformedObjectName as exc:
        raise IllegalArgument(f"Invalid object name. {exc}") from None


def _attributes(value: object) -> tuple[list[str] | None, bool]:
    """The attributes asked for (None: all) and whether the answer is a map of them (more
    than one, or a list given), as Jolokia's read takes them."""
    if value is None:
        return None, False
    if isinstance(value, str):
        names = [part.replace("\\,", ",") for part in _split_escaped(value, ",", "\\")]
        return names, len(names) > 1
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value), True
    if isinstance(value, list) and value == [None]:
        return None, False
    raise IllegalArgument("Attribute names must be either a String, Collection or null")


def _split_escaped(text: str, separator: str, escape: str) -> list[str]:
    """``text`` split at ``separator``; ``escape`` before a character keeps it as it is."""
    parts: list[str] = []
    current: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == escape:
            current.append(next(chars, ""))
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def from_path(path: str) -> dict[str, Any]:
    """A GET's path (after ``/api/jolokia/``) as the JSON request it stands for: its parts
    split at ``/``, ``!`` escaping the next character (``!/`` a slash in a name)."""
    parts = _split_escaped(path, "/", "!")
    while parts and not parts[-1]:
        parts.pop()  # a trailing slash, as Java's split drops it
    if not parts:
        return {"type": "version"}
    kind, rest = parts[0].lower(), parts[1:]
    request: dict[str, Any] = {"type": kind}
    if kind in ("read", "search", "write", "exec"):
        if rest:
            request["mbean"] = rest[0]
        if kind == "read":
            if len(rest) > 1 and rest[1] != "*":
                request["attribute"] = rest[1]
            if len(rest) > 2:
                request["path"] = "/".join(rest[2:])
    elif kind == "list" and rest:
        request["path"] = rest
    return request


# -- answers ----------------------------------------------------------------------------


def _plain(value: object) -> object:
    """What ``json.dumps`` writes for a value it has no form of: an ``ObjectName`` as
    Jolokia writes one.  Done as the answer is written, a piece at a time: a broker's
    ``Queues`` may name 100,000 of them."""
    if isinstance(value, ObjectName):
        return {"objectName": value.canonical}
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _values(bean: MBean, wanted: list[str] | None) -> dict[str, object]:
    values = bean.values or {}
    names = values if wanted is None else [name for name in wanted if name in values]
    return {name: values[name] for name in names}


def _java_list(items: list[str] | None) -> str:
    return "null" if items is None else "[" + ", ".join(items) + "]"


async def _read(ops: AdminService, request: dict[str, Any]) -> tuple[dict[str, Any], object]:
    name = _object_name(request.get("mbean"))
    wanted, many = _attributes(request.get("attribute"))
    echo: dict[str, Any] = {"mbean": name.canonical, "type": "read"}
    if wanted is not None:
        echo["attribute"] = wanted if many else wanted[0]
    if request.get("path"):
        # stompd's attributes are numbers, strings and name lists: nothing to walk into.
        raise IllegalArgument("stompd's Jolokia reads whole attributes: no inner path")
    beans = await api.done(ops, ops.mbeans.find(name))
    if not name.pattern:
        if not beans:
            raise InstanceNotFound(name.text)
        bean = beans[0]
        values = bean.values or {}
        for attribute in wanted or ():
            if attribute not in values:
                raise AttributeNotFound(f"No such attribute: {attribute}")
        picked = _values(bean, wanted)
        return echo, (picked[wanted[0]] if wanted is not None and not many else picked)
    out: dict[str, object] = {}
    for count, bean in enumerate(beans, 1):
        picked = _values(bean, wanted)
        if picked:
            out[bean.name.canonical] = picked
        if count % slices.SLICE == 0:
            await asyncio.sleep(0)
    if not out:
        found = [bean.name.canonical for bean in beans]
        raise IllegalArgument(
            f"No matching attributes {_java_list(wanted)} found on MBeans {_java_list(found)}"
        )
    return echo, out


async def _search(ops: AdminService, request: dict[str, Any]) -> tuple[dict[str, Any], object]:
    name = _object_name(request.get("mbean"))
    beans = await api.done(ops, ops.mbeans.find(name, values=False))
    return {"mbean": name.canonical, "type": "search"}, [bean.name.canonical for bean in beans]


async def _list(ops: AdminService, request: dict[str, Any]) -> tuple[dict[str, Any], object]:
    raw = request.get("path")
    path = _split_escaped(raw, "/", "!") if isinstance(raw, str) else list(raw or [])
    if not all(isinstance(part, str) for part in path):
        raise IllegalArgument("A list's path is a string or a list of strings")
    echo: dict[str, Any] = {"type": "list"}
    if path:
        echo["path"] = "/".join(path)
    beans = await api.done(ops, ops.mbeans.find(ObjectName(DOMAIN, (), any_keys=True), values=False))
    tree: dict[str, object] = {}
    for count, bean in enumerate(beans, 1):
        keys = bean.name.canonical.partition(":")[2]
        tree[keys] = {
            "desc": MBEAN_DESCRIPTION,
            "class": bean.class_name,
            "attr": {
                attribute.name: {"type": attribute.type, "desc": attribute.desc, "rw": False}
                for attribute in bean.attributes
            },
        }
        if count % slices.SLICE == 0:
            await asyncio.sleep(0)
    listing: object = {DOMAIN: tree}
    for depth, part in enumerate(path):
        key = part
        if depth == 1:
            # The keys as written, in any order: the listing's are canonical (sorted).
            try:
                key = parse(f"{DOMAIN}:{part}").canonical.partition(":")[2]
            except MalformedObjectName as exc:
                raise IllegalArgument(f"Invalid object name. {exc}") from None
        if not isinstance(listing, dict) or key not in listing:
            raise IllegalArgument(f"No MBean '{'/'.join(path[: depth + 1])}' found")
        listing = listing[key]
    return echo, listing


async def _version(ops: AdminService, request: dict[str, Any]) -> tuple[dict[str, Any], object]:
    broker = ops.broker()
    return {"type": "version"}, {
        "agent": AGENT,
        "protocol": PROTOCOL,
        "config": {},
        "info": {"product": "stompd", "vendor": "stompd", "version": broker.version},
    }


_HANDLERS: Final = {"read": _read, "search": _search, "list": _list, "version": _version}


async def execute(ops: AdminService, request: object) -> dict[str, Any]:
    """One request's answer, an error's included."""
    try:
        if not isinstance(request, dict):
            raise IllegalArgument(f"Invalid JSON request {json.dumps(request)}")
        kind = request.get("type")
        if not isinstance(kind, str):
            raise IllegalArgument("No type given in request")
        kind = kind.lower()
        if kind not in _TYPES:
            raise IllegalArgument(f"No type with name '{kind}' exists")
        if kind not in _ALLOWED:
            raise Refused(f"Command type {kind} not allowed due to policy used")
        echo, value = await _HANDLERS[kind](ops, request)
    except JolokiaError as exc:
        return exc.envelope(_echo(request))
    except Exception as exc:
        # As Jolokia answers what its handler did not foresee: a 500 in the envelope.
        log.error("jolokia: %s failed", _echo(request), exc_info=exc)
        return JolokiaError("internal error (the broker logged it)").envelope(_echo(request))
    return {"request": echo, "value": value, "timestamp": int(time.time()), "status": 200}


def _echo(request: object) -> dict[str, Any] | None:
    """What an error answer says of its request (None: it was no request)."""
    if not isinstance(request, dict) or not isinstance(request.get("type"), str):
        return None
    return {key: request[key] for key in ("type", "mbean", "attribute", "path") if key in request}


# -- HTTP ---------------------------------------------------------------------------------


@routes.get(PREFIX)
@routes.get(PREFIX + "/{tail:.*}")
async def get(request: web.Request) -> web.StreamResponse:
    ops = api.ops_of(request)
    tail = request.path[len(PREFIX) :].removeprefix("/")
    return await _respond(request, await execute(ops, from_path(tail)))


@routes.post(PREFIX)
@routes.post(PREFIX + "/")
async def post(request: web.Request) -> web.StreamResponse:
    ops = api.ops_of(request)
    raw = await read_body(request)
    try:
        body = json.loads(raw)
    except ValueError as exc:
        return await _respond(request, IllegalArgument(f"Invalid JSON request: {exc}").envelope(None))
    if isinstance(body, list):
        answers = [await execute(ops, item) for item in body]
        return await _respond(request, answers)
    return await _respond(request, await execute(ops, body))


async def _respond(request: web.Request, answer: object) -> web.StreamResponse:
    """``answer`` as JSON, written a piece at a time: a pattern's read over 100,000
    destinations is megabytes, which one ``json.dumps`` would hold the loop for."""
    response = web.StreamResponse(headers={"Content-Type": CONTENT_TYPE})
    await response.prepare(request)
    chunk: list[str] = []
    size = 0
    for piece in _pieces(answer):
        chunk.append(piece)
        size += len(piece)
        if size >= _CHUNK_BYTES:
            await response.write("".join(chunk).encode())
            chunk.clear()
            size = 0
            await asyncio.sleep(0)
    await response.write("".join(chunk).encode())
    await response.write_eof()
    return response


#: Bytes of text per write; a container with more members than ``_SMALL`` is written
#: member by member, a smaller one in one ``json.dumps``.
_CHUNK_BYTES: Final = 64 * 1024
_SMALL: Final = 64


def _big(value: object) -> bool:
    if isinstance(value, dict):
        return len(value) > _SMALL or any(_big(item) for item in value.values())
    if isinstance(value, list):
        return len(value) > _SMALL or any(_big(item) for item in value)
    return False


def _pieces(value: object) -> Iterator[str]:
    if isinstance(value, dict) and _big(value):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            yield ("," if index else "") + json.dumps(key) + ":"
            yield from _pieces(item)
        yield "}"
    elif isinstance(value, list) and _big(value):
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ","
            yield from _pieces(item)
        yield "]"
    else:
        yield json.dumps(value, default=_plain)
