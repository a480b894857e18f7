"""Hostile files: refused with the line named, and nothing read from disk or network."""

from __future__ import annotations

import builtins
import http.server
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.issues import ConfigError
from config.loader import load, load_bytes

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE beans [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<beans><broker brokerName="&lol9;"/></beans>
"""


class Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:
        Recorder.requests.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'<!ENTITY leak "leaked">')

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    Recorder.requests = []
    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def no_reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A secret file; the test fails if anything opens it or fetches a URL."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    real_open = builtins.open

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        assert "secret" not in str(file), f"the parser opened {file}"
        return real_open(file, *args, **kwargs)

    def no_urlopen(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the parser fetched {args}")

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(urllib.request, "urlopen", no_urlopen)
    return secret


def refused(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load(path)
    return caught.value


def test_billion_laughs_is_refused_at_its_first_entity(tmp_path: Path) -> None:
    path = tmp_path / "bomb.xml"
    path.write_text(BILLION_LAUGHS)
    error = refused(path)
    (issue,) = error.errors
    assert issue.line == 3
    assert "declares an entity ('lol')" in issue.reason
    assert f"{path}:3:" in str(issue)


def test_external_file_entity_is_refused_and_the_file_not_read(tmp_path: Path, no_reads: Path) -> None:
    path = tmp_path / "external.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE beans [\n<!ENTITY x SYSTEM "file://{no_reads}">\n]>\n'
        '<beans><broker brokerName="&x;"/></beans>\n'
    )
    error = refused(path)
    (issue,) = error.errors
    assert issue.line == 3 and "external entity" in issue.reason
    assert "TOP-SECRET" not in str(error)


def test_external_http_entity_is_refused_and_nothing_fetched(tmp_path: Path, http_server: str) -> None:
    path = tmp_path / "external.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE beans [\n<!ENTITY x SYSTEM "{http_server}/x">\n]>\n'
        '<beans><broker brokerName="&x;"/></beans>\n'
    )
    (issue,) = refused(path).errors
    assert issue.line == 3 and "external entity" in issue.reason
    assert Recorder.requests == []


def test_external_parameter_entity_is_refused_and_nothing_fetched(tmp_path: Path, http_server: str) -> None:
    path = tmp_path / "external.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE beans [\n<!ENTITY % p SYSTEM "{http_server}/p">\n'
        "%p;\n]>\n<beans/>\n"
    )
    (issue,) = refused(path).errors
    assert issue.line == 3
    assert Recorder.requests == []


def test_an_external_dtd_is_not_fetched_and_the_file_loads(tmp_path: Path, http_server: str) -> None:
    # Servlet web.xml files carry such a DOCTYPE: harmless as long as it is not followed.
    path = tmp_path / "dtd.xml"
    path.write_text(
        f'<?xml version="1.0"?>\n<!DOCTYPE beans PUBLIC "-//x//DTD//EN" "{http_server}/x.dtd">\n<beans/>\n'
    )
    load(path)
    assert Recorder.requests == []


def test_malformed_xml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.xml"
    path.write_text("<beans>\n<broker>\n<systemUsage>\n</broker>\n</beans>\n")
    (issue,) = refused(path).errors
    assert issue.line == 4 and "not well-formed" in issue.reason


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.xml"
    path.write_text("<a>" * 500 + "</a>" * 500)
    (issue,) = refused(path).errors
    assert "nested deeper" in issue.reason


# Whatever the bytes, the loader answers with a configuration or a ConfigError.

TAGS = [
    "beans",
    "broker",
    "systemUsage",
    "memoryUsage",
    "storeUsage",
    "tempUsage",
    "destinationPolicy",
    "policyMap",
    "policyEntries",
    "policyEntry",
    "defaultEntry",
    "deadLetterStrategy",
    "individualDeadLetterStrategy",
    "sharedDeadLetterStrategy",
    "deadLetterQueue",
    "queue",
    "pendingQueuePolicy",
    "vmQueueCursor",
    "transportConnectors",
    "transportConnector",
    "plugins",
    "simpleAuthenticationPlugin",
    "users",
    "authenticationUser",
    "authorizationPlugin",
    "map",
    "authorizationMap",
    "authorizationEntries",
    "authorizationEntry",
    "redeliveryPlugin",
    "redeliveryPolicyMap",
    "redeliveryPolicy",
    "sslContext",
    "persistenceAdapter",
    "kahaDB",
    "levelDB",
    "httpServer",
    "export",
    "transportDefaults",
    "bean",
    "property",
    "value",
    "import",
    "managementContext",
]
ATTRS = [
    "limit",
    "percentOfJvmHeap",
    "percentLimit",
    "queue",
    "topic",
    "tempQueue",
    "memoryLimit",
    "producerFlowControl",
    "cursorMemoryHighWaterMark",
    "uri",
    "name",
    "username",
    "password",
    "groups",
    "read",
    "write",
    "admin",
    "directory",
    "keyStore",
    "keyStorePassword",
    "certificateFile",
    "port",
    "host",
    "maximumRedeliveries",
    "queuePrefix",
    "physicalName",
    "class",
    "dataDirectory",
    "sendFailIfNoSpace",
    "location",
    "resource",
]
VALUES = st.one_of(
    st.sampled_from(
        [
            "true",
            "false",
            "64 mb",
            "-1",
            "0",
            ">",
            "A.*",
            "#",
            "stomp://0.0.0.0:0",
            "tcp://h:1",
            "ws://h:1/x?allowedOrigins=*",
            "${x}",
            "${activemq.data}",
            "$scrypt$n=2,r=1,p=1$AA$AA",
            "1 gb",
            "stomp://[::1]:5?maximumConnections=x",
            "file:/nonexistent",
            "70",
            "1e999",
        ]
    ),
    st.text(max_size=12),
)


@st.composite
def elements(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(TAGS))
    attrs = draw(st.dictionaries(st.sampled_from(ATTRS), VALUES, max_size=3))
    rendered = "".join(f' {k}="{_escape(v)}"' for k, v in attrs.items())
    children = draw(st.lists(elements(depth + 1), max_size=3)) if depth < 4 else []
    return f"<{tag}{rendered}>{''.join(children)}</{tag}>"


def _escape(text: str) -> str:
    cleaned = "".join(ch for ch in text if ch in "\t\n\r" or (ch >= " " and ch not in "\ud800\udfff"))
    return cleaned.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150, deadline=None)
@given(document=elements())
def test_any_element_tree_loads_or_raises_config_error(document: str) -> None:
    try:
        load_bytes(
            document.encode("utf-8", "surrogatepass"), Path("fuzz.xml"), environ={}, cwd=Path("/nonexistent")
        )
    except ConfigError as exc:
        assert exc.errors
        assert all(issue.file == "fuzz.xml" for issue in exc.errors)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=300))
def test_any_bytes_load_or_raise_config_error(data: bytes) -> None:
    try:
        load_bytes(data, Path("fuzz.xml"), environ={}, cwd=Path("/nonexistent"))
    except ConfigError as exc:
        assert exc.errors
