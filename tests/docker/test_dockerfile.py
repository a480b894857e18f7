"""docker/Dockerfile and .dockerignore, checked without a container engine: hadolint, and
what the file says the images contain and run."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import PurePosixPath

import pytest

from tests.docker.image import DOCKER, DOCKERFILE, ROOT, Dockerfile, exec_args, seconds
from tests.tools import tool

DOCKERIGNORE = ROOT / ".dockerignore"


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return Dockerfile()


def test_hadolint_finds_nothing() -> None:
    result = subprocess.run(
        [tool("hadolint"), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_default_target_is_the_broker_on_a_slim_python(dockerfile: Dockerfile) -> None:
    assert dockerfile.default_target.name == "broker"
    for name in ("broker", "report"):
        assert dockerfile.base_image(dockerfile.stage(name)) == "python:3.11-slim-bookworm"


@pytest.mark.parametrize("target", ["broker", "report"])
def test_images_run_as_a_numeric_non_root_user_that_exists(dockerfile: Dockerfile, target: str) -> None:
    stage = dockerfile.stage(target)
    user = dockerfile.instruction(stage, "USER")
    assert user is not None
    uid = dockerfile.expand(user.args, {"STOMPD_UID": dockerfile.arg(stage, "STOMPD_UID")})
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", uid), uid
    created = " ".join(i.args for s in dockerfile.lineage(stage) for i in s.all("RUN"))
    assert '--uid "${STOMPD_UID}"' in created and '--gid "${STOMPD_UID}"' in created


def _setuptools_packages() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]]


def test_the_image_installs_the_project_as_the_readme_does(dockerfile: Dockerfile) -> None:
    build = dockerfile.stage("build")
    copied = {source for copy in dockerfile.copies(build) for source in copy.sources}
    # pip install needs pyproject.toml, the README it names, and every package it finds.
    assert {"pyproject.toml", "README.md"} <= copied
    assert {f"{package}/" for package in _setuptools_packages()} <= copied
    assert "pip install -q -e ." in (ROOT / "README.md").read_text()
    runs = [i.args for i in build.all("RUN")]
    assert "/opt/stompd/bin/pip install ." in runs
    assert '/opt/stompd/bin/pip install ".[report]"' in [
        i.args for i in dockerfile.stage("build-report").all("RUN")
    ]
    for target, stage in (("broker", "build"), ("report", "build-report")):
        venv = [c for c in dockerfile.copies(dockerfile.stage(target)) if c.from_stage == stage]
        assert venv and venv[0].sources == ("/opt/stompd",) and venv[0].dest == "/opt/stompd"


def _pattern(text: str) -> tuple[bool, re.Pattern[str]]:
    """A .dockerignore line as Docker reads it (moby/patternmatcher): ``!`` re-includes,
    ``**`` crosses directories, ``*`` and ``?`` do not."""
    negated = text.startswith("!")
    clean = str(PurePosixPath(text.lstrip("!").strip()))
    clean = clean.lstrip("/")
    regex = ""
    i = 0
    while i < len(clean):
        if clean.startswith("**", i):
            regex += ".*"
            i += 2
        elif clean[i] == "*":
            regex += "[^/]*"
            i += 1
        elif clean[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(clean[i])
            i += 1
    return negated, re.compile(regex)


def ignored(path: str) -> bool:
    """Whether .dockerignore keeps ``path`` (relative to the context) out of the build context."""
    patterns = [
        _pattern(line)
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for negated, regex in patterns:
        if any(regex.fullmatch(candidate) for candidate in candidates):
            excluded = not negated
    return excluded


def _tracked(path: str) -> list[str]:
    result = subprocess.run(
        ["git", "ls-files", "--", path], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
    )
    return result.stdout.split()


def test_every_file_the_images_copy_exists_and_is_in_the_build_context(dockerfile: Dockerfile) -> None:
    copies = [c for c in dockerfile.copies() if c.from_stage is None]
    assert copies
    for copy in copies:
        for source in copy.sources:
            assert (ROOT / source).exists(), f"COPY {source}: no such file"
            files = _tracked(source) if (ROOT / source).is_dir() else [source]
            assert files, f"COPY {source}: nothing tracked by git there"
            excluded = [f for f in files if ignored(f)]
            assert not excluded, f"COPY {source}: .dockerignore leaves out {excluded[:5]}"


def test_dockerignore_keeps_local_clutter_out_of_the_context() -> None:
    for path in (
        ".venv/bin/python",
        "data/store/CURRENT",
        ".git/HEAD",
        "tests/conftest.py",
        "broker/__pycache__/app.cpython-311.pyc",
        "stompd.egg-info/PKG-INFO",
        "docker/report/report.html",
        "benchmarks/compare.py",
    ):
        assert ignored(path), path
    # The matcher itself: a pattern that does not match keeps the file in.
    assert not ignored("broker/app.py")


def test_the_broker_image_exposes_its_ports_volume_and_config(dockerfile: Dockerfile) -> None:
    broker = dockerfile.stage("broker")
    env = dockerfile.env(broker)
    exposed = {int(p) for i in broker.all("EXPOSE") for p in i.args.split()}
    assert exposed == {61613, 61614, 61612, 8161}
    assert {int(env[name]) for name in ("STOMPD_STOMP_PORT", "STOMPD_WS_PORT", "STOMPD_HTTP_PORT")} <= exposed
    volume = broker.last("VOLUME")
    assert volume is not None and exec_args(volume.args) == ["/var/lib/stompd"]
    assert env["ACTIVEMQ_DATA"] == "/var/lib/stompd"
    assert env["PATH"].startswith("/opt/stompd/bin:")
    assert dockerfile.exec_form(broker, "ENTRYPOINT") == ["stompd", "--config", "/etc/stompd/activemq.xml"]
    assert broker.last("CMD") is None, "arguments to `docker run IMAGE ...` are stompd flags"
    copies = {c.dest: c.sources for c in dockerfile.copies(broker)}
    assert copies["/etc/stompd/activemq.xml"] == ("docker/activemq.xml",)
    stop = dockerfile.instruction(broker, "STOPSIGNAL")
    assert stop is None or stop.args == "SIGTERM"


def test_the_shipped_config_reads_the_variables_the_image_sets(dockerfile: Dockerfile) -> None:
    """Its ${NAME:default} defaults agree with the image's ENV, so it runs the same anywhere."""
    env = dockerfile.env(dockerfile.stage("broker"))
    text = (DOCKER / "activemq.xml").read_text()
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    used = dict(re.findall(r"\$\{([A-Za-z_][\w.]*):?([^}]*)\}", text))
    assert used.pop("activemq.data") == ""
    assert used, "the shipped config reads no variable"
    for name, default in used.items():
        assert env.get(name) == default, f"${{{name}:{default}}} but the image sets {name}={env.get(name)}"


def test_the_health_check_is_exec_form_and_fits_its_timeout(dockerfile: Dockerfile) -> None:
    broker = dockerfile.stage("broker")
    options, command = dockerfile.healthcheck(broker)
    assert command == ["stompd-healthcheck"]
    assert {"interval", "timeout", "start-period", "retries"} <= options.keys()
    assert int(options["retries"]) >= 1
    # The script gives each of its two checks TIMEOUT_S; together they must end in time.
    script = (DOCKER / "healthcheck.py").read_text()
    match = re.search(r"^TIMEOUT_S = ([\d.]+)$", script, re.M)
    assert match and 2 * float(match[1]) < seconds(options["timeout"])
    copies = {c.dest: c.sources for c in dockerfile.copies(broker)}
    assert copies["/usr/local/bin/stompd-healthcheck"] == ("docker/healthcheck.py",)
    assert (DOCKER / "healthcheck.py").stat().st_mode & 0o111, "COPY keeps the mode: it must be executable"
    assert script.startswith("#!/usr/bin/env python3\n")
