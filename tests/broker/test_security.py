"""broker/security: who logs in, and the decisions of the authorization entries."""

from __future__ import annotations

import dataclasses
import gc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.base import names
from broker.core.base.guard import ADMIN, READ, WRITE, NotAuthenticated, Principal
from broker.security.access import AccessRules
from broker.security.guard import Security
from config.model import Authentication, Authorization, Password, User
from config.passwords import hash_password, parse
from tests.broker.support import entry

RULES = Authorization(
    entries=(
        entry("queue", ">", "admins", "admins", "admins"),
        entry("queue", "ORDERS.>", "users", "users", "admins"),
        entry("queue", "ORDERS.*", "clerks", "clerks", "admins"),
        entry("queue", "ORDERS.VIP", "vips", "vips", "vips"),
        entry("topic", "PUBLIC.>", "*", "users", "users"),
    ),
    temp_entry=entry(None, ">", "users", "users", "users"),
)
AUTH = Authentication(
    users=(
        User("admin", parse(hash_password("pw")), frozenset({"admins"})),
        User("app", Password("plain", "app-pw"), frozenset({"users"})),
    ),
    anonymous_access_allowed=True,
)


@pytest.mark.parametrize(
    ("name", "groups"),
    [
        ("ORDERS.VIP", {"admins", "users", "clerks", "vips"}),  # every match adds its groups
        ("ORDERS.A", {"admins", "users", "clerks"}),
        ("ORDERS.A.B", {"admins", "users"}),
        ("ORDERS", {"admins", "users"}),  # A.> matches A
        ("OTHER", {"admins"}),
    ],
)
def test_every_matching_entry_adds_its_groups(name: str, groups: set[str]) -> None:
    assert AccessRules(RULES).allowed_groups(READ, names.QUEUE, name) == groups


def test_a_wildcard_destination_takes_every_entry_it_shares_a_name_with() -> None:
    rules = AccessRules(RULES)
    assert rules.allowed_groups(READ, names.QUEUE, "ORDERS.>") == {"admins", "users", "clerks", "vips"}
    assert rules.allowed_groups(READ, names.QUEUE, "*.VIP") == {"admins", "users", "clerks", "vips"}
    assert rules.allowed_groups(READ, names.QUEUE, "OTHER.*") == {"admins"}
    assert rules.allowed_groups(READ, names.TOPIC, "PUBLIC.*.X") == {"*"}


def test_no_entry_denies_everyone_and_star_allows_everyone() -> None:
    rules = AccessRules(RULES)
    assert not rules.allows(frozenset({"admins"}), READ, names.TOPIC, "PRIVATE")
    assert rules.allows(frozenset(), READ, names.TOPIC, "PUBLIC.NEWS")
    assert not rules.allows(frozenset(), WRITE, names.TOPIC, "PUBLIC.NEWS")


def test_the_default_entry_adds_its_groups_to_every_destination() -> None:
    rules = AccessRules(Authorization(default_entry=entry(None, ">", "all", "all", "all")))
    assert rules.allows(frozenset({"all"}), ADMIN, names.TOPIC, "ANY")
    both = AccessRules(dataclasses.replace(RULES, default_entry=entry(None, ">", "all", "all", "all")))
    assert both.allowed_groups(WRITE, names.QUEUE, "ORDERS.A") == {"admins", "users", "clerks", "all"}


def test_temporary_destinations_use_the_temp_entry_or_are_open() -> None:
    for kind in (names.TEMP_QUEUE, names.REMOTE_TEMP_TOPIC):
        assert AccessRules(RULES).allowed_groups(WRITE, kind, "x") == {"users"}
        assert AccessRules(Authorization()).allowed_groups(WRITE, kind, "x") is None


elements = st.sampled_from(["A", "B", "ORDERS", "VIP"])


@given(st.lists(elements, min_size=1, max_size=4), st.sampled_from([READ, WRITE, ADMIN]))
def test_decisions_match_a_plain_reading_of_the_entries(parts: list[str], op: str) -> None:
    name = ".".join(parts)
    expected = {"admins"}  # queue=">"
    if parts[0] == "ORDERS":  # ORDERS.>, and ORDERS.* for two elements
        expected |= {"admins"} if op == ADMIN else ({"users", "clerks"} if len(parts) == 2 else {"users"})
    if name == "ORDERS.VIP":
        expected |= {"vips"}
    assert AccessRules(RULES).allowed_groups(op, names.QUEUE, name) == expected
    security = Security(AUTH, RULES)
    for user, groups in (("admin", {"admins"}), ("app", {"users"})):
        allowed = security.allows(Principal(user), op, names.QUEUE, name)
        assert allowed == bool(expected & groups)
        # Cached: asked again, the same answer.
        assert security.allows(Principal(user), op, names.QUEUE, name) == allowed


def test_login() -> None:
    security = Security(AUTH, RULES)
    assert security.login("admin", "pw").user == "admin"
    # The second time from the remembered HMAC, with the same answers.
    assert security.login("admin", "pw").user == "admin"
    with pytest.raises(NotAuthenticated, match=r"User name \[admin\] or password is invalid"):
        security.login("admin", "PW")
    with pytest.raises(NotAuthenticated):
        security.login("ghost", "pw")
    anonymous = security.login(None, None)
    assert anonymous.anonymous and anonymous.user == "anonymous"
    assert security.groups(anonymous) == {"anonymous"}
    assert Security(Authentication(users=AUTH.users), None).authenticate("app", "app-pw") == {"users"}
    with pytest.raises(NotAuthenticated):
        Security(Authentication(users=AUTH.users), None).login(None, None)


def test_a_reload_applies_new_groups_and_empties_the_caches() -> None:
    security = Security(AUTH, RULES)
    app = security.login("app", "app-pw")
    assert security.allows(app, READ, names.QUEUE, "ORDERS.A.B")
    security.granted.add((app.key, READ, "/queue/ORDERS.A.B"))
    moved = Authentication(users=(User("app", Password("plain", "new-pw"), frozenset({"clerks"})),))
    changes = security.replace(moved, RULES)
    assert changes == [
        "1 user removed (admin)",
        "password changed for 1 user (app)",
        "groups changed for 1 user (app: clerks)",
        "anonymousAccessAllowed false",
    ]
    assert not security.granted
    # The connection open already: its new groups count.
    assert not security.allows(app, READ, names.QUEUE, "ORDERS.A.B")
    assert security.allows(app, READ, names.QUEUE, "ORDERS.A")
    with pytest.raises(NotAuthenticated):
        security.login("app", "app-pw")
    assert security.replace(moved, None) == ["authorization entries changed (5 -> 0 entries)"]
    assert not security.authorizing


def test_a_reload_can_turn_security_on() -> None:
    security = Security(None, None)
    assert security.login("whoever", None).user == "whoever" and not security.authorizing
    changes = security.replace(AUTH, RULES)
    assert changes == ["authentication on", "authorization entries changed (0 -> 5 entries)"]
    with pytest.raises(NotAuthenticated):
        security.login("whoever", None)
    assert security.authorizing


def test_only_a_hashed_password_not_verified_before_is_checked_slowly() -> None:
    security = Security(AUTH, RULES)
    assert security.slow_login("app", "app-pw") is None  # plain text: at once
    assert security.slow_login("app", "wrong") is None
    assert security.slow_login(None, None) is None  # anonymous
    check = security.slow_login("admin", "pw")
    assert check is not None
    # The check (a worker thread's) comes back as login's verdict, and is remembered.
    assert security.login("admin", "pw", check()).user == "admin"
    assert security.slow_login("admin", "pw") is None
    wrong = security.slow_login("admin", "PW")
    assert wrong is not None
    with pytest.raises(NotAuthenticated):
        security.login("admin", "PW", wrong())
    # An unknown user costs what a known one does (the dummy is admin's hash).
    assert security.slow_login("ghost", "pw") is not None
    # A verdict is about the credentials it checked, and the users it checked them against.
    with pytest.raises(NotAuthenticated):
        security.login("admin", "PW", Security(AUTH, RULES).slow_login("admin", "pw")())  # type: ignore[misc]
    stale = security.slow_login("admin", "other")
    assert stale is not None
    verdict = stale()
    security.replace(AUTH, RULES)
    with pytest.raises(NotAuthenticated):
        security.login("admin", "other", verdict)
    assert security.login("admin", "pw", verdict).user == "admin"  # checked again, here


def test_what_a_reload_changes_is_said_in_a_line_that_stays_short() -> None:
    many = Authentication(
        users=tuple(User(f"user{n}", Password("plain", "pw"), frozenset({"users"})) for n in range(148_000))
    )
    security = Security(AUTH, RULES)
    changes = security.replace(many, RULES)
    assert changes == [
        "148,000 users added (user0, user1, user2, user3, user4 and 147,995 more)",
        "2 users removed (admin, app)",
        "anonymousAccessAllowed false",
    ]
    renamed = Authentication(
        users=tuple(
            User(f"user{n}", Password("plain", "new"), frozenset({"g", "h"}) if n % 2 else frozenset())
            for n in range(148_000)
        )
    )
    assert security.replace(renamed, RULES) == [
        "password changed for 148,000 users (user0, user1, user2, user3, user4 and 147,995 more)",
        "groups changed for 148,000 users (user0: (none); user1: g, h; user2: (none); user3: g, h; "
        "user4: (none) and 147,995 more)",
    ]
    long_name = Authentication(users=(User("x" * 10_000, Password("plain", "pw")),))
    (added, removed) = security.replace(long_name, RULES)
    assert added == f"1 user added ({'x' * 61}...)"
    assert removed.startswith("148,000 users removed (user0, ")


def test_rules_are_prepared_aside_then_put_in_force_at_once() -> None:
    security = Security(AUTH, RULES)
    moved = Authentication(users=(User("app", Password("plain", "new-pw"), frozenset({"clerks"})),))
    prepared = security.prepare(moved, None)
    # Made (as a reload's thread makes them) but not in force yet.
    assert security.login("app", "app-pw").user == "app" and security.authorizing
    assert security.install(prepared) == [
        "1 user removed (admin)",
        "password changed for 1 user (app)",
        "groups changed for 1 user (app: clerks)",
        "anonymousAccessAllowed false",
        "authorization entries changed (5 -> 0 entries)",
    ]
    assert not security.authorizing
    assert security.login("app", "new-pw").user == "app"


def test_rules_prepared_before_other_rules_came_in_are_compared_with_those() -> None:
    security = Security(AUTH, RULES)
    stale = security.prepare(AUTH, None)
    security.replace(None, None)
    assert security.install(stale) == ["authentication on"]
    assert not security.authorizing
    with pytest.raises(NotAuthenticated):
        security.login("app", "wrong")


def test_users_cost_the_cyclic_collector_nothing_per_user() -> None:
    """148,000 users kept as config objects made each full collection 180 ms."""

    def made() -> Security:
        many = Authentication(
            users=tuple(
                User(f"user{n}", Password("plain", f"pw{n}"), frozenset({"users", f"g{n % 10}"}))
                for n in range(20_000)
            )
        )
        return Security(many, RULES)

    gc.collect()
    tracked = len(gc.get_objects())
    security = made()
    gc.collect()
    # A handful of objects for all of them (the users' dicts, their kinds), none per user.
    assert len(gc.get_objects()) - tracked < 100
    assert security.login("user19999", "pw19999").user == "user19999"
    assert security.groups(security.login("user7", "pw7")) == {"users", "g7"}
