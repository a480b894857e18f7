from __future__ import annotations

import pytest

from config import passwords
from config.model import Password


@pytest.mark.parametrize("scheme", ["scrypt", "pbkdf2-sha256"])
def test_hash_then_verify(scheme: str) -> None:
    text = passwords.hash_password("s3cret:with$odd{chars}", scheme)
    assert text.startswith(f"${scheme}$")
    parsed = passwords.parse(text)
    assert parsed.scheme == scheme
    assert passwords.verify(parsed, "s3cret:with$odd{chars}")
    assert not passwords.verify(parsed, "s3cret")
    assert "$" not in str(parsed) and "s3cret" not in repr(parsed)


def test_plain_passwords() -> None:
    parsed = passwords.parse("manager")
    assert parsed == Password("plain", "manager")
    assert passwords.verify(parsed, "manager") and not passwords.verify(parsed, "manager2")
    assert str(parsed) == "********"


@pytest.mark.parametrize(
    "text",
    [
        "$scrypt$n=16384$AAAA$AAAA",
        "$scrypt$n=1000,r=8,p=1$AAAA$AAAA",
        "$scrypt$n=1048576,r=8,p=1$AAAA$AAAA",
        "$pbkdf2-sha256$i=0$AAAA$AAAA",
        "$pbkdf2-sha256$600000$AAAA$AAAA",
        "$scrypt$n=16,r=1,p=1$A!$AAAA",
    ],
)
def test_malformed_hashes_are_refused(text: str) -> None:
    with pytest.raises(passwords.InvalidHash):
        passwords.parse(text)
