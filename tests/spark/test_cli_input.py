"""stompd-report answers a missing local --input before it starts Spark (no JVM here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from spark_jobs import cli
from spark_jobs.lines import missing_local_input

if TYPE_CHECKING:
    from pathlib import Path


def test_a_missing_local_input_is_found_without_spark(tmp_path: Path) -> None:
    there = tmp_path / "export"
    there.mkdir()
    nowhere = str(tmp_path / "nowhere")
    assert missing_local_input((str(there),), {}) is None
    assert missing_local_input((str(there), nowhere), {}) == nowhere
    assert missing_local_input((f"file://{there}", f"file://{nowhere}"), {}) == f"file://{nowhere}"


def test_other_file_systems_are_left_to_hadoop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nowhere = str(tmp_path / "nowhere")
    assert missing_local_input(("hdfs://namenode/exports", "s3a://bucket/x"), {}) is None
    # a path without a scheme is on Hadoop's default file system, which these may change
    assert missing_local_input((nowhere,), {"spark.hadoop.fs.defaultFS": "hdfs://nn"}) is None
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert missing_local_input((nowhere,), {}) is None
    assert missing_local_input((f"file://{nowhere}",), {}) == f"file://{nowhere}"


def test_the_cli_says_so_with_status_2_and_never_starts_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_spark(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("Spark was started for a missing input")

    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setattr(cli, "build_session", no_spark)
    nowhere = tmp_path / "nowhere"
    assert cli.main(["--input", str(nowhere), "--output", str(tmp_path / "o")]) == 2
    out = capsys.readouterr()
    assert out.err == f"stompd-report: error: {nowhere}: no such file or directory\n"
    assert out.out == ""


def started_with(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> dict[str, str]:
    """The settings main() would start Spark with (it is stopped right there)."""
    seen: dict[str, str] = {}

    def session(_master: object, _memory: object, conf: dict[str, str], **_kwargs: object) -> None:
        seen.update(conf)
        raise RuntimeError("no Spark in this test")

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setattr(cli, "build_session", session)
    assert cli.main(argv) == 1  # "cannot start Spark"
    return seen


def test_a_small_local_input_runs_the_driver_with_the_client_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = tmp_path / "export"
    (export / "run").mkdir(parents=True)
    (export / "run" / "events-x.jsonl").write_bytes(b"{}\n" * 1000)
    base = ["--output", str(tmp_path / "o"), "--quiet"]
    assert started_with(monkeypatch, ["--input", str(export), *base]) == cli.SMALL_INPUT_JVM
    # the user's own JVM options win; an input elsewhere has a size only Hadoop knows
    mine = ["--conf", "spark.driver.extraJavaOptions=-Xss4m"]
    assert started_with(monkeypatch, ["--input", str(export), *mine, *base]) == {
        **cli.SMALL_INPUT_JVM,
        "spark.driver.extraJavaOptions": "-Xss4m",
    }
    assert started_with(monkeypatch, ["--input", "hdfs://nn/exports", *base]) == {}
    monkeypatch.setattr(cli, "SMALL_INPUT", 1000)
    assert started_with(monkeypatch, ["--input", str(export), *base]) == {}
