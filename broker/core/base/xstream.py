"""A JMS map or object message's body as ActiveMQ's STOMP side writes it: XStream's XML,
or XStream driven through Jettison's "mapped" JSON (ActiveMQ 5.17's JmsFrameTranslator,
``transformation:jms-map-xml`` / ``jms-map-json`` / ``jms-object-*``).

A value is ``(kind, payload)``, the kind XStream's name for its Java type: ``string``,
``char`` (a str), ``int``, ``long``, ``short``, ``byte`` (an int in the type's range),
``double``, ``float`` (a float), ``boolean``, ``null`` (None), ``map`` (a dict of str to
values, in order) and ``list`` (a list of values).  These are what ActiveMQ's XStream
lets in (``XStreamSupport``: primitives, ``String``, maps and collections); any other
element is refused with the name ActiveMQ's refusal gives (``java.util.Date``, ``[B``).

The forms, checked against ActiveMQ 5.17 (tests/integration/test_transformations.py):

* XML: ``<map>`` of ``<entry>``, each its key then its value, pretty-printed two spaces a
  level; ``<map/>`` empty, ``<null/>``.
* JSON: the same tree, an element an object member, its children an object whose
  repeated names are one array (``{"map":{"entry":[{"string":["name","Dejan"]},
  {"string":"city","int":5}]}}``; one entry is not an array; an empty element is
  ``""``); a text that reads back as Java's ``long``, ``double`` or ``boolean`` the same
  is written as a JSON number or boolean, whatever its kind (a string ``"5"`` is ``5``:
  its element's name keeps its kind).  A list's items of one kind are one array, so a
  list of mixed kinds comes back grouped by kind, as Jettison groups it.

Sans-IO and standard library only (``json``, ``re``): the XML is the small part of XML
that XStream writes and reads, read here without a DTD, entities or anything fetched.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any, Final

Value = tuple[str, Any]

MAP: Final = "map"
LIST: Final = "list"
_ENTRY: Final = "entry"
_INTS: Final = {"int": 32, "long": 64, "short": 16, "byte": 8}
_FLOATS: Final = frozenset({"double", "float"})
_TEXTS: Final = frozenset({"string", "char"})
#: How ActiveMQ names what XStream's permissions refuse: the Java class.
_CLASSES: Final = {
    "byte-array": "[B",
    "int-array": "[I",
    "long-array": "[J",
    "char-array": "[C",
    "date": "java.util.Date",
    "sql-timestamp": "java.sql.Timestamp",
    "big-int": "java.math.BigInteger",
    "big-decimal": "java.math.BigDecimal",
    "url": "java.net.URL",
    "file": "java.io.File",
    "locale": "java.util.Locale",
}
#: Deeper than this is refused (a body nested without end would exhaust the stack).
MAX_DEPTH: Final = 64
_INF: Final = float("inf")


class Refused(ValueError):
    """The body is not a value of this form; ``str()`` is what the message's
    ``transformation-error`` header says."""


# A tree as XStream reads and writes it: (name, text, children).
_Node = tuple[str, str, list["_Node"]]


# --- reading -------------------------------------------------------------------------


def read(body: bytes, as_json: bool, kind: str | None = MAP) -> Value:
    """The value ``body`` holds (``kind``: what it must be, ``MAP`` for a map message;
    None: any, an object message).  Raises ``Refused``."""
    try:
        text = body.decode()
    except UnicodeDecodeError as exc:
        raise Refused(f"not UTF-8: {exc.reason}") from None
    # Read first, as XStream does: what it cannot read is refused as such, before what is
    # read is found not to be a map.
    value = _value(_from_json(text) if as_json else _from_xml(text), 0)
    if kind == MAP and value[0] != MAP:
        raise Refused(f"{value[0]} is not a map")
    return value


def _class_of(name: str) -> str:
    return _CLASSES.get(name, name)


def _value(node: _Node, depth: int) -> Value:
    name, text, children = node
    if depth > MAX_DEPTH:
        raise Refused(f"nested more than {MAX_DEPTH} deep")
    if name in _TEXTS:
        _unicode(text)
        return name, text[:1] if name == "char" else text
    bits = _INTS.get(name)
    if bits is not None:
        try:
            # (Python reads "1_000" too; Java does not.)
            if "_" in text:
                raise ValueError(text)
            number = int(text.strip())
        except ValueError:
            raise Refused(f'For input string: "{text}"') from None
        if not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
            raise Refused(f'Value out of range. Value:"{text}"')
        return name, number
    if name in _FLOATS:
        try:
            if "_" in text:
                raise ValueError(text)
            real = float(text.strip())
        except ValueError:
            raise Refused(f'For input string: "{text}"') from None
        return name, _float32(real) if name == "float" else real
    if name == "boolean":
        return name, text.lower() == "true"
    if name == "null":
        return name, None
    if name == MAP:
        entries: dict[str, Value] = {}
        for entry in children:
            if entry[0] != _ENTRY or len(entry[2]) != 2:
                raise Refused(f"a map's {entry[0]} is not an entry of a key and a value")
            key, value = entry[2]
            if key[0] != "string":
                raise Refused(f"a map's key is a {_class_of(key[0])}, not a string")
            _unicode(key[1])
            entries[key[1]] = _value(value, depth + 1)
        return name, entries
    if name == LIST:
        return name, [_value(child, depth + 1) for child in children]
    raise Refused(_class_of(name))


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _unicode(text: str) -> None:
    """A text's characters must be Unicode's (a JSON ``\\ud800`` or XML ``&#xd800;`` is
    not one, and could not be written back as UTF-8)."""
    if _SURROGATE.search(text):
        raise Refused("not Unicode text: a lone surrogate")


def _float32(number: float) -> float:
    try:
        return float(struct.unpack("f", struct.pack("f", number))[0])
    except OverflowError:
        return _INF if number > 0 else -_INF


def _from_json(text: str) -> _Node:
    """Jettison's mapped reading: an object's members are elements in order, an array
    repeats its member, a scalar is its element's text."""
    try:
        document = json.loads(text, object_pairs_hook=list, parse_float=str, parse_int=str)
    except RecursionError:
        raise Refused(f"nested more than {MAX_DEPTH} deep") from None
    except ValueError as exc:
        raise Refused(f"not JSON: {exc}") from None
    if not isinstance(document, list) or len(document) != 1 or not isinstance(document[0], tuple):
        raise Refused("not JSON of one element (an object of one member)")
    name, content = document[0]
    return _json_node(name, content, 0)


def _json_node(name: str, content: object, depth: int) -> _Node:
    if depth > MAX_DEPTH:
        raise Refused(f"nested more than {MAX_DEPTH} deep")
    if isinstance(content, list) and all(isinstance(pair, tuple) for pair in content):
        children: list[_Node] = []
        for child, value in content:
            items = value if isinstance(value, list) and not _is_object(value) else [value]
            children += (_json_node(child, item, depth + 1) for item in items)
        return name, "", children
    if isinstance(content, list):
        raise Refused(f"{name}: an array is not an element")
    if content is None:
        return name, "", []
    if isinstance(content, bool):
        return name, "true" if content else "false", []
    if isinstance(content, str) and name in _FLOATS:
        # A JSON number's text as Java's Double.toString would give it back (1e3: 1000.0).
        try:
            return name, java_double(float(content)), []
        except ValueError:
            return name, content, []
    return name, str(content), []


def _is_object(value: list[Any]) -> bool:
    """Whether a decoded JSON list is an object (pairs), not an array."""
    return not value or all(isinstance(pair, tuple) for pair in value)


_REFERENCE: Final = re.compile(r"&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);")
_NAMED: Final = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
#: What ends each kind of markup that is not an element (comments, processing
#: instructions, CDATA), and whether its content is text.
_SKIPPED: Final = (("<!--", "-->", False), ("<?", "?>", False), ("<![CDATA[", "]]>", True))


def _from_xml(text: str) -> _Node:
    """XStream's XML: elements and their text (attributes, comments, processing
    instructions left out); no DTD, so no entity but XML's own five and numeric ones."""
    stack: list[_Node] = [("", "", [])]
    texts: list[list[str]] = [[]]
    position = 0
    size = len(text)
    find = text.find
    while position < size:
        start = find("<", position)
        if start < 0:
            start = size
        if start > position:
            texts[-1].append(_unreference(text[position:start]))
            if start == size:
                break
        for opening, closing, is_text in _SKIPPED:
            if text.startswith(opening, start):
                end = find(closing, start + len(opening))
                if end < 0:
                    raise Refused(f"not well-formed XML: {opening} is not closed")
                if is_text:
                    texts[-1].append(text[start + len(opening) : end])
                position = end + len(closing)
                break
        else:
            end = find(">", start)
            if end < 0:
                raise Refused("not well-formed XML: a tag is not closed")
            position = end + 1
            tag = text[start + 1 : end]
            if tag.startswith("!"):
                raise Refused("not XStream's XML: a DTD or declaration")
            closing_tag = tag.startswith("/")
            empty = tag.endswith("/")
            words = tag.strip("/").split(None, 1)
            if not words:
                raise Refused(f"not well-formed XML at character {start}")
            name = words[0]
            if closing_tag:
                if len(stack) == 1 or stack[-1][0] != name:
                    raise Refused(f"not well-formed XML: </{name}> closes nothing")
                node = stack.pop()
                stack[-1][2].append((node[0], "".join(texts.pop()), node[2]))
            elif empty:
                stack[-1][2].append((name, "", []))
            else:
                if len(stack) > MAX_DEPTH + 1:
                    raise Refused(f"nested more than {MAX_DEPTH} deep")
                stack.append((name, "", []))
                texts.append([])
    if len(stack) != 1:
        raise Refused(f"not well-formed XML: <{stack[-1][0]}> is not closed")
    roots = stack[0][2]
    if len(roots) != 1 or "".join(texts[0]).strip():
        raise Refused("not XML of one element")
    return roots[0]


def _unreference(text: str) -> str:
    if "&" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref[0] != "#":
            named = _NAMED.get(ref)
            if named is None:
                raise Refused(f"not XStream's XML: an entity &{ref};")
            return named
        try:
            return chr(int(ref[2:], 16) if ref[1] == "x" else int(ref[1:]))
        except (ValueError, OverflowError):
            raise Refused(f"not well-formed XML: &{ref};") from None

    unreferenced = _REFERENCE.sub(one, text)
    if "&" in _REFERENCE.sub("", text):
        raise Refused("not well-formed XML: a lone '&'")
    return unreferenced


# --- writing -------------------------------------------------------------------------


def write(value: Value, as_json: bool) -> bytes:
    """``value`` in the form ActiveMQ writes (XStream's PrettyPrintWriter, or Jettison)."""
    node = _node(value)
    if as_json:
        return ("{" + _json_member(node) + "}").encode()
    lines: list[str] = []
    _xml(node, 0, lines)
    return "\n".join(lines).encode()


def _node(value: Value) -> _Node:
    kind, payload = value
    if kind == MAP:
        return (
            kind,
            "",
            [(_ENTRY, "", [("string", key, []), _node(item)]) for key, item in payload.items()],
        )
    if kind == LIST:
        return kind, "", [_node(item) for item in payload]
    return kind, _text(kind, payload), []


def _text(kind: str, payload: Any) -> str:
    if kind == "boolean":
        return "true" if payload else "false"
    if kind == "null":
        return ""
    if kind == "double":
        return java_double(payload)
    if kind == "float":
        return java_double(payload, single=True)
    return str(payload)


def java_double(number: float, single: bool = False) -> str:
    """Java's ``Double.toString`` (``Float.toString`` for ``single``): the shortest digits
    that read back, plain from 10^-3 to 10^7, else ``d.dddE±n``."""
    if number != number:
        return "NaN"
    if number in (_INF, -_INF):
        return "Infinity" if number > 0 else "-Infinity"
    sign = "-" if str(number).startswith("-") else ""
    if number == 0:
        return sign + "0.0"
    shown = _shortest(abs(number), single)
    mantissa, _, power = shown.partition("e")
    whole, _, fraction = mantissa.partition(".")
    figures = whole + fraction
    leading = len(figures) - len(figures.lstrip("0"))
    exponent = int(power or 0) + len(whole) - 1 - leading
    figures = figures.strip("0") or "0"
    if -3 <= exponent < 7:
        if exponent >= 0:
            return (
                f"{sign}{figures[: exponent + 1].ljust(exponent + 1, '0')}.{figures[exponent + 1 :] or '0'}"
            )
        return f"{sign}0.{'0' * (-exponent - 1)}{figures}"
    return f"{sign}{figures[0]}.{figures[1:] or '0'}E{exponent}"


def _shortest(number: float, single: bool) -> str:
    if not single:
        return repr(number)
    for precision in range(1, 10):
        text = f"{number:.{precision}g}"
        if _float32(float(text)) == number:
            return text
    return repr(number)


def _xml(node: _Node, depth: int, lines: list[str]) -> None:
    name, text, children = node
    indent = "  " * depth
    if children:
        lines.append(f"{indent}<{name}>")
        for child in children:
            _xml(child, depth + 1, lines)
        lines.append(f"{indent}</{name}>")
    elif text or name in _TEXTS:
        lines.append(f"{indent}<{name}>{_escape(text)}</{name}>")
    else:
        lines.append(f"{indent}<{name}/>")


_XML_ESCAPES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;", "\r": "&#xd;"}
_TO_ESCAPE: Final = re.compile(r"[&<>\"'\r\x00-\x08\x0b\x0c\x0e-\x1f]")


def _escape(text: str) -> str:
    return _TO_ESCAPE.sub(lambda m: _XML_ESCAPES.get(m.group(), f"&#x{ord(m.group()):x};"), text)


def _json_member(node: _Node) -> str:
    return _quote(node[0]) + ":" + _json_content(node)


def _json_content(node: _Node) -> str:
    _, text, children = node
    if not children:
        return _json_scalar(text)
    grouped: dict[str, list[str]] = {}
    for child in children:
        grouped.setdefault(child[0], []).append(_json_content(child))
    members = [
        _quote(child) + ":" + (items[0] if len(items) == 1 else "[" + ",".join(items) + "]")
        for child, items in grouped.items()
    ]
    return "{" + ",".join(members) + "}"


_LONG: Final = re.compile(r"-?[1-9][0-9]*|0")


def _json_scalar(text: str) -> str:
    """Jettison's DefaultConverter: a text that Java reads back as itself as a long, a
    double or a boolean is that JSON value."""
    if _LONG.fullmatch(text) and -(1 << 63) <= int(text) < 1 << 63:
        return text
    if text in ("true", "false"):
        return text
    try:
        number = float(text)
    except ValueError:
        return _quote(text)
    if number not in (_INF, -_INF) and number == number and java_double(number) == text:
        # JSONObject.numberToString: trailing zeros after a point go (1.0: 1).
        if "." in text and "E" not in text:
            text = text.rstrip("0").rstrip(".")
        return text
    return _quote(text)


def _quote(text: str) -> str:
    # Jettison escapes every '/' (ActiveMQ's statistics: "stomp:\\/\\/localhost:61613").
    return json.dumps(text, ensure_ascii=False).replace("/", "\\/")
