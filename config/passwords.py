"""Passwords in ``<authenticationUser password>``: plain, or a self-describing hash.

The hash formats (what ``stompd hash-password`` prints), base64 without padding:

- ``$scrypt$n=32768,r=8,p=1$<salt>$<key>``: hashlib.scrypt, 32-byte key (the default);
- ``$pbkdf2-sha256$i=600000$<salt>$<key>``: hashlib.pbkdf2_hmac("sha256"), 32-byte key.

Anything else is a plain password, as ActiveMQ's simpleAuthenticationPlugin stores them.
Every comparison takes the same time whatever the candidate.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re

from config.model import Password

SCRYPT_N, SCRYPT_R, SCRYPT_P = 1 << 15, 8, 1
PBKDF2_ITERATIONS = 600_000
_KEY_BYTES = 32
#: A hash in a configuration file must not be able to make each login cost the machine.
_MAX_SCRYPT_MEMORY = 256 << 20
_MAX_PBKDF2_ITERATIONS = 10_000_000
_SCRYPT = re.compile(r"^\$scrypt\$n=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$")
_PBKDF2 = re.compile(r"^\$pbkdf2-sha256\$i=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$")


class InvalidHash(ValueError):
    pass


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidHash(f"{text!r} is not base64") from None


def hash_password(password: str, scheme: str = "scrypt") -> str:
    salt = os.urandom(16)
    if scheme == "scrypt":
        key = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
        return f"$scrypt$n={SCRYPT_N},r={SCRYPT_R},p={SCRYPT_P}${_b64(salt)}${_b64(key)}"
    if scheme == "pbkdf2-sha256":
        key = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, PBKDF2_ITERATIONS, _KEY_BYTES)
        return f"$pbkdf2-sha256$i={PBKDF2_ITERATIONS}${_b64(salt)}${_b64(key)}"
    raise ValueError(f"unknown scheme {scheme!r}")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, length: int = _KEY_BYTES) -> bytes:
    return hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=r, p=p, maxmem=_MAX_SCRYPT_MEMORY + (1 << 20), dklen=length
    )


def parse(text: str) -> Password:
    """The password as configured; raises InvalidHash for a hash string that is malformed."""
    if text.startswith("$scrypt$"):
        match = _SCRYPT.match(text)
        if match is None:
            raise InvalidHash("a scrypt hash is written $scrypt$n=N,r=R,p=P$<salt>$<key>")
        n, r, p = (int(group) for group in match.groups()[:3])
        if (
            n < 2
            or n & (n - 1)
            or not 1 <= r <= 64
            or not 1 <= p <= 16
            or 128 * r * n * p > _MAX_SCRYPT_MEMORY
        ):
            raise InvalidHash(
                f"scrypt parameters n={n}, r={r}, p={p} out of range (n a power of two; at most "
                f"{_MAX_SCRYPT_MEMORY >> 20} MiB per check)"
            )
        _unb64(match.group(4))
        _unb64(match.group(5))
        return Password("scrypt", text)
    if text.startswith("$pbkdf2-sha256$"):
        match = _PBKDF2.match(text)
        if match is None:
            raise InvalidHash("a PBKDF2 hash is written $pbkdf2-sha256$i=ITERATIONS$<salt>$<key>")
        iterations = int(match.group(1))
        if not 1 <= iterations <= _MAX_PBKDF2_ITERATIONS:
            raise InvalidHash(f"PBKDF2 iterations {iterations} out of range 1-{_MAX_PBKDF2_ITERATIONS}")
        _unb64(match.group(2))
        _unb64(match.group(3))
        return Password("pbkdf2-sha256", text)
    return Password("plain", text)


def verify(password: Password, candidate: str) -> bool:
    """Whether ``candidate`` is the password, in time that does not depend on how close it is."""
    if password.scheme == "plain":
        # Digests first, so that not even the lengths are compared in variable time.
        return hmac.compare_digest(
            hashlib.sha256(candidate.encode()).digest(), hashlib.sha256(password.text.encode()).digest()
        )
    if password.scheme == "scrypt":
        match = _SCRYPT.match(password.text)
        assert match is not None
        n, r, p = (int(group) for group in match.groups()[:3])
        salt, key = _unb64(match.group(4)), _unb64(match.group(5))
        return hmac.compare_digest(_scrypt(candidate, salt, n, r, p, len(key)), key)
    match = _PBKDF2.match(password.text)
    assert match is not None
    salt, key = _unb64(match.group(2)), _unb64(match.group(3))
    derived = hashlib.pbkdf2_hmac("sha256", candidate.encode(), salt, int(match.group(1)), len(key))
    return hmac.compare_digest(derived, key)
