"""The headers a selector cannot be TRUE without: a message lacking any of them does not
match, whatever else it holds.

A walk over records not decoded yet (an admin operation over a deep swapped queue) uses
this to skip, by a byte search, the records that cannot match.  The analysis follows
the three-valued logic ``codegen`` generates: a comparison, BETWEEN, IN, LIKE or IS NOT
NULL with a NULL operand is UNKNOWN (never TRUE nor FALSE), as is arithmetic over NULL;
``AND`` is TRUE only if each operand is, and FALSE if any one is; ``OR`` the reverse;
``NOT`` swaps TRUE and FALSE.  It errs on the safe side: a name it is unsure of is left
out, and names starting with ``JMS`` are left out, since a message answers some of them
from its own fields rather than from a header.
"""

from __future__ import annotations

from functools import reduce

from broker.core.base.selector.syntax import (
    And,
    Arithmetic,
    Between,
    Comparison,
    Expr,
    Identifier,
    In,
    IsNull,
    Like,
    Not,
    Or,
    Unary,
)

_NONE: frozenset[str] = frozenset()


def needed_headers(tree: Expr) -> frozenset[str]:
    """Header names each of which a subject must have for ``tree`` to be TRUE."""
    return frozenset(name for name in _needed(tree, want=True) if not name.startswith("JMS"))


def _needed(node: Expr, *, want: bool) -> frozenset[str]:
    """Names that are all present whenever ``node`` is ``want`` (TRUE or FALSE)."""
    match node:
        case Not(operand=operand):
            return _needed(operand, want=not want)
        case And(operands=operands):
            sets = [_needed(each, want=want) for each in operands]
            return _union(sets) if want else _intersection(sets)
        case Or(operands=operands):
            sets = [_needed(each, want=want) for each in operands]
            return _intersection(sets) if want else _union(sets)
        case IsNull(operand=operand):
            # IS NULL is TRUE for an absent header; IS NOT NULL needs its operand.
            return _NONE if want else _value_names(operand)
        case Comparison(left=left, right=right):
            return _value_names(left) | _value_names(right)
        case Between(operand=operand, low=low, high=high):
            if want:
                return _value_names(operand) | _value_names(low) | _value_names(high)
            # FALSE when below the low bound or above the high one: either bound may be NULL.
            return _value_names(operand) | (_value_names(low) & _value_names(high))
        case In(operand=operand) | Like(operand=operand):
            return _value_names(operand)
        case Identifier(name=name):
            # A header used as a condition: TRUE or FALSE only if present.
            return frozenset((name,))
        case _:
            return _NONE


def _value_names(node: Expr) -> frozenset[str]:
    """Names whose absence makes the value ``node`` NULL (a boolean node: none, to be safe)."""
    match node:
        case Identifier(name=name):
            return frozenset((name,))
        case Arithmetic(left=left, right=right):
            return _value_names(left) | _value_names(right)
        case Unary(operand=operand):
            return _value_names(operand)
        case _:
            return _NONE


def _union(sets: list[frozenset[str]]) -> frozenset[str]:
    return reduce(frozenset.union, sets, _NONE)


def _intersection(sets: list[frozenset[str]]) -> frozenset[str]:
    return reduce(frozenset.intersection, sets[1:], sets[0]) if sets else _NONE
