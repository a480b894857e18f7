"""activemq.xml -> :class:`BrokerConfig`, with every problem named by line and element.

Reads the file as ActiveMQ writes it: Spring's ``<beans>`` wrapper (or a bare
``<broker>``), ActiveMQ's namespace, ``${...}`` placeholders (config/placeholders.py),
sizes as ``64 mb``, ActiveMQ's wildcards.  What stompd understands is listed, element by
element, in activemq.xml.example at the top of the repository.  Everything else is an
ActiveMQ feature stompd ignores (a warning) or a mistake (an error: a bad value, a
misspelt element or attribute).  All problems are collected; any error raises
:class:`ConfigError` with all of them.  Nothing raises anything else.

stompd's own settings, which ActiveMQ keeps elsewhere (jetty.xml, JVM flags), are child
elements of ``<broker>`` in the same style: ``<transportDefaults>``, ``<httpServer>``,
``<export>``, and extra ``<sslContext>`` attributes for PEM files.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from config import loader_plugins, xmltree
from config.files import FileRefused, read_regular
from config.issues import ConfigError, ConfigIssue, Issues
from config.loader_network import load_network_connectors
from config.loader_policies import load_destination_policy
from config.loader_security import load_plugins, load_ssl, statistics_plugin
from config.loader_transports import allowed_origins, inherit, load_connectors, load_defaults
from config.loader_virtual import default_interceptors, load_interceptors
from config.model import (
    BrokerConfig,
    BrokerSettings,
    Export,
    HttpServer,
    PersistenceAdapter,
    SharedFileLocker,
    SystemUsage,
)
from config.placeholders import Placeholders
from config.reader import Context, Fields, boolean, duration, integer, nonempty, path, size
from config.units import format_size

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from config.xmltree import Node

#: ActiveMQ's temp store writes 32 MB journal files; a smaller tempUsage limit is seed 002.
ACTIVEMQ_JOURNAL_FILE = 32 << 20
_PLACEHOLDER_CONFIGURERS = ("PropertyPlaceholderConfigurer", "PropertySourcesPlaceholderConfigurer")
_BROKER_CHILDREN_ONCE = (
    "systemUsage",
    "destinationPolicy",
    "transportConnectors",
    "persistenceAdapter",
    "plugins",
    "sslContext",
    "transportDefaults",
    "httpServer",
    "export",
    "networkConnectors",
    "destinationInterceptors",
)


@dataclass(frozen=True, slots=True)
class Loaded:
    config: BrokerConfig
    warnings: tuple[ConfigIssue, ...]


def load(
    file: Path,
    defines: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Loaded:
    """Loads ``file``; raises ConfigError listing every error (and the warnings so far)."""
    issues = Issues(str(file))
    try:
        data = read_regular(file)
    except FileRefused as exc:
        issues.error(None, "", str(exc))
        raise ConfigError(issues.errors) from None
    except OSError as exc:
        issues.error(None, "", f"cannot read the configuration: {exc.strerror or exc}")
        raise ConfigError(issues.errors) from None
    return load_bytes(data, file, defines, environ, cwd)


def load_bytes(
    data: bytes,
    file: Path,
    defines: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Loaded:
    issues = Issues(str(file))
    try:
        root = xmltree.parse(data)
    except xmltree.XmlError as exc:
        issues.error(exc.line, exc.element, exc.reason)
        raise ConfigError(issues.errors) from None
    placeholders = Placeholders(
        defines or {},
        os.environ if environ is None else environ,
        file.resolve().parent,
        cwd or Path.cwd(),
    )
    ctx = Context(file, issues, placeholders)
    config = _load_document(ctx, root)
    issues.raise_if_errors()
    return Loaded(replace(config, source=file), tuple(issues.warnings))


def _load_document(ctx: Context, root: Node) -> BrokerConfig:
    if root.tag == "broker":
        return _load_broker(ctx, root)
    if root.tag != "beans":
        ctx.warn(root, "not an ActiveMQ configuration (no <beans> or <broker>): embedded defaults used")
        return BrokerConfig()
    for child in root.children:
        if child.tag == "bean" and child.attrs.get("class", "").endswith(_PLACEHOLDER_CONFIGURERS):
            _load_properties(ctx, child)
    brokers = root.child_elements("broker")
    for child in root.children:
        if child.tag == "import":
            resource = child.attrs.get("resource", "")
            hint = (
                "; stompd's admin HTTP server is <httpServer> in <broker> (the console, and"
                " ActiveMQ's /admin/xml feeds and /api/jolokia)"
                if "jetty" in resource
                else ""
            )
            ctx.warn(child, f"not followed: stompd reads one file ({resource!r} ignored){hint}")
        elif child.tag == "bean":
            if not child.attrs.get("class", "").endswith(_PLACEHOLDER_CONFIGURERS):
                ctx.ignore(child, f"Spring bean {child.attrs.get('class', '')} is not evaluated")
        elif child.tag != "broker":
            ctx.ignore(child)
    for extra in brokers[1:]:
        ctx.error(
            extra, f"a second <broker> (the first is on line {brokers[0].line}): stompd runs one per file"
        )
    if not brokers:
        ctx.warn(root, "no <broker> element: embedded defaults used")
        return BrokerConfig()
    return _load_broker(ctx, brokers[0])


def _load_properties(ctx: Context, bean: Node) -> None:
    """A PropertyPlaceholderConfigurer's ``location``/``locations``: read its .properties files."""
    for prop in bean.child_elements("property"):
        if prop.attrs.get("name") not in ("location", "locations"):
            continue
        values = [prop.attrs["value"]] if "value" in prop.attrs else []
        values += [node.text for node in _descendants(prop) if node.tag == "value"]
        for value in values:
            resolved = ctx.resolve(prop, "value", value)
            if resolved is None:
                continue
            if resolved.missing:
                ctx.warn(prop, f"{value}: ${{{resolved.missing[0]}}} is not defined; not read")
                continue
            try:
                properties_file = path(resolved.text)
                data = read_regular(properties_file)
            except FileRefused as exc:
                # Not a missing file (which Spring can be told to ignore): a mistake or an attack.
                ctx.error(prop, f"{resolved.text}: {exc}")
                continue
            except (OSError, ValueError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) else str(exc)
                ctx.warn(prop, f"{resolved.text}: cannot read ({reason}); its placeholders stay undefined")
                continue
            ctx.placeholders.load_properties(data.decode("latin-1"))


def _descendants(node: Node) -> list[Node]:
    found: list[Node] = []
    for child in node.children:
        found.append(child)
        found.extend(_descendants(child))
    return found


def _load_broker(ctx: Context, node: Node) -> BrokerConfig:
    fields = Fields(ctx, node, "broker")
    fields.get("brokerName", "broker_name", nonempty)
    fields.get("dataDirectory", "data_directory", path)
    fields.get("tmpDataDirectory", "tmp_data_directory", path)
    fields.get("persistent", "persistent", boolean)
    fields.get("schedulerSupport", "scheduler_support", boolean)
    fields.get("advisorySupport", "advisory_support", boolean)
    fields.get("populateJMSXUserID", "populate_jmsx_user_id", boolean)
    fields.get("useVirtualTopics", "use_virtual_topics", boolean)
    fields.get("useMirroredQueues", "use_mirrored_queues", boolean)
    fields.finish()
    config = BrokerConfig(broker=BrokerSettings(**fields.values, origins=fields.origins))
    seen: dict[str, Node] = {}
    for child in node.children:
        if child.tag in _BROKER_CHILDREN_ONCE:
            if child.tag in seen:
                ctx.error(child, f"<{child.tag}> is given twice (first on line {seen[child.tag].line})")
            seen.setdefault(child.tag, child)
        else:
            ctx.unexpected(child, "broker")
    if "transportDefaults" in seen:
        config = replace(config, transport_defaults=load_defaults(ctx, seen["transportDefaults"]))
    if "systemUsage" in seen:
        config = replace(config, system_usage=_system_usage(ctx, seen["systemUsage"], config))
    if "destinationPolicy" in seen:
        config = replace(config, policies=load_destination_policy(ctx, seen["destinationPolicy"]))
    config = _connectors(ctx, node, seen.get("transportConnectors"), config)
    if "persistenceAdapter" in seen:
        config = replace(config, persistence=_persistence(ctx, seen["persistenceAdapter"]))
    if "plugins" in seen:
        authentication, authorization, redelivery = load_plugins(ctx, seen["plugins"])
        config = replace(config, authentication=authentication, authorization=authorization)
        if redelivery is not None:
            config = replace(config, redelivery=redelivery)
        config = replace(config, statistics=statistics_plugin(ctx, seen["plugins"]))
        config = replace(
            config,
            time_stamping=loader_plugins.time_stamping(ctx, seen["plugins"]),
            force_persistency=loader_plugins.force_persistency(ctx, seen["plugins"]),
            discarding_dlq=loader_plugins.discarding_dlq(ctx, seen["plugins"]),
            logging=loader_plugins.logging_plugin(ctx, seen["plugins"]),
        )
    if "sslContext" in seen:
        config = replace(config, ssl=load_ssl(ctx, seen["sslContext"], config))
        ssl = config.ssl
        for connector in config.connectors:
            asks = connector.need_client_auth or connector.want_client_auth
            if asks and ssl is not None and ssl.trust_store is None and ssl.ca_file is None:
                ctx.issues.error(
                    connector.source.line,
                    "broker/transportConnectors/transportConnector",
                    f"{connector.name!r} asks for client certificates: <sslContext> needs the CA "
                    "certificates to check them against (trustStore, or caFile)",
                )
    else:
        for connector in config.connectors:
            if connector.tls:
                ctx.issues.error(
                    connector.source.line,
                    "broker/transportConnectors/transportConnector",
                    f"{connector.scheme}:// needs an <sslContext> in <broker> with its certificate",
                )
    if "httpServer" in seen:
        config = replace(config, http=_http(ctx, seen["httpServer"]))
    if "export" in seen:
        config = replace(config, export=_export(ctx, seen["export"]))
    if "networkConnectors" in seen:
        connectors = load_network_connectors(ctx, seen["networkConnectors"])
        config = replace(config, network_connectors=tuple(connectors))
        _check_network(ctx, node, config)
    if "destinationInterceptors" in seen:
        config = replace(config, interceptors=load_interceptors(ctx, seen["destinationInterceptors"]))
        for attr, key in (
            ("useVirtualTopics", "use_virtual_topics"),
            ("useMirroredQueues", "use_mirrored_queues"),
        ):
            if key in config.broker.origins:
                ctx.warn(
                    node,
                    f"{attr}: changes nothing where <destinationInterceptors> is given (line "
                    f"{seen['destinationInterceptors'].line}), which replaces ActiveMQ's default "
                    "interceptors",
                )
    else:
        config = replace(config, interceptors=default_interceptors(config.broker))
    _check_seed_002(ctx, seen.get("systemUsage"), config)
    return config


def _check_network(ctx: Context, broker: Node, config: BrokerConfig) -> None:
    """Each node of a network is known by its brokerName (the path a forwarded message
    carries): a name the path cannot hold, or the default one, is a problem there."""
    if not config.network_connectors:
        return
    name = config.broker.broker_name
    if "," in name or not name.strip():
        ctx.error(broker, f'brokerName="{name}": a node of a network needs a name without commas')
    elif "broker_name" not in config.broker.origins:
        ctx.warn(
            broker,
            'no brokerName: this node is "localhost" to the network; give every node a name of its own '
            "(a message is never forwarded to a node of its own name)",
        )
    if not config.broker.advisory_support:
        ctx.warn(
            broker,
            'advisorySupport="false": the brokers this one is joined to cannot learn of its consumers, '
            "so they forward to it only what their staticallyIncludedDestinations name",
        )
    for connector in config.network_connectors:
        if any(uri.tls for uri in connector.uris) and config.ssl is None:
            ctx.issues.error(
                connector.source.line,
                "broker/networkConnectors/networkConnector",
                f"{connector.name!r} bridges over stomp+ssl://: <sslContext> in <broker> needs the CA "
                "certificates the remote broker is checked against (trustStore, or caFile), and a "
                "keyStore if the remote asks for a client certificate",
            )


def _connectors(ctx: Context, broker: Node, node: Node | None, config: BrokerConfig) -> BrokerConfig:
    errors = len(ctx.issues.errors)
    connectors = load_connectors(ctx, node, config.transport_defaults) if node is not None else []
    if not connectors:
        default = inherit(config.transport_defaults)
        if len(ctx.issues.errors) > errors:
            # A connector with an error: the file is refused for it, which says enough.
            return replace(config, connectors=(default,))
        ctx.warn(
            node or broker,
            f"no STOMP transportConnector: stompd listens on stomp://{default.host}:{default.port}",
        )
        connectors = [default]
    return replace(config, connectors=tuple(connectors))


def _system_usage(ctx: Context, node: Node, config: BrokerConfig) -> SystemUsage:
    inner = node.child_elements("systemUsage")
    for child in node.children:
        if child.tag != "systemUsage":
            ctx.unexpected(child, "systemUsage")
    if not inner:
        ctx.error(node, "ActiveMQ writes <systemUsage><systemUsage>...</systemUsage></systemUsage>")
        return SystemUsage()
    usage = inner[0]
    fields = Fields(ctx, usage, "systemUsage")
    fields.get("sendFailIfNoSpace", "send_fail_if_no_space", boolean)
    fields.get("sendFailIfNoSpaceAfterTimeout", "send_fail_if_no_space_after_timeout", duration)
    fields.finish()
    meters = {"memoryUsage": "memory_limit", "storeUsage": "store_limit", "tempUsage": "temp_limit"}
    for holder in usage.children:
        if holder.tag not in meters:
            ctx.unexpected(holder, "systemUsage")
            continue
        for meter in holder.children:
            if meter.tag == holder.tag:
                _meter(ctx, meter, meters[holder.tag], fields, config.broker.data_directory)
            else:
                ctx.unexpected(meter, holder.tag)
    return SystemUsage(**fields.values, origins=fields.origins)


def _meter(ctx: Context, node: Node, name: str, into: Fields, data_directory: Path) -> None:
    fields = Fields(ctx, node, node.tag)
    limit = fields.get("limit", name, size)
    percent_attr = "percentOfJvmHeap" if node.tag == "memoryUsage" else "percentLimit"
    percent = fields.get(percent_attr, "percent", integer(1, 100))
    fields.finish()
    if limit is not None and limit == 0:
        ctx.error(node, 'limit="0": nothing could ever be stored; leave the limit out for the default')
        return
    if percent is not None:
        if limit is not None:
            ctx.error(node, f"give limit or {percent_attr}, not both")
            return
        total, what = _capacity(node.tag, data_directory)
        limit = total * percent // 100
        origin = fields.origins["percent"]
        fields.origins[name] = replace(origin, note=f"{percent}% of {format_size(total)} {what}")
        fields.values[name] = limit
        if node.tag == "memoryUsage":
            ctx.warn(
                node,
                f'percentOfJvmHeap="{percent}": {percent}% of ActiveMQ\'s default 1 gb heap (-Xmx1G), '
                f'{format_size(limit)}; there is no JVM here, give limit="..." to choose',
            )
    if name in fields.values:
        into.values[name] = fields.values[name]
        into.origins[name] = fields.origins[name]


#: ActiveMQ 5.17's bin/setenv: ``ACTIVEMQ_OPTS_MEMORY="-Xms64M -Xmx1G"``.
ACTIVEMQ_DEFAULT_HEAP: Final = 1 << 30


def _capacity(tag: str, data_directory: Path) -> tuple[int, str]:
    """percentOfJvmHeap -> ActiveMQ's default heap (its start script's ``-Xmx1G``: the stock
    file's percentOfJvmHeap="70" means about 700 MB there, not 70 % of the machine);
    percentLimit -> the size of the disk that holds the data directory."""
    if tag == "memoryUsage":
        return ACTIVEMQ_DEFAULT_HEAP, "(ActiveMQ's default JVM heap)"
    probe = data_directory.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).total, f"disk at {probe}"


def _check_seed_002(ctx: Context, node: Node | None, config: BrokerConfig) -> None:
    """Seed 002: a tempUsage limit under ActiveMQ's 32 MB temp journal file blocked its
    producers forever.  stompd counts live bytes and cannot deadlock that way, but a limit
    smaller than one frame cannot take a frame that big: say so, with the reason."""
    if node is None:
        return
    temp = config.system_usage.temp_limit
    frame = max(connector.max_frame_size for connector in config.connectors)
    if temp < frame:
        ctx.warn(
            node,
            f"tempUsage limit {format_size(temp)} is smaller than the largest frame a listener accepts "
            f"({format_size(frame)}): a non-persistent message that big cannot be swapped to disk, so its "
            "producer waits for consumers to free memory instead",
        )
    if temp < ACTIVEMQ_JOURNAL_FILE:
        ctx.warn(
            node,
            f"tempUsage limit {format_size(temp)} is under 32 mb, ActiveMQ's temp journal file size: in "
            "ActiveMQ this blocks producers forever once swapping starts (the first journal file is never "
            "deleted). stompd counts live bytes and resumes producers as consumers drain, but swap space "
            "this small fills quickly",
        )
    if config.system_usage.store_limit < frame:
        ctx.warn(
            node,
            f"storeUsage limit {format_size(config.system_usage.store_limit)} is smaller than the largest "
            f"frame a listener accepts ({format_size(frame)}): a persistent message that big can never "
            "be stored",
        )


_KAHADB_FILES = ("db.data", "db.redo", "db-1.log")


#: ``<locker>`` children other than the shared-file-locker: ActiveMQ's JDBC lockers.
_DATABASE_LOCKERS = ("lease-database-locker", "database-locker", "transact-database-locker")


def _persistence(ctx: Context, node: Node) -> PersistenceAdapter:
    adapter = PersistenceAdapter()
    for child in node.children:
        if child.tag not in ("levelDB", "kahaDB"):
            ctx.unexpected(child, "persistenceAdapter")
            continue
        fields = Fields(ctx, child, child.tag)
        directory = fields.get("directory", "directory", path)
        fields.get("lockKeepAlivePeriod", "lock_keep_alive_period", duration)
        # levelDB has failIfLocked itself; ActiveMQ hands it to its locker.
        inherited = Fields(ctx, child, child.tag)
        if child.tag == "levelDB":
            inherited.get("failIfLocked", "fail_if_locked", boolean)
            fields.skip("failIfLocked")
        if child.tag == "kahaDB":
            others = sorted(attr for attr in child.attrs if attr not in ("directory", "lockKeepAlivePeriod"))
            fields.skip(*others)
            ignored = f"; its settings ({', '.join(others)}) are KahaDB's own and ignored" if others else ""
            ctx.warn(child, f"kahaDB is mapped onto stompd's LevelDB store in the same directory{ignored}")
            if directory is not None and any((directory / name).exists() for name in _KAHADB_FILES):
                ctx.error(
                    child,
                    f'directory="{directory}" holds an ActiveMQ KahaDB store, which stompd cannot read; '
                    "give stompd a directory of its own",
                )
        fields.finish()
        locker = _locker(ctx, child, inherited)
        adapter = PersistenceAdapter(kind=child.tag, locker=locker, **fields.values, origins=fields.origins)  # type: ignore[arg-type]
        if "locker" in {c.tag for c in child.children} and adapter.lock_keep_alive_period == 0:
            ctx.warn(
                child,
                "a <locker> but no lockKeepAlivePeriod (0, ActiveMQ's default): a master whose lock is "
                "lost (its lock file removed, its NFS lease expired) will not notice it; set "
                'lockKeepAlivePeriod="2000", say',
            )
    return adapter


def _locker(ctx: Context, adapter: Node, inherited: Fields) -> SharedFileLocker:
    """The adapter's ``<locker><shared-file-locker .../></locker>`` (the default if none),
    over what the adapter itself says of its locker (``inherited``)."""
    locker = SharedFileLocker(**inherited.values, origins=inherited.origins)
    for child in adapter.children:
        if child.tag != "locker":
            ctx.unexpected(child, adapter.tag)
            continue
        for inner in child.children:
            if inner.tag in _DATABASE_LOCKERS:
                ctx.ignore(
                    inner, "database lockers are JDBC's: stompd locks its store with the shared-file-locker"
                )
            elif inner.tag != "shared-file-locker":
                ctx.unexpected(inner, "locker")
            else:
                fields = Fields(
                    ctx, inner, "shared-file-locker", dict(inherited.values), dict(inherited.origins)
                )
                fields.get(
                    "lockAcquireSleepInterval", "lock_acquire_sleep_interval", _at_least(1, duration, "1 ms")
                )
                fields.get("failIfLocked", "fail_if_locked", boolean)
                # The lock is in the store's directory, as ActiveMQ configures it.
                fields.skip("directory", "name")
                fields.finish()
                locker = SharedFileLocker(**fields.values, origins=fields.origins)
    return locker


def _http(ctx: Context, node: Node) -> HttpServer:
    fields = Fields(ctx, node, "httpServer")
    fields.get("host", "host", nonempty)
    fields.get("port", "port", integer(0, 65535))
    fields.get("allowRemote", "allow_remote", boolean)
    fields.get("staticDirectory", "static_directory", path)
    fields.get("allowedOrigins", "allowed_origins", allowed_origins)
    fields.get("maximumConnections", "maximum_connections", integer(1))
    fields.finish()
    return HttpServer(**fields.values, origins=fields.origins)


def _export(ctx: Context, node: Node) -> Export:
    fields = Fields(ctx, node, "export")
    fields.get("directory", "directory", path)
    fields.get("snapshotInterval", "snapshot_interval", _at_least(100, duration, "100 ms"))
    fields.get("rotateSize", "rotate_size", _at_least(1 << 20, size, "1 mb"))
    fields.get("rotateInterval", "rotate_interval", _at_least(1000, duration, "1 s"))
    fields.finish()
    return Export(**fields.values, origins=fields.origins)


def _at_least(low: int, convert: Callable[[str], int], shown: str) -> Callable[[str], int]:
    def check(text: str) -> int:
        value = convert(text)
        if value < low:
            raise ValueError(f"must be at least {shown}")
        return value

    return check


__all__ = ["ConfigError", "ConfigIssue", "Loaded", "load", "load_bytes"]
