"""What an admin request names, checked: a destination to make, a move's or copy's
target, a page's cursor, a message that is not there."""

from __future__ import annotations

from broker.core.admin.errors import Invalid, NotFound
from broker.core.admin.operations import Action
from broker.core.base import names
from store.api import LEVELS
from wildcards import has_wildcard_element


def creatable(name: str) -> str:
    """The kind of destination ``name`` is (``names.QUEUE`` or ``names.TOPIC``), if it is
    one an administrator can make; else ``Invalid``."""
    kind = next((kind for kind in (names.QUEUE, names.TOPIC) if name.startswith(kind)), None)
    if kind is None:
        raise Invalid(f"only /queue/ and /topic/ destinations can be created, not {name}")
    if has_wildcard_element(name.removeprefix(kind)):
        # Nor moved or copied to: a wildcard names no destination (Destinations.sendable).
        raise Invalid(f"{name} is a wildcard, not a destination")
    return kind


def check_target(kind: str, target: str) -> None:
    """Raise ``Invalid`` unless messages may be moved or copied (``kind``) to ``target``: a
    queue only, as ActiveMQ's ``moveMatchingMessagesTo``.  A topic keeps nothing for a
    subscriber that is not there, so what went to one with none would be lost."""
    if target.startswith(names.QUEUE):
        return
    done = "moved" if kind == Action.MOVE.value else "copied"
    if target.startswith(names.TOPIC):
        raise Invalid(
            f"{target} is a topic: messages are {done} only to a queue "
            "(a topic keeps nothing for absent subscribers, so they would be lost)"
        )
    raise Invalid(f"messages are {done} only to a /queue/ destination, not {target}")


def no_message(name: str, message_id: str) -> NotFound:
    return NotFound(
        f"no message {message_id} waiting on {name} (one dispatched to a consumer and not "
        "acknowledged yet is not there to act on)"
    )


def cursor_position(cursor: str | None) -> tuple[int, int] | None:
    if cursor is None:
        return None
    level, _, after = cursor.partition(":")
    try:
        position = int(level), int(after)
    except ValueError:
        raise Invalid(f"cursor {cursor!r} is not one this broker handed out") from None
    if not 0 <= position[0] < LEVELS:
        raise Invalid(f"cursor {cursor!r} is not one this broker handed out")
    return position


def job_position(cursor: str | None) -> tuple[int, int] | None:
    if cursor is None:
        return None
    due, _, seq = cursor.partition(":")
    try:
        return int(due), int(seq)
    except ValueError:
        raise Invalid(f"cursor {cursor!r} is not one this broker handed out") from None
