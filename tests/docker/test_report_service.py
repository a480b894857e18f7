"""The compose stack's report service, run here: the report image's ENTRYPOINT with the
service's command and environment (compose defaults: local Spark), the export volume
mapped onto an export directory, the output onto a temporary one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.docker import compose
from tests.docker.compose import environment, mounts
from tests.docker.image import Dockerfile, HostMap
from tests.spark.workload import build

pytestmark = pytest.mark.spark


@pytest.mark.timeout(300)
def test_the_report_service_writes_a_report_from_the_export_volume(tmp_path: Path) -> None:
    service = compose.load()["services"]["report"]
    export = build(tmp_path / "export")
    (export_volume,) = [m for m in mounts(service) if m.source == "stompd-export"]
    (output_dir,) = [m for m in mounts(service) if m.is_bind]
    volumes = {export_volume.target: export.directory, output_dir.target: tmp_path / "report"}
    dockerfile = Dockerfile()
    stage = dockerfile.stage(service["build"]["target"])
    home = "/var/lib/stompd"
    host = HostMap(dockerfile, stage, {home: tmp_path / "home", **volumes})
    container_env = {**dockerfile.env(stage), **environment(service), "HOME": home}
    argv = host.command(dockerfile.exec_form(stage, "ENTRYPOINT") + service["command"], container_env["PATH"])
    workdir = dockerfile.instruction(stage, "WORKDIR")
    assert workdir is not None
    cwd = host.path(workdir.args)
    assert cwd is not None
    cwd.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        argv,
        cwd=cwd,
        env=host.environment(container_env),
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    output = host.path(service["command"][service["command"].index("--output") + 1])
    assert output is not None
    assert (output / "report.html").is_file()
    summary = json.loads((output / "summary.json").read_text())
    assert summary["events"] > 0 and "/queue/orders" in summary["destinations"]
    assert "report: " in result.stdout
