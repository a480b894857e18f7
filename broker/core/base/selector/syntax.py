"""The parsed form of a selector: what the parser builds and the code generator consumes.

Negated forms (``NOT IN``, ``NOT LIKE``, ``NOT BETWEEN``, ``IS NOT NULL``, ``<>``) are
parsed into ``Not`` around the positive node: under SQL three-valued logic each is
exactly the negation, UNKNOWN included, so the generator has fewer shapes to handle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

#: The deepest nesting a selector may have, counted both as parser recursion (parentheses,
#: NOT, signs) and as tree depth.  It bounds Python recursion while parsing and generating
#: code, and keeps generated source within CPython's nesting limits; real selectors nest
#: a handful deep.
MAX_DEPTH = 40

#: A literal's value; booleans are TRUE/FALSE, never numbers.
Value: TypeAlias = str | int | float | bool


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str
    pos: int


@dataclass(frozen=True, slots=True)
class Literal:
    value: Value
    pos: int


@dataclass(frozen=True, slots=True)
class Arithmetic:
    op: str  # one of + - * / %
    left: Expr
    right: Expr
    pos: int


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # + or -
    operand: Expr
    pos: int


@dataclass(frozen=True, slots=True)
class Comparison:
    op: str  # one of = < <= > >=
    left: Expr
    right: Expr
    pos: int


@dataclass(frozen=True, slots=True)
class Between:
    operand: Expr
    low: Expr
    high: Expr
    pos: int


@dataclass(frozen=True, slots=True)
class In:
    operand: Identifier
    values: frozenset[str]
    pos: int


@dataclass(frozen=True, slots=True)
class Like:
    operand: Expr
    pattern: str
    escape: str | None
    pos: int


@dataclass(frozen=True, slots=True)
class IsNull:
    operand: Expr
    pos: int


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr
    pos: int


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Expr, ...]
    pos: int


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Expr, ...]
    pos: int


Expr: TypeAlias = (
    Identifier | Literal | Arithmetic | Unary | Comparison | Between | In | Like | IsNull | Not | And | Or
)

#: Nodes whose value is always TRUE, FALSE or UNKNOWN.
BOOLEAN_NODES = (Comparison, Between, In, Like, IsNull, Not, And, Or)
