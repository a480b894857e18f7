"""stompd-report as a user runs it: local mode, a real standalone cluster, spark-submit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from spark_jobs.cli import SMALL_INPUT_JVM
from tests.spark.cluster import SPARK_SUBMIT, StandaloneCluster, spark_env

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession

    from tests.spark.conftest import Report
    from tests.spark.workload import Workload

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
STOMPD_REPORT = str(Path(sys.executable).with_name("stompd-report"))
#: Everything on loopback, executors small enough for a 1 GB worker, and the JVMs as
#: stompd-report starts them for an input this small (spark-submit starts its own).
CLUSTER_CONF = (
    "--conf",
    "spark.driver.host=127.0.0.1",
    "--conf",
    "spark.executor.memory=512m",
    *(part for key, value in SMALL_INPUT_JVM.items() for part in ("--conf", f"{key}={value}")),
)


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False)


def last_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


def same_numbers(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in (
        "events",
        "bad_lines",
        "corrupt_lines",
        "late_lines",
        "duplicate_lines",
        "lost_events",
        "metric_rows",
    ):
        assert a[key] == b[key], key
    assert a["destinations"].keys() == b["destinations"].keys()
    for name, values in a["destinations"].items():
        other = b["destinations"][name]
        assert values.keys() == other.keys()
        for key, value in values.items():
            expected = pytest.approx(other[key], rel=1e-12) if isinstance(value, float) else other[key]
            assert value == expected, (name, key)


def tables(spark: SparkSession, output: Path) -> dict[str, list[str]]:
    """Every table, rows as text in a stable order (float sums may differ in the last bits)."""

    def cell(value: object) -> str:
        return f"{value:.9g}" if isinstance(value, float) else repr(value)

    found = {}
    for directory in sorted((output / "parquet").iterdir()):
        rows = spark.read.parquet(str(directory)).collect()
        found[directory.name] = sorted("|".join(cell(v) for v in row) for row in rows)
    return found


@pytest.mark.timeout(300)
def test_local_json_summary_and_progress(report: Report, workload: Workload, tmp_path: Path) -> None:
    result = run(
        [STOMPD_REPORT, "--input", str(workload.directory), "--output", str(tmp_path / "out"), "--json"],
        tmp_path,
    )
    summary = last_json(result)
    same_numbers(summary, report.summary)
    assert summary["output"] == str(tmp_path / "out")
    progress = [line for line in result.stderr.splitlines() if line.startswith("stompd-report [")]
    assert any("events: 1" in line and "corrupt" in line for line in progress)
    assert any("table 10/10" in line for line in progress)
    # One line each: Spark's stage bar is not drawn into them.
    assert "[Stage" not in result.stderr and "\r" not in result.stderr
    assert (tmp_path / "out" / "report.html").exists()


@pytest.mark.timeout(300)
def test_bad_input_is_one_line_and_status_2(tmp_path: Path) -> None:
    usage = run([STOMPD_REPORT, "--output", str(tmp_path)], tmp_path)
    assert usage.returncode == 2 and "--input" in usage.stderr
    nowhere = tmp_path / "nowhere"
    missing = run([STOMPD_REPORT, "--input", str(nowhere), "--output", str(tmp_path / "o")], tmp_path)
    assert missing.returncode == 2
    # found before Spark starts (seconds of JVM for nothing): the one line is all there is
    assert missing.stderr == f"stompd-report: error: {nowhere}: no such file or directory\n"
    assert missing.stdout == ""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    running = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    try:
        yield running.start()
    finally:
        running.stop()


@pytest.mark.timeout(300)
def test_spark_submit_on_a_standalone_cluster_gives_the_same_tables(
    cluster: StandaloneCluster, report: Report, workload: Workload, spark: SparkSession, tmp_path: Path
) -> None:
    """spark-submit starts the JVM and hands the job its master, a real standalone
    cluster's (spark_jobs/__main__.py runs as a plain file): the same tables, computed in
    executors the cluster's worker started. One run proves both (a report costs a JVM and
    most of a minute); stompd-report's own ``--master`` flag is the report service's
    path (tests/docker/test_report_service.py: ``--master local[*]``)."""
    out = tmp_path / "cluster"
    python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env = spark_env(cluster.work) | python
    command = [
        str(SPARK_SUBMIT),
        "--master",
        cluster.master_url,
        *CLUSTER_CONF,
        str(ROOT / "spark_jobs" / "__main__.py"),
        "--input",
        str(workload.directory),
        "--output",
        str(out),
        "--json",
        "--quiet",
    ]
    summary = last_json(run(command, tmp_path, env))
    same_numbers(summary, report.summary)
    assert tables(spark, out) == tables(spark, report.output)
    # the work ran in executors the worker started, not in the driver
    apps = list((cluster.work / "worker").glob("app-*/*/stderr"))
    assert apps and any("Executor" in p.read_text(errors="replace") for p in apps)
