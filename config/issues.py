"""Problems found in a configuration, each naming its file, line and element.

Loading never stops at the first problem (nats-server's ``processConfigErr`` habit): every
problem is collected, and at the end the errors, if any, are raised together as one
:class:`ConfigError`.  Warnings (an ActiveMQ feature stompd ignores, a setting that will
not do what it did in ActiveMQ) travel with the loaded configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    severity: Severity
    file: str
    line: int | None
    #: Where in the document: ``broker/systemUsage/systemUsage/memoryUsage/memoryUsage``.
    element: str
    reason: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.element:
            where = f"{where}: <{self.element}>"
        return f"{where}: {self.reason}"


class ConfigError(Exception):
    """A configuration that cannot be used; ``errors`` says every reason, with its line."""

    def __init__(self, errors: list[ConfigIssue], warnings: list[ConfigIssue] | None = None) -> None:
        super().__init__("\n".join(str(issue) for issue in errors))
        self.errors = errors
        self.warnings = warnings or []


@dataclass(slots=True)
class Issues:
    """The collector a loader appends to as it walks a file."""

    file: str
    errors: list[ConfigIssue] = field(default_factory=list)
    warnings: list[ConfigIssue] = field(default_factory=list)

    def error(self, line: int | None, element: str, reason: str) -> None:
        self.errors.append(ConfigIssue("error", self.file, line, element, reason))

    def warn(self, line: int | None, element: str, reason: str) -> None:
        self.warnings.append(ConfigIssue("warning", self.file, line, element, reason))

    def sort(self) -> None:
        """In file order, as a reader goes through the file to fix them."""
        self.errors.sort(key=lambda issue: issue.line or 0)
        self.warnings.sort(key=lambda issue: issue.line or 0)

    def raise_if_errors(self) -> None:
        self.sort()
        if self.errors:
            raise ConfigError(self.errors, self.warnings)
