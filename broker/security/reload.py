"""SIGHUP: read the configuration file again and take its users, passwords and
authorization entries (nothing else: listeners, limits and policies stay as started).

A file that no longer loads changes nothing: the old rules stay, and the log says why.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from config.loader import ConfigError, load

if TYPE_CHECKING:
    from pathlib import Path

    from broker.security.guard import Security

log = logging.getLogger("stompd.security")


def reload_security(security: Security, path: Path, defines: dict[str, str]) -> bool:
    """Whether the file's security settings were taken."""
    try:
        loaded = load(path, defines)
    except ConfigError as exc:
        for error in exc.errors:
            log.error("reload of %s: %s", path, error)
        log.error("reload of %s failed: %d error(s); the old users and rules stay", path, len(exc.errors))
        return False
    config = loaded.config
    changes = security.replace(config.authentication, config.authorization)
    if changes:
        log.info("reloaded %s: %s", path, "; ".join(changes))
    else:
        log.info("reloaded %s: users and authorization unchanged", path)
    return True
