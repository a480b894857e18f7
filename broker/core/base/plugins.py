"""The broker plugins that rewrite a message as it is sent: ActiveMQ's
TimeStampingBrokerPlugin and ForcePersistencyModeBroker.

``Sending`` calls ``SendPlugins.apply`` only when one of them is configured (the SEND
path otherwise pays one None check).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.core.base.message import Message
    from broker.core.base.settings import TimeStamping


class SendPlugins:
    __slots__ = ("persistence_flag", "time_stamping")

    def __init__(self, time_stamping: TimeStamping | None, persistence_flag: bool | None) -> None:
        self.time_stamping = time_stamping
        #: ``<forcePersistencyModeBrokerPlugin persistenceFlag>``; None: not configured.
        self.persistence_flag = persistence_flag

    def apply(self, message: Message, now: int, networked: bool) -> None:
        """Rewrites ``message``, just built from a SEND at ``now`` (``networked``: it came
        over a network bridge)."""
        flag = self.persistence_flag
        if flag is not None:
            message.persistent = flag
            # ActiveMQ's MESSAGE says persistent:true only of a persistent message.
            if flag:
                message.headers["persistent"] = "true"
            else:
                message.headers.pop("persistent", None)
        stamping = self.time_stamping
        if stamping is not None and (stamping.process_network_messages or not networked):
            _stamp(stamping, message, now)


def _stamp(stamping: TimeStamping, message: Message, now: int) -> None:
    """ActiveMQ's rules: a message with a time stamp gets the broker's, and keeps the time
    to live it was sent with (``expires - timestamp``), or gets ``zeroExpirationOverride``
    if it had none, at most ``ttlCeiling``.  With ``futureOnly`` nothing changes unless
    the new expiry is later than the old (a broker clock behind the producer's)."""
    old_timestamp = message.timestamp
    if old_timestamp <= 0:
        return
    old_expires = message.expires
    ttl = old_expires - old_timestamp if old_expires > 0 else stamping.zero_expiration_override
    ceiling = stamping.ttl_ceiling
    if ttl > 0 and 0 < ceiling < ttl:
        ttl = ceiling
    expires = ttl + now
    if stamping.future_only and expires <= old_expires:
        return
    if ttl > 0 and expires > 0:
        message.expires = expires
    message.timestamp = now
