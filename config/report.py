"""The effective configuration as ``stompd --check-config`` prints it: every setting, as
activemq.xml names it, its value, and where the value came from."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from config.model import BrokerConfig, Origin, origin_of
from config.units import format_size

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable

    from config.model import AuthorizationEntry

NOT_APPLIED = "not applied yet"


@dataclass(frozen=True, slots=True)
class Row:
    #: The setting's path in the model (``system_usage.memory_limit``): what "applied" is asked about.
    key: str
    label: str
    value: str
    origin: str


@dataclass(frozen=True, slots=True)
class Section:
    key: str
    title: str
    rows: tuple[Row, ...]


def _show(value: Any, unit: str, secret: bool) -> str:
    if value is None:
        return "none"
    if secret:
        return "********"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return ",".join(str(part) for part in value) or "(none)"
    if isinstance(value, frozenset):
        return ",".join(sorted(value)) or "(none)"
    if unit == "bytes":
        return format_size(value)
    if unit == "ms":
        return f"{value} ms"
    if unit == "percent":
        return f"{value}%"
    return str(value)


def _rows(obj: Any, key: str, only: Iterable[str] | None = None, prefix: str = "") -> list[Row]:
    wanted = set(only) if only is not None else None
    rows: list[Row] = []
    for f in fields(obj):
        if "xml" not in f.metadata or (wanted is not None and f.name not in wanted):
            continue
        value = getattr(obj, f.name)
        rows.append(
            Row(
                f"{key}.{f.name}",
                (prefix + f.metadata["xml"]).strip(),
                _show(value, f.metadata["unit"], f.metadata["secret"] and value is not None),
                str(origin_of(obj, f.name)),
            )
        )
    return rows


def _entry_title(kind: str | None, pattern: str, source: Origin) -> str:
    return f"{kind}={pattern!r} ({source})"


def sections(config: BrokerConfig) -> list[Section]:
    broker = [
        # None is the default place, shown as the path it stands for.
        replace(row, value=str(config.temp_directory)) if row.key == "broker.tmp_data_directory" else row
        for row in _rows(config.broker, "broker")
    ]
    out = [
        Section("broker", "broker", tuple(broker)),
        Section("system_usage", "systemUsage", tuple(_rows(config.system_usage, "system_usage"))),
        Section(
            "transport_defaults",
            "transportDefaults",
            tuple(_rows(config.transport_defaults, "transport_defaults")),
        ),
    ]
    for index, connector in enumerate(config.connectors):
        key = f"connectors[{index}]"
        path = connector.path if connector.websocket else ""
        title = f"transportConnector {connector.name!r} {connector.scheme}://{connector.host}:{connector.port}{path}"
        out.append(Section(key, f"{title} ({connector.source})", tuple(_rows(connector, key))))
    persistence = config.persistence
    out.append(
        Section(
            "persistence",
            f"persistenceAdapter ({persistence.kind})",
            (
                Row(
                    "persistence.directory",
                    "directory",
                    str(config.store_directory),
                    str(origin_of(persistence, "directory")),
                ),
                *_rows(persistence, "persistence", only=("lock_keep_alive_period",)),
                *_rows(persistence.locker, "persistence.locker", prefix="shared-file-locker "),
            ),
        )
    )
    default = config.policies.default
    out.append(
        Section(
            "policies.default",
            "destinationPolicy defaultEntry (what every entry inherits)",
            tuple(
                _rows(default, "policies.default")
                + _rows(default.dead_letter, "policies.default.dead_letter", prefix="deadLetterStrategy ")
            ),
        )
    )
    for index, entry in enumerate(config.policies.entries):
        key = f"policies.entries[{index}]"
        rows = _rows(entry, key, only=entry.explicit)
        if "dead_letter" in entry.explicit:
            rows += _rows(entry.dead_letter, f"{key}.dead_letter", prefix="deadLetterStrategy ")
        out.append(
            Section(key, "policyEntry " + _entry_title(entry.kind, entry.pattern, entry.source), tuple(rows))
        )
    redelivery = config.redelivery
    out.append(
        Section(
            "redelivery",
            "redeliveryPlugin defaultEntry",
            tuple(_rows(redelivery, "redelivery") + _rows(redelivery.default, "redelivery.default")),
        )
    )
    for index, policy in enumerate(redelivery.entries):
        key = f"redelivery.entries[{index}]"
        rows = _rows(policy, key, only=policy.explicit)
        out.append(
            Section(
                key,
                "redeliveryPolicy " + _entry_title(policy.kind, policy.pattern, policy.source),
                tuple(rows),
            )
        )
    out.extend(_security(config))
    if config.statistics is not None:
        source = str(config.statistics.source)
        row = Row("statistics", "ActiveMQ.Statistics.>", "on", source)
        out.append(Section("statistics", f"statisticsBrokerPlugin ({source})", (row,)))
    if config.time_stamping is not None:
        title = f"timeStampingBrokerPlugin ({config.time_stamping.source})"
        out.append(Section("time_stamping", title, tuple(_rows(config.time_stamping, "time_stamping"))))
    if config.force_persistency is not None:
        title = f"forcePersistencyModeBrokerPlugin ({config.force_persistency.source})"
        fp_rows = tuple(_rows(config.force_persistency, "force_persistency"))
        out.append(Section("force_persistency", title, fp_rows))
    if config.discarding_dlq is not None:
        title = f"discardingDLQBrokerPlugin ({config.discarding_dlq.source})"
        dd_rows = tuple(_rows(config.discarding_dlq, "discarding_dlq"))
        out.append(Section("discarding_dlq", title, dd_rows))
    if config.logging is not None:
        title = f"loggingBrokerPlugin ({config.logging.source})"
        out.append(Section("logging", title, tuple(_rows(config.logging, "logging"))))
    out.append(Section("http", "httpServer", tuple(_rows(config.http, "http"))))
    out.append(Section("export", "export", tuple(_rows(config.export, "export"))))
    out.extend(_network(config))
    out.extend(_interceptors(config))
    return out


def _interceptors(config: BrokerConfig) -> list[Section]:
    """Each virtual topic, composite destination and mirrored queue, where it was read
    (ActiveMQ's default ones: ``default``)."""
    interceptors = config.interceptors
    out: list[Section] = []
    for index, virtual in enumerate(interceptors.virtual_topics):
        key = f"interceptors.virtual_topics[{index}]"
        queues = f"{virtual.prefix}<topic>{virtual.postfix}"
        title = f"virtualTopic {virtual.name!r} -> queues {queues} ({virtual.source})"
        out.append(Section(key, title, tuple(_rows(virtual, key))))
    for index, composite in enumerate(interceptors.composites):
        key = f"interceptors.composites[{index}]"
        rows = _rows(composite, key, only=("forward_only", "send_when_not_matched"))
        rows += [
            Row(f"{key}.forward_to", "forwardTo", str(target), str(target.source))
            for target in composite.forward_to
        ]
        title = f"composite{composite.kind.title()} {composite.name!r} ({composite.source})"
        out.append(Section(key, title, tuple(rows)))
    mirrored = interceptors.mirrored
    if mirrored is not None:
        key = "interceptors.mirrored"
        title = f"mirroredQueue -> topics {mirrored.prefix}<queue>{mirrored.postfix} ({mirrored.source})"
        out.append(Section(key, title, tuple(_rows(mirrored, key))))
    return out


def _network(config: BrokerConfig) -> list[Section]:
    out: list[Section] = []
    lists = (
        ("statically_included", "staticallyIncludedDestinations"),
        ("dynamically_included", "dynamicallyIncludedDestinations"),
        ("excluded", "excludedDestinations"),
        ("pulled", "pulledDestinations"),
    )
    for index, connector in enumerate(config.network_connectors):
        key = f"network_connectors[{index}]"
        rows = [
            Row(
                f"{key}.uris",
                "uri",
                f"static:({','.join(str(uri) for uri in connector.uris)})",
                str(connector.source),
            )
        ]
        rows += _rows(connector, key)
        for name, label in lists:
            for destination in getattr(connector, name):
                rows.append(Row(f"{key}.{name}", label, str(destination), str(destination.source)))
        title = f"networkConnector {connector.name!r} ({connector.source})"
        out.append(Section(key, title, tuple(rows)))
    return out


def _security(config: BrokerConfig) -> list[Section]:
    out: list[Section] = []
    auth = config.authentication
    if auth is not None:
        rows = _rows(auth, "authentication")
        for user in auth.users:
            password = "cannot log in" if user.password is None else str(user.password)
            groups = ",".join(sorted(user.groups)) or "(no group)"
            rows.append(
                Row(
                    "authentication.users", f"user {user.username}", f"{groups}; {password}", str(user.source)
                )
            )
        out.append(Section("authentication", "simpleAuthenticationPlugin", tuple(rows)))
    authz = config.authorization
    if authz is not None:
        acl_rows = [
            _acl_row("authorization.entries", entry, f"{entry.kind}={entry.pattern!r}")
            for entry in authz.entries
        ]
        if authz.default_entry is not None:
            acl_rows.append(_acl_row("authorization.default_entry", authz.default_entry, "defaultEntry"))
        if authz.temp_entry is not None:
            acl_rows.append(
                _acl_row("authorization.temp_entry", authz.temp_entry, "tempDestinationAuthorizationEntry")
            )
        out.append(Section("authorization", "authorizationPlugin", tuple(acl_rows)))
    if config.ssl is not None:
        out.append(Section("ssl", "sslContext", tuple(_rows(config.ssl, "ssl"))))
    return out


def _acl_row(key: str, entry: AuthorizationEntry, label: str) -> Row:
    value = " ".join(
        f"{name}={','.join(sorted(getattr(entry, name))) or '-'}" for name in ("read", "write", "admin")
    )
    return Row(key, label, value, str(entry.source))


def render(config: BrokerConfig, applied: Callable[[str], bool]) -> str:
    """The report; a setting for which ``applied(key)`` is false is marked "not applied yet"."""
    lines: list[str] = []
    every = sections(config)
    label_width = max((len(row.label) for section in every for row in section.rows), default=0)
    value_width = min(28, max((len(row.value) for section in every for row in section.rows), default=0))
    for section in every:
        whole = not applied(section.key)
        lines.append(f"{section.title}{'  [' + NOT_APPLIED + ']' if whole else ''}")
        if not section.rows:
            lines.append("  (everything as the default entry)")
        for row in section.rows:
            mark = f"  [{NOT_APPLIED}]" if not whole and not applied(row.key) else ""
            lines.append(f"  {row.label:<{label_width}} = {row.value:<{value_width}}  {row.origin}{mark}")
    return "\n".join(lines)


def not_applied_lines(config: BrokerConfig, missing: Collection[str]) -> list[str]:
    """Each setting of ``missing`` (report keys) as activemq.xml names it and where it was
    set, as ``--check-config`` shows it: ``activemq.xml:12: policyEntry queue='orders.>':
    pendingQueuePolicy = fileQueueCursor``, in the report's order."""
    out: list[str] = []
    shown: set[str] = set()
    for section in sections(config):
        element = _element(section.title)
        for row in section.rows:
            if row.key in missing or section.key in missing:
                out.append(f"{row.origin}: {element}: {row.label} = {row.value}")
                shown.add(row.key)
    # A key no row shows (none is expected) is still named, as the model does.
    out += sorted(set(missing) - shown)
    return out


def _element(title: str) -> str:
    """A section's title without the trailing ``(where)`` its rows say already."""
    head, paren, _ = title.rpartition(" (")
    return head if paren and title.endswith(")") else title
