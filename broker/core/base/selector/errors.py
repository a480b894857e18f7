"""The one error a selector can raise: it was not a valid JMS selector."""

from __future__ import annotations

from protocol.errors import StompError

# Enough of the selector to recognise the spot without echoing a huge header back.
_SNIPPET_CHARS = 20


class InvalidSelector(StompError):
    """A selector failed to lex, parse or type-check; ``position`` is a 0-based offset into it."""

    summary = "invalid selector"
    #: A SUBSCRIBE refused: the connection goes on (ActiveMQ's InvalidSelectorException).
    fatal = False

    def __init__(self, selector: str, position: int, problem: str) -> None:
        self.selector = selector
        self.position = position
        self.problem = problem
        super().__init__(f"selector error at position {position} ({_where(selector, position)}): {problem}")


def _where(selector: str, position: int) -> str:
    rest = selector[position:].strip()
    if not rest:
        return "at end of selector"
    snippet = " ".join(rest[:_SNIPPET_CHARS].split())
    return f'near "{snippet}"'
