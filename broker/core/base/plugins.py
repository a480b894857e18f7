"""The broker plugins that rewrite a message as it is sent: ActiveMQ's
TimeStampingBrokerPlugin and ForcePersistencyModeBroker.

``Sending`` calls ``SendPlugins.apply`` only when one of them is configured (the SEND
path otherwise pays one None check).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.core.base.settings import TimeStamping


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
