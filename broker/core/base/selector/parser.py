"""Recursive-descent parser from selector text to ``syntax`` nodes.

Grammar, loosest binding first (JMS 1.1 section 3.8.1.1)::

    selector       := or_expr END
    or_expr        := and_expr (OR and_expr)*
    and_expr       := not_expr (AND not_expr)*
    not_expr       := NOT not_expr | comparison
    comparison     := additive [ (= | <> | < | <= | > | >=) additive
                               | [NOT] BETWEEN additive AND additive
                               | [NOT] IN "(" STRING ("," STRING)* ")"
                               | [NOT] LIKE STRING [ESCAPE STRING]
                               | IS [NOT] NULL ]
    additive       := multiplicative (("+" | "-") multiplicative)*
    multiplicative := unary (("*" | "/" | "%") unary)*
    unary          := ("+" | "-") unary | primary
    primary        := STRING | NUMBER | TRUE | FALSE | IDENTIFIER | "(" or_expr ")"

Type checks are ActiveMQ's parse-time ones (ComparisonExpression.checkLessThanOperand,
SelectorParser.asBooleanExpression): an operand of AND/OR/NOT or the whole selector must
be boolean or a bare identifier, ordering operands must not be string or boolean, and
IN applies to an identifier.  Anything else is left to evaluation, where it is UNKNOWN.
"""

from __future__ import annotations

from dataclasses import replace

from broker.core.base.selector.errors import InvalidSelector
from broker.core.base.selector.lexer import Kind, Token, tokenize
from broker.core.base.selector.syntax import (
    BOOLEAN_NODES,
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

_ORDERING = frozenset({"<", "<=", ">", ">="})


def parse(text: str) -> Expr:
    """The syntax tree of ``text``, a boolean expression; raises InvalidSelector."""
    return _Parser(text).selector()


class _Parser:
    def __init__(self, text: str) -> None:
        self._text = text
        self._tokens = tokenize(text)
        self._index = 0
        self._nesting = 0

    def selector(self) -> Expr:
        expr = self._or()
        if self._peek().kind is not Kind.END:
            raise self._error(self._peek(), "expected AND, OR or end of selector")
        return self._boolean(expr)

    # -- boolean layer -------------------------------------------------------------

    def _or(self) -> Expr:
        first = self._and()
        if not self._at_keyword("OR"):
            return first
        operands = [self._boolean(first)]
        while self._accept_keyword("OR"):
            operands.append(self._boolean(self._and()))
        return Or(tuple(operands), first.pos)

    def _and(self) -> Expr:
        first = self._not()
        if not self._at_keyword("AND"):
            return first
        operands = [self._boolean(first)]
        while self._accept_keyword("AND"):
            operands.append(self._boolean(self._not()))
        return And(tuple(operands), first.pos)

    def _not(self) -> Expr:
        token = self._peek()
        if not self._accept_keyword("NOT"):
            return self._comparison()
        self._enter(token)
        operand = self._not()
        self._nesting -= 1
        return Not(self._boolean(operand), token.pos)

    # -- predicates ------------------------------------------------------------------

    def _comparison(self) -> Expr:
        left = self._additive()
        token = self._peek()
        if token.kind is Kind.OPERATOR and token.text in ("=", "<>", "<", "<=", ">", ">="):
            self._advance()
            right = self._additive()
            if token.text in _ORDERING:
                self._numeric(left, token.text)
                self._numeric(right, token.text)
            right = _destination_named(right, left)
            left = _destination_named(left, right)
            if token.text == "<>":
                return Not(Comparison("=", left, right, left.pos), left.pos)
            return Comparison(token.text, left, right, left.pos)
        if self._accept_keyword("IS"):
            negated = self._accept_keyword("NOT")
            self._expect_keyword("NULL", "expected NULL or NOT NULL after IS")
            test = IsNull(left, left.pos)
            return Not(test, left.pos) if negated else test
        negated = self._accept_keyword("NOT")
        if self._accept_keyword("BETWEEN"):
            predicate: Expr = self._between(left)
        elif self._accept_keyword("IN"):
            predicate = self._in(left)
        elif self._accept_keyword("LIKE"):
            predicate = self._like(left)
        elif negated:
            raise self._error(self._peek(), "expected BETWEEN, IN or LIKE after NOT")
        else:
            return left
        return Not(predicate, left.pos) if negated else predicate

    def _between(self, operand: Expr) -> Between:
        low = self._additive()
        self._expect_keyword("AND", "expected AND in BETWEEN")
        high = self._additive()
        for expr in (operand, low, high):
            self._numeric(expr, "BETWEEN")
        return Between(operand, low, high, operand.pos)

    def _in(self, operand: Expr) -> In:
        if not isinstance(operand, Identifier):
            raise InvalidSelector(self._text, operand.pos, "expected an identifier before IN")
        self._expect_operator("(", 'expected "(" after IN')
        values = {self._string("expected a string literal in the IN list")}
        while self._accept_operator(","):
            values.add(self._string("expected a string literal in the IN list"))
        self._expect_operator(")", 'expected "," or ")" in the IN list')
        if operand.name == _DESTINATION:
            values = {stompd_destination(value) for value in values}
        return In(operand, frozenset(values), operand.pos)

    def _like(self, operand: Expr) -> Like:
        pattern = self._string("expected a string literal pattern after LIKE")
        escape = None
        if self._accept_keyword("ESCAPE"):
            token = self._peek()
            escape = self._string("expected a string literal after ESCAPE")
            if len(escape) != 1:
                raise self._error(token, "ESCAPE must be a single character")
        return Like(operand, pattern, escape, operand.pos)

    # -- arithmetic ------------------------------------------------------------------

    def _additive(self) -> Expr:
        left = self._multiplicative()
        while (token := self._peek()).kind is Kind.OPERATOR and token.text in ("+", "-"):
            self._advance()
            left = Arithmetic(token.text, left, self._multiplicative(), left.pos)
        return left

    def _multiplicative(self) -> Expr:
        left = self._unary()
        while (token := self._peek()).kind is Kind.OPERATOR and token.text in ("*", "/", "%"):
            self._advance()
            left = Arithmetic(token.text, left, self._unary(), left.pos)
        return left

    def _unary(self) -> Expr:
        token = self._peek()
        if token.kind is not Kind.OPERATOR or token.text not in ("+", "-"):
            return self._primary()
        self._advance()
        self._enter(token)
        operand = self._unary()
        self._nesting -= 1
        value = operand.value if isinstance(operand, Literal) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # Folding the sign into the literal lets "x > -5" take the literal fast path.
            return Literal(value if token.text == "+" else -value, token.pos)
        return Unary(token.text, operand, token.pos)

    def _primary(self) -> Expr:
        token = self._advance()
        if token.kind is Kind.IDENTIFIER:
            return Identifier(token.text, token.pos)
        if token.kind in (Kind.STRING, Kind.NUMBER):
            assert token.value is not None
            return Literal(token.value, token.pos)
        if token.kind is Kind.KEYWORD and token.text in ("TRUE", "FALSE"):
            return Literal(token.text == "TRUE", token.pos)
        if token.kind is Kind.OPERATOR and token.text == "(":
            self._enter(token)
            inner = self._or()
            self._nesting -= 1
            self._expect_operator(")", 'expected ")"')
            # Errors about the parenthesised operand should point at its "(".
            return replace(inner, pos=token.pos)
        raise self._error(token, "expected an expression")

    # -- checks ----------------------------------------------------------------------

    def _boolean(self, expr: Expr) -> Expr:
        if isinstance(expr, (*BOOLEAN_NODES, Identifier)) or (
            isinstance(expr, Literal) and isinstance(expr.value, bool)
        ):
            return expr
        raise InvalidSelector(self._text, expr.pos, "expected a boolean expression")

    def _numeric(self, expr: Expr, operator: str) -> None:
        if isinstance(expr, BOOLEAN_NODES) or (
            isinstance(expr, Literal) and isinstance(expr.value, (str, bool))
        ):
            raise InvalidSelector(self._text, expr.pos, f"expected a numeric operand for {operator}")

    def _enter(self, token: Token) -> None:
        self._nesting += 1
        # Parentheses, NOT and signs recurse here; each level costs about eight Python frames.
        if self._nesting > MAX_DEPTH:
            raise self._error(token, f"selector nests more than {MAX_DEPTH} deep")

    # -- token stream ----------------------------------------------------------------

    def _peek(self) -> Token:
        return self._tokens[self._index]

    def _advance(self) -> Token:
        token = self._tokens[self._index]
        if token.kind is not Kind.END:
            self._index += 1
        return token

    def _at_keyword(self, word: str) -> bool:
        token = self._peek()
        return token.kind is Kind.KEYWORD and token.text == word

    def _accept_keyword(self, word: str) -> bool:
        if self._at_keyword(word):
            self._index += 1
            return True
        return False

    def _expect_keyword(self, word: str, problem: str) -> None:
        if not self._accept_keyword(word):
            raise self._error(self._peek(), problem)

    def _accept_operator(self, symbol: str) -> bool:
        token = self._peek()
        if token.kind is Kind.OPERATOR and token.text == symbol:
            self._index += 1
            return True
        return False

    def _expect_operator(self, symbol: str, problem: str) -> None:
        if not self._accept_operator(symbol):
            raise self._error(self._peek(), problem)

    def _string(self, problem: str) -> str:
        token = self._peek()
        if token.kind is not Kind.STRING:
            raise self._error(token, problem)
        self._index += 1
        assert isinstance(token.value, str)
        return token.value

    def _error(self, token: Token, problem: str) -> InvalidSelector:
        return InvalidSelector(self._text, token.pos, problem)


_DESTINATION = "JMSDestination"
#: ActiveMQ's names of destinations as its selectors see them (``ActiveMQDestination``'s
#: qualified names) and stompd's prefix for each; another connection's temporary ones are
#: ``/remote-temp-*/`` here, as a MESSAGE names them.
_QUALIFIED = (
    ("queue://", "/queue/"),
    ("topic://", "/topic/"),
    ("temp-queue://", "/remote-temp-queue/"),
    ("temp-topic://", "/remote-temp-topic/"),
)


def stompd_destination(value: str) -> str:
    """A name a selector compares ``JMSDestination`` with, as a message's destination is
    named here: ActiveMQ's ``queue://orders`` (what ``JMSDestination`` is in ActiveMQ) is
    ``/queue/orders``; any other string stays as it is (``/queue/orders`` already is)."""
    for qualified, prefix in _QUALIFIED:
        if value.startswith(qualified):
            return prefix + value[len(qualified) :]
    return value


def _destination_named(expr: Expr, other: Expr | None = None) -> Expr:
    """``expr``, a string literal compared with ``JMSDestination`` (``other``), in stompd's
    spelling (``stompd_destination``): done once, when the selector is parsed."""
    if (
        isinstance(expr, Literal)
        and isinstance(expr.value, str)
        and isinstance(other, Identifier)
        and other.name == _DESTINATION
    ):
        return replace(expr, value=stompd_destination(expr.value))
    return expr
