"""What an administrator does to one message: send one, and find one by its id.

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
from broker.core.admin.rights import principal_of
from broker.core.admin.steps import Wait
from broker.core.base.errors import AccessDenied, NoSpace
from broker.core.base.selector import compile_selector
from broker.core.delivery.session import CONNECTED
from protocol import frames as f
from protocol.errors import StompError
from protocol.parser import FrameParser

if TYPE_CHECKING:
    from broker.core.admin.steps import Steps
    from broker.core.base.selector import Selector
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
