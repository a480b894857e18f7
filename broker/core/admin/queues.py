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
from broker.core.handlers.browsing import Browse

if TYPE_CHECKING:
    from broker.core.admin.rights import Rights
    from broker.core.admin.views import BrowsedMessage, Progress
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
    """``browse`` walked: its page, each body cut to ``preview`` bytes, and where the next starts."""
    yield from run(browse, None, engine.flush)
    position = browse.next
    return BrowsePage(
        [infos.browsed(message, preview) for message in browse.messages],
        f"{position[0]}:{position[1]}" if position is not None else None,
    )
