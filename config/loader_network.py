"""``<networkConnectors>``: the bridges this broker opens to other brokers.

ActiveMQ writes one as ``<networkConnector uri="static:(tcp://b1:61616,tcp://b2:61616)"
duplex="true" networkTTL="2">`` with ``<staticallyIncludedDestinations>``,
``<dynamicallyIncludedDestinations>`` and ``<excludedDestinations>`` lists of
``<queue physicalName="..."/>`` and ``<topic physicalName="..."/>`` (wildcards allowed).
stompd's bridges speak STOMP, so the URIs in the list are ``stomp://`` or
``stomp+ssl://`` ones; the reconnect options of ActiveMQ's static discovery
(``?initialReconnectDelay=1000&maxReconnectDelay=30000``) follow the list.  Multicast
and other discovery, and ``masterslave:``, are warnings naming the line; an OpenWire URI
in the list is a warning too, and that broker is left out.

``<pulledDestinations>`` is stompd's own: queues taken from the remote broker into this
one whatever this broker's consumers (a migration off a broker that is not stompd).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, get_args
from urllib.parse import parse_qsl, urlsplit

from config.loader_transports import OTHER_PROTOCOLS
from config.model import NetworkConnector, NetworkDestination, NetworkScheme, NetworkUri
from config.reader import Context, Fields, boolean, duration, integer, nonempty, number
from wildcards import problem

if TYPE_CHECKING:
    from config.model import Origin
    from config.xmltree import Node

NETWORK_SCHEMES = frozenset(get_args(NetworkScheme))
_LISTS = {
    "staticallyIncludedDestinations": "statically_included",
    "dynamicallyIncludedDestinations": "dynamically_included",
    "excludedDestinations": "excluded",
    "pulledDestinations": "pulled",
}
#: The static: URI's options stompd applies: (model field, converter).
_URI_OPTIONS: dict[str, tuple[str, Any]] = {
    "initialReconnectDelay": ("initial_reconnect_delay", duration),
    "maxReconnectDelay": ("max_reconnect_delay", duration),
    "useExponentialBackOff": ("use_exponential_back_off", boolean),
    "backOffMultiplier": ("back_off_multiplier", number(1.0)),
}
#: ``static:(a,b)?options`` or ``static://(a,b)?options``.
_GROUPED = re.compile(
    r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):(?://)?\((?P<list>[^()]*)\)(?:\?(?P<query>.*))?$"
)
_OTHER_DISCOVERY = {
    "multicast": "multicast discovery is not supported: list the brokers in static:(...)",
    "masterslave": "masterslave: (failover between a master and its slaves) is not supported: list "
    "the brokers in static:(...), each gets a bridge",
    "fanout": "fanout: discovery is not supported: list the brokers in static:(...)",
    "ldap": "LDAP discovery is not supported: list the brokers in static:(...)",
    "zeroconf": "zeroconf discovery is not supported: list the brokers in static:(...)",
    "rendezvous": "zeroconf discovery is not supported: list the brokers in static:(...)",
    "dns": "DNS discovery is not supported: list the brokers in static:(...)",
    "failover": "failover: is not supported: list the brokers in static:(...), each gets a bridge",
}


def load_network_connectors(ctx: Context, node: Node) -> list[NetworkConnector]:
    connectors: list[NetworkConnector] = []
    for child in node.children:
        if child.tag != "networkConnector":
            ctx.unexpected(child, "networkConnectors")
            continue
        connector = _load_connector(ctx, child)
        if connector is not None:
            connectors.append(connector)
    seen: dict[str, NetworkConnector] = {}
    for connector in connectors:
        if connector.name in seen:
            ctx.issues.error(
                connector.source.line,
                "broker/networkConnectors/networkConnector",
                f"two networkConnectors are named {connector.name!r} (the other on line "
                f"{seen[connector.name].source.line}): give each its own name",
            )
        seen[connector.name] = connector
    return connectors


def _load_connector(ctx: Context, node: Node) -> NetworkConnector | None:
    fields = Fields(ctx, node, "networkConnector")
    fields.get("name", "name", nonempty)
    fields.get("duplex", "duplex", boolean)
    ttl = fields.get("networkTTL", "network_ttl", integer(1, 255))
    fields.get("messageTTL", "message_ttl", integer(1, 255))
    fields.get("consumerTTL", "consumer_ttl", integer(1, 255))
    fields.get("conduitSubscriptions", "conduit_subscriptions", boolean)
    fields.get("decreaseNetworkConsumerPriority", "decrease_network_consumer_priority", boolean)
    fields.get("dynamicOnly", "dynamic_only", boolean)
    fields.get("prefetchSize", "prefetch_size", integer(1))
    fields.get("userName", "user_name", str)
    fields.get("password", "password", str)
    found = fields.raw("uri")
    fields.finish()
    values, origins = fields.values, fields.origins
    # As ActiveMQ: messageTTL and consumerTTL follow networkTTL unless set themselves.
    for name in ("message_ttl", "consumer_ttl"):
        if name not in values and ttl is not None:
            values[name] = ttl
            origins[name] = origins["network_ttl"]
    if found is None:
        if "uri" not in node.attrs:
            ctx.error(node, 'a networkConnector needs a uri, e.g. uri="static:(stomp://host:61613)"')
        return None
    uri, origin = found
    uris = _uris(ctx, node, uri, origin, values, origins)
    if uris is None:
        return None
    lists: dict[str, tuple[NetworkDestination, ...]] = {}
    for child in node.children:
        field = _LISTS.get(child.tag)
        if field is None:
            if child.tag == "durableDestinations":
                ctx.warn(
                    child, "ignored: stompd's bridges forward to active consumers only (no durable demand)"
                )
            else:
                ctx.unexpected(child, "networkConnector")
            continue
        if field in lists:
            ctx.error(child, f"<{child.tag}> is given twice in one networkConnector")
            continue
        lists[field] = _destinations(ctx, child, queues_only=field == "pulled")
    values.update(lists)
    connector = NetworkConnector(**values, uris=uris, source=ctx.origin(node), origins=origins)
    if connector.user_name is not None and connector.password is None:
        ctx.warn(node, "userName without a password: the bridge logs in with an empty passcode")
    return connector


def _uris(
    ctx: Context,
    node: Node,
    uri: str,
    origin: Origin,
    values: dict[str, Any],
    origins: dict[str, Origin],
) -> tuple[NetworkUri, ...] | None:
    """The brokers ``uri`` names (None: nothing usable; the reason is reported)."""
    text = uri.strip()
    grouped = _GROUPED.match(text)
    if grouped is not None:
        discovery = grouped["scheme"].lower()
        items = [item.strip() for item in grouped["list"].split(",") if item.strip()]
        query = grouped["query"] or ""
    else:
        parts = urlsplit(text)
        discovery = parts.scheme.lower()
        if discovery in NETWORK_SCHEMES:
            # A bare stomp://host:port: one broker, as static:(stomp://host:port) would.
            items, query, discovery = [text], "", "static"
        else:
            items, query = [], ""
    if discovery != "static":
        reason = _OTHER_DISCOVERY.get(discovery)
        if reason is None and discovery in OTHER_PROTOCOLS:
            reason = f"{OTHER_PROTOCOLS[discovery]} is not STOMP: stompd's bridges speak STOMP (static:(stomp://...))"
        if reason is None:
            ctx.error(node, f'uri="{uri}": write static:(stomp://host:port,stomp+ssl://host:port)')
        else:
            ctx.warn(node, f'uri="{uri}": {reason}; this networkConnector is ignored')
        return None
    for option, value in parse_qsl(query, keep_blank_values=True):
        known = _URI_OPTIONS.get(option)
        if known is None:
            ctx.warn(node, f"URI option {option}={value}: not supported by stompd; ignored")
            continue
        name, convert = known
        try:
            values[name] = convert(value)
        except ValueError as exc:
            ctx.error(node, f"URI option {option}={value}: {exc}")
            continue
        origins[name] = origin
    uris: list[NetworkUri] = []
    for item in items:
        parsed = _one_uri(ctx, node, item)
        if parsed is not None:
            uris.append(parsed)
    if not uris:
        if items or grouped is not None:
            if not items:
                ctx.error(node, f'uri="{uri}": static:() names no broker')
            elif all(urlsplit(item).scheme.lower() in OTHER_PROTOCOLS for item in items):
                ctx.warn(node, f'uri="{uri}": no STOMP broker in the list; this networkConnector is ignored')
            return None
        ctx.error(node, f'uri="{uri}": write static:(stomp://host:port,stomp+ssl://host:port)')
        return None
    return tuple(uris)


def _one_uri(ctx: Context, node: Node, item: str) -> NetworkUri | None:
    parts = urlsplit(item)
    scheme = parts.scheme.lower()
    if scheme in OTHER_PROTOCOLS or scheme in ("ws", "wss"):
        what = OTHER_PROTOCOLS.get(scheme, "WebSocket")
        ctx.warn(
            node, f"{item}: {what} is not a STOMP transport stompd bridges over; this broker is left out"
        )
        return None
    if scheme not in NETWORK_SCHEMES:
        ctx.error(node, f"{item}: unknown transport {scheme!r}; bridges use stomp:// or stomp+ssl://")
        return None
    try:
        port = parts.port
    except ValueError:
        ctx.error(node, f"{item}: the port is not a number from 0 to 65535")
        return None
    if not parts.hostname or not port:
        ctx.error(node, f"{item}: write {scheme}://HOST:PORT (e.g. {scheme}://broker2:61613)")
        return None
    if parts.query:
        ctx.warn(node, f"{item}: options on one broker's URI are not supported; ignored ({parts.query})")
    return NetworkUri(scheme, parts.hostname, port)  # type: ignore[arg-type]


def _destinations(ctx: Context, node: Node, *, queues_only: bool) -> tuple[NetworkDestination, ...]:
    out: list[NetworkDestination] = []
    for child in node.children:
        if child.tag not in ("queue", "topic") or (queues_only and child.tag == "topic"):
            if child.tag in ("tempQueue", "tempTopic"):
                ctx.warn(child, "ignored: temporary destinations are not bridged")
            elif child.tag == "topic":
                ctx.error(child, "only queues can be pulled (a topic has nothing to take from)")
            else:
                ctx.unexpected(child, node.tag)
            continue
        fields = Fields(ctx, child, child.tag)
        found = fields.raw("physicalName")
        fields.skip("name")
        fields.finish()
        if found is None:
            if "physicalName" not in child.attrs:
                ctx.error(child, f'<{child.tag}> needs a physicalName (e.g. physicalName="orders.>")')
            continue
        pattern = found[0].strip()
        why = problem(pattern)
        if why is not None:
            ctx.error(child, f'physicalName="{pattern}": {why}')
            continue
        kind = child.tag
        out.extend(NetworkDestination(kind, part, ctx.origin(child)) for part in pattern.split(","))  # type: ignore[arg-type]
    return tuple(out)
