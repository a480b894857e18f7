"""The WebSocket endpoint's pure rules: which origins may connect, which subprotocol is
answered, which close code goes with which error."""

from __future__ import annotations

import pytest
from aiohttp import WSCloseCode

from broker.core.base.errors import AccessDenied, InvalidDestination, StoreFailed
from broker.ws.endpoint import choose_subprotocol
from broker.ws.origin import InvalidOrigin, check_origin, normalize_origin
from broker.ws.transport import close_code_for
from protocol.errors import FrameTooLarge, MalformedFrame, UnexpectedFrame


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ("https://App.Example.com", "https://app.example.com:443"),
        ("https://app.example.com:443/", "https://app.example.com:443"),
        ("http://localhost:3000", "http://localhost:3000"),
        ("http://[::1]:8161", "http://[::1]:8161"),
        (" * ", "*"),
    ],
)
def test_normalize_origin(given: str, normalized: str) -> None:
    assert normalize_origin(given) == normalized


@pytest.mark.parametrize(
    "bad", ["example.com", "ftp://example.com", "https://example.com/app", "http://x:99999", "null"]
)
def test_an_origin_that_is_not_one_is_refused(bad: str) -> None:
    with pytest.raises(InvalidOrigin):
        normalize_origin(bad)


def allowed(*origins: str) -> frozenset[str]:
    return frozenset(normalize_origin(o) for o in origins)


@pytest.mark.parametrize(
    ("origin", "host", "secure", "loopback", "ok"),
    [
        (None, "127.0.0.1:61614", False, True, True),
        ("http://127.0.0.1:61614", "127.0.0.1:61614", False, True, True),
        ("http://localhost:61614", "LOCALHOST:61614", False, True, True),
        ("http://broker.example", "broker.example", False, False, True),
        ("https://broker.example", "broker.example", True, False, True),
        ("http://[::1]:8161", "[::1]:8161", False, True, True),
        # Another port, host or scheme's default port: another origin.
        ("http://127.0.0.1:8161", "127.0.0.1:61614", False, True, False),
        ("http://broker.example", "broker.example", True, False, False),
        ("https://evil.example", "127.0.0.1:61614", False, True, False),
        ("null", "127.0.0.1:61614", False, True, False),
        ("http://127.0.0.1:61614", None, False, True, False),
        # DNS rebinding onto a loopback listener: page and Host agree, but not a loopback name.
        ("http://evil.example:61614", "evil.example:61614", False, True, False),
        # ...which is only how a non-loopback listener is reached.
        ("http://evil.example:61614", "evil.example:61614", False, False, True),
    ],
)
def test_same_origin_without_a_list(
    origin: str | None, host: str | None, secure: bool, loopback: bool, ok: bool
) -> None:
    refused = check_origin(origin, host, frozenset(), secure=secure, local_loopback=loopback)
    assert (refused is None) == ok, refused


def test_a_list_of_origins_replaces_same_origin() -> None:
    origins = allowed("https://app.example.com", "http://localhost:3000")
    check = lambda origin: check_origin(origin, "127.0.0.1:61614", origins, secure=False, local_loopback=True)  # noqa: E731
    assert check(None) is None
    assert check("https://app.example.com") is None
    assert check("https://app.example.com:443") is None
    assert check("http://localhost:3000") is None
    assert check("http://app.example.com") == "origin 'http://app.example.com' is not an allowed origin"
    assert check("http://127.0.0.1:61614") is not None
    assert check("null") is not None
    assert check_origin("null", "h", allowed("*"), secure=False, local_loopback=False) is None


@pytest.mark.parametrize(
    ("header", "answer"),
    [
        (None, None),
        ("", None),
        ("v10.stomp", "v10.stomp"),
        ("v10.stomp, v11.stomp, v12.stomp", "v12.stomp"),
        ("v12.stomp,v10.stomp", "v12.stomp"),
        ("v11.stomp, v10.stomp", "v11.stomp"),
        ("stomp", "stomp"),
        ("mqtt, wamp", None),
    ],
)
def test_the_highest_stomp_subprotocol_offered_is_answered(header: str | None, answer: str | None) -> None:
    assert choose_subprotocol(header) == answer


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (FrameTooLarge("x"), WSCloseCode.MESSAGE_TOO_BIG),
        (MalformedFrame("x"), WSCloseCode.PROTOCOL_ERROR),
        (UnexpectedFrame("x"), WSCloseCode.PROTOCOL_ERROR),
        (AccessDenied("x"), WSCloseCode.POLICY_VIOLATION),
        (InvalidDestination("x"), WSCloseCode.POLICY_VIOLATION),
        (StoreFailed("x"), WSCloseCode.INTERNAL_ERROR),
        (RuntimeError("a bug"), WSCloseCode.INTERNAL_ERROR),
    ],
)
def test_close_codes(exc: BaseException, code: int) -> None:
    assert close_code_for(exc) == (code, getattr(exc, "summary", "internal error"))
