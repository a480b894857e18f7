"""One local SparkSession for the whole test session (a JVM start costs seconds), the
hand-made workload of tests/spark/workload.py, and one report over it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from spark_jobs.cli import SMALL_INPUT_JVM, build_session
from spark_jobs.report import ReportSettings, run_report
from tests.spark.workload import Workload, build

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from pyspark.sql import DataFrame, SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    if shutil.which("java") is None:
        pytest.fail(
            "PySpark needs a Java runtime: run scripts/setup-tests.sh (installs default-jre-headless)"
        )
    # the JVM stompd-report itself starts for an input as small as the tests' workloads
    session = build_session("local[2]", "1g", SMALL_INPUT_JVM)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Workload:
    return build(tmp_path_factory.mktemp("export"))


@dataclass
class Report:
    summary: dict[str, Any]
    output: Path
    spark: SparkSession

    def table(self, name: str) -> DataFrame:
        return self.spark.read.parquet(str(self.output / "parquet" / name))

    def rows(self, name: str) -> list[dict[str, Any]]:
        return [row.asDict() for row in self.table(name).collect()]


@pytest.fixture(scope="session")
def report(spark: SparkSession, workload: Workload, tmp_path_factory: pytest.TempPathFactory) -> Report:
    output = tmp_path_factory.mktemp("report")
    summary = run_report(spark, ReportSettings((str(workload.directory),), str(output)))
    return Report(summary, output, spark)
