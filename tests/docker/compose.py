"""docker/compose.yaml as Compose reads it: YAML, ``${VAR:-default}`` interpolation,
short volume syntax, and paths relative to the file's directory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.docker.image import DOCKER

COMPOSE = DOCKER / "compose.yaml"
_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def interpolate(value: Any, env: dict[str, str] | None = None) -> Any:
    """Compose's variable substitution, with ``env`` (default: nothing set, so defaults apply)."""
    env = env or {}
    if isinstance(value, str):
        escaped = value.replace("$$", "\0")
        replaced = _INTERPOLATION.sub(
            lambda m: env.get(m[1] or m[3], m[2] if m[2] is not None else ""), escaped
        )
        return replaced.replace("\0", "$")
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    return value


def load(env: dict[str, str] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = interpolate(yaml.safe_load(COMPOSE.read_text()), env)
    return data


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool

    @property
    def is_bind(self) -> bool:
        return self.source.startswith((".", "/", "~"))

    @property
    def host_path(self) -> Path:
        assert self.is_bind
        return (DOCKER / self.source).resolve()


def mounts(service: dict[str, Any]) -> list[Mount]:
    out = []
    for entry in service.get("volumes", []):
        assert isinstance(entry, str), f"use the short volume syntax: {entry}"
        parts = entry.split(":")
        assert len(parts) in (2, 3), entry
        out.append(Mount(parts[0], parts[1], len(parts) == 3 and "ro" in parts[2].split(",")))
    return out


def mount_at(service: dict[str, Any], target: str) -> Mount:
    found = [m for m in mounts(service) if m.target == target]
    assert len(found) == 1, f"expected one mount at {target}: {mounts(service)}"
    return found[0]


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    assert isinstance(env, dict), "environment as a mapping"
    return {k: str(v) for k, v in env.items()}
