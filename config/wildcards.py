"""ActiveMQ destination patterns in configuration: checking them, and choosing an entry.

A pattern is one or more names joined by ``,`` (a composite).  Each name is split on ``.``
into elements; an element that is exactly ``*`` matches any one element, and a last
element ``>`` matches the rest of the name, including nothing (``A.>`` matches ``A``,
``A.B`` and ``A.B.C``), as in broker/core/wildcards.py, which routes messages the same way.

Which entry applies (policies, redelivery policies; authorization takes every entry that
matches, see broker/security/access.py): ActiveMQ's DestinationMap.chooseValue
with the comparator of ActiveMQDestination.compare (5.17, checked against its jars):

1. an entry naming the destination exactly wins;
2. otherwise the most specific matching pattern: one that no other matching pattern is
   narrower than.  ``FOO.>`` beats ``>``, ``*.BAR`` beats ``>``, ``FOO.*`` beats ``FOO.>``;
3. patterns neither narrower than the other (``A.*.C`` and ``A.B.>``): the one that sorts
   first as a string, as ActiveMQ falls back to; then the earlier in the file.

Where ActiveMQ's own comparator contradicts itself (``FOO.*`` against ``FOO.>``: each
"matches" the other read as a name, so its TreeSet's answer depends on hash order), rule 2
gives the answer that does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable

ANY_CHILD = "*"
ANY_DESCENDANT = ">"


def problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable ActiveMQ destination pattern, or None if it is."""
    if not pattern:
        return "empty destination pattern"
    for component in pattern.split(","):
        if not component:
            return f"{pattern!r}: empty name in a composite (two commas, or one at an end)"
        elements = component.split(".")
        for index, element in enumerate(elements):
            if not element:
                return f"{component!r}: empty element (two dots in a row, or a dot at an end)"
            if element == ANY_DESCENDANT and index != len(elements) - 1:
                return f"{component!r}: '>' matches the rest of a name, so it can only be the last element"
            if element in ("#", "+"):
                return (
                    f"{component!r}: {element!r} is an MQTT/AMQP wildcard; ActiveMQ patterns use "
                    "'*' for one element and '>' for the rest"
                )
            if element not in (ANY_CHILD, ANY_DESCENDANT) and (
                ANY_CHILD in element or ANY_DESCENDANT in element
            ):
                return (
                    f"{component!r}: wildcards must be whole elements ({element!r} would only match a "
                    "destination literally named so); use '*' or '>' between dots"
                )
    return None


def _parse(name: str) -> tuple[list[str], bool]:
    elements = name.split(".")
    if elements[-1] == ANY_DESCENDANT:
        return elements[:-1], True
    return elements, False


def matches(pattern: str, name: str) -> bool:
    """Whether one (non-composite) pattern matches the concrete destination ``name``."""
    fixed, open_ended = _parse(pattern)
    elements = name.split(".")
    if len(elements) < len(fixed) or (len(elements) > len(fixed) and not open_ended):
        return False
    return all(want in (ANY_CHILD, got) for want, got in zip(fixed, elements, strict=False))


def covers(wide: str, narrow: str) -> bool:
    """Whether every name ``narrow`` matches is matched by ``wide`` too."""
    wide_fixed, wide_open = _parse(wide)
    narrow_fixed, narrow_open = _parse(narrow)
    if wide_open:
        if len(narrow_fixed) < len(wide_fixed):
            return False
    elif narrow_open or len(narrow_fixed) != len(wide_fixed):
        return False
    return all(w in (ANY_CHILD, n) for w, n in zip(wide_fixed, narrow_fixed, strict=False))


def overlaps(one: str, other: str) -> bool:
    """Whether some concrete name is matched by both (non-composite) patterns.

    For a concrete ``other`` this is ``matches(one, other)``; for a wildcard one it is which
    entries ActiveMQ's DestinationMap.get finds for a wildcard key (``A.>`` finds ``>``,
    ``A.*``, ``A.B`` and ``*.B.>`` alike), as authorization looks up a wildcard subscription.
    """
    one_fixed, one_open = _parse(one)
    other_fixed, other_open = _parse(other)
    if (not one_open and len(other_fixed) > len(one_fixed)) or (
        not other_open and len(one_fixed) > len(other_fixed)
    ):
        return False
    return all(a == b or ANY_CHILD in (a, b) for a, b in zip(one_fixed, other_fixed, strict=False))


def is_wildcard(pattern: str) -> bool:
    return any(element in (ANY_CHILD, ANY_DESCENDANT) for element in pattern.split("."))


class Entry(Protocol):
    @property
    def kind(self) -> str | None: ...
    @property
    def pattern(self) -> str: ...


E = TypeVar("E", bound=Entry)


def matching(entries: Iterable[E], kind: str, name: str) -> list[tuple[str, E]]:
    """Every (pattern, entry) of ``kind`` whose pattern, or one of its composite parts, matches."""
    return [
        (part, entry)
        for entry in entries
        if entry.kind == kind
        for part in entry.pattern.split(",")
        if matches(part, name)
    ]


def choose(entries: Iterable[E], kind: str, name: str) -> E | None:
    """The one entry that applies to destination ``name`` of ``kind`` (rules above), or None."""
    found = matching(entries, kind, name)
    for part, entry in found:
        if part == name:
            return entry
    narrowest = [
        (part, index, entry)
        for index, (part, entry) in enumerate(found)
        if not any(covers(part, other) and not covers(other, part) for other, _ in found)
    ]
    if not narrowest:
        return None
    return min(narrowest, key=lambda candidate: (candidate[0], candidate[1]))[2]
