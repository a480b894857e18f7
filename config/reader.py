"""What every part of the loader shares: the walk's context, typed attribute reading, and
the one place that decides whether an unexpected element or attribute is a warning
(ActiveMQ has it, stompd ignores it) or an error (nobody has it: a typo)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from config.activemq_names import ATTRIBUTES, ELEMENTS
from config.model import Origin
from config.placeholders import ExpansionError
from config.units import InvalidSize, parse_duration, parse_size
from config.xmltree import ACTIVEMQ_CORE, SPRING_BEANS

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from config.issues import Issues
    from config.placeholders import Placeholders, Resolved
    from config.xmltree import Node

T = TypeVar("T")

#: Why a feature ActiveMQ has is not in stompd, for the warnings that say it is ignored.
FEATURES: Mapping[str, str] = {
    "managementContext": "JMX is not supported: stompd serves Prometheus metrics on its HTTP server",
    "proxyConnectors": "proxy connectors are not supported",
    "jmsBridgeConnectors": "JMS bridges are not supported",
    "persistenceFactory": "the journal persistence factory is not supported: stompd stores in LevelDB",
    "shutdownHooks": "Spring shutdown hooks have nothing to stop in stompd",
    "destinations": "destinations are created when first used",
    "services": "broker services are not supported",
    "tempDataStore": "the temp store is LevelDB under <dataDirectory>/tmp_storage",
    "jobSchedulerStore": "scheduled messages live in the message store",
    "ioExceptionHandler": "stompd stops accepting what it cannot store and says so",
    "producerSystemUsage": "one <systemUsage> serves producers and consumers",
    "consumerSystemUsage": "one <systemUsage> serves producers and consumers",
    "jdbcPersistenceAdapter": "JDBC persistence is not supported: stompd stores in LevelDB",
    "memoryPersistenceAdapter": 'use persistent="false" to keep no messages on disk',
    "mKahaDB": "multiple stores are not supported: stompd keeps one LevelDB store",
    "replicatedLevelDB": "replication is not supported",
    "jaasAuthenticationPlugin": "JAAS is not supported: use simpleAuthenticationPlugin",
    "jaasCertificateAuthenticationPlugin": "JAAS is not supported: use simpleAuthenticationPlugin",
    "jaasDualAuthenticationPlugin": "JAAS is not supported: use simpleAuthenticationPlugin",
    "runtimeConfigurationPlugin": "stompd reloads users and permissions on SIGHUP instead",
    "camelContext": "Camel routes are not supported",
}


@dataclass(slots=True)
class Context:
    path: Path
    issues: Issues
    placeholders: Placeholders
    #: Placeholder expansion failed once: said once, and nothing more is expanded.
    expansion_failed: bool = False
    #: The guessed placeholders (``Placeholders.guesses``) already warned of.
    guesses_said: set[str] = field(default_factory=set)

    def origin(self, node: Node, note: str = "") -> Origin:
        return Origin("file", self.issues.file, node.line, note=note)

    def error(self, node: Node, reason: str) -> None:
        self.issues.error(node.line, node.path, reason)

    def warn(self, node: Node, reason: str) -> None:
        self.issues.warn(node.line, node.path, reason)

    def attr(self, node: Node, name: str) -> tuple[str, Origin] | None:
        """The attribute with ``${...}`` resolved, and its origin; None if absent or unresolvable."""
        raw = node.attrs.get(name)
        if raw is None:
            return None
        resolved = self.resolve(node, name, raw)
        if resolved is None:
            return None
        if resolved.missing:
            why = self.placeholders.why_missing(resolved.missing[0])
            self.warn(node, f'{name}="{raw}": {why}; the attribute is ignored')
            return None
        for guessed in resolved.guessed:
            if guessed not in self.guesses_said:
                # Once a file: the first place it is used says it.
                self.guesses_said.add(guessed)
                why = self.placeholders.guesses[guessed]
                self.warn(node, f'{name}="{raw}": ${{{guessed}}} is not set: {why}')
        note = " ".join(f"${{{used}}}" for used in dict.fromkeys(resolved.used))
        return resolved.text, self.origin(node, note)

    def resolve(self, node: Node, name: str, raw: str) -> Resolved | None:
        """``raw`` (attribute ``name``) with ``${...}`` resolved; None if expanding it failed,
        which is an error said once for the file (after it, every expansion is refused)."""
        if self.expansion_failed and "${" in raw:
            return None
        try:
            return self.placeholders.resolve(raw)
        except ExpansionError as exc:
            self.expansion_failed = True
            self.error(node, f"{name}: {exc}")
            return None

    def ignore(self, node: Node, reason: str = "") -> None:
        """Warns that ``node`` (an ActiveMQ or foreign element) is ignored, saying why."""
        why = reason or FEATURES.get(node.tag, "")
        if node.ns not in (None, ACTIVEMQ_CORE, SPRING_BEANS) and not why:
            why = f"not an ActiveMQ element (namespace {node.ns})"
        elif node.ns == SPRING_BEANS and not why:
            why = f"Spring <{node.tag}> elements are not evaluated"
        self.warn(
            node, f"ignored: {why}" if why else "an ActiveMQ feature stompd does not implement; ignored"
        )

    def unexpected(self, node: Node, where: str) -> None:
        """A child stompd does not read under ``where``: a warning if ActiveMQ knows it."""
        if node.ns in (None, ACTIVEMQ_CORE) and node.tag not in ELEMENTS and node.tag not in FEATURES:
            self.error(node, f"unknown element <{node.tag}> in <{where}> (not an ActiveMQ element either)")
        else:
            self.ignore(node)


@dataclass(slots=True)
class Fields:
    """Reads one element's attributes into dataclass keyword arguments and their origins."""

    ctx: Context
    node: Node
    #: The ActiveMQ element whose attribute list tells "unsupported" from "misspelt".
    element: str
    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)
    read: set[str] = field(default_factory=set)

    def raw(self, attr: str) -> tuple[str, Origin] | None:
        self.read.add(attr)
        return self.ctx.attr(self.node, attr)

    def get(self, attr: str, name: str, convert: Callable[[str], T]) -> T | None:
        found = self.raw(attr)
        if found is None:
            return None
        text, origin = found
        try:
            value = convert(text)
        except ValueError as exc:
            self.ctx.error(self.node, f'{attr}="{text}": {exc}')
            return None
        self.values[name] = value
        self.origins[name] = origin
        return value

    def skip(self, *attrs: str) -> None:
        """Attributes read elsewhere, or meaningless here (``id``, ``name``)."""
        self.read.update(attrs)

    def finish(self) -> None:
        known = ATTRIBUTES.get(self.element, frozenset())
        for attr in self.node.attrs:
            if attr in self.read or attr == "id":
                continue
            if attr in known:
                self.ctx.warn(self.node, f"{attr}: an ActiveMQ setting stompd does not implement; ignored")
            else:
                self.ctx.error(
                    self.node, f"unknown attribute {attr!r} (ActiveMQ has none by that name either)"
                )


# Converters: text -> value, or ValueError with a sentence saying what is accepted.

_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})


def boolean(text: str) -> bool:
    # Spring's CustomBooleanEditor accepts these spellings, case-insensitively.
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError("not a boolean: use true or false")


def size(text: str) -> int:
    if text.strip().startswith("-"):
        raise ValueError("a size cannot be negative")
    try:
        return parse_size(text)
    except InvalidSize as exc:
        raise ValueError(str(exc)) from None


def duration(text: str) -> int:
    if text.strip().startswith("-"):
        raise ValueError("a time cannot be negative")
    try:
        return parse_duration(text)
    except InvalidSize as exc:
        raise ValueError(str(exc)) from None


def integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError("not a whole number") from None
        if low is not None and value < low:
            raise ValueError(f"must be at least {low}")
        if high is not None and value > high:
            raise ValueError(f"must be at most {high}")
        return value

    return convert


def number(low: float) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError("not a number") from None
        if not value >= low or value == float("inf"):
            raise ValueError(f"must be a finite number of at least {low}")
        return value

    return convert


def percent(text: str) -> int:
    return integer(1, 100)(text)


def nonempty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def path(value: str) -> Path:
    """A file or directory, as Spring resources write them (``file:`` prefix optional)."""
    if value.startswith("file:"):
        value = value[len("file:") :]
        if value.startswith("//"):
            value = value[2:]
    elif value.startswith("classpath:"):
        raise ValueError("classpath: resources are not supported; give a file path")
    if not value.strip():
        raise ValueError("must not be empty")
    return Path(value)


def groups(value: str) -> frozenset[str]:
    return frozenset(name.strip() for name in value.split(",") if name.strip())
