"""``Selector.needs``: the headers a selector cannot be TRUE without (selector/needs.py).

The property that matters is soundness: a subject that lacks any of them never matches,
whatever the selector; checked over random selectors and subjects.  Then that the
analysis is not empty where a walk over a deep queue relies on it.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from broker.core.base.selector import InvalidSelector, Selector, compile_selector

NAMES = ("a", "b", "c", "JMSType")
VALUES = ("1", "2", "x", "true", "1.5e0", "")

names = st.sampled_from(NAMES)
numbers = st.sampled_from(("1", "2", "0.5"))
values = st.one_of(names, numbers, st.sampled_from(("'x'", "'1'", "TRUE")))
arithmetic = st.one_of(values, st.tuples(names, st.sampled_from("+-*/%"), values).map(" ".join))
atoms = st.one_of(
    st.tuples(arithmetic, st.sampled_from(("=", "<>", "<", ">=")), arithmetic).map(" ".join),
    st.tuples(names, arithmetic, arithmetic).map(lambda t: f"{t[0]} BETWEEN {t[1]} AND {t[2]}"),
    names.map(lambda n: f"{n} IN ('x', '1')"),
    names.map(lambda n: f"{n} LIKE 'x%'"),
    names.map(lambda n: f"{n} IS NULL"),
    names.map(lambda n: f"{n} IS NOT NULL"),
    names,
    st.just("TRUE"),
)
selectors = st.recursive(
    atoms,
    lambda inner: st.one_of(
        inner.map(lambda s: f"NOT ({s})"),
        st.tuples(inner, st.sampled_from(("AND", "OR")), inner).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
    ),
    max_leaves=6,
)
subjects = st.dictionaries(names, st.sampled_from(VALUES))


def compiled(text: str) -> Selector:
    try:
        return compile_selector(text)
    except InvalidSelector:
        assume(False)  # the grammar above makes some ill-typed ones (a string in BETWEEN)
        raise


@settings(max_examples=400, deadline=None)
@given(selectors, subjects)
def test_a_subject_missing_a_needed_header_never_matches(text: str, headers: dict[str, str]) -> None:
    for each in (text, f"NOT ({text})"):
        selector = compiled(each)
        if selector.matches(headers):
            assert selector.needs <= headers.keys(), (each, headers)


@pytest.mark.parametrize(
    ("text", "needs"),
    [
        ("idx = 999999", {"idx"}),
        ("type = 'order' AND amount > 100", {"type", "amount"}),
        ("region = 'eu' OR (region = 'us' AND tier IN ('gold'))", {"region"}),
        ("NOT (a = 1 OR b LIKE 'x%')", {"a", "b"}),
        ("x NOT BETWEEN lo AND hi", {"x"}),
        ("a + b > 3 AND c IS NOT NULL", {"a", "b", "c"}),
        # Nothing needed: TRUE without the header, or not a header at all.
        ("a IS NULL OR a = 1", set()),
        ("a = 1 OR b = 1", set()),
        ("JMSPriority > 4 AND JMSType = 'x'", set()),
    ],
)
def test_what_a_selector_needs(text: str, needs: set[str]) -> None:
    assert compile_selector(text).needs == needs
