"""Splits selector text into tokens, with the literal forms of ActiveMQ's SelectorParser.jj."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from broker.core.base.selector.errors import InvalidSelector


class Kind(enum.Enum):
    IDENTIFIER = enum.auto()
    KEYWORD = enum.auto()
    STRING = enum.auto()
    NUMBER = enum.auto()
    OPERATOR = enum.auto()
    END = enum.auto()


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    #: Keywords are upper-cased; operators are their symbol; END is "".
    text: str
    pos: int
    #: The decoded value of a STRING or NUMBER token.
    value: str | int | float | None = None


KEYWORDS = frozenset({"AND", "OR", "NOT", "BETWEEN", "IN", "LIKE", "ESCAPE", "IS", "NULL", "TRUE", "FALSE"})

# Alternation order matters: floats before integers so "1e3" is not "1" then "e3", and
# hex before both so the "0" of "0x1F" is not taken alone.
_SCANNER = re.compile(
    r"""
      (?P<skip> \s+ | --[^\r\n]* | /\*.*?\*/ )
    | (?P<unclosed_comment> /\* )
    | (?P<hex> 0[xX][0-9a-fA-F]+[lL]? )
    | (?P<float> (?: [0-9]+\.[0-9]* | \.[0-9]+ ) (?:[eE][+-]?[0-9]+)? [fFdD]?
               | [0-9]+ (?: [eE][+-]?[0-9]+[fFdD]? | [fFdD] ) )
    | (?P<int> [0-9]+[lL]? )
    | (?P<string> '(?:[^']|'')*' )
    | (?P<identifier> [^\W\d][\w$]* | \$[\w$]* )
    | (?P<operator> <> | <= | >= | [=<>+\-*/%(),] )
    """,
    re.VERBOSE | re.DOTALL,
)


def tokenize(text: str) -> list[Token]:
    """Every token of ``text``, ending with one END token; raises InvalidSelector on bad input."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        match = _SCANNER.match(text, pos)
        if match is None:
            raise InvalidSelector(text, pos, _unlexable(text, pos))
        group = match.lastgroup
        if group == "unclosed_comment":
            raise InvalidSelector(text, pos, "unterminated comment")
        lexeme = match.group()
        if group == "identifier":
            keyword = lexeme.upper()
            if lexeme.isascii() and keyword in KEYWORDS:
                tokens.append(Token(Kind.KEYWORD, keyword, pos))
            else:
                tokens.append(Token(Kind.IDENTIFIER, lexeme, pos))
        elif group == "string":
            tokens.append(Token(Kind.STRING, lexeme, pos, lexeme[1:-1].replace("''", "'")))
        elif group == "operator":
            tokens.append(Token(Kind.OPERATOR, lexeme, pos))
        elif group != "skip":
            tokens.append(Token(Kind.NUMBER, lexeme, pos, _number(text, pos, group, lexeme)))
        pos = match.end()
    tokens.append(Token(Kind.END, "", len(text)))
    return tokens


def _number(text: str, pos: int, group: str | None, lexeme: str) -> int | float:
    if group == "float":
        return float(lexeme.rstrip("fFdD"))
    digits = lexeme.rstrip("lL")
    if group == "hex":
        return int(digits, 16)
    if len(digits) > 1 and digits[0] == "0":
        # Java reads a leading zero as octal, so "010" is 8, as in ActiveMQ.
        if "8" in digits or "9" in digits:
            raise InvalidSelector(text, pos, "invalid octal literal")
        return int(digits, 8)
    try:
        return int(digits)
    except ValueError:  # past int()'s digit limit; no header could compare equal anyway
        raise InvalidSelector(text, pos, "number too long") from None


def _unlexable(text: str, pos: int) -> str:
    if text[pos] == "'":
        return "unterminated string literal"
    if text.startswith("!=", pos):
        return 'unexpected "!="; not-equal is "<>"'
    return f"unexpected character {text[pos]!r}"
