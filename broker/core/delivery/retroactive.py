"""What a topic keeps for retroactive subscribers, and their replay (ActiveMQ's
``SubscriptionRecoveryPolicy``).

Every topic keeps the last message sent to it with ``ActiveMQ.Retain:true`` (a copy
flagged ``ActiveMQ.Retained:true``; an empty bytes message clears it), as ActiveMQ's default
``RetainedMessageSubscriptionRecoveryPolicy`` does; a ``<subscriptionRecoveryPolicy>`` in
the topic's policy entry adds a buffer of the topic's recent messages (``Recovery``).  A
SUBSCRIBE with ``activemq.retroactive:true`` (not a durable one: ActiveMQ recovers those
too, at each activation, which stompd does not) gets the retained message, then the buffer, those its
selector takes, before anything published after it.

A kept message is held (charged to the topic's memory meter) until it is evicted.  Kept in
memory only, as ActiveMQ keeps them: a restart forgets them.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Final

from broker.core.base.message import find_header

if TYPE_CHECKING:
    from broker.core.base.message import Message
    from broker.core.base.settings import DestinationPolicy
    from broker.core.delivery.subscription import Subscription

RETAIN: Final = "ActiveMQ.Retain"
RETAINED: Final = "ActiveMQ.Retained"
#: A publish looks for this in the header block first: one C-level scan per topic message.
RETAIN_MARK: Final = b"ActiveMQ.Retain:"

FIXED_COUNT: Final = "fixedCount"
FIXED_SIZE: Final = "fixedSize"
LAST_IMAGE: Final = "lastImage"
TIMED: Final = "timed"


class Recovery:
    """A topic's buffer of recent messages, as its policy bounds it: the last
    ``maximum`` messages (fixedCount), the last ``maximum`` bytes of them (fixedSize, by
    ActiveMQ's message size), the last one (lastImage), or those of the last ``maximum``
    ms (timed, by the injectable clock: ``arrived``)."""

    __slots__ = ("_bytes", "_kept", "kind", "maximum")

    def __init__(self, kind: str, maximum: int) -> None:
        self.kind = kind
        self.maximum = maximum
        self._kept: deque[Message] = deque()
        self._bytes = 0

    def add(self, message: Message) -> None:
        message.hold()
        kept = self._kept
        kept.append(message)
        kind = self.kind
        if kind == FIXED_SIZE:
            self._bytes += message.size
            # As ActiveMQ's SimpleMessageList: oldest first, the new one too if it alone is
            # over the limit.
            while self._bytes > self.maximum and kept:
                old = kept.popleft()
                self._bytes -= old.size
                old.drop()
        elif kind == TIMED:
            self.expire(message.arrived)
        else:
            limit = 1 if kind == LAST_IMAGE else self.maximum
            while len(kept) > limit:
                kept.popleft().drop()

    def expire(self, now_ms: int) -> None:
        """Timed: lets go of what is older than its duration."""
        if self.kind != TIMED:
            return
        kept = self._kept
        horizon = now_ms - self.maximum
        while kept and kept[0].arrived < horizon:
            kept.popleft().drop()

    def messages(self) -> tuple[Message, ...]:
        return tuple(self._kept)

    def clear(self) -> None:
        while self._kept:
            self._kept.popleft().drop()
        self._bytes = 0


def recovery_for(policy: DestinationPolicy) -> Recovery | None:
    kind = policy.recovery_kind
    return Recovery(kind, policy.recovery_maximum) if kind else None


def retain(message: Message) -> tuple[bool, Message | None]:
    """At a publish: whether ``message`` was sent with ``ActiveMQ.Retain:true``, and if so
    the copy its topic retains (None: an empty bytes message, which clears it).  It loses
    that header itself, as ActiveMQ's ``RetainedMessageSubscriptionRecoveryPolicy.add``
    removes it, whatever its value."""
    block = message.header_block
    if block.find(RETAIN_MARK) < 0:
        return False, None
    value = find_header(block, RETAIN)
    if value is None:
        return False, None
    headers = message.headers
    del headers[RETAIN]
    if not message.holders:
        # Not charged anywhere yet (its size changes with its headers).
        stripped = message.copy_to(message.seq, "", message.destination, headers)
        message.header_block = stripped.header_block
    if value.lower() != "true":
        return False, None
    if not message.body and message.content_length:
        # ActiveMQ clears it on an empty content: over STOMP, an empty bytes message (sent
        # with content-length); an empty text message still has content there.
        return True, None
    headers[RETAINED] = "true"
    copy = message.copy_to(message.seq, "", message.destination, headers)
    copy.id_prefix = message.id_prefix
    copy.arrived = message.arrived
    copy.meter = message.meter
    copy.hold()
    return True, copy


def replayed(
    retained: Message | None, recovery: Recovery | None, sub: Subscription, now_ms: int
) -> list[Message]:
    """What a topic kept (its ``retained`` message, then its ``recovery`` buffer) that
    ``sub`` accepts and that has not expired: into ``sub``'s cursor, which it starts on
    once its RECEIPT has gone (so before anything published later)."""
    kept: list[Message] = []
    if retained is not None:
        kept.append(retained)
    if recovery is not None:
        recovery.expire(now_ms)
        kept.extend(recovery.messages())
    cursor = sub.cursor
    out: list[Message] = []
    for message in kept:
        expires = message.expires
        if (expires and expires <= now_ms) or not sub.accepts(message):
            continue
        cursor.push(message)
        out.append(message)
    return out
