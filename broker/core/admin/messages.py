"""What an administrator does to one message: send one; show, remove, move or retry
one found by its id (ActiveMQ's console: Send, the message page with Delete, Copy, Move,
Retry).

A message sent from the console or ``stompd-admin`` is a SEND frame handed to the engine
on a session of its own, as a client's would be: the same header checks, the same
authorization (as the admin user), flow control, the scheduler (a delay), the store and
its RECEIPT, which comes only once a persistent message is durable (``Replies``: the
session's outbox, which waits for it).

Messages are found by id as ActiveMQ's console finds them (``removeMessage``,
``moveMessageTo``: a selector on ``JMSMessageID``), over the memory and disk parts of
the queue, a batch a step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin.errors import AdminError, Forbidden, Invalid, NoRoom
from broker.core.admin.requests import no_message
from broker.core.admin.rights import principal_of
from broker.core.admin.views import Progress
from broker.core.base.chores import Wait
from broker.core.base.errors import AccessDenied, NoSpace
from broker.core.base.selector import compile_selector
from broker.core.delivery.session import CONNECTED
from protocol import frames as f
from protocol.errors import StompError
from protocol.parser import FrameParser

if TYPE_CHECKING:
    from broker.core.admin.queues import QueueAdmin
    from broker.core.admin.rights import Rights
    from broker.core.admin.views import BrowsedMessage
    from broker.core.base.chores import Steps
    from broker.core.base.selector import Selector
    from broker.core.delivery.queue import Queue
    from broker.core.engine import Engine

#: The receipt an admin SEND asks for (its session sends nothing else).
_RECEIPT = "admin-send"
#: The address an admin SEND's session shows in the connection list.
ADDRESS = "admin"


class Replies:
    """An admin SEND's outbox: what the engine writes back, held while the store makes the
    message durable (``hold``/``release``), read for its RECEIPT."""

    __slots__ = ("_held", "_holds", "_parser", "error", "receipted", "wait")

    def __init__(self) -> None:
        self._parser = FrameParser()
        self._parser.version = f.V1_2
        self._holds = 0
        self._held: list[bytes] = []
        self.receipted = False
        self.error: BaseException | None = None
        #: Resumed once the answer (the RECEIPT, or a failure) is in.
        self.wait = Wait()

    @property
    def answered(self) -> bool:
        return self.receipted or self.error is not None

    def push(self, parts: tuple[bytes, ...]) -> None:
        if self._holds:
            self._held.extend(parts)
        else:
            self._read(parts)

    def _read(self, parts: list[bytes] | tuple[bytes, ...]) -> None:
        parser = self._parser
        for part in parts:
            parser.feed(part)
        while (frame := parser.next_frame()) is not None:
            if frame.command == f.RECEIPT and frame.headers.get("receipt-id") == _RECEIPT:
                self.receipted = True
                self.wait.resume()

    def hold(self) -> None:
        self._holds += 1

    def release(self) -> None:
        self._holds -= 1
        if not self._holds:
            held, self._held = self._held, []
            self._read(held)

    def drop_held(self) -> None:
        self._held.clear()

    def pause_reading(self) -> None:
        """The SEND waits for room (flow control): its RECEIPT comes once it is in."""

    def resume_reading(self) -> None:
        pass

    def fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc
        self.wait.resume()

    def close(self) -> None:
        self.fail(AdminError("the broker closed the admin SEND's session"))


def send(
    engine: Engine, user: str | None, destination: str, headers: dict[str, str], body: bytes
) -> Steps[None]:
    """SEND ``body`` with ``headers`` to ``destination`` as ``user`` (None: no users are
    configured, as a CONNECT without a login); done once the broker has it (receipted)."""
    replies = Replies()
    session = engine.open_session(replies, ADDRESS)
    session.version = f.V1_2
    session.phase = CONNECTED
    session.login = user
    session.principal = principal_of(user)
    frame = f.Frame(f.SEND, {**headers, "destination": destination, "receipt": _RECEIPT}, body)
    try:
        try:
            engine.handle(session, frame)
        except StompError as exc:
            raise _refusal(exc) from None
        finally:
            # The end of this unit of work: its store batch goes (and the RECEIPT after it).
            engine.flush()
        if not replies.answered:
            yield replies.wait
        if replies.error is not None:
            # Refused (no room in time): it must not go later, an orphan of this session.
            session.parked.clear()
            error = replies.error
            raise _refusal(error) if isinstance(error, StompError) else error
    finally:
        engine.close_session(session)
        engine.flush()


def _refusal(exc: StompError) -> AdminError:
    """The engine's refusal of an admin SEND, as the admin API says it."""
    text = str(exc)
    if isinstance(exc, AccessDenied):
        return Forbidden(text)
    if isinstance(exc, NoSpace):
        return NoRoom(text)
    return Invalid(text)


def by_id(message_id: str) -> Selector:
    """The selector that matches the message ``message_id`` (as ActiveMQ's console uses)."""
    if not message_id:
        raise Invalid("empty message id")
    quoted = message_id.replace("'", "''")
    return compile_selector(f"JMSMessageID = '{quoted}'")


class MessageAdmin:
    """One message of a queue, found by its id, as the queue part (``queues``) finds and
    moves messages (with its refusals)."""

    __slots__ = ("_engine", "_queues", "_rights")

    def __init__(self, engine: Engine, rights: Rights, queues: QueueAdmin) -> None:
        self._engine = engine
        self._rights = rights
        self._queues = queues

    def send(self, user: str | None, destination: str, headers: dict[str, str], body: bytes) -> Steps[None]:
        """A SEND as ``user`` would make it (``send``): done once the broker has it."""
        return send(self._engine, user, destination, headers, body)

    def get(self, name: str, message_id: str) -> Steps[BrowsedMessage]:
        """The pending message ``message_id`` of queue ``name``, whole."""
        self._rights.read(name)
        return self._queues.find(self._queues.queue(name), message_id)

    def remove(self, name: str, message_id: str) -> Steps[None]:
        progress = Progress()
        work = self._queues.remove(name, by_id(message_id), 1, progress)
        return _one(work, progress, name, message_id)

    def move(self, name: str, message_id: str, target: str) -> Steps[None]:
        """Move one message to ``target``, as the queue part's ``move`` moves them."""
        progress = Progress()
        work = self._queues.move(name, target, by_id(message_id), 1, progress)
        return _one(work, progress, name, message_id)

    def copy(self, name: str, message_id: str, target: str) -> Steps[None]:
        """Copy one message to ``target`` (ActiveMQ's console: a message's "Copy"), as
        the queue part's ``copy`` copies them: the original stays where it is."""
        progress = Progress()
        work = self._queues.copy(name, target, by_id(message_id), 1, progress)
        return _one(work, progress, name, message_id)

    def retry(self, name: str, message_id: str) -> Steps[str]:
        """ActiveMQ's Retry: a dead-lettered message moved back to the destination it was
        dead-lettered from (its ``original-destination``); that destination."""
        self._rights.read(name)
        queue = self._queues.queue(name)
        return self._retry(queue, message_id, by_id(message_id))

    def _retry(self, queue: Queue, message_id: str, selector: Selector) -> Steps[str]:
        found = yield from self._queues.find(queue, message_id)
        original = found.headers.get("original-destination")
        if not original:
            raise Invalid(
                f"message {message_id} on {queue.name} has no original-destination header: "
                "it was not dead-lettered, so there is nowhere to retry it to"
            )
        dlq = self._engine.settlement.dead_letter_queue(original)
        if dlq != queue.name:
            # A message moved here from elsewhere says so too: only a dead letter goes back.
            raise Invalid(
                f"message {message_id} on {queue.name} is not a dead letter of {original} "
                f"(those go to {dlq}): there is nothing to retry"
            )
        progress = Progress()
        work = self._queues.move(queue.name, original, selector, 1, progress)
        yield from _one(work, progress, queue.name, message_id)
        return original


def _one(work: Steps[None], progress: Progress, name: str, message_id: str) -> Steps[None]:
    """``work`` on one message: NotFound if it was not there (any more)."""
    yield from work
    if not progress.applied:
        raise no_message(name, message_id)
