"""A reload's reader (config/security_rows.py, run as a process of its own) and what the
broker makes of its frames (broker/security/reload.py), without a broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.security.guard import Security
from broker.security.reload import ReadFailed, prepare_from, read_in_process
from config import security_rows
from tests.config.helpers import broker_file


def users_file(tmp_path: Path, users: int, password: str = "pw") -> Path:
    listed = "".join(
        f'<authenticationUser username="u{n}" password="{password}" groups="g{n % 3},all"/>\n'
        for n in range(users)
    )
    return broker_file(
        tmp_path,
        f"<plugins><simpleAuthenticationPlugin><users>\n{listed}</users></simpleAuthenticationPlugin>\n"
        "<authorizationPlugin><map><authorizationMap><authorizationEntries>\n"
        '<authorizationEntry queue=">" read="all" write="all" admin="all"/>\n'
        "</authorizationEntries></authorizationMap></map></authorizationPlugin></plugins>\n",
    )


def test_the_reader_sends_the_users_a_chunk_at_a_time(tmp_path: Path) -> None:
    frames = list(security_rows.frames(users_file(tmp_path, security_rows.CHUNK + 5), {}))
    kind, authentication, authorization = frames[0]
    assert (kind, authentication) == ("rules", (False, "anonymous", "anonymous", security_rows.CHUNK + 5))
    assert len(authorization.entries) == 1
    assert [frame[0] for frame in frames[1:]] == ["users", "users", "end"]
    assert [len(frame[1]) for frame in frames[1:3]] == [security_rows.CHUNK, 5]
    assert frames[1][1][1] == ("u1", "plain", "pw", ("all", "g1"))


def test_what_the_reader_sends_becomes_the_rules(tmp_path: Path) -> None:
    security = Security(None, None)
    with_defines = users_file(tmp_path, 3, password="${secret}")
    # The definitions go to the process on its stdin, never on its command line.
    prepared = prepare_from(security, read_in_process(with_defines, {"secret": "s3"}))
    assert prepared.changes == ["authentication on", "authorization entries changed (0 -> 1 entries)"]
    security.install(prepared)
    assert security.login("u2", "s3").user == "u2"
    assert security.groups(security.login("u0", "s3")) == {"g0", "all"}


def test_a_file_that_does_not_load_is_its_errors(tmp_path: Path) -> None:
    broken = broker_file(tmp_path, "<plugins><simpleAuthenticationPlugin>\n")
    with pytest.raises(ReadFailed) as failed:
        prepare_from(Security(None, None), read_in_process(broken, {}))
    assert failed.value.errors and "not well-formed XML" in failed.value.errors[0]
    with pytest.raises(ReadFailed, match="No such file"):
        prepare_from(Security(None, None), read_in_process(tmp_path / "nowhere.xml", {}))


def test_a_reader_that_stops_early_changes_nothing(tmp_path: Path) -> None:
    security = Security(None, None)
    frames = list(security_rows.frames(users_file(tmp_path, 10), {}))
    with pytest.raises(ReadFailed, match="stopped after some users only"):
        prepare_from(security, iter(frames[:-1]))
    with pytest.raises(ReadFailed, match="stopped before saying anything"):
        prepare_from(security, iter([]))
    with pytest.raises(ReadFailed, match="its reader failed:\nTraceback"):
        prepare_from(security, iter([("failed", "Traceback (most recent call last): ...")]))
    assert security.users is None
