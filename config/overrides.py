"""Command-line settings laid over a loaded configuration: flags win over the file.

Each key names one setting the command line can give; :func:`apply` sets it and records
``flag --NAME`` as its origin.  Broker-wide settings replace the file's.  For a setting a
file can also give per destination (policy entries, redelivery entries), the flag sets the
default entry, and with it every entry that does not set that attribute itself: an
explicit per-destination value in the file is more specific than a broker-wide flag.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from config.loader_policies import reinherit
from config.loader_transports import inherit
from config.model import BrokerConfig, ConnectorScheme, Origin, SslContext, TransportDefaults

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


@dataclass(frozen=True, slots=True)
class Override:
    key: str
    value: Any
    #: The flag as the user typed it, for the origin: ``--memory-limit``.
    flag: str


def _with(obj: Any, origin: Origin, **values: Any) -> Any:
    return replace(obj, **values, origins={**obj.origins, **dict.fromkeys(values, origin)})


def _broker(name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    return lambda config, value, origin: replace(config, broker=_with(config.broker, origin, **{name: value}))


def _usage(name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    return lambda config, value, origin: replace(
        config, system_usage=_with(config.system_usage, origin, **{name: value})
    )


def _transport(name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    """A limit of every listener, and of <transportDefaults>."""

    def set_limit(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
        defaults: TransportDefaults = _with(config.transport_defaults, origin, **{name: value})
        connectors = tuple(_with(c, origin, **{name: value}) for c in config.connectors)
        return replace(config, transport_defaults=defaults, connectors=connectors)

    return set_limit


def _listener(
    name: str, scheme: ConnectorScheme = "stomp"
) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    """``--host``/``--port`` (the first plain STOMP listener), ``--ws-port`` (the first
    ws:// one), ``--wss-port`` (the first wss:// one): set it, defining one if there is none
    (a STOMP listener goes first, a WebSocket one last)."""

    def set_address(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
        if scheme == "stomp":
            first = config.first_stomp_connector()
        else:
            first = next((c for c in config.connectors if c.scheme == scheme), None)
        if first is None:
            added = _with(
                replace(inherit(config.transport_defaults), name=scheme, scheme=scheme, source=origin),
                origin,
                **{name: value},
            )
            both = (added, *config.connectors) if scheme == "stomp" else (*config.connectors, added)
            return replace(config, connectors=both)
        connectors = tuple(_with(c, origin, **{name: value}) if c is first else c for c in config.connectors)
        return replace(config, connectors=connectors)

    return set_address


def _websocket(name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    """``--ws-host``, ``--ws-allowed-origins``: every ws:// and wss:// listener's (and the
    admin server's /stomp origins)."""

    def set_all(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
        connectors = tuple(_with(c, origin, **{name: value}) if c.websocket else c for c in config.connectors)
        http = _with(config.http, origin, allowed_origins=value) if name == "allowed_origins" else config.http
        return replace(config, connectors=connectors, http=http)

    return set_all


def _certificate(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
    """``--wss-cert``: the PEM chain of every TLS listener, with its key unless ``--wss-key``
    names another file; it replaces a keyStore."""
    ssl = _with(
        config.ssl or SslContext(),
        origin,
        certificate_file=value,
        key_file=value,
        key_store=None,
        key_store_password=None,
    )
    return replace(config, ssl=ssl)


def _key(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
    return replace(config, ssl=_with(config.ssl or SslContext(), origin, key_file=value))


def _policy(**fixed: Any) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    """A default policy entry setting (``name`` gets the flag's value, or ``fixed`` ones)."""

    def set_policy(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
        policies = config.policies
        values = {name: (value if given is None else given) for name, given in fixed.items()}
        default = _with(policies.default, origin, **values)
        entries = tuple(reinherit(entry, default) for entry in policies.entries)
        return replace(config, policies=replace(policies, default=default, entries=entries))

    return set_policy


def _dead_letter(**fixed: Any) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    def set_strategy(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
        values = {name: (value if given is None else given) for name, given in fixed.items()}
        strategy = _with(config.policies.default.dead_letter, origin, **values)
        return _policy(dead_letter=strategy)(config, None, origin)

    return set_strategy


def _redelivery(name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    def set_redelivery(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
        plugin = config.redelivery
        default = _with(plugin.default, origin, **{name: value})
        entries = tuple(reinherit(entry, default) for entry in plugin.entries)
        return replace(config, redelivery=replace(plugin, default=default, entries=entries))

    return set_redelivery


def _persistence(name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    return lambda config, value, origin: replace(
        config, persistence=_with(config.persistence, origin, **{name: value})
    )


def _locker(name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    def set_locker(config: BrokerConfig, value: Any, origin: Origin) -> BrokerConfig:
        locker = _with(config.persistence.locker, origin, **{name: value})
        return replace(config, persistence=replace(config.persistence, locker=locker))

    return set_locker


def _section(section: str, name: str) -> Callable[[BrokerConfig, Any, Origin], BrokerConfig]:
    return lambda config, value, origin: replace(
        config, **{section: _with(getattr(config, section), origin, **{name: value})}
    )


#: Every setting the command line can give.
KEYS: dict[str, Callable[[BrokerConfig, Any, Origin], BrokerConfig]] = {
    "host": _listener("host"),
    "port": _listener("port"),
    "data_dir": _broker("data_directory"),
    "tmp_data_dir": _broker("tmp_data_directory"),
    "lock_acquire_sleep_interval": _locker("lock_acquire_sleep_interval"),
    "lock_keep_alive_period": _persistence("lock_keep_alive_period"),
    "heartbeat_grace": _transport("hb_grace_period_multiplier"),
    "max_frame_size": _transport("max_frame_size"),
    "max_headers": _transport("max_headers"),
    "max_header_length": _transport("max_header_length"),
    "memory_limit": _usage("memory_limit"),
    "store_limit": _usage("store_limit"),
    "temp_limit": _usage("temp_limit"),
    "send_fail_if_no_space": _usage("send_fail_if_no_space"),
    "send_fail_if_no_space_after_timeout": _usage("send_fail_if_no_space_after_timeout"),
    "destination_memory_limit": _policy(memory_limit=None),
    "cursor_memory_high_water_mark": _policy(cursor_memory_high_water_mark=None),
    "prioritized_messages": _policy(prioritized_messages=None),
    "maximum_redeliveries": _redelivery("maximum_redeliveries"),
    "redelivery_delay": _redelivery("redelivery_delay"),
    "individual_dead_letter_prefix": _dead_letter(kind="individual", queue_prefix=None),
    "drop_expired": _dead_letter(process_expired=False),
    "http_host": _section("http", "host"),
    "http_port": _section("http", "port"),
    "http_allow_remote": _section("http", "allow_remote"),
    "http_static_dir": _section("http", "static_directory"),
    # The ports first: --ws-host and the origins then apply to the listeners they define.
    "ws_port": _listener("port", "ws"),
    "wss_port": _listener("port", "wss"),
    "ws_host": _websocket("host"),
    "ws_allowed_origins": _websocket("allowed_origins"),
    # The certificate before the key: --wss-cert also names the key, --wss-key replaces it.
    "wss_cert": _certificate,
    "wss_key": _key,
    "export_dir": _section("export", "directory"),
}


def apply(config: BrokerConfig, overrides: Iterable[Override]) -> BrokerConfig:
    for override in overrides:
        config = KEYS[override.key](config, override.value, Origin("flag", flag=override.flag))
    return config
