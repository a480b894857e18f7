"""Turns a syntax tree into one Python function, by generating its source and compiling it.

Generated source beats nested closures: a selector runs in a single frame, with no call
per node.  Measured on ``type = 'order' AND amount > 100`` with a dict subject, against
hand-specialised closures: 380 ns against 440 ns when it matches, 123 ns against 204 ns
when the first test fails.

Three-valued logic never appears as a value at run time.  Each boolean node is generated
as one of two plain Python predicates, "is TRUE" or "is FALSE", and both are false when
the node is UNKNOWN.  A selector matches when its root is TRUE; ``AND`` is TRUE when all
operands are TRUE and FALSE when any is FALSE, ``OR`` the reverse, and ``NOT`` asks its
operand the opposite question.  So Python's short-circuiting ``and``/``or`` do the work.

Where a boolean node is an operand, as in ``(a = 1) = (b = 2)``, it is generated once
more as an expression for its truth value: True, False or None for UNKNOWN.  Asking both
predicates there instead would copy the operand twice per level, exponentially.

Non-boolean nodes generate expressions for their value (None for NULL or UNKNOWN), using
``semantics`` for anything beyond the common shapes ``header = 'text'`` and
``header < number``, which are inlined.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from broker.core.base.selector import semantics
from broker.core.base.selector.errors import InvalidSelector
from broker.core.base.selector.like import like_regex
from broker.core.base.selector.stomp_names import FIELD_NAMES
from broker.core.base.selector.syntax import (
    MAX_DEPTH,
    And,
    Arithmetic,
    Between,
    Comparison,
    Expr,
    Identifier,
    In,
    IsNull,
    Like,
    Literal,
    Not,
    Or,
    Unary,
)


class Subject(Protocol):
    """What a selector reads: a message's headers and JMS properties by name; None if absent."""

    def get(self, name: str, /) -> object: ...


Predicate = Callable[[Subject], bool]

# Names the generated code may use; nothing else (not even builtins) is in its scope.
_HELPERS: dict[str, object] = {
    "_str": str,
    "_isinstance": isinstance,
    "_num": semantics.to_number,
    "_bool": semantics.to_boolean,
    "_eq": semantics.equals,
    "_ord": semantics.order,
    "_all": semantics.conjunction,
    "_any": semantics.disjunction,
    "_neg": semantics.negate,
    "_add": semantics.add,
    "_sub": semantics.subtract,
    "_mul": semantics.multiply,
    "_div": semantics.divide,
    "_mod": semantics.modulo,
}
_ARITHMETIC = {"+": "_add", "-": "_sub", "*": "_mul", "/": "_div", "%": "_mod"}

# The operator as seen from the other side, for moving a literal to the right.
_MIRRORED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_PYTHON = {"=": "==", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_PYTHON_NEGATED = {"=": "!=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def generate(tree: Expr, text: str) -> Predicate:
    """The function that is True for exactly the subjects on which ``tree`` is TRUE.

    ``text`` is the selector's source, for errors: a tree deeper than MAX_DEPTH raises
    InvalidSelector, since CPython could not compile its source.
    """
    return _Generator(text).function(tree)


class _Generator:
    def __init__(self, text: str) -> None:
        self._text = text
        self._constants: dict[tuple[type, object], str] = {}
        self._bindings: dict[str, object] = dict(_HELPERS)
        self._temporaries = 0
        self._depth = 0

    def function(self, tree: Expr) -> Predicate:
        body = self._predicate(tree, want=True)
        # Helpers and constants arrive as arguments of an enclosing function, so the
        # generated code reads them as closure cells, which is faster than globals.
        source = (
            f"def bind({', '.join(self._bindings)}):\n"
            f"    def matches(s):\n"
            f"        return {body}\n"
            f"    return matches\n"
        )
        scope: dict[str, Any] = {}
        exec(compile(source, "<selector>", "exec"), {"__builtins__": {}}, scope)
        matches: Predicate = scope["bind"](**self._bindings)
        return matches

    # -- predicates: Python bools saying "the node is TRUE", or "the node is FALSE" ---

    def _predicate(self, node: Expr, *, want: bool) -> str:
        self._enter(node)
        code = self._predicate_code(node, want)
        self._depth -= 1
        return code

    def _predicate_code(self, node: Expr, want: bool) -> str:
        match node:
            case Not(operand=operand):
                return self._predicate(operand, want=not want)
            case And(operands=operands):
                joiner = " and " if want else " or "
                return "(" + joiner.join(self._predicate(each, want=want) for each in operands) + ")"
            case Or(operands=operands):
                joiner = " or " if want else " and "
                return "(" + joiner.join(self._predicate(each, want=want) for each in operands) + ")"
            case IsNull(operand=operand):
                return f"({self._value(operand)} is {'' if want else 'not '}None)"
            case Comparison():
                return self._comparison(node, want)
            case Between():
                return self._between(node, want)
            case In(operand=operand, values=values):
                value = self._temporary()
                return (
                    f"({self._is_string(value, operand)}"
                    f" and {value} {'' if want else 'not '}in {self._constant(values)})"
                )
            case Like(operand=operand, pattern=pattern, escape=escape):
                value = self._temporary()
                return (
                    f"({self._is_string(value, operand)}"
                    f" and {self._like(pattern, escape)}({value}) is {'not ' if want else ''}None)"
                )
            case _:
                # An identifier used as a condition, or a TRUE/FALSE literal.
                return f"(_bool({self._value_code(node)}) is {want})"

    def _comparison(self, node: Comparison, want: bool) -> str:
        op, left, right = node.op, node.left, node.right
        if isinstance(left, Literal) and not isinstance(right, Literal):
            op, left, right = _MIRRORED[op], right, left
        python_op = _PYTHON[op] if want else _PYTHON_NEGATED[op]
        constant = right.value if isinstance(right, Literal) else None
        if isinstance(constant, bool):  # only "=": the parser rejects ordering booleans
            return f"(_bool({self._value(left)}) is {constant is want})"
        if isinstance(constant, (int, float)):
            number = self._temporary()
            return (
                f"(({number} := {self._number(left)}) is not None"
                f" and {number} {python_op} {self._constant(constant)})"
            )
        if isinstance(constant, str):  # only "=": the parser rejects ordering strings
            value = self._temporary()
            return (
                f"({value} {python_op} {self._constant(constant)}"
                f" if ({value} := {self._value(left)}).__class__ is _str"
                f" else _eq({value}, {self._constant(constant)}) is {want})"
            )
        if op == "=":
            return f"(_eq({self._value(left)}, {self._value(right)}) is {want})"
        sign = self._temporary()
        return (
            f"(({sign} := _ord({self._value(left)}, {self._value(right)})) is not None"
            f" and {sign} {python_op} 0)"
        )

    def _between(self, node: Between, want: bool) -> str:
        low, high = node.low, node.high
        if (
            isinstance(low, Literal)
            and isinstance(high, Literal)
            and not isinstance(low.value, (bool, str))
            and not isinstance(high.value, (bool, str))
        ):
            number = self._temporary()
            low_code, high_code = self._constant(low.value), self._constant(high.value)
            test = (
                f"{low_code} <= {number} <= {high_code}"
                if want
                else f"({number} < {low_code} or {number} > {high_code})"
            )
            return f"(({number} := {self._number(node.operand)}) is not None and {test})"
        above_low, above, below_high, below = self._bounds(node)
        if want:
            return f"({above_low} is not None and {above} >= 0 and {below_high} is not None and {below} <= 0)"
        return f"(({above_low} is not None and {above} < 0) or ({below_high} is not None and {below} > 0))"

    # -- truth values: Python expressions for TRUE, FALSE or UNKNOWN as True, False, None

    def _truth(self, node: Expr) -> str:
        self._enter(node)
        code = self._truth_code(node)
        self._depth -= 1
        return code

    def _truth_code(self, node: Expr) -> str:
        match node:
            case Not(operand=operand):
                truth = self._temporary()
                return f"(None if ({truth} := {self._truth(operand)}) is None else not {truth})"
            case And(operands=operands):
                return f"_all({', '.join(self._truth(each) for each in operands)})"
            case Or(operands=operands):
                return f"_any({', '.join(self._truth(each) for each in operands)})"
            case IsNull(operand=operand):
                return f"({self._value(operand)} is None)"
            case Comparison(op="=", left=left, right=right):
                return f"_eq({self._value(left)}, {self._value(right)})"
            case Comparison(op=op, left=left, right=right):
                sign = self._temporary()
                return (
                    f"(None if ({sign} := _ord({self._value(left)}, {self._value(right)})) is None"
                    f" else {sign} {_PYTHON[op]} 0)"
                )
            case Between():
                above_low, above, below_high, below = self._bounds(node)
                return (
                    f"_all((None if {above_low} is None else {above} >= 0),"
                    f" (None if {below_high} is None else {below} <= 0))"
                )
            case In(operand=operand, values=values):
                value = self._temporary()
                return f"({value} in {self._constant(values)} if {self._is_string(value, operand)} else None)"
            case Like(operand=operand, pattern=pattern, escape=escape):
                value = self._temporary()
                return (
                    f"({self._like(pattern, escape)}({value}) is not None"
                    f" if {self._is_string(value, operand)} else None)"
                )
            case _:
                return f"_bool({self._value_code(node)})"

    # -- values: Python expressions for what a node evaluates to, None for NULL -------

    def _value(self, node: Expr) -> str:
        self._enter(node)
        code = self._value_code(node)
        self._depth -= 1
        return code

    def _value_code(self, node: Expr) -> str:
        match node:
            case Identifier(name=name) if name in FIELD_NAMES:
                # What ActiveMQ makes a field of the message, read only by its JMS name.
                return "None"
            case Identifier(name=name):
                # Not hoisted into a local: CPython calls s.get(...) without creating a bound method.
                return f"s.get({name!r})"
            case Literal(value=value):
                return self._constant(value)
            case Arithmetic(op=op, left=left, right=right):
                return f"{_ARITHMETIC[op]}({self._value(left)}, {self._value(right)})"
            case Unary(op=op, operand=operand):
                return f"{'_neg' if op == '-' else '_num'}({self._value(operand)})"
            case _:
                return self._truth_code(node)

    def _number(self, node: Expr) -> str:
        """Code for ``node``'s value as a number, or None if it is not one."""
        if isinstance(node, (Arithmetic, Unary)):
            return self._value(node)  # already a number or None
        return f"_num({self._value(node)})"

    def _bounds(self, node: Between) -> tuple[str, str, str, str]:
        """Code comparing the operand with each bound, and the names the signs land in.

        The operand is evaluated once, in the first comparison, which always runs.
        """
        operand, above, below = self._temporary(), self._temporary(), self._temporary()
        above_low = f"({above} := _ord(({operand} := {self._value(node.operand)}), {self._value(node.low)}))"
        below_high = f"({below} := _ord({operand}, {self._value(node.high)}))"
        return above_low, above, below_high, below

    def _is_string(self, name: str, node: Expr) -> str:
        """Assigns ``node``'s value to ``name`` and tests for a str, exact type first as the norm."""
        return f"(({name} := {self._value(node)}).__class__ is _str or _isinstance({name}, _str))"

    def _like(self, pattern: str, escape: str | None) -> str:
        return self._constant(like_regex(pattern, escape).fullmatch)

    # -- naming -----------------------------------------------------------------------

    def _constant(self, value: object) -> str:
        key = (type(value), value)
        name = self._constants.get(key)
        if name is None:
            name = self._constants[key] = f"_k{len(self._constants)}"
            self._bindings[name] = value
        return name

    def _temporary(self) -> str:
        self._temporaries += 1
        return f"_t{self._temporaries}"

    def _enter(self, node: Expr) -> None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise InvalidSelector(self._text, node.pos, f"selector nests more than {MAX_DEPTH} deep")
