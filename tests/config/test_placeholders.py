from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from config.placeholders import Placeholders, parse_properties
from tests.config.helpers import load_body


def make(**defines: str) -> Placeholders:
    return Placeholders(defines, {"HOME_ENV": "/home/x"}, Path("/etc/stompd"), Path("/srv"))


def test_activemq_paths() -> None:
    p = make()
    assert p.resolve("${activemq.base}|${activemq.home}|${activemq.conf}|${activemq.data}").text == (
        "/srv|/srv|/etc/stompd|/srv/data"
    )
    env = Placeholders({}, {"ACTIVEMQ_BASE": "/opt/b", "ACTIVEMQ_DATA": "/var/d"}, Path("/c"), Path("/srv"))
    assert env.resolve("${activemq.base} ${activemq.data}").text == "/opt/b /var/d"


def test_order_defaults_nesting_and_missing() -> None:
    p = make(a="${b}-x", b="B")
    p.load_properties("a=file\nc=fromfile\n")
    resolved = p.resolve("${a} ${c} ${HOME_ENV} ${nope:fallback} ${missing}")
    assert resolved.text == "B-x fromfile /home/x fallback ${missing}"
    assert resolved.missing == ["missing"]


def test_encrypted_values_count_as_missing() -> None:
    p = make()
    p.load_properties("pw=ENC(abc)")
    assert p.resolve("${pw}").missing == ["pw"]
    assert "jasypt" in p.why_missing("pw")


def test_properties_syntax() -> None:
    text = "# c\n! c\na=1\nb : 2\nc 3\nd=long \\\n   value\ne=\\u0041\\tz\n  f = spaced  \n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "long value",
        "e": "A\tz",
        "f": "spaced  ",
    }


@given(st.text().filter(lambda t: "${" not in t))
def test_text_without_placeholders_is_unchanged(text: str) -> None:
    assert make().resolve(text).text == text


@given(
    name=st.from_regex(r"[a-z][a-z0-9.]{0,10}", fullmatch=True),
    value=st.text().filter(lambda t: "${" not in t),
)
def test_a_defined_name_is_substituted(name: str, value: str) -> None:
    assert make(**{name: value}).resolve(f"<${{{name}}}>").text == f"<{value}>"


def test_activemq_base_that_nothing_sets_is_warned_of_once_with_its_line(tmp_path: Path) -> None:
    body = (
        '<systemUsage><systemUsage><tempUsage><tempUsage limit="64 mb"/></tempUsage>'
        "</systemUsage></systemUsage>\n"
        '<plugins><simpleAuthenticationPlugin><users><authenticationUser username="u" password="p"'
        ' groups="${activemq.base}"/></users></simpleAuthenticationPlugin></plugins>\n'
        '<persistenceAdapter><levelDB directory="${activemq.base}/store"/></persistenceAdapter>\n'
    )
    guessed = load_body(tmp_path, body, environ={}, cwd=tmp_path)
    said = [w for w in guessed.warnings if "${activemq.base} is not set" in str(w)]
    # ActiveMQ's start script always sets it: a file that uses it means ActiveMQ's place.
    assert len(said) == 1
    assert said[0].line == 6  # where it is first read
    assert f"taken as the working directory {tmp_path}" in str(said[0])
    assert "ACTIVEMQ_BASE" in str(said[0])
    given = load_body(tmp_path, body, environ={"ACTIVEMQ_BASE": str(tmp_path)}, cwd=tmp_path)
    assert not [w for w in given.warnings if "is not set" in str(w)]
