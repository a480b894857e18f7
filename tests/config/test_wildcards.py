"""Destination patterns in configuration: checks, matching, and which entry applies."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wildcards


@dataclass(frozen=True)
class Entry:
    kind: str | None
    pattern: str
    tag: int = 0


@pytest.mark.parametrize(
    "pattern", [">", "A", "A.B", "A.*", "*.B", "A.>", "A.*.C.>", "A.>,B.*", "ActiveMQ.DLQ"]
)
def test_good_patterns(pattern: str) -> None:
    assert wildcards.problem(pattern) is None


@pytest.mark.parametrize(
    "pattern", ["", "A..B", ".A", "A.", "A,", ",A", "A.>.B", ">.A", "A.#", "+.B", "A*", "A.B>", "*A.B"]
)
def test_bad_patterns_say_why(pattern: str) -> None:
    assert wildcards.problem(pattern)


ELEMENT = st.sampled_from(["A", "B", "C", "x1"])
NAMES = st.lists(ELEMENT, min_size=1, max_size=5).map(".".join)
PATTERNS = st.builds(
    lambda head, tail: ".".join(head + tail),
    st.lists(st.sampled_from(["A", "B", "C", "*"]), min_size=0, max_size=4),
    st.sampled_from([[], [">"]]),
).filter(bool)


@given(pattern=PATTERNS, name=NAMES)
def test_matching_agrees_with_the_broker_routing(pattern: str, name: str) -> None:
    # Configuration matches a pattern one name at a time; routing finds every pattern a
    # name matches in a trie: one reading of a pattern for both.
    trie = wildcards.WildcardTrie[int]()
    trie.insert(pattern, 1)
    assert wildcards.matches(pattern, name) == (1 in trie.match(name))


@given(wide=PATTERNS, narrow=PATTERNS, name=NAMES)
def test_covers_is_sound(wide: str, narrow: str, name: str) -> None:
    if wildcards.covers(wide, narrow) and wildcards.matches(narrow, name):
        assert wildcards.matches(wide, name)


@given(one=PATTERNS, other=PATTERNS, name=NAMES)
def test_overlaps_is_a_shared_name(one: str, other: str, name: str) -> None:
    assert wildcards.overlaps(one, other) == wildcards.overlaps(other, one)
    assert wildcards.overlaps(one, name) == wildcards.matches(one, name)
    if wildcards.matches(one, name) and wildcards.matches(other, name):
        assert wildcards.overlaps(one, other)
    if wildcards.overlaps(one, other):
        shared = _a_name_both_match(one.split("."), other.split("."))
        assert wildcards.matches(one, shared) and wildcards.matches(other, shared)


def _a_name_both_match(one: list[str], other: list[str]) -> str:
    """Fixed elements from either side, 'x' for '*', until both end (or one ends in '>')."""
    out: list[str] = []
    for a, b in itertools.zip_longest(one, other):
        if a in (None, ">") and b in (None, ">"):
            break
        pick = [e for e in (a, b) if e not in (None, "*", ">")]
        out.append(pick[0] if pick else "x")
    return ".".join(out) or "x"


@given(patterns=st.lists(PATTERNS, min_size=1, max_size=6), name=NAMES)
def test_the_chosen_entry_matches_and_no_other_match_is_narrower(patterns: list[str], name: str) -> None:
    entries = [Entry("queue", p, i) for i, p in enumerate(patterns)]
    chosen = wildcards.choose(entries, "queue", name)
    matching = [e for e in entries if wildcards.matches(e.pattern, name)]
    if not matching:
        assert chosen is None
        return
    assert chosen is not None and chosen in matching
    if name not in patterns:
        for other in matching:
            strictly_narrower = wildcards.covers(chosen.pattern, other.pattern) and not wildcards.covers(
                other.pattern, chosen.pattern
            )
            assert not strictly_narrower


# What ActiveMQ 5.17's PolicyMap.getEntryFor returns, run against its jars with the
# entries >, FOO.>, FOO.*, FOO.BAR, *.BAR, ZZZ.>, AAA.> (FOO.* vs FOO.> is the case where
# ActiveMQ's comparator is inconsistent; stompd picks the narrower FOO.*).
ACTIVEMQ_ENTRIES = [">", "FOO.>", "FOO.*", "FOO.BAR", "*.BAR", "ZZZ.>", "AAA.>"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("FOO.BAR", "FOO.BAR"),
        ("FOO.BAZ.X", "FOO.>"),
        ("FOO", "FOO.>"),
        ("QQQ.BAR", "*.BAR"),
        ("ZZZ.X", "ZZZ.>"),
        ("AAA.X", "AAA.>"),
        ("X.Y", ">"),
        ("FOO.BAZ", "FOO.*"),
    ],
)
def test_choice_follows_activemq(name: str, expected: str) -> None:
    entries = [Entry("queue", p) for p in ACTIVEMQ_ENTRIES]
    chosen = wildcards.choose(entries, "queue", name)
    assert chosen is not None and chosen.pattern == expected


def test_activemq_destination_wildcard_test_cases() -> None:
    # ActiveMQ's DestinationWildcardTest: the exact entry, else the * pattern over the > one.
    name = "DomainA.DomainB.TestMeA.TestMeB.Prioritised.Queue"
    star, deep = Entry("queue", "DomainA.DomainB.*.*.Prioritised.Queue"), Entry("queue", "DomainA.DomainB.>")
    exact = Entry("queue", name)
    assert wildcards.choose([star, deep, exact], "queue", name) is exact
    assert wildcards.choose([deep, star], "queue", name) is star


def test_incomparable_patterns_fall_back_to_string_order_then_file_order() -> None:
    a, b = Entry("queue", "A.B.>"), Entry("queue", "A.*.C")
    assert wildcards.choose([a, b], "queue", "A.B.C") is b
    first, second = Entry("queue", "A.>", 1), Entry("queue", "A.>", 2)
    assert wildcards.choose([first, second], "queue", "A.X") is first


def test_kinds_and_composites() -> None:
    queue, topic = Entry("queue", "A.>"), Entry("topic", "A.B,C.>")
    assert wildcards.choose([queue, topic], "topic", "C.D") is topic
    assert wildcards.choose([queue, topic], "topic", "A.B") is topic
    assert wildcards.choose([queue, topic], "temp-queue", "A.B") is None
    assert [e for _, e in wildcards.matching([queue, topic], "queue", "A")] == [queue]
