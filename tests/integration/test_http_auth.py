"""Who may use the admin server: basic auth for admin groups, or loopback only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.http.auth import HttpSecurity, InMemoryAuthenticator, basic_credentials, check, is_loopback
from tests.http_support import call, non_loopback_address, start_http_broker

pytestmark = pytest.mark.integration

USERS = InMemoryAuthenticator(
    {
        "admin": ("s3cret:with:colons", {"admins"}),
        "ops": ("ops-pw", {"operators", "sre"}),
        "viewer": ("view", {"users"}),
    }
)


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[str]:
    security = HttpSecurity(USERS, admin_groups=frozenset({"admins", "sre"}))
    thread = start_http_broker(tmp_path / "data", security)
    try:
        yield f"http://127.0.0.1:{thread.http_port}"
    finally:
        thread.stop()


@pytest.mark.parametrize("path", ["/api/v1/destinations", "/api/v1/usage", "/console/", "/console/app.js"])
def test_without_credentials_it_asks_for_them(secured: str, path: str) -> None:
    reply = call(secured, "GET", path)
    assert reply.status == 401
    assert reply.headers["WWW-Authenticate"].startswith('Basic realm="stompd"')
    assert reply.error["code"] == "unauthorized"


def test_wrong_password_or_unknown_user_is_401(secured: str) -> None:
    for auth in [("admin", "s3cret"), ("admin", ""), ("nobody", "s3cret:with:colons")]:
        reply = call(secured, "GET", "/api/v1/destinations", auth=auth)
        assert reply.status == 401, auth
        assert reply.error["message"] == "wrong user name or password"


def test_a_user_outside_the_admin_groups_is_403(secured: str) -> None:
    reply = call(secured, "GET", "/api/v1/destinations", auth=("viewer", "view"))
    assert reply.status == 403
    assert "not in an admin group" in reply.error["message"]
    assert "WWW-Authenticate" not in reply.headers


def test_members_of_any_admin_group_get_in(secured: str) -> None:
    assert call(secured, "GET", "/api/v1/destinations", auth=("admin", "s3cret:with:colons")).status == 200
    assert call(secured, "GET", "/api/v1/destinations", auth=("ops", "ops-pw")).status == 200
    created = call(secured, "POST", "/api/v1/destinations", {"name": "q"}, auth=("ops", "ops-pw"))
    assert created.status == 201


def test_health_needs_no_credentials(secured: str) -> None:
    assert call(secured, "GET", "/health").status == 200


def test_without_users_loopback_clients_get_in(tmp_path: Path) -> None:
    thread = start_http_broker(tmp_path / "data")
    try:
        url = f"http://127.0.0.1:{thread.http_port}"
        assert call(url, "GET", "/api/v1/destinations").status == 200
        # A page on another site that resolves its name to 127.0.0.1 (DNS rebinding)
        # reaches us from loopback, but with its own Host header.
        rebound = call(url, "GET", "/api/v1/destinations", headers={"Host": "evil.example:8161"})
        assert rebound.status == 403
        assert "not a loopback name" in rebound.error["message"]
        assert call(url, "GET", "/api/v1/usage", headers={"Host": "localhost:8161"}).status == 200
    finally:
        thread.stop()


def test_without_users_a_remote_client_is_refused_unless_allowed(tmp_path: Path) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.fail("this machine has no non-loopback IPv4 address to test the loopback rule with")
    thread = start_http_broker(tmp_path / "a", http_host="0.0.0.0")
    try:
        refused = call(f"http://{address}:{thread.http_port}", "GET", "/api/v1/destinations")
        assert refused.status == 403
        assert "--http-allow-remote" in refused.error["message"]
        # /health stays open: a container's HEALTHCHECK has no credentials.
        assert call(f"http://{address}:{thread.http_port}", "GET", "/health").status == 200
    finally:
        thread.stop()
    allowed = start_http_broker(tmp_path / "b", HttpSecurity(allow_remote=True), http_host="0.0.0.0")
    try:
        assert call(f"http://{address}:{allowed.http_port}", "GET", "/api/v1/destinations").status == 200
    finally:
        allowed.stop()


def test_with_users_remote_clients_authenticate(tmp_path: Path) -> None:
    address = non_loopback_address()
    assert address is not None
    thread = start_http_broker(tmp_path / "data", HttpSecurity(USERS), http_host="0.0.0.0")
    try:
        url = f"http://{address}:{thread.http_port}"
        assert call(url, "GET", "/api/v1/usage").status == 401
        assert call(url, "GET", "/api/v1/usage", auth=("admin", "s3cret:with:colons")).status == 200
    finally:
        thread.stop()


# -- the rules themselves, without sockets ----------------------------------------------


@pytest.mark.parametrize(
    ("peer", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("10.0.0.1", False),
        ("192.0.2.2", False),
        ("fd00::2", False),
        ("::ffff:10.0.0.1", False),
        ("", False),
        (None, False),
        ("not-an-address", False),
    ],
)
def test_loopback_peers(peer: str | None, loopback: bool) -> None:
    assert is_loopback(peer) is loopback


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        (None, True),
        ("127.0.0.1:8161", True),
        ("localhost", True),
        ("LOCALHOST:80", True),
        ("[::1]:8161", True),
        ("evil.example", False),
        ("10.1.2.3:8161", False),
        ("[fd00::2]:8161", False),
    ],
)
def test_loopback_only_mode_checks_the_host_header(host: str | None, allowed: bool) -> None:
    _, denied = check(HttpSecurity(), "127.0.0.1", host, None)
    assert (denied is None) is allowed


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Basic YWRtaW46cHc=", ("admin", "pw")),
        ("basic YWRtaW46cDp3", ("admin", "p:w")),
        ("Basic YWRtaW4=", None),  # no colon
        ("Basic !!!", None),
        ("Bearer abc", None),
        ("", None),
        (None, None),
    ],
)
def test_basic_credentials(header: str | None, expected: tuple[str, str] | None) -> None:
    assert basic_credentials(header) == expected


def test_in_memory_authenticator() -> None:
    assert USERS.authenticate("admin", "s3cret:with:colons") == frozenset({"admins"})
    assert USERS.authenticate("admin", "S3cret:with:colons") is None
    assert USERS.authenticate("ghost", "") is None
    assert USERS.authenticate("ops", "ops-pw") == frozenset({"operators", "sre"})
