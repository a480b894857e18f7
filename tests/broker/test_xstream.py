"""The JMS map and object bodies (broker.core.base.xstream): ActiveMQ 5.17's forms, as
probed (the literal bodies below are what it sent), and round trips json <-> xml <-> map."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.base import xstream
from broker.core.base.xstream import LIST, MAP, Refused, Value, java_double, read, write

# What ActiveMQ 5.17 wrote for a SEND of J (or X) read by a jms-map-json (jms-map-xml) subscriber.
J = b'{"map":{"entry":[{"string":["name","Dejan"]},{"string":"city","int":5}]}}'
X = b"""<map>
  <entry>
    <string>name</string>
    <string>Dejan</string>
  </entry>
  <entry>
    <string>city</string>
    <int>5</int>
  </entry>
</map>"""
ONE = ("map", {"name": ("string", "Dejan"), "city": ("int", 5)})


def test_activemqs_json_and_xml_of_a_map() -> None:
    assert read(J, True) == ONE
    assert read(X, False) == ONE
    assert write(ONE, True) == J
    assert write(ONE, False) == X


def test_what_activemq_writes_for_each_kind() -> None:
    sent = (
        b"<map><entry><string>b</string><boolean>true</boolean></entry>"
        b"<entry><string>s</string><short>3</short></entry><entry><string>c</string><char>x</char></entry>"
        b"<entry><string>d</string><double>1.5</double></entry><entry><string>f</string><float>2.5</float></entry>"
        b"<entry><string>y</string><byte>7</byte></entry><entry><string>l</string><long>5</long></entry>"
        b"<entry><string>n</string><null/></entry></map>"
    )
    assert write(read(sent, False), True) == (
        b'{"map":{"entry":[{"string":"b","boolean":true},{"string":"s","short":3},{"string":"c","char":"x"},'
        b'{"string":"d","double":1.5},{"string":"f","float":2.5},{"string":"y","byte":7},{"string":"l","long":5},'
        b'{"string":"n","null":""}]}}'
    )


def test_jettison_writes_a_text_that_reads_back_as_a_number_or_boolean_as_one() -> None:
    texts = {"a": "5", "b": "true", "c": "007", "d": "", "e": "1.50", "g": "x & <y> \"q\" 'a'", "h": "null"}
    value: Value = (MAP, {key: ("string", text) for key, text in texts.items()})
    value[1]["f"] = ("double", 1.0)
    value[1]["i"] = ("long", 123456789012345678)
    assert write(value, True) == (
        b'{"map":{"entry":[{"string":["a",5]},{"string":["b",true]},{"string":["c","007"]},'
        b'{"string":["d",""]},{"string":["e","1.50"]},{"string":["g","x & <y> \\"q\\" \'a\'"]},'
        b'{"string":["h","null"]},{"string":"f","double":1},{"string":"i","long":123456789012345678}]}}'
    )


def test_jettison_escapes_every_slash() -> None:
    # As ActiveMQ 5.17's statistics reply writes its STOMP connector's URI.
    value: Value = (MAP, {"stomp": ("string", "stomp://localhost:26987")})
    assert write(value, True) == b'{"map":{"entry":{"string":["stomp","stomp:\\/\\/localhost:26987"]}}}'
    assert read(write(value, True), True) == value


def test_nested_maps_lists_and_empty_ones() -> None:
    sent = (
        b"<map><entry><string>m</string><map><entry><string>x</string><int>1</int></entry></map></entry>"
        b"<entry><string>li</string><list><int>1</int><string>two</string></list></entry></map>"
    )
    assert write(read(sent, False), True) == (
        b'{"map":{"entry":[{"string":"m","map":{"entry":{"string":"x","int":1}}},'
        b'{"string":"li","list":{"int":1,"string":"two"}}]}}'
    )
    assert write(read(b'{"map":""}', True), False) == b"<map/>"
    assert write(read(b'{"map":{}}', True), True) == b'{"map":""}'
    assert read(b'{"map":{"entry":{"string":["a","b"]}}}', True) == (MAP, {"a": ("string", "b")})


def test_xml_escapes_as_xstream_does() -> None:
    value: Value = (MAP, {"g": ("string", "x & <y> \"q\" 'a' \u00e9 \t tab\r"), "e": ("string", "")})
    assert (
        write(value, False)
        == (
            "<map>\n  <entry>\n    <string>g</string>\n"
            "    <string>x &amp; &lt;y&gt; &quot;q&quot; &apos;a&apos; \u00e9 \t tab&#xd;</string>\n"
            "  </entry>\n  <entry>\n    <string>e</string>\n    <string></string>\n  </entry>\n</map>"
        ).encode()
    )


def test_json_numbers_are_read_as_their_elements_kind() -> None:
    body = b'{"map":{"entry":[{"string":["a",5]},{"string":"b","int":"7"},{"string":"c","double":2}]}}'
    assert read(body, True) == (MAP, {"a": ("string", "5"), "b": ("int", 7), "c": ("double", 2.0)})


@pytest.mark.parametrize(
    ("body", "as_json", "words"),
    [
        # ActiveMQ's refusals name the class XStream's permissions refuse.
        (b"<java.io.File><path>/etc/passwd</path></java.io.File>", False, "java.io.File"),
        (b"<map><entry><string>ba</string><byte-array>AQID</byte-array></entry></map>", False, "[B"),
        (
            b"<map><entry><string>d</string><date>2020-01-01 00:00:00.0 UTC</date></entry></map>",
            False,
            "java.util.Date",
        ),
        (b"<foo/>", False, "foo"),
        (b"<list><string>a</string></list>", False, "list is not a map"),
        (b'{"map":{"entry":[{"int":5,"string":"x"}]}}', True, "key is a int, not a string"),
        (b"<map><entry><string>a</string></entry></map>", False, "not an entry of a key and a value"),
        (b"<map><entry><string>a</string>", False, "not closed"),
        (b"not json", True, "not JSON"),
        (b"[1,2]", True, "not JSON of one element"),
        (b'<!DOCTYPE x [<!ENTITY e "boom">]><map/>', False, "DTD"),
        (b"<map><entry><string>a</string><string>&e;</string></entry></map>", False, "entity &e;"),
        (b"<map><entry><string>a</string><int>x</int></entry></map>", False, 'For input string: "x"'),
        (b"<map><entry><string>a</string><byte>300</byte></entry></map>", False, "out of range"),
        (b"<list>" * 100 + b"</list>" * 100, False, "nested more than"),
        (b'{"list":' * 2000 + b'""' + b"}" * 2000, True, "nested more than"),
        (b"\xff", True, "not UTF-8"),
        (b'{"map":{"entry":{"string":["a","\\ud800"]}}}', True, "lone surrogate"),
        (b"<map><entry><string>&#xd800;</string><int>1</int></entry></map>", False, "lone surrogate"),
    ],
)
def test_what_is_refused_and_in_what_words(body: bytes, as_json: bool, words: str) -> None:
    with pytest.raises(Refused, match=None) as refused:
        read(body, as_json)
    assert words in str(refused.value)


def test_an_object_is_any_one_value() -> None:
    assert read(b"<string>hello</string>", False, None) == ("string", "hello")
    assert write(read(b'{"int":5}', True, None), True) == b'{"int":5}'


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1.0"),
        (2.5, "2.5"),
        (1e10, "1.0E10"),
        (1e7, "1.0E7"),
        (9999999.0, "9999999.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (-0.0, "-0.0"),
        (1.5e300, "1.5E300"),
        (100.0, "100.0"),
        (math.inf, "Infinity"),
    ],
)
def test_java_double_to_string(number: float, text: str) -> None:
    assert java_double(number) == text


# --- round trips -------------------------------------------------------------------

# Texts (values and keys) Jettison writes as a number whose text is not theirs (a string
# "1.0" is 1) do not come back as they went: ActiveMQ's loss too, left out here.
_texts = st.text(max_size=10).filter(lambda text: not ("." in text and text.endswith("0")))
_keys = _texts
_scalars: st.SearchStrategy[Value] = st.one_of(
    st.tuples(st.just("string"), _texts),
    st.tuples(st.just("char"), st.characters(codec="utf-8")),
    st.tuples(st.just("int"), st.integers(-(1 << 31), (1 << 31) - 1)),
    st.tuples(st.just("long"), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.tuples(st.just("short"), st.integers(-(1 << 15), (1 << 15) - 1)),
    st.tuples(st.just("byte"), st.integers(-128, 127)),
    st.tuples(st.just("double"), st.floats(allow_nan=False)),
    st.tuples(st.just("float"), st.floats(allow_nan=False, width=32)),
    st.tuples(st.just("boolean"), st.booleans()),
    st.tuples(st.just("null"), st.none()),
)


def _list_of_one_kind(items: st.SearchStrategy[Value]) -> st.SearchStrategy[Value]:
    # Jettison groups a list's items by kind: a list of one kind keeps its order.
    return (
        st.lists(items, max_size=4)
        .filter(lambda values: len({kind for kind, _ in values}) <= 1)
        .map(lambda values: (LIST, values))
    )


values: st.SearchStrategy[Value] = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.dictionaries(_keys, inner, max_size=4).map(lambda entries: (MAP, entries)),
        _list_of_one_kind(inner),
    ),
    max_leaves=12,
)
maps = st.dictionaries(_keys, values, max_size=5).map(lambda entries: (MAP, entries))


@given(maps)
def test_a_map_comes_back_from_xml(value: Value) -> None:
    assert read(write(value, False), False) == value


@given(maps)
def test_a_map_comes_back_from_json(value: Value) -> None:
    assert read(write(value, True), True) == value


@given(maps)
def test_json_to_xml_to_json_is_the_same_text(value: Value) -> None:
    as_json = write(value, True)
    as_xml = write(read(as_json, True), False)
    assert write(read(as_xml, False), True) == as_json
    assert write(read(as_json, True), False) == write(value, False)


@given(values)
def test_an_object_comes_back_in_either_form(value: Value) -> None:
    for as_json in (True, False):
        assert read(write(value, as_json), as_json, None) == value


def test_max_depth_is_what_a_map_can_be_read_to() -> None:
    body = b"<list>" * xstream.MAX_DEPTH + b"</list>" * xstream.MAX_DEPTH
    assert read(body, False, None)[0] == LIST


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["map", "entry", "string", "int", "list", "x"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(_json)
def test_any_json_is_read_or_refused(document: object) -> None:
    body = json.dumps(document).encode()
    for kind in (MAP, None):
        try:
            read(body, True, kind)
        except Refused:
            pass


_xml_pieces = st.sampled_from(
    [
        "<map>",
        "</map>",
        "<entry>",
        "</entry>",
        "<string>",
        "</string>",
        "<int>",
        "</int>",
        "<list/>",
        "a",
        "5",
        "&amp;",
        "&",
        "<",
        ">",
        "<!--c-->",
        "<![CDATA[x]]>",
        "<?pi?>",
        "<!D>",
        " ",
        "<null/>",
        "</>",
        "<>",
    ]
)


@given(st.lists(_xml_pieces, max_size=16).map("".join))
def test_any_xml_is_read_or_refused(text: str) -> None:
    for kind in (MAP, None):
        try:
            read(text.encode(), False, kind)
        except Refused:
            pass
