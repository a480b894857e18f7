"""``<transportConnectors>`` and ``<transportDefaults>``: the listeners and their limits.

ActiveMQ writes a listener as a URI with options (``stomp+nio://0.0.0.0:61613?
maximumConnections=1000&wireFormat.maxFrameSize=104857600``).  stompd serves the STOMP
schemes and WebSocket; OpenWire, AMQP, MQTT and the rest are ActiveMQ's other protocols
and are ignored with a warning.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, get_args
from urllib.parse import parse_qsl, urlsplit

from config.model import DEFAULT, ConnectorScheme, TransportConnector, TransportDefaults, origin_of
from config.reader import Context, Fields, boolean, duration, integer, number, size

if TYPE_CHECKING:
    from collections.abc import Callable

    from config.model import Origin
    from config.xmltree import Node

STOMP_SCHEMES = frozenset(get_args(ConnectorScheme))
OTHER_PROTOCOLS = {
    "tcp": "OpenWire",
    "nio": "OpenWire",
    "ssl": "OpenWire",
    "nio+ssl": "OpenWire",
    "auto": "OpenWire/auto-detect",
    "auto+nio": "OpenWire/auto-detect",
    "auto+ssl": "OpenWire/auto-detect",
    "auto+nio+ssl": "OpenWire/auto-detect",
    "amqp": "AMQP",
    "amqp+nio": "AMQP",
    "amqp+ssl": "AMQP",
    "amqp+nio+ssl": "AMQP",
    "amqp+ws": "AMQP",
    "amqp+wss": "AMQP",
    "mqtt": "MQTT",
    "mqtt+nio": "MQTT",
    "mqtt+ssl": "MQTT",
    "mqtt+nio+ssl": "MQTT",
    "mqtt+ws": "MQTT",
    "mqtt+wss": "MQTT",
    "vm": "in-JVM",
    "udp": "OpenWire over UDP",
    "http": "OpenWire over HTTP",
    "https": "OpenWire over HTTPS",
    "multicast": "discovery",
}

#: The limits both <transportDefaults> and a connector's URI set: (model field, converter).
_LIMITS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "maxFrameSize": ("max_frame_size", size),
    "maxHeaders": ("max_headers", integer(1)),
    "maxHeaderLength": ("max_header_length", size),
    "connectAttemptTimeout": ("connect_attempt_timeout", duration),
    "hbGracePeriodMultiplier": ("hb_grace_period_multiplier", number(1.0)),
    "defaultHeartBeat": ("default_heart_beat", lambda text: heart_beat(text)),
    "maximumConnections": ("maximum_connections", integer(1)),
}
#: URI option -> the same limit (ActiveMQ's spellings, and stompd's short ones).
_URI_LIMITS = {
    "maximumConnections": "maximumConnections",
    "wireFormat.maxFrameSize": "maxFrameSize",
    "transport.maxFrameSize": "maxFrameSize",
    "transport.hbGracePeriodMultiplier": "hbGracePeriodMultiplier",
    "transport.defaultHeartBeat": "defaultHeartBeat",
    "transport.connectAttemptTimeout": "connectAttemptTimeout",
    "wireFormat.maxHeaders": "maxHeaders",
    "wireFormat.maxHeaderLength": "maxHeaderLength",
}
_TLS_OPTIONS = {
    "needClientAuth": "need_client_auth",
    "transport.needClientAuth": "need_client_auth",
    "wantClientAuth": "want_client_auth",
    "transport.wantClientAuth": "want_client_auth",
}
_ORIGIN_OPTIONS = ("allowedOrigins", "transport.allowedOrigins")


def heart_beat(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError("a heart-beat is written cx,cy in milliseconds, e.g. 0,0 or 10000,10000")
    first, second = (integer(0)(part) for part in parts)
    return first, second


def allowed_origins(text: str) -> tuple[str, ...]:
    origins = tuple(part.strip() for part in text.split(",") if part.strip())
    for origin in origins:
        if origin == "*":
            continue
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(f"{origin!r} is not an origin: write scheme://host[:port], or *")
        try:
            parts.port  # noqa: B018 (the check is the access: a bad port raises)
        except ValueError:
            raise ValueError(f"{origin!r}: the port is not a number from 0 to 65535") from None
    return origins


def load_defaults(ctx: Context, node: Node) -> TransportDefaults:
    fields = Fields(ctx, node, "transportDefaults")
    for attr, (name, convert) in _LIMITS.items():
        fields.get(attr, name, convert)
    fields.finish()
    _connect_timeout_zero(ctx, node, fields.values)
    return TransportDefaults(**fields.values, origins=fields.origins)


def _connect_timeout_zero(ctx: Context, node: Node, values: dict[str, Any]) -> None:
    if values.get("connect_attempt_timeout") == 0:
        ctx.warn(node, "connectAttemptTimeout 0: stompd always drops a client that never CONNECTs; kept 30 s")
        values["connect_attempt_timeout"] = 30000


def inherit(defaults: TransportDefaults) -> TransportConnector:
    """A connector whose limits are ``defaults``' (with their origins)."""
    names = [name for name, _ in _LIMITS.values()]
    return TransportConnector(
        **{name: getattr(defaults, name) for name in names},
        origins={name: origin_of(defaults, name) for name in names if origin_of(defaults, name) != DEFAULT},
    )


def load_connectors(ctx: Context, node: Node, defaults: TransportDefaults) -> list[TransportConnector]:
    connectors: list[TransportConnector] = []
    for child in node.children:
        if child.tag != "transportConnector":
            ctx.unexpected(child, "transportConnectors")
            continue
        connector = _load_connector(ctx, child, defaults)
        if connector is not None:
            connectors.append(connector)
    seen: dict[tuple[str, int], TransportConnector] = {}
    for connector in connectors:
        key = (connector.host, connector.port)
        if connector.port and key in seen:
            ctx.issues.error(
                connector.source.line,
                "broker/transportConnectors/transportConnector",
                f"{connector.name!r} listens on {connector.host}:{connector.port}, as {seen[key].name!r} "
                f"(line {seen[key].source.line}) already does",
            )
        seen[key] = connector
    return connectors


def _load_connector(ctx: Context, node: Node, defaults: TransportDefaults) -> TransportConnector | None:
    fields = Fields(ctx, node, "transportConnector")
    found = fields.raw("uri")
    name_found = fields.raw("name")
    fields.finish()
    if found is None:
        if "uri" not in node.attrs:
            ctx.error(node, "a transportConnector needs a uri")
        return None
    uri, origin = found
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    name = name_found[0] if name_found is not None else scheme
    if scheme in OTHER_PROTOCOLS:
        ctx.warn(
            node, f"{name!r} ({uri}): {OTHER_PROTOCOLS[scheme]} is not STOMP; stompd ignores this connector"
        )
        return None
    if scheme not in STOMP_SCHEMES:
        ctx.error(
            node,
            f'uri="{uri}": unknown transport {scheme!r}; stompd serves {", ".join(sorted(STOMP_SCHEMES))}',
        )
        return None
    try:
        port = parts.port
    except ValueError:
        ctx.error(node, f'uri="{uri}": the port is not a number from 0 to 65535')
        return None
    if not parts.hostname or port is None:
        ctx.error(node, f'uri="{uri}": write {scheme}://HOST:PORT (e.g. {scheme}://0.0.0.0:61613)')
        return None
    base = inherit(defaults)
    values: dict[str, Any] = {}
    origins: dict[str, Origin] = dict(base.origins)
    for option, value in parse_qsl(parts.query, keep_blank_values=True):
        _option(ctx, node, scheme, option, value, values)
    _connect_timeout_zero(ctx, node, values)
    origins.update(dict.fromkeys([*values, "host", "port"], origin))
    return replace(
        base,
        name=name,
        scheme=scheme,  # type: ignore[arg-type]
        host=parts.hostname,
        port=port,
        path=parts.path or "/",
        source=ctx.origin(node),
        origins=origins,
        **values,
    )


def _option(
    ctx: Context,
    node: Node,
    scheme: str,
    option: str,
    value: str,
    values: dict[str, Any],
) -> None:
    try:
        if option in _URI_LIMITS:
            name, convert = _LIMITS[_URI_LIMITS[option]]
            values[name] = convert(value)
        elif option in _TLS_OPTIONS:
            values[_TLS_OPTIONS[option]] = boolean(value)
            if not scheme.endswith("ssl") and scheme != "wss":
                ctx.warn(node, f"{option}: only TLS listeners (stomp+ssl, wss) ask for client certificates")
        elif option in _ORIGIN_OPTIONS:
            values["allowed_origins"] = allowed_origins(value)
            if scheme not in ("ws", "wss"):
                ctx.warn(node, f"{option}: only WebSocket listeners check the Origin header")
        else:
            ctx.warn(node, f"URI option {option}={value}: not supported by stompd; ignored")
    except ValueError as exc:
        ctx.error(node, f"URI option {option}={value}: {exc}")
