"""ActiveMQ destination wildcards, and a trie that finds every pattern matching a name.

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

from typing import Generic, TypeVar

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
