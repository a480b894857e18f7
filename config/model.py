"""The one settings model: everything stompd can be told, with where each value came from.

``activemq.xml`` (config/loader.py) and the command line (config/overrides.py) both fill
these objects; the broker is handed them and never reads XML or argv.  Every object is a
frozen, slotted dataclass of plain typed values, so the core reads ``policy.memory_limit``
directly.  Provenance travels beside the values: ``origins`` maps a field name to the
:class:`Origin` of its value (``default``, ``activemq.xml:31`` or ``flag --port``);
:func:`origin_of` reads it.  ``origins`` takes no part in equality, so a configuration
loaded from a file equals the defaults when every value is the default.

Sizes are bytes, times are milliseconds (ActiveMQ's unit in activemq.xml), percentages
are whole numbers 1-100.  Defaults are stompd's embedded defaults, which equal today's
command-line defaults and, where noted, differ from ActiveMQ's.

Matching a destination to its entries (config/wildcards.py):

- policies (``PolicyMap.entries``) and redelivery policies (``RedeliveryPlugin.entries``):
  exactly one entry applies, the most specific match (:func:`wildcards.choose`,
  called with the destination's kind and its name without the ``/queue/`` prefix);
  none matching -> the map's ``default``.  As in ActiveMQ, kinds never mix: a ``queue=">"``
  entry does not apply to temporary queues, which match ``tempQueue="true"`` entries only.
  An entry's attributes it does not set are the ``default`` entry's (already filled in at
  load: read any field directly).
- authorization entries: *every* matching entry applies; the allowed groups are the union
  of their groups plus the ``default_entry``'s, as ActiveMQ's DefaultAuthorizationMap does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

OriginKind = Literal["default", "file", "flag"]
DestinationKind = Literal["queue", "topic", "temp-queue", "temp-topic"]
#: ``file``: past the high-water mark pending messages move to disk (ActiveMQ's store and
#: file cursors); ``vm``: they stay in memory and producers wait (vmQueueCursor, vmCursor).
Cursor = Literal["file", "vm"]
DeadLetterKind = Literal["shared", "individual", "discarding"]
PasswordScheme = Literal["plain", "scrypt", "pbkdf2-sha256"]
ConnectorScheme = Literal["stomp", "stomp+nio", "stomp+ssl", "stomp+nio+ssl", "ws", "wss"]
TLS_SCHEMES: frozenset[str] = frozenset({"stomp+ssl", "stomp+nio+ssl", "wss"})
WEBSOCKET_SCHEMES: frozenset[str] = frozenset({"ws", "wss"})


@dataclass(frozen=True, slots=True)
class Origin:
    kind: OriginKind
    file: str | None = None
    line: int | None = None
    flag: str | None = None
    #: How the value was derived: ``${activemq.data}``, ``70% of 24 GiB of memory``...
    note: str = ""

    def __str__(self) -> str:
        if self.kind == "file":
            text = f"{self.file}:{self.line}"
        elif self.kind == "flag":
            text = f"flag {self.flag}"
        else:
            text = "default"
        return f"{text} ({self.note})" if self.note else text


DEFAULT = Origin("default")
Origins = Mapping[str, Origin]


def origin_of(obj: Any, name: str) -> Origin:
    """Where ``obj.<name>`` came from (``DEFAULT`` when nothing set it)."""
    origins: Origins = obj.origins
    return origins.get(name, DEFAULT)


def _setting(default: Any, xml: str, unit: str = "", secret: bool = False) -> Any:
    """A field with what ``--check-config`` needs to show it as ActiveMQ writes it."""
    return field(default=default, metadata={"xml": xml, "unit": unit, "secret": secret})


def _origins() -> Any:
    return field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """``<broker>``'s own attributes."""

    broker_name: str = _setting("localhost", "brokerName")
    #: Where stompd keeps its data: ``store/`` (persistent messages, unless the
    #: persistence adapter names a directory) and ``tmp_storage/`` (swap, wiped at start).
    data_directory: Path = _setting(Path("data"), "dataDirectory")
    #: The temp (swap) store's directory (None: ``<dataDirectory>/tmp_storage``).  Only the
    #: broker holding the store's lock opens it (and wipes it); a pair sharing a data
    #: directory may give each broker one on its own disk.
    tmp_data_directory: Path | None = _setting(None, "tmpDataDirectory")
    #: False: every message is treated as non-persistent, as ActiveMQ does.
    persistent: bool = _setting(True, "persistent")
    #: AMQ_SCHEDULED_DELAY/PERIOD/REPEAT.  On by default in stompd (off in ActiveMQ).
    scheduler_support: bool = _setting(True, "schedulerSupport")
    #: Advisories on ``ActiveMQ.Advisory.>``: consumers (what networks of brokers learn
    #: each other's consumers from), connections, destinations, expired and dead-lettered
    #: messages, and those policy entries ask for.
    advisory_support: bool = _setting(True, "advisorySupport")
    #: Every message's ``JMSXUserID`` is the user its producer logged in as.
    populate_jmsx_user_id: bool = _setting(False, "populateJMSXUserID")
    #: ActiveMQ's default interceptors, which a file's own <destinationInterceptors>
    #: replaces: every ``VirtualTopic.>`` topic virtual, and (false by default) every queue
    #: mirrored on a topic.
    use_virtual_topics: bool = _setting(True, "useVirtualTopics")
    use_mirrored_queues: bool = _setting(False, "useMirroredQueues")
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class SystemUsage:
    """``<systemUsage>``: the broker-wide meters (ActiveMQ's defaults: 1 GB, 100 GB, 50 GB)."""

    memory_limit: int = _setting(1 << 30, "memoryUsage limit", "bytes")
    store_limit: int = _setting(100 << 30, "storeUsage limit", "bytes")
    temp_limit: int = _setting(50 << 30, "tempUsage limit", "bytes")
    #: Refuse a SEND that does not fit with an ERROR instead of making the producer wait.
    send_fail_if_no_space: bool = _setting(False, "sendFailIfNoSpace")
    #: Wait this long, then refuse (0: wait as long as it takes).
    send_fail_if_no_space_after_timeout: int = _setting(0, "sendFailIfNoSpaceAfterTimeout", "ms")
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class DeadLetterStrategy:
    """``<deadLetterStrategy>``: where a message goes past its redeliveries, or expired."""

    kind: DeadLetterKind = _setting("shared", "")
    #: shared: the one dead-letter queue's name.
    dead_letter_queue: str = _setting("ActiveMQ.DLQ", "deadLetterQueue")
    #: individual: the DLQ of queue Q is ``queue_prefix + Q + queue_suffix``.
    queue_prefix: str = _setting("ActiveMQ.DLQ.Queue.", "queuePrefix")
    topic_prefix: str = _setting("ActiveMQ.DLQ.Topic.", "topicPrefix")
    queue_suffix: str = _setting("", "queueSuffix")
    topic_suffix: str = _setting("", "topicSuffix")
    use_queue_for_queue_messages: bool = _setting(True, "useQueueForQueueMessages")
    use_queue_for_topic_messages: bool = _setting(True, "useQueueForTopicMessages")
    #: Expired messages go to the DLQ too (false: dropped and counted).
    process_expired: bool = _setting(True, "processExpired")
    #: Non-persistent messages go to the DLQ too (ActiveMQ drops them by default).
    process_non_persistent: bool = _setting(False, "processNonPersistent")
    #: A dead-lettered message expires after this long (0: never).
    expiration: int = _setting(0, "expiration", "ms")
    origins: Origins = _origins()


RecoveryKind = Literal["none", "fixedCount", "fixedSize", "lastImage", "timed"]


@dataclass(frozen=True, slots=True)
class SubscriptionRecovery:
    """``<subscriptionRecoveryPolicy>`` (topics): what a topic keeps for a retroactive
    subscriber, besides its ``ActiveMQ.Retain`` message which every topic keeps
    (ActiveMQ wraps any policy in its RetainedMessageSubscriptionRecoveryPolicy)."""

    kind: RecoveryKind = "none"
    #: fixedCount: messages (ActiveMQ's default 100); fixedSize: bytes (64 KiB).
    maximum_size: int = 0
    #: timed: how long (ms) a message is kept (ActiveMQ's default one minute).
    recover_duration: int = 60000

    def __str__(self) -> str:
        if self.kind == "fixedCount":
            return f"fixedCountSubscriptionRecoveryPolicy maximumSize={self.maximum_size}"
        if self.kind == "fixedSize":
            return f"fixedSizedSubscriptionRecoveryPolicy maximumSize={self.maximum_size}"
        if self.kind == "timed":
            return f"timedSubscriptionRecoveryPolicy recoverDuration={self.recover_duration}"
        if self.kind == "lastImage":
            return "lastImageSubscriptionRecoveryPolicy"
        return "noSubscriptionRecoveryPolicy"


PendingLimitKind = Literal["constant", "prefetchRate"]


@dataclass(frozen=True, slots=True)
class PendingMessageLimit:
    """``<pendingMessageLimitStrategy>`` (topics): how many messages a slow non-durable
    subscriber may have waiting beyond its prefetch before the oldest are evicted
    (ActiveMQ's TopicSubscription ``maximumPendingMessages``; -1: no limit)."""

    kind: PendingLimitKind = "constant"
    #: constantPendingMessageLimitStrategy ``limit`` (ActiveMQ's default -1).
    limit: int = -1
    #: prefetchRatePendingMessageLimitStrategy ``multiplier`` (ActiveMQ's default 0.5):
    #: the limit is the subscriber's prefetch times this.
    multiplier: float = 0.5

    def __str__(self) -> str:
        if self.kind == "prefetchRate":
            return f"prefetchRatePendingMessageLimitStrategy multiplier={self.multiplier:g}"
        return f"constantPendingMessageLimitStrategy limit={self.limit}"


EvictionKind = Literal["oldest", "oldestLowestPriority", "uniqueProperty"]


@dataclass(frozen=True, slots=True)
class MessageEviction:
    """``<messageEvictionStrategy>``: which pending messages a slow subscriber past its
    limit loses."""

    kind: EvictionKind = "oldest"
    #: uniquePropertyMessageEvictionStrategy ``propertyName``.
    property_name: str = ""

    def __str__(self) -> str:
        if self.kind == "oldestLowestPriority":
            return "oldestMessageWithLowestPriorityEvictionStrategy"
        if self.kind == "uniqueProperty":
            return f"uniquePropertyMessageEvictionStrategy propertyName={self.property_name}"
        return "oldestMessageEvictionStrategy"


SlowConsumerKind = Literal["abort", "abortSlowAck"]


@dataclass(frozen=True, slots=True)
class SlowConsumerStrategy:
    """``<slowConsumerStrategy>``: ``abortSlowConsumerStrategy`` (a subscriber found slow
    for ``maxSlowDuration``, or ``maxSlowCount`` times, is aborted) or
    ``abortSlowAckConsumerStrategy`` (one that has not acked for ``maxTimeSinceLastAck``).
    ActiveMQ's defaults."""

    kind: SlowConsumerKind = "abort"
    max_slow_duration: int = 30000
    max_slow_count: int = -1
    check_period: int = 30000
    abort_connection: bool = False
    ignore_network_consumers: bool = True
    #: abortSlowAckConsumerStrategy only.
    max_time_since_last_ack: int = 30000
    ignore_idle_consumers: bool = True

    def __str__(self) -> str:
        text = (
            f"maxSlowDuration={self.max_slow_duration} maxSlowCount={self.max_slow_count} "
            f"checkPeriod={self.check_period} abortConnection={str(self.abort_connection).lower()} "
            f"ignoreNetworkConsumers={str(self.ignore_network_consumers).lower()}"
        )
        if self.kind == "abortSlowAck":
            return (
                f"abortSlowAckConsumerStrategy maxTimeSinceLastAck={self.max_time_since_last_ack} "
                f"ignoreIdleConsumers={str(self.ignore_idle_consumers).lower()} " + text
            )
        return "abortSlowConsumerStrategy " + text


@dataclass(frozen=True, slots=True)
class PolicyEntry:
    """``<policyEntry>``: settings for the destinations its pattern matches.

    ``kind`` and ``pattern`` say which (``pattern`` is an ActiveMQ wildcard, possibly a
    composite ``A.>,B.*``); the default entry has ``kind`` None.  Every other field is
    resolved: what the entry sets, else what the default entry says.
    """

    kind: DestinationKind | None = None
    pattern: str = ">"
    #: False: a producer is never blocked on this destination; its messages swap to the
    #: temp store until that is full.
    producer_flow_control: bool = _setting(True, "producerFlowControl")
    #: The destination's own memory meter, charged to the broker-wide one too (None: none).
    memory_limit: int | None = _setting(None, "memoryLimit", "bytes")
    #: Past this % of the destination's memory (or the broker's), new messages swap to disk.
    cursor_memory_high_water_mark: int = _setting(70, "cursorMemoryHighWaterMark", "percent")
    #: true: dispatch in strict 0-9 priority order; false (ActiveMQ's default): arrival order.
    prioritized_messages: bool = _setting(False, "prioritizedMessages")
    #: Messages paged back from disk at a time (ActiveMQ's default is 200).
    max_page_size: int = _setting(500, "maxPageSize")
    #: How often expired messages are looked for (0: only when dispatching).
    expire_messages_period: int = _setting(30000, "expireMessagesPeriod", "ms")
    queue_prefetch: int = _setting(1000, "queuePrefetch")
    topic_prefetch: int = _setting(32767, "topicPrefetch")
    durable_topic_prefetch: int = _setting(100, "durableTopicPrefetch")
    queue_browser_prefetch: int = _setting(500, "queueBrowserPrefetch")
    pending_queue_policy: Cursor = _setting("file", "pendingQueuePolicy")
    pending_subscriber_policy: Cursor = _setting("file", "pendingSubscriberPolicy")
    pending_durable_subscriber_policy: Cursor = _setting("file", "pendingDurableSubscriberPolicy")
    dead_letter: DeadLetterStrategy = field(default_factory=DeadLetterStrategy)
    #: Delete a destination with no consumers and no messages after it has been inactive
    #: this long (ActiveMQ spells the attribute ``inactiveTimoutBeforeGC``).
    gc_inactive_destinations: bool = _setting(False, "gcInactiveDestinations")
    inactive_timeout_before_gc: int = _setting(60000, "inactiveTimoutBeforeGC", "ms")
    #: How many destinations this entry may cover at once; past it, making another is
    #: refused with an ERROR (-1: no limit).
    max_destinations: int = _setting(-1, "maxDestinations")
    #: Topics: what each keeps for retroactive subscribers (``SubscriptionRecovery``).
    subscription_recovery: SubscriptionRecovery = _setting(
        SubscriptionRecovery(), "subscriptionRecoveryPolicy"
    )
    #: Topics: every subscriber is retroactive, as if it asked.
    always_retroactive: bool = _setting(False, "alwaysRetroactive")
    #: Advisories of this destination's messages and limits (ActiveMQ.Advisory.*): a message
    #: arrived, was consumed; a slow topic subscriber; a producer held back; memory full.
    advisory_for_delivery: bool = _setting(False, "advisoryForDelivery")
    advisory_for_consumed: bool = _setting(False, "advisoryForConsumed")
    advisory_for_slow_consumers: bool = _setting(False, "advisoryForSlowConsumers")
    advisory_for_fast_producers: bool = _setting(False, "advisoryForFastProducers")
    advisory_when_full: bool = _setting(False, "advisoryWhenFull")
    #: Topics: a slow non-durable subscriber's limit of pending messages (None: none).
    pending_message_limit: PendingMessageLimit | None = _setting(None, "pendingMessageLimitStrategy")
    #: Topics: which of them it loses past that limit.
    message_eviction: MessageEviction = _setting(MessageEviction(), "messageEvictionStrategy")
    #: What is done to a slow consumer (None: nothing).
    slow_consumer: SlowConsumerStrategy | None = _setting(None, "slowConsumerStrategy")
    #: Fields the file set on this entry itself (the rest come from the default entry).
    explicit: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class PolicyMap:
    """``<destinationPolicy><policyMap>``."""

    entries: tuple[PolicyEntry, ...] = ()
    #: ``<defaultEntry>``: what applies where no entry matches, and what entries inherit.
    default: PolicyEntry = field(default_factory=PolicyEntry)


@dataclass(frozen=True, slots=True)
class RedeliveryPolicy:
    """``<redeliveryPolicy>``: how often and how soon a message given back is redelivered.

    stompd's defaults keep today's behaviour (no delay); ActiveMQ's client-side default
    delay is 1000 ms.
    """

    kind: DestinationKind | None = None
    pattern: str = ">"
    #: Past this many redeliveries the message goes to its dead-letter queue (-1: never).
    maximum_redeliveries: int = _setting(6, "maximumRedeliveries")
    initial_redelivery_delay: int = _setting(0, "initialRedeliveryDelay", "ms")
    redelivery_delay: int = _setting(0, "redeliveryDelay", "ms")
    use_exponential_back_off: bool = _setting(False, "useExponentialBackOff")
    back_off_multiplier: float = _setting(5.0, "backOffMultiplier")
    #: Cap on the delay with back-off (-1: none).
    maximum_redelivery_delay: int = _setting(-1, "maximumRedeliveryDelay", "ms")
    explicit: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class RedeliveryPlugin:
    """``<redeliveryPlugin>`` (or today's ``--maximum-redeliveries``/``--redelivery-delay``)."""

    entries: tuple[RedeliveryPolicy, ...] = ()
    default: RedeliveryPolicy = field(default_factory=RedeliveryPolicy)
    fallback_to_dead_letter: bool = _setting(True, "fallbackToDeadLetter")
    send_to_dlq_if_max_retries_exceeded: bool = _setting(True, "sendToDlqIfMaxRetriesExceeded")
    #: Where ``<redeliveryPlugin>`` is (default: the file has none).
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class StatisticsPlugin:
    """``<statisticsBrokerPlugin/>``: a message with a ``reply-to`` sent to
    ``ActiveMQ.Statistics.Broker`` or ``ActiveMQ.Statistics.Destination.<name>`` is answered
    with a map of the broker's or each matching destination's statistics (ActiveMQ's
    StatisticsBroker).  It has no attributes."""

    source: Origin = field(default=DEFAULT, compare=False)


@dataclass(frozen=True, slots=True)
class TimeStampingPlugin:
    """``<timeStampingBrokerPlugin>``: each SEND's ``timestamp`` becomes the broker's clock
    and its ``expires`` moves with it (ActiveMQ's TimeStampingBrokerPlugin)."""

    #: The time to live (ms) a message sent with none gets; 0: it keeps none.
    zero_expiration_override: int = _setting(0, "zeroExpirationOverride", "ms")
    #: The longest time to live (ms) a message keeps; 0: no ceiling.
    ttl_ceiling: int = _setting(0, "ttlCeiling", "ms")
    #: Only ever move a message's expiry later (a broker clock behind the client's).
    future_only: bool = _setting(False, "futureOnly")
    #: Stamp messages a network bridge forwards too.
    process_network_messages: bool = _setting(False, "processNetworkMessages")
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class ForcePersistencyPlugin:
    """``<forcePersistencyModeBrokerPlugin>``: every message sent is persistent (or not),
    whatever its ``persistent`` header said (ActiveMQ's ForcePersistencyModeBroker)."""

    persistence_flag: bool = _setting(False, "persistenceFlag")
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class DiscardingDLQPlugin:
    """``<discardingDLQBrokerPlugin>``: what would go to a dead-letter queue is dropped
    instead, for every destination or those named (ActiveMQ's DiscardingDLQBroker)."""

    drop_all: bool = _setting(True, "dropAll")
    drop_temporary_queues: bool = _setting(True, "dropTemporaryQueues")
    drop_temporary_topics: bool = _setting(True, "dropTemporaryTopics")
    #: Regular expressions a destination's name (without /queue/ or /topic/) must match
    #: as a whole, given space-separated.
    drop_only: tuple[str, ...] = _setting((), "dropOnly")
    #: A line in the log per this many dropped (0: none).
    report_interval: int = _setting(1000, "reportInterval")
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class LoggingPlugin:
    """``<loggingBrokerPlugin>``: the broker's events as lines in its log (ActiveMQ's
    LoggingBrokerPlugin, its defaults: connections and sessions only)."""

    log_all: bool = _setting(False, "logAll")
    log_connection_events: bool = _setting(True, "logConnectionEvents")
    log_session_events: bool = _setting(True, "logSessionEvents")
    log_transaction_events: bool = _setting(False, "logTransactionEvents")
    log_consumer_events: bool = _setting(False, "logConsumerEvents")
    log_producer_events: bool = _setting(False, "logProducerEvents")
    log_internal_events: bool = _setting(False, "logInternalEvents")
    #: A sent message's line on a logger of its destination's own.
    per_destination_logger: bool = _setting(False, "perDestinationLogger")
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class TransportDefaults:
    """``<transportDefaults>`` (stompd extension): what every connector's URI may override."""

    max_frame_size: int = _setting(100 << 20, "maxFrameSize", "bytes")
    max_headers: int = _setting(1000, "maxHeaders")
    max_header_length: int = _setting(10 << 10, "maxHeaderLength", "bytes")
    #: A client that has not finished CONNECT by then is dropped.
    connect_attempt_timeout: int = _setting(30000, "connectAttemptTimeout", "ms")
    #: A heart-beat read check's period is the client's interval times this (ActiveMQ's
    #: default 1.0): silent for two periods (three after CONNECT), a client is closed.
    hb_grace_period_multiplier: float = _setting(1.0, "hbGracePeriodMultiplier")
    #: Heart-beat (cx, cy) assumed for a client that sends no heart-beat header.
    default_heart_beat: tuple[int, int] = _setting((0, 0), "defaultHeartBeat", "ms")
    #: None: no limit.
    maximum_connections: int | None = _setting(None, "maximumConnections")
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class TransportConnector:
    """``<transportConnector name uri>``: one STOMP or WebSocket listener.

    The limits are resolved: the URI's option, else ``<transportDefaults>``.
    """

    name: str = "stomp"
    scheme: ConnectorScheme = "stomp"
    host: str = _setting("127.0.0.1", "host")
    port: int = _setting(61613, "port")
    #: WebSocket: the URL path the endpoint answers on ("/" when the URI has none).
    path: str = "/"
    maximum_connections: int | None = _setting(None, "maximumConnections")
    max_frame_size: int = _setting(100 << 20, "wireFormat.maxFrameSize", "bytes")
    max_headers: int = _setting(1000, "maxHeaders")
    max_header_length: int = _setting(10 << 10, "maxHeaderLength", "bytes")
    connect_attempt_timeout: int = _setting(30000, "transport.connectAttemptTimeout", "ms")
    hb_grace_period_multiplier: float = _setting(1.0, "transport.hbGracePeriodMultiplier")
    default_heart_beat: tuple[int, int] = _setting((0, 0), "transport.defaultHeartBeat", "ms")
    #: TLS: ask for a client certificate and refuse the handshake without a valid one.
    need_client_auth: bool = _setting(False, "needClientAuth")
    #: TLS: ask for a client certificate, accept the handshake without one.
    want_client_auth: bool = _setting(False, "wantClientAuth")
    #: WebSocket: origins a browser page may connect from; empty: same origin only.
    allowed_origins: tuple[str, ...] = _setting((), "allowedOrigins")
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()

    @property
    def tls(self) -> bool:
        return self.scheme in TLS_SCHEMES

    @property
    def websocket(self) -> bool:
        return self.scheme in WEBSOCKET_SCHEMES


@dataclass(frozen=True, slots=True)
class SharedFileLocker:
    """``<locker><shared-file-locker>``: the store's lock, which decides the master of the
    brokers sharing a store directory (ActiveMQ's shared file system master/slave)."""

    #: How often a broker that finds the store locked (the standby) tries again.
    lock_acquire_sleep_interval: int = _setting(10000, "lockAcquireSleepInterval", "ms")
    #: A broker that finds the store locked exits (status 1) instead of waiting.
    fail_if_locked: bool = _setting(False, "failIfLocked")
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class PersistenceAdapter:
    """``<persistenceAdapter>``: ``<levelDB directory>``, or ``<kahaDB directory>`` mapped onto it."""

    kind: Literal["levelDB", "kahaDB"] = "levelDB"
    #: The persistent message store's directory (None: ``<dataDirectory>/store``).
    directory: Path | None = _setting(None, "directory")
    #: How often the master checks that the store's lock is still its own, and stops
    #: serving if not (0: never, as ActiveMQ's default).
    lock_keep_alive_period: int = _setting(0, "lockKeepAlivePeriod", "ms")
    locker: SharedFileLocker = field(default_factory=SharedFileLocker)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class Password:
    """A password as configured: plain text, or a hash made by ``stompd hash-password``.

    Check a candidate with :func:`config.passwords.verify` (constant time).
    """

    scheme: PasswordScheme
    #: The attribute as written: the plain password, or the whole hash string.
    text: str = field(repr=False)

    def __str__(self) -> str:
        return "********" if self.scheme == "plain" else f"({self.scheme} hash)"


@dataclass(frozen=True, slots=True)
class User:
    """``<authenticationUser username password groups>``."""

    username: str
    #: None: the password could not be resolved; this user cannot log in.
    password: Password | None
    groups: frozenset[str] = frozenset()
    source: Origin = field(default=DEFAULT, compare=False)


@dataclass(frozen=True, slots=True)
class Authentication:
    """``<simpleAuthenticationPlugin>``: with it, a CONNECT needs a valid login/passcode."""

    users: tuple[User, ...] = ()
    #: A CONNECT without a login gets in as ``anonymous_user`` in ``anonymous_group``.
    anonymous_access_allowed: bool = _setting(False, "anonymousAccessAllowed")
    anonymous_user: str = _setting("anonymous", "anonymousUser")
    anonymous_group: str = _setting("anonymous", "anonymousGroup")
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class AuthorizationEntry:
    """``<authorizationEntry queue|topic read write admin>``: groups allowed per operation.

    ``read``: SUBSCRIBE and browse; ``write``: SEND; ``admin``: creating the destination.
    The group ``*`` means every user.
    """

    kind: DestinationKind | None = None
    pattern: str = ">"
    read: frozenset[str] = frozenset()
    write: frozenset[str] = frozenset()
    admin: frozenset[str] = frozenset()
    source: Origin = field(default=DEFAULT, compare=False)


@dataclass(frozen=True, slots=True)
class Authorization:
    """``<authorizationPlugin><map><authorizationMap>``.

    With it, an operation is allowed when the user is in one of the groups that any
    matching entry or the ``default_entry`` allows (the union, as ActiveMQ); no match:
    denied.
    Temporary destinations use ``temp_entry`` (None: allowed to all), and only the
    connection that made one may read it.
    """

    entries: tuple[AuthorizationEntry, ...] = ()
    default_entry: AuthorizationEntry | None = None
    temp_entry: AuthorizationEntry | None = None


@dataclass(frozen=True, slots=True)
class SslContext:
    """``<sslContext>``: the TLS listeners' certificates.

    ActiveMQ's PKCS12 key and trust stores, or PEM files (stompd extension).  The files
    were checked (they exist, are readable, parse, and the key fits the certificate)
    when the configuration was loaded; config/tls.py reads them.
    """

    key_store: Path | None = _setting(None, "keyStore")
    key_store_password: str | None = _setting(None, "keyStorePassword", secret=True)
    trust_store: Path | None = _setting(None, "trustStore")
    trust_store_password: str | None = _setting(None, "trustStorePassword", secret=True)
    certificate_file: Path | None = _setting(None, "certificateFile")
    key_file: Path | None = _setting(None, "keyFile")
    key_password: str | None = _setting(None, "keyPassword", secret=True)
    ca_file: Path | None = _setting(None, "caFile")
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class HttpServer:
    """``<httpServer host port>`` (stompd extension): admin API, console, /metrics."""

    host: str = _setting("127.0.0.1", "host")
    #: ActiveMQ's console port; 0 turns the server off.
    port: int = _setting(8161, "port")
    #: With no users configured, accept admin clients that are not on loopback.
    allow_remote: bool = _setting(False, "allowRemote")
    #: Also served, to anyone who can reach the port, at /static/ (a web app using /stomp).
    static_directory: Path | None = _setting(None, "staticDirectory")
    #: Origins whose pages may use /stomp (STOMP over WebSocket); empty: same origin only.
    allowed_origins: tuple[str, ...] = _setting((), "allowedOrigins")
    #: Open HTTP connections past which a new one is refused (503); a /stomp WebSocket
    #: leaves the count once upgraded (it is a STOMP connection then).
    maximum_connections: int = _setting(256, "maximumConnections")
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class Export:
    """``<export>`` (stompd extension): metric snapshots and message event logs for Spark."""

    #: None: nothing is exported.
    directory: Path | None = _setting(None, "directory")
    snapshot_interval: int = _setting(10000, "snapshotInterval", "ms")
    rotate_size: int = _setting(64 << 20, "rotateSize", "bytes")
    rotate_interval: int = _setting(3600000, "rotateInterval", "ms")
    origins: Origins = _origins()


NetworkScheme = Literal["stomp", "stomp+nio", "stomp+ssl", "stomp+nio+ssl"]


@dataclass(frozen=True, slots=True)
class NetworkUri:
    """One remote broker a ``<networkConnector>``'s ``static:(...)`` list names: a bridge each."""

    scheme: NetworkScheme
    host: str
    port: int

    @property
    def tls(self) -> bool:
        return self.scheme in TLS_SCHEMES

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class NetworkDestination:
    """A ``<queue physicalName>`` or ``<topic physicalName>`` in a networkConnector's lists
    (an ActiveMQ wildcard pattern)."""

    kind: Literal["queue", "topic"]
    pattern: str
    source: Origin = field(default=DEFAULT, compare=False)

    def __str__(self) -> str:
        return f"{self.kind}://{self.pattern}"


@dataclass(frozen=True, slots=True)
class NetworkConnector:
    """``<networkConnector>``: this broker's bridges to the brokers its URI names.

    ActiveMQ's attributes and defaults (5.17).  ``pulled`` (``<pulledDestinations>``) is
    stompd's: queues this broker takes from the remote whatever its own consumers, the
    way to drain a broker that is not stompd (ActiveMQ, RabbitMQ) during a migration.
    """

    name: str = _setting("NC", "name")
    uris: tuple[NetworkUri, ...] = ()
    #: Forward both ways over the one connection: the remote's messages come here for
    #: this broker's consumers too.
    duplex: bool = _setting(False, "duplex")
    #: Brokers a message (and a consumer's demand) may cross.
    network_ttl: int = _setting(1, "networkTTL")
    message_ttl: int = _setting(1, "messageTTL")
    consumer_ttl: int = _setting(1, "consumerTTL")
    #: One subscription here per destination, however many consumers the remote has.
    conduit_subscriptions: bool = _setting(True, "conduitSubscriptions")
    #: Network consumers take messages after the local ones (priority -5, less per hop);
    #: false: only while the destination has no local consumer at all.
    decrease_network_consumer_priority: bool = _setting(False, "decreaseNetworkConsumerPriority")
    #: ActiveMQ: a network durable subscription waits for its consumer to come back rather
    #: than being made at start.  stompd's bridges follow active consumers only: that is
    #: how they always behave, whichever the value.
    dynamic_only: bool = _setting(False, "dynamicOnly")
    prefetch_size: int = _setting(1000, "prefetchSize")
    user_name: str | None = _setting(None, "userName")
    password: str | None = _setting(None, "password", secret=True)
    #: The static: URI's reconnect options (ActiveMQ's static discovery agent's).
    initial_reconnect_delay: int = _setting(1000, "initialReconnectDelay", "ms")
    max_reconnect_delay: int = _setting(30000, "maxReconnectDelay", "ms")
    use_exponential_back_off: bool = _setting(True, "useExponentialBackOff")
    back_off_multiplier: float = _setting(2.0, "backOffMultiplier")
    statically_included: tuple[NetworkDestination, ...] = ()
    dynamically_included: tuple[NetworkDestination, ...] = ()
    excluded: tuple[NetworkDestination, ...] = ()
    pulled: tuple[NetworkDestination, ...] = ()
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class VirtualTopic:
    """``<virtualTopic>``: a message sent to a topic ``name`` matches is copied to every
    queue named ``prefix`` + the topic + ``postfix`` that exists (``*`` in the prefix
    stands for one name element: a consumer group)."""

    name: str = _setting(">", "name")
    prefix: str = _setting("Consumer.*.", "prefix")
    postfix: str = _setting("", "postfix")
    #: A copy goes only to a queue one of whose consumers' selectors takes it.
    selector_aware: bool = _setting(False, "selectorAware")
    #: Messages that came over a network bridge are not copied.
    local: bool = _setting(False, "local")
    #: A copy a full queue has no room for is dropped instead of making the producer wait.
    drop_on_resource_limit: bool = _setting(False, "dropOnResourceLimit")
    #: A copy's ``original-destination`` says the topic (false: it has none; its MESSAGE
    #: says its queue either way, as ActiveMQ 5.17's does).
    set_original_destination: bool = _setting(True, "setOriginalDestination")
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class ForwardTo:
    """A ``<forwardTo>`` target of a composite: a ``<queue>``, a ``<topic>`` or a
    ``<filteredDestination selector>`` (taken only by messages the selector matches)."""

    kind: Literal["queue", "topic"]
    name: str
    selector: str | None = None
    source: Origin = field(default=DEFAULT, compare=False)

    def __str__(self) -> str:
        where = f"{self.kind}://{self.name}"
        return f"{where} if {self.selector}" if self.selector is not None else where


@dataclass(frozen=True, slots=True)
class CompositeDestination:
    """``<compositeQueue>`` or ``<compositeTopic>``: a message sent to ``name`` goes to
    each ``forward_to`` (a copy whose ``original-destination`` says ``name``)."""

    kind: Literal["queue", "topic"]
    name: str
    #: False: the composite's own queue or topic gets the message too.
    forward_only: bool = _setting(True, "forwardOnly")
    #: The composite's own destination gets a message no ``forwardTo`` took.
    send_when_not_matched: bool = _setting(False, "sendWhenNotMatched")
    #: Accepted; ActiveMQ 5.17 copies whatever it says, and so does stompd.
    copy_message: bool = _setting(True, "copyMessage")
    forward_to: tuple[ForwardTo, ...] = ()
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class MirroredQueue:
    """``<mirroredQueue>`` (or ``useMirroredQueues``): every queue's messages are also
    published on the topic ``prefix`` + the queue + ``postfix``."""

    prefix: str = _setting("VirtualTopic.Mirror.", "prefix")
    postfix: str = _setting("", "postfix")
    copy_message: bool = _setting(True, "copyMessage")
    source: Origin = field(default=DEFAULT, compare=False)
    origins: Origins = _origins()


@dataclass(frozen=True, slots=True)
class DestinationInterceptors:
    """What ``<destinationInterceptors>`` says, or ActiveMQ's default without one."""

    virtual_topics: tuple[VirtualTopic, ...] = (VirtualTopic(name="VirtualTopic.>"),)
    composites: tuple[CompositeDestination, ...] = ()
    mirrored: MirroredQueue | None = None
    #: Where ``<destinationInterceptors>`` is (default: none in the file).
    source: Origin = field(default=DEFAULT, compare=False)


def _default_connectors() -> tuple[TransportConnector, ...]:
    return (TransportConnector(),)


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """The whole configuration.  ``BrokerConfig()`` is stompd's embedded defaults."""

    broker: BrokerSettings = field(default_factory=BrokerSettings)
    system_usage: SystemUsage = field(default_factory=SystemUsage)
    policies: PolicyMap = field(default_factory=PolicyMap)
    redelivery: RedeliveryPlugin = field(default_factory=RedeliveryPlugin)
    transport_defaults: TransportDefaults = field(default_factory=TransportDefaults)
    #: In file order; never empty (a file with no STOMP listener gets the default one).
    connectors: tuple[TransportConnector, ...] = field(default_factory=_default_connectors)
    persistence: PersistenceAdapter = field(default_factory=PersistenceAdapter)
    #: None: no authentication, any login is accepted.
    authentication: Authentication | None = None
    #: None: every authenticated user may do everything.
    authorization: Authorization | None = None
    #: None: no ``<statisticsBrokerPlugin/>``.
    statistics: StatisticsPlugin | None = None
    #: None: no ``<timeStampingBrokerPlugin>``.
    time_stamping: TimeStampingPlugin | None = None
    #: None: no ``<forcePersistencyModeBrokerPlugin>``.
    force_persistency: ForcePersistencyPlugin | None = None
    #: None: no ``<discardingDLQBrokerPlugin>``.
    discarding_dlq: DiscardingDLQPlugin | None = None
    #: None: no ``<loggingBrokerPlugin>``.
    logging: LoggingPlugin | None = None
    ssl: SslContext | None = None
    http: HttpServer = field(default_factory=HttpServer)
    export: Export = field(default_factory=Export)
    #: ``<networkConnectors>``, in file order.
    network_connectors: tuple[NetworkConnector, ...] = ()
    #: Virtual topics, composite destinations and mirrored queues in force.
    interceptors: DestinationInterceptors = field(default_factory=DestinationInterceptors)
    #: The file it was loaded from (None: embedded defaults).
    source: Path | None = field(default=None, compare=False)

    @property
    def store_directory(self) -> Path:
        return self.persistence.directory or self.broker.data_directory / "store"

    @property
    def temp_directory(self) -> Path:
        return self.broker.tmp_data_directory or self.broker.data_directory / "tmp_storage"

    def first_stomp_connector(self) -> TransportConnector | None:
        """The first plain (TCP, not TLS) STOMP listener: the one ``--host``/``--port`` set."""
        return next((c for c in self.connectors if not c.tls and not c.websocket), None)
