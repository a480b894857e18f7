"""JMX object names and patterns, as Jolokia takes them for ActiveMQ's MBeans.

``domain:key=value,key=value`` (``javax.management.ObjectName``): the keys in any order
(the canonical form sorts them), a value quoted (``"a,b"``) where it holds a separator;
a pattern has ``*`` or ``?`` in the domain or in a value, or ends its list in ``*``
(``type=Broker,*``: any other keys too).  Only what a read, a search or a list needs:
parse, canonical form, match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class MalformedObjectName(ValueError):
    """Not an object name or pattern (``javax.management.MalformedObjectNameException``)."""


_WILD = frozenset("*?")


def _glob(text: str) -> re.Pattern[str]:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text) + r"\Z")


@dataclass(frozen=True, slots=True)
class ObjectName:
    """A name or a pattern; ``props`` in the order written."""

    domain: str
    props: tuple[tuple[str, str], ...]
    #: Ends in ``*``: other keys may follow.
    any_keys: bool = False

    @property
    def canonical(self) -> str:
        """As Jolokia answers with it (``getCanonicalName``): the keys sorted."""
        keys = ",".join(f"{key}={value}" for key, value in sorted(self.props))
        if self.any_keys:
            keys = f"{keys},*" if keys else "*"
        return f"{self.domain}:{keys}"

    @property
    def text(self) -> str:
        """As written (``toString``): the keys in their order."""
        keys = ",".join(f"{key}={value}" for key, value in self.props)
        if self.any_keys:
            keys = f"{keys},*" if keys else "*"
        return f"{self.domain}:{keys}"

    @property
    def pattern(self) -> bool:
        return (
            self.any_keys
            or not _WILD.isdisjoint(self.domain)
            or any(not _WILD.isdisjoint(value) and not value.startswith('"') for _, value in self.props)
        )

    def get(self, key: str) -> str | None:
        for name, value in self.props:
            if name == key:
                return value
        return None


class NamePattern:
    """What ``matches`` a name: one object name (or pattern) compiled once."""

    __slots__ = ("_any_keys", "_domain", "_keys", "_values", "name")

    def __init__(self, name: ObjectName) -> None:
        self.name = name
        self._domain = _glob(name.domain) if not _WILD.isdisjoint(name.domain) else None
        self._any_keys = name.any_keys
        self._keys = frozenset(key for key, _ in name.props)
        self._values: dict[str, str | re.Pattern[str]] = {
            key: (_glob(value) if not _WILD.isdisjoint(value) and not value.startswith('"') else value)
            for key, value in name.props
        }

    def domain_matches(self, domain: str) -> bool:
        return (
            self._domain.match(domain) is not None if self._domain is not None else domain == self.name.domain
        )

    def keys_fit(self, keys: frozenset[str]) -> bool:
        """A name with exactly ``keys`` could match (before its values are looked at)."""
        return self._keys <= keys if self._any_keys else self._keys == keys

    def value_matches(self, key: str, value: str) -> bool:
        """The pattern's ``key`` takes ``value`` (True: it names no such key)."""
        wanted = self._values.get(key)
        if wanted is None:
            return True
        if isinstance(wanted, str):
            return wanted == value
        return wanted.match(value) is not None

    def literal(self, key: str) -> str | None:
        """The pattern's value for ``key`` where it is no wildcard (None: absent or wild)."""
        wanted = self._values.get(key)
        return wanted if isinstance(wanted, str) else None

    def matches(self, name: ObjectName) -> bool:
        if not self.domain_matches(name.domain):
            return False
        keys = frozenset(key for key, _ in name.props)
        if not self.keys_fit(keys):
            return False
        return all(self.value_matches(key, value) for key, value in name.props)


def parse(text: str) -> ObjectName:
    """``text`` as an object name or pattern; ``MalformedObjectName`` if it is neither."""
    domain, colon, rest = text.partition(":")
    if not colon:
        raise MalformedObjectName("Domain part must be specified")
    if "\n" in domain:
        raise MalformedObjectName("Invalid character '\\n' in domain name")
    if not rest:
        raise MalformedObjectName("Key properties cannot be empty")
    props: list[tuple[str, str]] = []
    any_keys = False
    seen: set[str] = set()
    for part in _split(rest):
        if part == "*":
            if any_keys:
                raise MalformedObjectName("Cannot have several '*' characters in pattern property list")
            any_keys = True
            continue
        key, equals, value = part.partition("=")
        if not equals or not key:
            raise MalformedObjectName(f"Invalid key property: {part!r}")
        if any(c in key for c in ':*?",\n'):
            raise MalformedObjectName(f"Invalid character in key {key!r}")
        if not value:
            raise MalformedObjectName(f"Invalid value (empty) for key {key!r}")
        if key in seen:
            raise MalformedObjectName(f"key `{key}' already defined")
        seen.add(key)
        props.append((key, value))
    return ObjectName(domain, tuple(props), any_keys)


def _split(text: str) -> list[str]:
    """The comma-separated parts of a key list, a quoted value's commas kept."""
    parts: list[str] = []
    start = i = 0
    quoted = False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == ",":
            parts.append(text[start:i])
            start = i + 1
        i += 1
    if quoted:
        raise MalformedObjectName("Missing termination quote")
    parts.append(text[start:])
    if any(not part for part in parts):
        raise MalformedObjectName("Invalid key property: empty")
    return parts


#: ActiveMQ's ``JMXSupport.encodeObjectNamePart``: what a destination's or a broker's name
#: becomes in an object name's value.
_ENCODED = str.maketrans({":": "_", ",": "_", "'": "_", '"': "_", "?": "&qe;", "=": "&amp;", "*": "&ast;"})


def encode_part(part: str) -> str:
    return part.translate(_ENCODED)
