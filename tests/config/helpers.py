"""Small activemq.xml files for the loader tests."""

from __future__ import annotations

from pathlib import Path

from config.issues import ConfigError, ConfigIssue
from config.loader import Loaded, load

HEADER = (
    '<beans xmlns="http://www.springframework.org/schema/beans"\n'
    '       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    '<broker xmlns="http://activemq.apache.org/schema/core">\n'
)
FOOTER = "</broker>\n</beans>\n"
#: The line of the first line of a body given to broker_file().
FIRST_BODY_LINE = 4


def broker_file(tmp_path: Path, body: str, name: str = "activemq.xml") -> Path:
    """A file with ``body`` inside <beans><broker>; body's first line is line 4."""
    path = tmp_path / name
    path.write_text(HEADER + body + FOOTER)
    return path


def load_body(tmp_path: Path, body: str, **kwargs: object) -> Loaded:
    return load(broker_file(tmp_path, body), **kwargs)  # type: ignore[arg-type]


def errors_of(tmp_path: Path, body: str, **kwargs: object) -> list[ConfigIssue]:
    try:
        load_body(tmp_path, body, **kwargs)
    except ConfigError as exc:
        return exc.errors
    raise AssertionError("the file loaded without an error")


def one_error(tmp_path: Path, body: str, **kwargs: object) -> ConfigIssue:
    errors = errors_of(tmp_path, body, **kwargs)
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0]


def warnings_of(loaded: Loaded) -> str:
    return "\n".join(str(w) for w in loaded.warnings)
