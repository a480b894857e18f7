"""The admin service's work over a whole queue, memory and disk: browse a page of it,
count, move, copy, remove, purge (``operations``), a batch a step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin import infos
from broker.core.admin.destinations import made_as_sent
from broker.core.admin.errors import Invalid, NotFound
from broker.core.admin.operations import Action, QueueOperation, run
from broker.core.admin.requests import check_target, creatable, cursor_position, no_message
from broker.core.admin.views import BrowsePage
from broker.core.base.chores import SLICE, STEP, collect
from broker.core.handlers.browsing import Browse

if TYPE_CHECKING:
    from collections.abc import Mapping

    from broker.core.admin.rights import Rights
    from broker.core.admin.views import (
        BrowsedMessage,
        ConnectionInfo,
        DestinationInfo,
        PeerRow,
        Progress,
        SubscriptionInfo,
    )
    from broker.core.base.chores import Steps
    from broker.core.base.selector import Selector
    from broker.core.delivery.queue import Queue
    from broker.core.engine import Engine


class QueueAdmin:
    __slots__ = ("_engine", "_rights")

    def __init__(self, engine: Engine, rights: Rights) -> None:
        self._engine = engine
        self._rights = rights

    def browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> Steps[BrowsePage]:
        """Up to ``limit`` messages after ``cursor`` (None: from the head), without consuming."""
        self._rights.read(name)
        queue = self.queue(name)
        return page(self._engine, Browse(queue, selector, limit, cursor_position(cursor)), preview)

    def count(self, name: str, selector: Selector | None, progress: Progress) -> Steps[None]:
        """Count matching messages into ``progress.matched``."""
        return self._operation(name, Action.COUNT, selector, None, None, progress)

    def move(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        """Move up to ``limit`` matching messages to ``target``, atomically per batch."""
        return self._operation(source, Action.MOVE, selector, limit, target, progress)

    def copy(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        return self._operation(source, Action.COPY, selector, limit, target, progress)

    def remove(
        self, name: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        return self._operation(name, Action.REMOVE, selector, limit, None, progress)

    def purge(self, name: str, progress: Progress) -> Steps[None]:
        """Remove every message that is not dispatched and unacknowledged."""
        return self._operation(name, Action.REMOVE, None, None, None, progress)

    def _operation(
        self,
        name: str,
        action: Action,
        selector: Selector | None,
        limit: int | None,
        target: str | None,
        progress: Progress,
    ) -> Steps[None]:
        # Counting and removing take read, as consuming would; a move takes its messages.
        self._rights.read(name)
        queue = self.queue(name)
        engine = self._engine
        destination = None
        if target is not None:
            check_target(action.value, target)
            kind = creatable(target)
            self._rights.write(target)
            # Created if missing, as a SEND to it would.
            made_as_sent(engine, target, kind)
            destination = engine.destinations.send_targets(None, target)[0]
        operation = QueueOperation(queue, action, selector, engine.routing, target=destination, limit=limit)
        progress.total = operation.total
        return run(operation, progress, engine.flush)

    # -- its dispatch, its consumers and producers ----------------------------------------

    def pause(self, name: str) -> DestinationInfo:
        """ActiveMQ's QueueView.pause(): messages are still taken and stored, none is
        dispatched until ``resume`` (or a restart: a pause is kept in memory only)."""
        self._rights.manage(name, "pause")
        queue = self.queue(name)
        queue.pause()
        return infos.queue_info(queue, self._engine.sending.producers[name])

    def resume(self, name: str) -> DestinationInfo:
        self._rights.manage(name, "resume")
        queue = self.queue(name)
        queue.resume()
        # Dispatch may have settled messages (expired ones): their batch goes now.
        self._engine.flush()
        return infos.queue_info(queue, self._engine.sending.producers[name])

    def consumers(self, name: str) -> Steps[list[SubscriptionInfo]]:
        """The queue's consumers (ActiveMQ's "Active Consumers" of a queue), with their
        client-id, selector, prefetch, what they were dispatched and have in flight."""
        self._rights.read(name)
        return collect(self.queue(name).consumers, infos.subscription_info)

    def producers(self, name: str, peers: Mapping[str, PeerRow]) -> Steps[list[ConnectionInfo]]:
        """The open connections that have sent to destination ``name`` (a queue or a
        topic): STOMP has no producer of its own, so a producer is a connection that sent
        there (ActiveMQ's ProducerCount of a STOMP client counts the same)."""
        self._rights.read(name)
        engine = self._engine
        if name not in engine.queues and name not in engine.router.topics:
            raise NotFound(f"no destination {name}")
        return self._producers(name, peers)

    def _producers(self, name: str, peers: Mapping[str, PeerRow]) -> Steps[list[ConnectionInfo]]:
        out: list[ConnectionInfo] = []
        sending = self._engine.sending
        for count, session in enumerate(list(self._engine.sessions.values()), 1):
            # The names it is counted for (ProducerCount's): a lookup, not a walk of its routes.
            if sending.has_sent(session, name):
                out.append(infos.connection_info(session, peers))
            if count % SLICE == 0:
                yield STEP
        return out

    def queue(self, name: str) -> Queue:
        queue = self._engine.queues.get(name)
        if queue is None:
            if name in self._engine.router.topics:
                raise Invalid(f"{name} is a topic: this operation works on queues")
            raise NotFound(f"no queue {name}")
        return queue

    def find(self, queue: Queue, message_id: str) -> Steps[BrowsedMessage]:
        """The pending message ``message_id`` of ``queue``, whole (NotFound if it is not there)."""
        browse = Browse(queue, lambda message: message.id == message_id, 1)
        yield from run(browse, None, self._engine.flush)
        if not browse.messages:
            raise no_message(queue.name, message_id)
        found = browse.messages[0]
        return infos.browsed(found, len(found.body))


def page(engine: Engine, browse: Browse, preview: int) -> Steps[BrowsePage]:
    """``browse`` walked: its page, each body cut to ``preview`` bytes, and where the next
    starts: None when nothing follows, so a page that is exactly the last one full says
    there is no next (one message more is looked for, and not shown)."""
    limit = browse.limit
    browse.limit = limit + 1
    yield from run(browse, None, engine.flush)
    messages = browse.messages
    cursor = None
    if len(messages) > limit:
        del messages[limit:]
        last = messages[-1]
        # Where the next page starts: after the last one shown, at its priority level.
        cursor = f"{last.level}:{last.seq}"
    return BrowsePage([infos.browsed(message, preview) for message in messages], cursor)
