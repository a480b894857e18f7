"""``${name}`` placeholders, as Spring's PropertyPlaceholderConfigurer resolves them in activemq.xml.

A name is looked up, first hit wins, in:

1. ``-Dname=value`` given to stompd (the command line beats everything, as flags do);
2. the environment;
3. the ``.properties`` files a ``PropertyPlaceholderConfigurer`` bean in the file names
   (``file:`` locations; ActiveMQ's ``credentials.properties`` is the usual one);
4. ActiveMQ's own: ``activemq.base`` (``$ACTIVEMQ_BASE``, else the working directory),
   ``activemq.home`` (``$ACTIVEMQ_HOME``, else the base), ``activemq.conf``
   (``$ACTIVEMQ_CONF``, else the configuration file's directory, so ``file:${activemq.conf}/x``
   finds a file beside activemq.xml) and ``activemq.data`` (``$ACTIVEMQ_DATA``, else
   ``<base>/data``, which is stompd's default data directory).

``${name:default}`` uses ``default`` when nothing defines ``name``.  Values may contain
placeholders themselves.  A value written ``ENC(...)`` (jasypt) cannot be decrypted here
and counts as undefined.

Expansion is bounded, as a file of values that refer to each other could otherwise expand
without end (ten names each naming the next ten times make 10^8 copies): a value that
refers back to itself, values nested deeper than ``MAX_DEPTH``, or more than
``MAX_SUBSTITUTIONS`` substitutions or ``MAX_EXPANSION`` characters substituted in one file
raise ``ExpansionError``, before the text is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

_PLACEHOLDER = re.compile(r"\$\{([^${}]*)\}")
#: How deep values may refer to values that refer to values...
MAX_DEPTH = 8
#: Substitutions in one file, and the characters they put in, all attributes together:
#: far above any real activemq.xml, and low enough to be refused within a second.
MAX_SUBSTITUTIONS = 20_000
MAX_EXPANSION = 16 << 20
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class ExpansionError(ValueError):
    """Placeholders that refer to themselves, nest too deep or expand too far."""


@dataclass(slots=True)
class Resolved:
    text: str
    #: Names nothing defined.
    missing: list[str] = field(default_factory=list)
    #: Names that were substituted (for the provenance note).
    used: list[str] = field(default_factory=list)
    #: Of those, ActiveMQ's own that nothing set, and so were guessed (``Placeholders.guesses``).
    guessed: list[str] = field(default_factory=list)


class Placeholders:
    def __init__(
        self, defines: Mapping[str, str], environ: Mapping[str, str], config_dir: Path, cwd: Path
    ) -> None:
        self.defines = dict(defines)
        self.environ = environ
        self.properties: dict[str, str] = {}
        #: What expansion has cost so far in this file (see MAX_SUBSTITUTIONS).
        self.substitutions = 0
        self.expanded = 0
        base = environ.get("ACTIVEMQ_BASE") or str(cwd)
        #: ActiveMQ's own names that no variable set, and what each was taken as: its
        #: start script always sets them (to where ActiveMQ is installed), so a file that
        #: uses one means a place stompd can only guess.  (``activemq.data`` is not: its
        #: guess, ``./data``, is stompd's own default data directory.)
        self.guesses: dict[str, str] = {}
        if not environ.get("ACTIVEMQ_BASE"):
            for name, variable in (("activemq.base", "ACTIVEMQ_BASE"), ("activemq.home", "ACTIVEMQ_HOME")):
                guess = f"the working directory {cwd}"
                if not environ.get(variable):
                    self.guesses[name] = f"taken as {guess} (set ${variable} or -D{name}=...)"
        self.builtins = {
            "activemq.base": base,
            "activemq.home": environ.get("ACTIVEMQ_HOME") or base,
            "activemq.conf": environ.get("ACTIVEMQ_CONF") or str(config_dir),
            "activemq.data": environ.get("ACTIVEMQ_DATA") or f"{base.rstrip('/')}/data",
        }

    def lookup(self, name: str) -> str | None:
        return self._lookup(name)[0]

    def _lookup(self, name: str) -> tuple[str | None, bool]:
        """The value, and whether it is one of ``guesses``."""
        for source in (self.defines, self.environ, self.properties, self.builtins):
            value = source.get(name)
            if value is not None:
                if value.startswith("ENC(") and value.endswith(")"):
                    return None, False
                return value, source is self.builtins and name in self.guesses
        return None, False

    def why_missing(self, name: str) -> str:
        value = self.properties.get(name, "")
        if value.startswith("ENC("):
            return (
                f"${{{name}}} is jasypt-encrypted (ENC(...)), which stompd cannot decrypt: give it with "
                f"-D{name}=... or in the environment"
            )
        return f"${{{name}}} is not defined (no -D flag, environment variable or properties file sets it)"

    def resolve(self, text: str) -> Resolved:
        """``text`` with its placeholders substituted; raises ``ExpansionError``."""
        result = Resolved(text)
        if "${" in text:
            result.text = self._substitute(text, result, ())
        return result

    def _substitute(self, text: str, result: Resolved, chain: tuple[str, ...]) -> str:
        def replace(match: re.Match[str]) -> str:
            name, _, default = match.group(1).partition(":")
            value, guessed = self._lookup(name)
            if value is None and ":" in match.group(1):
                value = default
            if value is None:
                result.missing.append(name)
                return match.group(0)
            result.used.append(name)
            if guessed:
                result.guessed.append(name)
            self.substitutions += 1
            self.expanded += len(value)
            if self.substitutions > MAX_SUBSTITUTIONS:
                raise ExpansionError(_too_far(f"{MAX_SUBSTITUTIONS} substitutions", name))
            if self.expanded > MAX_EXPANSION:
                raise ExpansionError(_too_far(f"{MAX_EXPANSION >> 20} MiB", name))
            if "${" not in value:
                return value
            path = (*chain, name)
            if name in chain:
                raise ExpansionError(f"circular placeholder reference: {_shown(path)}")
            if len(path) > MAX_DEPTH:
                raise ExpansionError(f"placeholders nest deeper than {MAX_DEPTH} levels: {_shown(path)}")
            return self._substitute(value, result, path)

        return _PLACEHOLDER.sub(replace, text)

    def load_properties(self, text: str) -> None:
        """Adds a ``.properties`` file's entries; earlier files win, as Spring merges them."""
        for key, value in parse_properties(text).items():
            self.properties.setdefault(key, value)


def _too_far(limit: str, name: str) -> str:
    return (
        f"placeholders expand past {limit} in this file, at ${{{name}}} "
        "(values that refer to each other many times over?)"
    )


def _shown(path: tuple[str, ...]) -> str:
    return " -> ".join(f"${{{name}}}" for name in path)


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties``: ``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments;
    a trailing backslash continues the line; ``\\t``, ``\\n``, ``\\uXXXX`` escapes."""
    entries: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_entry(logical)
        entries[_unescape(key)] = _unescape(value)
        logical = ""
    if logical:
        key, value = _split_entry(logical)
        entries[_unescape(key)] = _unescape(value)
    return entries


def _split_entry(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=: \t":
            break
        index += 1
    key, rest = line[:index], line[index:].lstrip(" \t")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t")
    return key, rest


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        following = text[index + 1]
        if following == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[index + 2 : index + 6]):
            out.append(chr(int(text[index + 2 : index + 6], 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(following, following))
        index += 2
    return "".join(out)
