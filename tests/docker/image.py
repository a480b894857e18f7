"""What docker/Dockerfile says an image does, read from the file itself, and the same
command run outside a container.

No container engine here can pull base images, so the tests read the Dockerfile
(stages, ENV, COPY, ENTRYPOINT, HEALTHCHECK ...) and run its commands on this machine
with container paths mapped onto the checkout: ``/opt/stompd`` (the image's virtualenv)
onto the test's own virtualenv, each COPY destination onto its source file, and the
data volume onto a temporary directory.  Everything else (the argv, the environment
variables, the config file) is taken as the Dockerfile has it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
#: What the base image (python:3.11-slim-bookworm) puts in the environment that matters
#: here; the Dockerfile's ENV extends it (PATH=/opt/stompd/bin:$PATH).
BASE_ENV = {"PATH": "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
#: The virtualenv the image installs the project into.
IMAGE_VENV = "/opt/stompd"
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int


@dataclass
class Stage:
    name: str | None
    base: str
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None


@dataclass(frozen=True)
class Copy:
    sources: tuple[str, ...]
    dest: str
    from_stage: str | None


def instructions(text: str) -> list[Instruction]:
    """Docker's reading: comment lines dropped (inside continuations too), ``\\`` joins lines."""
    out: list[Instruction] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        keyword, _, args = whole.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), start))
    assert not pending, "the Dockerfile ends inside a continued line"
    return out


class Dockerfile:
    def __init__(self, path: Path = DOCKERFILE) -> None:
        self.path = path
        self.global_args: dict[str, str] = {}
        self.stages: list[Stage] = []
        for instruction in instructions(path.read_text()):
            if instruction.keyword == "FROM":
                words = instruction.args.split()
                name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
                self.stages.append(Stage(name, words[0]))
            elif not self.stages:
                assert instruction.keyword == "ARG", f"line {instruction.line}: only ARG may come before FROM"
                name, _, default = instruction.args.partition("=")
                self.global_args[name] = default
            else:
                self.stages[-1].instructions.append(instruction)

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(f"no stage {name!r} in {self.path}")

    @property
    def default_target(self) -> Stage:
        """What `docker build` without --target builds: the last stage."""
        return self.stages[-1]

    def lineage(self, stage: Stage) -> list[Stage]:
        """The stage and the stages it is built FROM, base first."""
        chain = [stage]
        while any(s.name == chain[0].base for s in self.stages):
            chain.insert(0, self.stage(chain[0].base))
        return chain

    def base_image(self, stage: Stage) -> str:
        return self.expand(self.lineage(stage)[0].base, self.global_args)

    def instruction(self, stage: Stage, keyword: str) -> Instruction | None:
        """The instruction in force for the stage (its own, else inherited)."""
        for each in reversed(self.lineage(stage)):
            found = each.last(keyword)
            if found is not None:
                return found
        return None

    def arg(self, stage: Stage, name: str) -> str:
        """An ARG's default as the stage sees it (declared there, default from the global one)."""
        declared = [a.args.partition("=") for a in stage.all("ARG")]
        for arg_name, has_default, default in declared:
            if arg_name == name:
                return default if has_default else self.global_args[name]
        raise KeyError(f"ARG {name} is not declared in stage {stage.name}")

    def env(self, stage: Stage) -> dict[str, str]:
        """The stage's ENV, inherited ones included, ``$VAR`` expanded as Docker does."""
        env = dict(BASE_ENV)
        for each in self.lineage(stage):
            for instruction in each.all("ENV"):
                for word in shlex.split(instruction.args):
                    name, sep, value = word.partition("=")
                    assert sep, f"line {instruction.line}: ENV {word!r} is not NAME=VALUE"
                    env[name] = self.expand(value, env)
        return env

    @staticmethod
    def expand(text: str, values: dict[str, str]) -> str:
        return _VARIABLE.sub(lambda m: values[m.group(1) or m.group(2)], text)

    def copies(self, stage: Stage | None = None) -> list[Copy]:
        """COPY instructions of one stage, or of every stage."""
        out = []
        for each in [stage] if stage is not None else self.stages:
            for instruction in each.all("COPY"):
                words = instruction.args.split()
                flags = [w for w in words if w.startswith("--")]
                paths = [w for w in words if not w.startswith("--")]
                source_stage = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
                out.append(Copy(tuple(paths[:-1]), paths[-1], source_stage))
        return out

    def exec_form(self, stage: Stage, keyword: str) -> list[str]:
        """ENTRYPOINT / CMD as a JSON array (exec form: no shell between Docker and the process)."""
        instruction = self.instruction(stage, keyword)
        assert instruction is not None, f"no {keyword} for stage {stage.name}"
        return exec_args(instruction.args)

    def healthcheck(self, stage: Stage) -> tuple[dict[str, str], list[str]]:
        """(options such as --timeout, the CMD in exec form)."""
        instruction = self.instruction(stage, "HEALTHCHECK")
        assert instruction is not None, f"no HEALTHCHECK for stage {stage.name}"
        options, _, command = instruction.args.partition("CMD ")
        parsed = dict(option.lstrip("-").split("=", 1) for option in options.split())
        return parsed, exec_args(command)


def exec_args(text: str) -> list[str]:
    """A JSON array of strings (exec form); shell form would put /bin/sh between Docker and
    the process, and the process would never see SIGTERM."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), f"not exec form: {text}"
    return value


def seconds(duration: str) -> float:
    """A Dockerfile duration (``5s``, ``1m30s``) in seconds."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


class HostMap:
    """Container paths -> this machine's: the image's virtualenv, COPY'd files, volumes."""

    def __init__(self, dockerfile: Dockerfile, stage: Stage, volumes: dict[str, Path]) -> None:
        self.paths: dict[str, Path] = {IMAGE_VENV: Path(sys.prefix), **volumes}
        for each in dockerfile.lineage(stage):
            for copy in dockerfile.copies(each):
                if copy.from_stage is None and len(copy.sources) == 1 and not copy.dest.endswith("/"):
                    self.paths[copy.dest] = ROOT / copy.sources[0]

    def path(self, container_path: str) -> Path | None:
        """The host path of a container path the image provides, else None."""
        for prefix in sorted(self.paths, key=len, reverse=True):
            if container_path == prefix or container_path.startswith(prefix + "/"):
                return Path(str(self.paths[prefix]) + container_path[len(prefix) :])
        return None

    def text(self, value: str) -> str:
        """Every mapped container path inside a string (an argument, an ENV value) replaced."""
        for prefix in sorted(self.paths, key=len, reverse=True):
            value = re.sub(re.escape(prefix) + r"(?=/|:|$)", str(self.paths[prefix]), value)
        return value

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        return {name: self.text(value) for name, value in env.items()}

    def command(self, argv: list[str], container_path_env: str) -> list[str]:
        """argv with argv[0] looked up on the container's PATH among what the image provides
        (never a program that only this machine has), and container paths mapped."""
        program = argv[0]
        if "/" not in program:
            for directory in container_path_env.split(":"):
                host = self.path(f"{directory}/{program}")
                if host is not None and host.is_file() and os.access(host, os.X_OK):
                    return [str(host), *map(self.text, argv[1:])]
            raise AssertionError(f"{program} is not on the image's PATH {container_path_env}")
        host = self.path(program)
        assert host is not None, f"{program} is not provided by the image"
        return [str(host), *map(self.text, argv[1:])]
