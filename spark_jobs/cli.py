"""stompd-report: the report job from the command line.

    stompd-report --input DIR --output OUT [--master URL] [--json]

Runs on ``local[*]`` by default; ``--master spark://HOST:PORT`` runs the same job on a
Spark standalone cluster, and under ``spark-submit`` the master spark-submit was given
is used. Progress goes to stderr; with ``--json`` the last line on stdout is the
summary as one JSON object. Exit status: 0 done, 1 Spark failed, 2 bad arguments or
input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Final

from spark_jobs.lines import InputError, local_input_bytes, missing_local_input
from spark_jobs.report import ReportSettings, run_report

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pyspark.sql import SparkSession

PROG: Final = "stompd-report"
#: Below this much local input the driver's JVM runs with the client compiler (C1) only.
#: Kept low on purpose: where C1's slower code starts to cost more than C2's compiling
#: saves is not measured yet (benchmarks/README.md, "The Spark report job").
SMALL_INPUT: Final = 8 << 20
#: A small report is thousands of short-lived generated classes and tiny tasks: the JVM's
#: optimizing compiler (C2) spends more than it saves (the tests' 1,100-line workload:
#: 94 s -> 47 s for the whole command). Big inputs keep C2 for the long loops.
SMALL_INPUT_JVM: Final = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1",  # a cluster's executors
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Report on stompd's exported event logs and metric snapshots (PySpark).",
    )
    parser.add_argument(
        "--input",
        action="append",
        required=True,
        metavar="DIR",
        help="export directory (searched recursively) or file; a local path or any "
        "Hadoop URI; repeat for several",
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="OUT",
        help="where report.html, summary.json, parquet/ and csv/ go (path or URI)",
    )
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master, e.g. spark://HOST:7077 (default: local[*], or spark-submit's)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON line last")
    parser.add_argument(
        "--top",
        type=int,
        default=100,
        metavar="N",
        help="rows in the busiest producers/consumers tables (default 100)",
    )
    parser.add_argument(
        "--allowed-lateness-ms",
        type=int,
        default=60_000,
        metavar="MS",
        help="a line this much older than its file's start is late and skipped (default 60000)",
    )
    parser.add_argument(
        "--driver-memory",
        default="2g",
        metavar="SIZE",
        help="JVM heap of the driver when this command starts Spark (default 2g; in local "
        "mode the executors run in it)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any Spark setting, e.g. spark.ui.enabled=true; repeatable",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    for item in args.conf:
        if "=" not in item:
            parser.error(f"--conf {item!r}: expected KEY=VALUE")
    if args.top < 1 or args.allowed_lateness_ms < 0:
        parser.error("--top must be >= 1 and --allowed-lateness-ms >= 0")
    return args


def session_settings(
    master: str | None, driver_memory: str = "2g", conf: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The Spark settings of the report's session (``master`` None: local[*], or
    spark-submit's); ``conf``, the user's, wins."""
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM already
    if master is None and not under_submit:
        master = "local[*]"
    settings: dict[str, str] = {
        "spark.app.name": PROG,
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        # Spark's stage bar ("[Stage 12:====>  (3 + 2) / 8]") is redrawn with carriage
        # returns on stderr, into the middle of the job's own progress lines: off.
        "spark.ui.showConsoleProgress": "false",
        # A live file rotated away while the job lists and reads: its lines are in the .gz.
        "spark.sql.files.ignoreMissingFiles": "true",
        # A damaged .gz is read up to the damage rather than failing the job.
        "spark.sql.files.ignoreCorruptFiles": "true",
        "spark.pyspark.python": sys.executable,
    }
    if master is not None:
        settings["spark.master"] = master
    if not under_submit:
        settings["spark.driver.memory"] = driver_memory
    if master is not None and master.startswith("local"):
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update(conf or {})
    return settings


def build_session(
    master: str | None, driver_memory: str = "2g", conf: Mapping[str, str] | None = None
) -> SparkSession:
    """The session the report runs on (``session_settings``)."""
    from pyspark.sql import SparkSession

    settings = session_settings(master, driver_memory, conf)
    if settings.get("spark.master", "").startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the JVM binds loopback, not the host's address
    builder: Any = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark: SparkSession = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    # pyspark logs a failed query's stack as JSON before raising; main() prints one line instead.
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        logging.getLogger(name).disabled = True
    return spark


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"{PROG} [{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    settings = ReportSettings(tuple(args.input), args.output, args.top, args.allowed_lateness_ms)
    conf = dict(item.split("=", 1) for item in args.conf)
    missing = missing_local_input(settings.inputs, conf)
    if missing is not None:
        print(f"{PROG}: error: {missing}: no such file or directory", file=sys.stderr)
        return 2
    # (under spark-submit the JVM has started already)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        size = local_input_bytes(settings.inputs, conf)
        if size is not None and size < SMALL_INPUT:
            conf = SMALL_INPUT_JVM | conf  # the user's own JVM options win
    progress("starting Spark" + (f" on {args.master}" if args.master else ""))
    try:
        spark = build_session(args.master, args.driver_memory, conf)
    except Exception as exc:  # no JVM (Java missing), bad master URL...: say so, no traceback
        print(
            f"{PROG}: cannot start Spark: {_first_line(exc)} (is Java installed? try `java -version`)",
            file=sys.stderr,
        )
        return 1
    try:
        summary = run_report(spark, settings, progress)
    except InputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # Spark's errors (lost cluster, unwritable output) as one line
        print(f"{PROG}: the job failed: {_first_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    finally:
        spark.stop()
    if args.json:
        print(json.dumps(summary, separators=(",", ":")))
    else:
        print(_human(summary))
    return 0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _human(summary: dict[str, Any]) -> str:
    lines = [
        f"{summary['events']:,} events ({summary['bad_lines']:,} lines skipped: {summary['corrupt_lines']:,} "
        f"corrupt, {summary['late_lines']:,} late, {summary['duplicate_lines']:,} duplicate; "
        f"{summary['lost_events']:,} lost by the exporter)",
        f"{'destination':<40} {'enqueued':>10} {'dequeued':>10} {'p50 ms':>9} {'p99 ms':>9}",
    ]
    for name, d in summary["destinations"].items():
        p50 = "-" if d["p50_ms"] is None else f"{d['p50_ms']:.1f}"
        p99 = "-" if d["p99_ms"] is None else f"{d['p99_ms']:.1f}"
        lines.append(f"{name:<40} {d['enqueued']:>10,} {d['dequeued']:>10,} {p50:>9} {p99:>9}")
    lines.append(f"report: {summary['output'].rstrip('/')}/report.html")
    return "\n".join(lines)
