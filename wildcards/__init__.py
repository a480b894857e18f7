"""ActiveMQ destination wildcards: matching, a trie that finds every pattern matching a name,
and the checks and the choice of an entry that configuration needs.

Used by ``config`` (policy and authorization entries, network filters) and by the broker
(routing to subscriptions, durable subscriptions, authorization): one reading of a
pattern for both.  Standard library only, and nothing else of ours.

Names are split on ``.`` into elements.  In a pattern, an element that is exactly ``*``
matches any one element, and a last element that is exactly ``>`` matches the rest of
the name, *including nothing*: ``A.>`` matches ``A``, ``A.B`` and ``A.B.C``.  ``*`` or
``>`` inside a longer element, and ``>`` before the last element, are plain text.

What ActiveMQ does, read in apache/activemq, activemq-client/src/main/java/org/apache/
activemq/filter/:

- DestinationFilter.parseFilter: a pattern is a PrefixDestinationFilter only when its last
  element is ``>``; otherwise a WildcardDestinationFilter if any element is ``*``;
  otherwise plain equality.  So ``>`` only means something last.
- PrefixDestinationFilter: trailing ``>`` elements collapse into one (``A.>.>`` is
  ``A.>``); a name as long as the prefix before ``>`` matches ("want to look for the case
  where A matches A.>"), as does any longer name.
- DestinationMapNode.appendMatchingValues, which routes messages to subscriptions, does
  the same: "lets allow FOO.BAR to match the FOO.BAR.> entry in the map".  (Its handling
  of a ``>`` *before* the last element differs from the filters; the filters' reading,
  plain text, is the one kept here.)
- DestinationPath.getDestinationPaths splits on every ``.``, keeping empty elements,
  as ``str.split(".")`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable

T = TypeVar("T")

ANY_CHILD = "*"
ANY_DESCENDANT = ">"


def is_wildcard(name: str) -> bool:
    """Whether ``name`` used as a pattern could match anything other than itself."""
    elements = name.split(".")
    return elements[-1] == ANY_DESCENDANT or ANY_CHILD in elements


def has_wildcard_element(name: str) -> bool:
    """Whether any element of ``name`` is exactly ``*`` or ``>``, wherever it stands: such a
    name is a pattern to subscribe with, never one to send to (``Destinations.sendable``)."""
    return any(element in (ANY_CHILD, ANY_DESCENDANT) for element in name.split("."))


def matches(pattern: str, name: str) -> bool:
    """Whether the concrete destination ``name`` matches ``pattern``."""
    fixed, open_ended = _parse(pattern)
    elements = name.split(".")
    if len(elements) < len(fixed) or (len(elements) > len(fixed) and not open_ended):
        return False
    return all(want in (ANY_CHILD, element) for want, element in zip(fixed, elements, strict=False))


def _parse(pattern: str) -> tuple[list[str], bool]:
    """The pattern's elements before any trailing ``>``, and whether there was one."""
    elements = pattern.split(".")
    fixed_length = len(elements)
    while fixed_length and elements[fixed_length - 1] == ANY_DESCENDANT:
        fixed_length -= 1
    return elements[:fixed_length], fixed_length < len(elements)


class _Node(Generic[T]):
    __slots__ = ("any_child", "children", "exact", "open_ended")

    def __init__(self) -> None:
        self.children: dict[str, _Node[T]] = {}
        self.any_child: _Node[T] | None = None
        #: Values of patterns that end at this node.
        self.exact: set[T] = set()
        #: Values of patterns that end at this node followed by ``>``.
        self.open_ended: set[T] = set()

    def is_empty(self) -> bool:
        return not (self.children or self.any_child or self.exact or self.open_ended)


class WildcardTrie(Generic[T]):
    """Values stored under destination patterns; ``match`` finds all a name selects.

    A pattern maps to a set of values: inserting the same (pattern, value) twice stores
    it once.  Patterns equal after collapsing trailing ``>`` elements are the same pattern.
    Matching follows, element by element, both the literal child and the ``*`` child, so
    its cost grows with the name's depth and the stored patterns' wildcard branching, not
    with the number of patterns.
    """

    __slots__ = ("_root", "_size")

    def __init__(self) -> None:
        self._root: _Node[T] = _Node()
        self._size = 0

    def __len__(self) -> int:
        """The number of distinct (pattern, value) pairs stored."""
        return self._size

    def insert(self, pattern: str, value: T) -> None:
        fixed, open_ended = _parse(pattern)
        node = self._root
        for element in fixed:
            if element == ANY_CHILD:
                if node.any_child is None:
                    node.any_child = _Node()
                node = node.any_child
            else:
                child = node.children.get(element)
                if child is None:
                    child = node.children[element] = _Node()
                node = child
        values = node.open_ended if open_ended else node.exact
        if value not in values:
            values.add(value)
            self._size += 1

    def remove(self, pattern: str, value: T) -> bool:
        """Removes ``value`` from ``pattern``; False if it was not there."""
        fixed, open_ended = _parse(pattern)
        path = [self._root]
        for element in fixed:
            node = path[-1]
            child = node.any_child if element == ANY_CHILD else node.children.get(element)
            if child is None:
                return False
            path.append(child)
        values = path[-1].open_ended if open_ended else path[-1].exact
        if value not in values:
            return False
        values.remove(value)
        self._size -= 1
        # Prune emptied nodes bottom-up so patterns that come and go leave nothing behind.
        for parent, element, child in zip(
            reversed(path[:-1]), reversed(fixed), reversed(path[1:]), strict=True
        ):
            if not child.is_empty():
                break
            if element == ANY_CHILD:
                parent.any_child = None
            else:
                del parent.children[element]
        return True

    def match(self, name: str) -> set[T]:
        """Every value whose pattern matches the concrete destination ``name``."""
        found: set[T] = set()
        frontier = [self._root]
        for element in name.split("."):
            following: list[_Node[T]] = []
            for node in frontier:
                found |= node.open_ended
                child = node.children.get(element)
                if child is not None:
                    following.append(child)
                if node.any_child is not None:
                    following.append(node.any_child)
            if not following:
                return found
            frontier = following
        for node in frontier:
            found |= node.exact
            found |= node.open_ended
        return found


# -- configuration: checking a pattern, choosing an entry ------------------------------
#
# Which entry applies (policies, redelivery policies; authorization takes every entry that
# matches, see broker/security/access.py): ActiveMQ's DestinationMap.chooseValue
# with the comparator of ActiveMQDestination.compare (5.17, checked against its jars):
#
# 1. an entry naming the destination exactly wins;
# 2. otherwise the most specific matching pattern: one that no other matching pattern is
#    narrower than.  ``FOO.>`` beats ``>``, ``*.BAR`` beats ``>``, ``FOO.*`` beats ``FOO.>``;
# 3. patterns neither narrower than the other (``A.*.C`` and ``A.B.>``): the one that sorts
#    first as a string, as ActiveMQ falls back to; then the earlier in the file.
#
# Where ActiveMQ's own comparator contradicts itself (``FOO.*`` against ``FOO.>``: each
# "matches" the other read as a name, so its TreeSet's answer depends on hash order), rule 2
# gives the answer that does not.


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
