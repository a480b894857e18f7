"""The settings model -> what today's broker takes (BrokerOptions, CoreSettings, Listener).

The broker applies broker-wide settings today: the system usage limits, the data, store
and temp directories, the store's lock (shared-file-locker, lockKeepAlivePeriod), the
default policy entry's limits, prefetch and dead-letter strategy,
the default redelivery policy, users and authorization entries (broker/security), every
transportConnector (stomp, stomp+nio, stomp+ssl, stomp+nio+ssl, ws, wss: address, path,
limits, maximumConnections, heart-beat grace and default, connect timeout, TLS from
<sslContext> with client certificates, allowed origins), <transportDefaults> (for /stomp
too), the admin server and <export>.  Everything else the model holds (some
per-destination settings) is parsed and checked but not applied yet: :func:`not_applied`
names what, so that ``--check-config`` can say so.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from broker.app import BrokerOptions, LockSettings
from broker.core.base import names
from broker.core.base.selector import InvalidSelector, compile_selector
from broker.core.base.settings import (
    CompositeRule,
    CoreSettings,
    DiscardingDLQ,
    ForwardRule,
    Interceptors,
    LoggingFlags,
    MirrorRule,
    TimeStamping,
    VirtualTopicRule,
)
from broker.export.exporter import ExportSettings
from broker.http.auth import HttpSecurity
from broker.io.limits import ConnectionLimits
from broker.io.listener import Listener
from broker.network.network import NetworkSettings
from broker.policies import destination_policy, initial_delay, resolver, unmatched_redelivery
from broker.security.guard import Security
from broker.tls import TlsSetupError, client_context, server_context
from broker.ws.origin import InvalidOrigin, normalize_origin
from config.model import (
    BrokerConfig,
    DeadLetterStrategy,
    Export,
    PolicyEntry,
    RedeliveryPlugin,
    RedeliveryPolicy,
)

if TYPE_CHECKING:
    import ssl
    from collections.abc import Iterable

    from config.model import DestinationInterceptors, TransportConnector, TransportDefaults


class CannotRun(Exception):
    """The configuration is valid but asks for something this broker cannot serve yet."""


def broker_options(config: BrokerConfig) -> BrokerOptions:
    usage = config.system_usage
    # The default entries: the policy of every destination no other entry matches.
    policy = destination_policy(
        config.policies.default, config.redelivery.default, unmatched_redelivery(config.redelivery)
    )
    static_dir = config.http.static_directory
    # Made even with no users and no entries (it then lets everyone in), so that a
    # SIGHUP can bring some in.
    guard = Security(config.authentication, config.authorization)
    if static_dir is not None and not static_dir.is_dir():
        raise CannotRun(f"httpServer staticDirectory {static_dir} is not a directory")
    listeners = tuple(_listener(connector, config) for connector in config.connectors)
    name = config.broker.broker_name
    first = config.first_stomp_connector() or config.connectors[0]
    return BrokerOptions(
        listeners=listeners,
        data_dir=config.broker.data_directory,
        store_dir=config.persistence.directory,
        temp_dir=config.broker.tmp_data_directory,
        lock=LockSettings(
            acquire_interval_ms=config.persistence.locker.lock_acquire_sleep_interval,
            keep_alive_ms=config.persistence.lock_keep_alive_period,
            fail_if_locked=config.persistence.locker.fail_if_locked,
        ),
        core=CoreSettings(
            broker_name=name,
            broker_id=f"ID:{name}",
            broker_url=f"{first.scheme}://{first.host}:{first.port}",
            advisory_support=config.broker.advisory_support,
            populate_jmsx_user_id=config.broker.populate_jmsx_user_id,
            statistics=config.statistics is not None,
            time_stamping=_time_stamping(config),
            discarding_dlq=_discarding_dlq(config),
            logging=_logging(config),
            dlq_past_max_redeliveries=config.redelivery.send_to_dlq_if_max_retries_exceeded,
            persistence_flag=(
                config.force_persistency.persistence_flag if config.force_persistency is not None else None
            ),
            queue_prefetch=policy.queue_prefetch,
            topic_prefetch=policy.topic_prefetch,
            durable_topic_prefetch=policy.durable_topic_prefetch,
            queue_browser_prefetch=policy.queue_browser_prefetch,
            prioritized_messages=policy.prioritized,
            memory_limit=usage.memory_limit,
            store_limit=usage.store_limit,
            temp_limit=usage.temp_limit,
            destination_memory_limit=policy.memory_limit,
            cursor_high_water=policy.cursor_high_water,
            page_size=config.policies.default.max_page_size,
            max_redeliveries=policy.max_redeliveries,
            dead_letter_queue=policy.dead_letter_queue,
            individual_dead_letter_prefix=policy.individual_dead_letter_prefix,
            individual_dead_letter_topic_prefix=policy.individual_dead_letter_topic_prefix,
            dead_letter_expired=policy.dead_letter_expired,
            dead_letter_non_persistent=policy.dead_letter_non_persistent,
            discard_dead_letters=policy.discard_dead_letters,
            redelivery_delay_ms=policy.redelivery_delay_ms,
            initial_redelivery_delay_ms=initial_delay(config.redelivery.default),
            use_exponential_back_off=policy.use_exponential_back_off,
            back_off_multiplier=policy.back_off_multiplier,
            maximum_redelivery_delay_ms=policy.maximum_redelivery_delay_ms,
            send_fail_if_no_space=usage.send_fail_if_no_space,
            send_fail_if_no_space_after_timeout=usage.send_fail_if_no_space_after_timeout,
            producer_flow_control=policy.producer_flow_control,
            gc_inactive=policy.gc_inactive,
            inactive_timeout_ms=policy.inactive_timeout_ms,
            expire_period_ms=policy.expire_period_ms,
            policies=resolver(config.policies, config.redelivery),
            interceptors=interceptors(config.interceptors),
        ),
        http_host=config.http.host,
        http_port=config.http.port or None,
        http_security=HttpSecurity(
            authenticator=guard if config.authentication is not None else None,
            allow_remote=config.http.allow_remote,
        ),
        http_static_dir=static_dir,
        http_stomp_limits=_limits(config.transport_defaults),
        http_allowed_origins=_origins(config.http.allowed_origins),
        http_max_connections=config.http.maximum_connections,
        guard=guard,
        export=_export(config.export),
        network=_network(config),
    )


def _network(config: BrokerConfig) -> NetworkSettings | None:
    if not config.network_connectors:
        return None
    tls = any(uri.tls for connector in config.network_connectors for uri in connector.uris)
    context = None
    if tls:
        if config.ssl is None:
            raise CannotRun("a networkConnector bridges over stomp+ssl://: it needs an <sslContext>")
        try:
            context = client_context(config.ssl)
        except TlsSetupError as exc:
            raise CannotRun(f"cannot load the TLS certificates for the network bridges: {exc}") from None
    return NetworkSettings(
        broker_name=config.broker.broker_name,
        connectors=config.network_connectors,
        ssl_context=context,
        max_frame_size=max(connector.max_frame_size for connector in config.connectors),
    )


def _export(export: Export) -> ExportSettings | None:
    if export.directory is None:
        return None
    return ExportSettings(
        directory=export.directory,
        snapshot_interval_ms=export.snapshot_interval,
        rotate_bytes=export.rotate_size,
        rotate_interval_ms=export.rotate_interval,
    )


def _limits(transport: TransportConnector | TransportDefaults) -> ConnectionLimits:
    return ConnectionLimits(
        max_frame_size=transport.max_frame_size,
        max_headers=transport.max_headers,
        max_header_length=transport.max_header_length,
        connect_timeout=transport.connect_attempt_timeout / 1000,
        heartbeat_grace=transport.hb_grace_period_multiplier,
        default_heart_beat=transport.default_heart_beat,
    )


def _listener(connector: TransportConnector, config: BrokerConfig) -> Listener:
    return Listener(
        scheme=connector.scheme,
        host=connector.host,
        port=connector.port,
        limits=_limits(connector),
        max_connections=connector.maximum_connections,
        ssl=_tls_context(connector, config) if connector.tls else None,
        websocket=connector.websocket,
        path=connector.path,
        allowed_origins=_origins(connector.allowed_origins),
        # A connector named as its scheme (the default's "stomp") is listed so without one.
        name=connector.name if connector.name != connector.scheme else "",
    )


def _origins(origins: tuple[str, ...]) -> tuple[str, ...]:
    try:
        return tuple(normalize_origin(origin) for origin in origins)
    except InvalidOrigin as exc:
        raise CannotRun(f"allowedOrigins: {exc}") from None


def _tls_context(connector: TransportConnector, config: BrokerConfig) -> ssl.SSLContext:
    where = f"{connector.scheme}://{connector.host}:{connector.port}"
    if config.ssl is None:
        raise CannotRun(f"{where} needs TLS certificates: an <sslContext> in the file, or --wss-cert")
    try:
        return server_context(
            config.ssl,
            need_client_auth=connector.need_client_auth,
            want_client_auth=connector.want_client_auth,
        )
    except TlsSetupError as exc:
        raise CannotRun(f"cannot load the TLS certificates for {where}: {exc}") from None


def interceptors(config: DestinationInterceptors) -> Interceptors:
    """``<destinationInterceptors>`` (or ActiveMQ's default ones) as the core's rules; a
    filtered destination's selector that does not compile stops the broker, naming its line."""
    kinds = {"queue": names.QUEUE, "topic": names.TOPIC}
    composites = []
    for composite in config.composites:
        forwards = []
        for target in composite.forward_to:
            if target.selector is not None:
                try:
                    compile_selector(target.selector)
                except InvalidSelector as exc:
                    raise CannotRun(f"{target.source}: filteredDestination selector: {exc}") from None
            forwards.append(ForwardRule(kinds[target.kind] + target.name, target.selector))
        composites.append(
            CompositeRule(
                kinds[composite.kind],
                composite.name,
                tuple(forwards),
                composite.forward_only,
                composite.send_when_not_matched,
            )
        )
    mirrored = config.mirrored
    return Interceptors(
        virtual_topics=tuple(
            VirtualTopicRule(
                v.name,
                v.prefix,
                v.postfix,
                v.selector_aware,
                v.local,
                v.drop_on_resource_limit,
                v.set_original_destination,
            )
            for v in config.virtual_topics
        ),
        composites=tuple(composites),
        mirror=MirrorRule(mirrored.prefix, mirrored.postfix) if mirrored is not None else None,
    )


#: Settings broker_options wires, per object (the rest of each object is not applied yet).
#: Each destination's own entry, the default entry's too (broker/policies.py):
_APPLIED_ENTRY = frozenset(
    {
        "producer_flow_control",
        "gc_inactive_destinations",
        "inactive_timeout_before_gc",
        "expire_messages_period",
        "max_page_size",
        "memory_limit",
        "cursor_memory_high_water_mark",
        "queue_prefetch",
        "topic_prefetch",
        "durable_topic_prefetch",
        "queue_browser_prefetch",
        "prioritized_messages",
        "dead_letter",
        "max_destinations",
        "subscription_recovery",
        "always_retroactive",
        "advisory_for_delivery",
        "advisory_for_consumed",
        "advisory_for_slow_consumers",
        "advisory_for_fast_producers",
        "advisory_when_full",
        "pending_message_limit",
        "message_eviction",
        "slow_consumer",
    }
)
_APPLIED_DEAD_LETTER = frozenset(
    {"kind", "dead_letter_queue", "queue_prefix", "topic_prefix", "process_expired", "process_non_persistent"}
)
_APPLIED_REDELIVERY = frozenset(
    {
        "maximum_redeliveries",
        "initial_redelivery_delay",
        "redelivery_delay",
        "use_exponential_back_off",
        "back_off_multiplier",
        "maximum_redelivery_delay",
    }
)


def _changed(obj: Any, default: Any, key: str, applied: Iterable[str]) -> set[str]:
    """Keys of ``obj``'s settings that differ from ``default`` and are not in ``applied``."""
    skip = set(applied)
    return {
        f"{key}.{f.name}"
        for f in fields(obj)
        if "xml" in f.metadata and f.name not in skip and getattr(obj, f.name) != getattr(default, f.name)
    }


def not_applied(config: BrokerConfig) -> set[str]:
    """The report keys (config/report.py) of settings the broker does not apply yet.

    A setting left at its default is never listed: the broker behaves that way already.
    """
    defaults = BrokerConfig()
    out = _changed(
        config.broker,
        defaults.broker,
        "broker",
        (
            "data_directory",
            "tmp_data_directory",
            "broker_name",
            "advisory_support",
            "populate_jmsx_user_id",
            "use_virtual_topics",
            "use_mirrored_queues",
        ),
    )
    out |= _changed(config.policies.default, PolicyEntry(), "policies.default", _APPLIED_ENTRY)
    dead_letter = config.policies.default.dead_letter
    out |= _changed(dead_letter, DeadLetterStrategy(), "policies.default.dead_letter", _APPLIED_DEAD_LETTER)
    for index, entry in enumerate(config.policies.entries):
        key = f"policies.entries[{index}]"
        out |= _changed(entry, PolicyEntry(), key, _APPLIED_ENTRY)
        out |= _changed(entry.dead_letter, DeadLetterStrategy(), f"{key}.dead_letter", _APPLIED_DEAD_LETTER)
    out |= _changed(
        config.redelivery,
        RedeliveryPlugin(),
        "redelivery",
        ("send_to_dlq_if_max_retries_exceeded", "fallback_to_dead_letter"),
    )
    out |= _changed(config.redelivery.default, RedeliveryPolicy(), "redelivery.default", _APPLIED_REDELIVERY)
    for index, redelivery in enumerate(config.redelivery.entries):
        key = f"redelivery.entries[{index}]"
        out |= _changed(redelivery, RedeliveryPolicy(), key, _APPLIED_REDELIVERY)
    return out


def not_applied_in_file(config: BrokerConfig) -> list[str]:
    """What a configuration asks for that the broker will not do yet (for a start-up warning)."""
    return sorted(not_applied(config))


def _time_stamping(config: BrokerConfig) -> TimeStamping | None:
    plugin = config.time_stamping
    if plugin is None:
        return None
    return TimeStamping(
        zero_expiration_override=plugin.zero_expiration_override,
        ttl_ceiling=plugin.ttl_ceiling,
        future_only=plugin.future_only,
        process_network_messages=plugin.process_network_messages,
    )


def _logging(config: BrokerConfig) -> LoggingFlags | None:
    plugin = config.logging
    if plugin is None:
        return None
    every = plugin.log_all
    return LoggingFlags(
        connections=every or plugin.log_connection_events,
        sessions=every or plugin.log_session_events,
        transactions=every or plugin.log_transaction_events,
        consumers=every or plugin.log_consumer_events,
        producers=every or plugin.log_producer_events,
        internal=every or plugin.log_internal_events,
        per_destination_logger=plugin.per_destination_logger,
    )


def _discarding_dlq(config: BrokerConfig) -> DiscardingDLQ | None:
    plugin = config.discarding_dlq
    if plugin is None:
        return None
    return DiscardingDLQ(
        drop_all=plugin.drop_all,
        drop_temporary_queues=plugin.drop_temporary_queues,
        drop_temporary_topics=plugin.drop_temporary_topics,
        drop_only=plugin.drop_only,
        report_interval=plugin.report_interval,
    )
