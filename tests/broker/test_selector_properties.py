"""Compiled selectors against a slow, obviously correct reference interpreter.

The reference has its own syntax tree (tuples), rendered to selector text fully
parenthesised, and evaluated by walking the tree with SQL three-valued logic spelt out
case by case.  Generated trees respect the parser's static typing, so every one compiles.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.core.base.selector import InvalidSelector, compile_selector

Node = tuple[Any, ...]
Headers = dict[str, object]

# -- reference semantics -----------------------------------------------------------------

NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def number(value: object) -> int | float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return None if value != value else value
    if isinstance(value, str) and NUMBER.fullmatch(value):
        try:
            return float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:  # too many digits for int()
            return None
    return None


def boolean(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def not3(value: bool | None) -> bool | None:
    return None if value is None else not value


def and3(values: list[bool | None]) -> bool | None:
    if any(v is False for v in values):
        return False
    if any(v is None for v in values):
        return None
    return True


def or3(values: list[bool | None]) -> bool | None:
    if any(v is True for v in values):
        return True
    if any(v is None for v in values):
        return None
    return False


def equal(left: object, right: object) -> bool | None:
    if left is None or right is None:
        return None
    if isinstance(left, str) and isinstance(right, str):
        return left == right
    if isinstance(left, bool) or isinstance(right, bool):
        a, b = boolean(left), boolean(right)
        return None if a is None or b is None else a == b
    x, y = number(left), number(right)
    return None if x is None or y is None else x == y


def ordered(op: str, left: object, right: object) -> bool | None:
    if isinstance(left, str) and isinstance(right, str):
        return None
    x, y = number(left), number(right)
    if x is None or y is None:
        return None
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def arithmetic(op: str, left: object, right: object) -> int | float | None:
    x, y = number(left), number(right)
    if x is None or y is None:
        return None
    if op in "/%" and y == 0:
        return None
    try:
        if op == "+":
            result: int | float = x + y
        elif op == "-":
            result = x - y
        elif op == "*":
            result = x * y
        elif op == "/":
            result = x / y
        else:
            result = math.fmod(x, y)
        if isinstance(result, int) and not -(2**63) <= result < 2**63:
            result = float(result)
    except (OverflowError, ValueError):
        return None
    return None if result != result else result


def like(pattern: str, escape: str | None, text: str) -> bool:
    tokens: list[str | None] = []  # a literal character, "%" for any run, None for any one
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == escape and i + 1 < len(pattern) and pattern[i + 1] in ("%", "_", escape):
            tokens.append("\\" + pattern[i + 1])
            i += 2
            continue
        tokens.append("%" if c == "%" else None if c == "_" else "\\" + c)
        i += 1

    @functools.cache
    def match(t: int, k: int) -> bool:
        if t == len(tokens):
            return k == len(text)
        token = tokens[t]
        if token == "%":
            return match(t + 1, k) or (k < len(text) and match(t, k + 1))
        if k == len(text):
            return False
        return (token is None or token[1] == text[k]) and match(t + 1, k + 1)

    return match(0, 0)


def evaluate(node: Node, headers: Headers) -> object:
    """A node's value; booleans are True, False or None (UNKNOWN)."""
    kind = node[0]
    if kind == "id":
        return headers.get(node[1])
    if kind in ("num", "str", "bool"):
        return node[1]
    if kind == "arith":
        return arithmetic(node[1], evaluate(node[2], headers), evaluate(node[3], headers))
    if kind == "unary":
        operand = number(evaluate(node[2], headers))
        return None if operand is None else -operand if node[1] == "-" else operand
    if kind == "cmp":
        _, op, left, right = node
        a, b = evaluate(left, headers), evaluate(right, headers)
        if op == "=":
            return equal(a, b)
        if op == "<>":
            return not3(equal(a, b))
        return ordered(op, a, b)
    if kind == "not":
        return not3(condition(node[1], headers))
    if kind == "and":
        return and3([condition(each, headers) for each in node[1]])
    if kind == "or":
        return or3([condition(each, headers) for each in node[1]])
    negated = node[1]
    if kind == "between":
        x, low, high = (evaluate(each, headers) for each in node[2:])
        result = and3([ordered(">=", x, low), ordered("<=", x, high)])
    elif kind == "in":
        value = headers.get(node[2])
        result = value in node[3] if isinstance(value, str) else None
    elif kind == "like":
        value = evaluate(node[2], headers)
        result = like(node[3], node[4], value) if isinstance(value, str) else None
    else:
        assert kind == "isnull"
        result = evaluate(node[2], headers) is None
    return not3(result) if negated else result


def condition(node: Node, headers: Headers) -> bool | None:
    """A node used where a condition goes: an identifier is read as a boolean."""
    return boolean(evaluate(node, headers))


# -- rendering ---------------------------------------------------------------------------


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def render(node: Node) -> str:
    kind = node[0]
    if kind == "id":
        return str(node[1])
    if kind == "num":
        return repr(node[1])
    if kind == "str":
        return quote(node[1])
    if kind == "bool":
        return "TRUE" if node[1] else "FALSE"
    if kind in ("arith", "cmp"):
        return f"({render(node[2])} {node[1]} {render(node[3])})"
    if kind == "unary":
        return f"({node[1]} {render(node[2])})"
    if kind == "not":
        return f"(NOT {render(node[1])})"
    if kind in ("and", "or"):
        return "(" + f" {kind.upper()} ".join(render(each) for each in node[1]) + ")"
    not_ = "NOT " if node[1] else ""
    if kind == "between":
        return f"({render(node[2])} {not_}BETWEEN {render(node[3])} AND {render(node[4])})"
    if kind == "in":
        return f"({node[2]} {not_}IN ({', '.join(quote(v) for v in sorted(node[3]))}))"
    if kind == "like":
        escape = "" if node[4] is None else f" ESCAPE {quote(node[4])}"
        return f"({render(node[2])} {not_}LIKE {quote(node[3])}{escape})"
    assert kind == "isnull"
    return f"({render(node[2])} IS {not_}NULL)"


# -- generation --------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c"])
STRINGS = ["", "0", "5", "-3", "2.5", "1e3", "abc", "a%b", "a_b", "a!", "!!", "true", "FALSE", "it's"]
identifiers = NAMES.map(lambda name: ("id", name))
numbers = st.sampled_from([0, 1, 2, -1, 3, 10, 0.5, -1.5, 2.5, 0.0, 1000.0]).map(lambda value: ("num", value))
strings = st.sampled_from(STRINGS).map(lambda text: ("str", text))
truths = st.booleans().map(lambda value: ("bool", value))
patterns = st.text(alphabet="ab!%_'", max_size=6)


@functools.cache
def operands(depth: int) -> st.SearchStrategy[Node]:
    """Anything an = , arithmetic, LIKE or IS NULL accepts as an operand."""
    leaves = st.one_of(identifiers, numbers, strings, truths)
    if depth == 0:
        return leaves
    return st.one_of(leaves, arithmetic_nodes(depth), predicates(depth - 1))


@functools.cache
def numerics(depth: int) -> st.SearchStrategy[Node]:
    """What an ordering or BETWEEN accepts: nothing statically string or boolean."""
    leaves = st.one_of(identifiers, numbers)
    if depth == 0:
        return leaves
    return st.one_of(leaves, arithmetic_nodes(depth))


@functools.cache
def arithmetic_nodes(depth: int) -> st.SearchStrategy[Node]:
    # Mostly numeric operands, so that arithmetic usually has something to compute.
    inner = st.one_of(numerics(depth - 1), operands(depth - 1))
    return st.one_of(
        st.tuples(st.just("arith"), st.sampled_from("+-*/%"), inner, inner),
        st.tuples(st.just("unary"), st.sampled_from("+-"), inner),
    )


@functools.cache
def conditions(depth: int) -> st.SearchStrategy[Node]:
    """What AND, OR, NOT and the whole selector accept."""
    leaves = st.one_of(identifiers, truths)
    if depth == 0:
        return leaves
    return st.one_of(leaves, predicates(depth - 1))


@functools.cache
def predicates(depth: int) -> st.SearchStrategy[Node]:
    value, numeric, condition_ = operands(depth), numerics(depth), conditions(depth)
    return st.one_of(
        st.tuples(st.just("cmp"), st.sampled_from(["=", "<>"]), value, value),
        st.tuples(st.just("cmp"), st.sampled_from(["<", "<=", ">", ">="]), numeric, numeric),
        st.tuples(st.just("between"), st.booleans(), numeric, numeric, numeric),
        st.tuples(st.just("in"), st.booleans(), NAMES, st.frozensets(st.sampled_from(STRINGS), min_size=1)),
        st.tuples(st.just("like"), st.booleans(), value, patterns, st.sampled_from([None, "!", "%"])),
        st.tuples(st.just("isnull"), st.booleans(), value),
        st.tuples(st.just("not"), condition_),
        st.tuples(st.sampled_from(["and", "or"]), st.lists(condition_, min_size=2, max_size=3)),
    )


selectors = conditions(4)

# Header values: numeric and boolean strings, text the patterns can match, typed values.
header_values = st.one_of(
    st.sampled_from([*STRINGS, "10", "0.0", "1e999", "-1e999", "ab", "a!!"]),
    st.integers(-3, 10),
    st.sampled_from([0.5, 2.5, -1.5, 0.0, True, False, 2**64, 2**62, 1e308]),
)
headers = st.dictionaries(NAMES, header_values, min_size=1)


def assert_agrees(tree: Node, subject: Headers) -> None:
    text = render(tree)
    expected = condition(tree, subject)
    assert compile_selector(text).matches(subject) is (expected is True), text
    assert compile_selector(f"NOT {text}").matches(subject) is (expected is False), text
    # The same node as an operand, where it is generated as a truth value instead.
    assert compile_selector(f"({text} = TRUE) IS NULL").matches(subject) is (expected is None), text


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(selectors, headers)
def test_compiled_agrees_with_reference(tree: Node, subject: Headers) -> None:
    assert_agrees(tree, subject)


numeric_header_values = st.one_of(
    st.sampled_from(["0", "0.0", "-0", "1", "-3", "2.5", "1e3", "1e308", "1e999", "x", ""]),
    st.sampled_from([0, 0.0, 1, -2, 7, 0.5, 2**62, -(2**63), 1e308, float("inf")]),
)
comparisons_of_sums = st.tuples(
    st.just("cmp"), st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), numerics(3), numerics(3)
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(comparisons_of_sums, st.dictionaries(NAMES, numeric_header_values, min_size=3))
def test_arithmetic_agrees_with_reference(tree: Node, subject: Headers) -> None:
    # Arithmetic gets its own test: with headers that are all numbers, operations
    # actually compute, overflow and divide by zero, rather than meet a NULL first.
    assert_agrees(tree, subject)


wild_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.text(alphabet="0123456789+-.eE", max_size=8),
    st.binary(max_size=3),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(selectors, st.dictionaries(NAMES, wild_values))
def test_compiled_agrees_with_reference_on_any_values(tree: Node, subject: Headers) -> None:
    assert_agrees(tree, subject)


# -- arbitrary input: compiles or raises InvalidSelector, and never raises evaluating -----

TOKENS = [
    "a", "b", "JMSPriority", "$x", "_", "AND", "or", "NOT", "BETWEEN", "IN", "LIKE", "ESCAPE",
    "IS", "NULL", "TRUE", "false", "=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "%",
    "(", ")", ",", "'x'", "'%'", "''", "'", "1", "0x1F", "010", "09", "1.5", ".5", "1e3", "5L",
    "2F", "--", "/*", "*/", "!", "\"", "\n", "1e", "0x",
]  # fmt: skip
token_soup = st.lists(st.sampled_from(TOKENS), max_size=16).flatmap(
    lambda parts: st.sampled_from([" ", ""]).map(lambda sep: sep.join(parts))
)
probe_subjects: list[Headers] = [
    {},
    {"a": "1", "b": "true", "JMSPriority": 4},
    {"a": "x", "b": 2.5, "$x": True, "_": "%"},
]


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.text(), token_soup))
def test_any_text_compiles_or_raises_invalid_selector(text: str) -> None:
    try:
        selector = compile_selector(text)
    except InvalidSelector as error:
        assert 0 <= error.position <= len(text)
        return
    for subject in probe_subjects:
        assert type(selector.matches(subject)) is bool
