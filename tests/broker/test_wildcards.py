"""ActiveMQ destination wildcards: ``matches``, ``is_wildcard`` and ``WildcardTrie``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wildcards import WildcardTrie, has_wildcard_element, is_wildcard, matches

CASES = [
    # pattern, name, matches
    ("A.B", "A.B", True),
    ("A.B", "A.C", False),
    ("A.B", "A.B.C", False),
    ("A.B", "A", False),
    ("A.*", "A.B", True),
    ("A.*", "A", False),
    ("A.*", "A.B.C", False),
    ("*.B", "A.B", True),
    ("*.*", "A.B", True),
    ("*", "A", True),
    ("*", "A.B", False),
    ("A.*.C", "A.B.C", True),
    ("A.*.C", "A.B.D", False),
    # ">" matches the rest, including nothing, as ActiveMQ's PrefixDestinationFilter does.
    ("A.>", "A", True),
    ("A.>", "A.B", True),
    ("A.>", "A.B.C", True),
    ("A.>", "B", False),
    ("A.>", "AB", False),
    ("A.B.>", "A", False),
    (">", "A", True),
    (">", "A.B.C", True),
    ("A.*.>", "A", False),
    ("A.*.>", "A.B", True),
    ("A.*.>", "A.B.C", True),
    ("*.>", "A", True),
    # Repeated trailing ">" collapse into one.
    ("A.>.>", "A", True),
    ("A.>.>", "A.B.C", True),
    # Wildcards only as whole elements; ">" only last.
    ("A.B*", "A.BC", False),
    ("A.B*", "A.B*", True),
    ("A.>B", "A.B", False),
    ("A.>.C", "A.B.C", False),
    ("A.>.C", "A.>.C", True),
    # Empty elements are elements.
    ("A..B", "A..B", True),
    ("A.*.B", "A..B", True),
    ("A.>", "A.", True),
    ("", "", True),
    ("*", "", True),
]


@pytest.mark.parametrize(("pattern", "name", "expected"), CASES)
def test_matches(pattern: str, name: str, expected: bool) -> None:
    assert matches(pattern, name) is expected


@pytest.mark.parametrize(("pattern", "name", "expected"), CASES)
def test_trie_agrees_with_matches(pattern: str, name: str, expected: bool) -> None:
    trie: WildcardTrie[str] = WildcardTrie()
    trie.insert(pattern, "v")
    assert trie.match(name) == ({"v"} if expected else set())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("A.B", False),
        ("A.*", True),
        ("*", True),
        ("A.>", True),
        (">", True),
        ("A.*.C", True),
        ("A.>.C", False),
        ("A.B*", False),
        ("A>", False),
        ("", False),
    ],
)
def test_is_wildcard(name: str, expected: bool) -> None:
    assert is_wildcard(name) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("A.B", False),
        ("A.*", True),
        ("*", True),
        (">", True),
        ("A.>", True),
        # Not a wildcard to route by, but a name no SEND may use all the same.
        ("A.>.C", True),
        ("*.B", True),
        ("A.B*", False),
        ("A>", False),
        ("A.**", False),
        ("", False),
    ],
)
def test_has_wildcard_element(name: str, expected: bool) -> None:
    assert has_wildcard_element(name) is expected


def test_match_collects_all_patterns() -> None:
    trie: WildcardTrie[int] = WildcardTrie()
    for number, pattern in enumerate(["A.B.C", "A.*.C", "A.>", ">", "*.B.*", "A.B", "X.>"]):
        trie.insert(pattern, number)
    assert trie.match("A.B.C") == {0, 1, 2, 3, 4}
    assert trie.match("A.B") == {2, 3, 5}
    assert trie.match("A") == {2, 3}
    assert trie.match("Q") == {3}


def test_insert_is_idempotent_and_len_counts_pairs() -> None:
    trie: WildcardTrie[str] = WildcardTrie()
    trie.insert("A.>", "x")
    trie.insert("A.>.>", "x")  # the same pattern
    trie.insert("A.>", "y")
    trie.insert("A", "x")
    assert len(trie) == 3
    assert trie.remove("A.>.>", "x")
    assert not trie.remove("A.>", "x")
    assert len(trie) == 2
    assert trie.match("A.B") == {"y"}


def test_remove_unknown() -> None:
    trie: WildcardTrie[str] = WildcardTrie()
    assert not trie.remove("A.B", "x")
    trie.insert("A.B", "x")
    assert not trie.remove("A.B", "y")
    assert not trie.remove("A.*", "x")
    assert not trie.remove("A.B.C", "x")
    assert not trie.remove("A.B.>", "x")
    assert trie.remove("A.B", "x")
    assert len(trie) == 0


def test_remove_prunes_nodes() -> None:
    trie: WildcardTrie[str] = WildcardTrie()
    trie.insert("A.*.C.D", "x")
    trie.insert("A.B", "y")
    trie.remove("A.*.C.D", "x")
    trie.remove("A.B", "y")
    root = trie._root
    assert root.is_empty()


# -- property: the trie agrees with an obviously correct matcher ------------------------

ELEMENTS = st.sampled_from(["a", "b", ""])
PATTERN_ELEMENTS = st.sampled_from(["a", "b", "", "*", ">", "a*"])


def canonical(pattern: str) -> str:
    """The documented identity: repeated trailing ">" elements are one."""
    elements = pattern.split(".")
    while len(elements) > 1 and elements[-1] == ">" and elements[-2] == ">":
        elements.pop()
    return ".".join(elements)


def reference_matches(pattern: str, name: str) -> bool:
    """Recursive reading of the rules: ``*`` one element, last ``>`` zero or more."""
    want = canonical(pattern).split(".")
    have = name.split(".")

    def walk(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(have)
        if want[i] == ">" and i == len(want) - 1:
            return True
        if j == len(have):
            return False
        return (want[i] == "*" or want[i] == have[j]) and walk(i + 1, j + 1)

    return walk(0, 0)


names = st.lists(ELEMENTS, min_size=1, max_size=4).map(".".join)
patterns = st.lists(PATTERN_ELEMENTS, min_size=1, max_size=4).map(".".join)
operations = st.lists(st.tuples(st.booleans(), patterns, st.integers(min_value=0, max_value=3)), max_size=30)


@settings(max_examples=300, deadline=None)
@given(operations, st.lists(names, min_size=1, max_size=8))
def test_trie_agrees_with_reference(ops: list[tuple[bool, str, int]], probes: list[str]) -> None:
    trie: WildcardTrie[int] = WildcardTrie()
    stored: set[tuple[str, int]] = set()
    for is_insert, pattern, value in ops:
        key = canonical(pattern)
        if is_insert:
            trie.insert(pattern, value)
            stored.add((key, value))
        else:
            assert trie.remove(pattern, value) is ((key, value) in stored)
            stored.discard((key, value))
        assert len(trie) == len(stored)
    for name in probes:
        expected = {value for pattern, value in stored if reference_matches(pattern, name)}
        assert trie.match(name) == expected
        for pattern, _ in stored:
            assert matches(pattern, name) is reference_matches(pattern, name)
    for pattern, value in list(stored):
        assert trie.remove(pattern, value)
    assert trie._root.is_empty()
