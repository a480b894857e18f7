"""The broker plugins that change what happens to a message: ActiveMQ's
TimeStampingBrokerPlugin and ForcePersistencyModeBroker as it is sent, DiscardingDLQBroker
when it would be dead-lettered.

``Sending`` calls ``SendPlugins.apply`` only when one of the first two is configured (the
SEND path otherwise pays one None check); ``Settlement`` asks ``Discarding`` only of a
dead letter.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from broker.core.base import names

if TYPE_CHECKING:
    from broker.core.base.settings import DiscardingDLQ, TimeStamping

log = logging.getLogger("stompd.engine")


class SendPlugins:
    __slots__ = ("persistence_flag", "time_stamping")

    def __init__(self, time_stamping: TimeStamping | None, persistence_flag: bool | None) -> None:
        self.time_stamping = time_stamping
        #: ``<forcePersistencyModeBrokerPlugin persistenceFlag>``; None: not configured.
        self.persistence_flag = persistence_flag

    def apply(
        self, headers: dict[str, str], timestamp: int, expires: int, now: int, networked: bool
    ) -> tuple[int, int]:
        """A SEND's message before it is made (its user ``headers``, its ``timestamp``
        and ``expires``), received at ``now`` (``networked``: over a network bridge):
        the headers rewritten in place, the time stamp and expiry it gets returned."""
        flag = self.persistence_flag
        if flag is not None:
            # ActiveMQ's MESSAGE says persistent:true only of a persistent message.
            if flag:
                headers["persistent"] = "true"
            else:
                headers.pop("persistent", None)
        stamping = self.time_stamping
        if stamping is not None and (stamping.process_network_messages or not networked):
            return _stamp(stamping, timestamp, expires, now)
        return timestamp, expires


def _stamp(stamping: TimeStamping, timestamp: int, expires: int, now: int) -> tuple[int, int]:
    """ActiveMQ's rules: a message with a time stamp gets the broker's, and keeps the time
    to live it was sent with (``expires - timestamp``), or gets ``zeroExpirationOverride``
    if it had none, at most ``ttlCeiling``.  With ``futureOnly`` nothing changes unless
    the new expiry is later than the old (a broker clock behind the producer's)."""
    if timestamp <= 0:
        return timestamp, expires
    ttl = expires - timestamp if expires > 0 else stamping.zero_expiration_override
    ceiling = stamping.ttl_ceiling
    if ttl > 0 and 0 < ceiling < ttl:
        ttl = ceiling
    stamped = ttl + now
    if stamping.future_only and stamped <= expires:
        return timestamp, expires
    return now, stamped if ttl > 0 and stamped > 0 else expires


class Discarding:
    """``<discardingDLQBrokerPlugin>``: which dead letters are dropped, and how many were."""

    __slots__ = ("_only", "dropped", "settings")

    def __init__(self, settings: DiscardingDLQ) -> None:
        self.settings = settings
        self._only = tuple(re.compile(pattern) for pattern in settings.drop_only)
        self.dropped = 0

    def drops(self, destination: str, message_id: str) -> bool:
        """Whether a dead letter from ``destination`` is dropped; if so, it is logged and
        counted as ActiveMQ does (a debug line each, a total every reportInterval)."""
        reason = self._reason(destination)
        if reason is None:
            return False
        log.debug("Discarding DLQ BrokerFilter[%s] - skipping message: %s", reason, message_id)
        self.dropped += 1
        interval = self.settings.report_interval
        if interval > 0 and self.dropped % interval == 0:
            log.info(
                "Total of %d messages were discarded, since their destination was the target of a DLQ",
                self.dropped,
            )
        return True

    def _reason(self, destination: str) -> str | None:
        """ActiveMQ's order of tests, named as its log names them."""
        settings = self.settings
        if settings.drop_all:
            return "dropAll"
        kind, bare = names.split_destination(destination)[0]
        temporary = kind not in (names.QUEUE, names.TOPIC)
        queue = kind in names.QUEUE_KINDS
        if settings.drop_temporary_topics and temporary and not queue:
            return "dropTemporaryTopics"
        if settings.drop_temporary_queues and temporary and queue:
            return "dropTemporaryQueues"
        if any(pattern.fullmatch(bare) for pattern in self._only):
            return "dropOnly"
        return None
