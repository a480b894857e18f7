"""JMS message selectors (the SQL-92 subset of JMS 1.1, as ActiveMQ parses it).

``compile_selector`` parses once and returns a ``Selector`` whose ``matches`` is a
generated Python function, cheap to call per message.
"""

from __future__ import annotations

from broker.core.base.selector.codegen import Predicate, Subject, generate
from broker.core.base.selector.errors import InvalidSelector
from broker.core.base.selector.needs import needed_headers
from broker.core.base.selector.parser import parse

__all__ = ["InvalidSelector", "Predicate", "Selector", "Subject", "compile_selector"]


class Selector:
    """A compiled selector.  ``matches(subject)`` is True when the selector is TRUE for it."""

    __slots__ = ("matches", "needs", "text")

    def __init__(self, text: str, matches: Predicate, needs: frozenset[str] = frozenset()) -> None:
        self.text = text
        #: The generated function itself, so calling it costs no extra frame.
        self.matches = matches
        #: Headers a message must have to match (``needs.needed_headers``).
        self.needs = needs

    def __call__(self, subject: Subject) -> bool:
        return self.matches(subject)

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"


def compile_selector(text: str) -> Selector:
    """Parses and compiles ``text``; raises InvalidSelector, with a position, if it is not valid."""
    tree = parse(text)
    return Selector(text, generate(tree, text), needed_headers(tree))
