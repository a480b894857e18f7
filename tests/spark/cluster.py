"""A real Spark standalone cluster on 127.0.0.1: a master and a worker JVM started with the
launch classes of the installed pyspark (``bin/spark-class``), on ephemeral ports, stopped
by PID."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import IO, Final

import pyspark

SPARK_HOME: Final = Path(pyspark.__file__).resolve().parent
SPARK_CLASS: Final = SPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT: Final = SPARK_HOME / "bin" / "spark-submit"
#: The master's REST submission server listens on a fixed port (6066) unless turned off.
PROPERTIES: Final = "spark.master.rest.enabled false\nspark.ui.killEnabled false\n"


def spark_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(work / "logs"),
        SPARK_WORKER_DIR=str(work / "worker"),
        SPARK_CONF_DIR=str(work / "conf"),
    )
    return env


class StandaloneCluster:
    def __init__(self, work: Path) -> None:
        self.work = work
        (work / "conf").mkdir(parents=True, exist_ok=True)
        self.properties = work / "conf" / "spark-defaults.conf"
        self.properties.write_text(PROPERTIES)
        self.processes: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        self.master_url = ""

    def _launch(self, name: str, *args: str) -> Path:
        log = self.work / f"{name}.log"
        out = log.open("wb")
        command = [str(SPARK_CLASS), *args, "--properties-file", str(self.properties)]
        # spark-class ends in `exec java ...`: the PID we hold is the JVM's.
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=spark_env(self.work))
        self.processes.append((process, out))
        return log

    def _wait_for(self, log: Path, pattern: str, timeout: float = 90.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, log.read_text(errors="replace"))
            if match:
                return match
            if any(p.poll() is not None for p, _ in self.processes):
                break
            time.sleep(0.2)  # waiting for a readiness line, not for time to pass
        raise RuntimeError(f"{log.name}: no {pattern!r}:\n{log.read_text(errors='replace')[-3000:]}")

    def start(self) -> StandaloneCluster:
        master_log = self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--webui-port",
            "0",
        )
        self.master_url = self._wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")[
            1
        ]
        worker_log = self._launch(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            self.master_url,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--webui-port",
            "0",
            "--cores",
            "2",
            "--memory",
            "1g",
            "--work-dir",
            str(self.work / "worker"),
        )
        self._wait_for(worker_log, r"Successfully registered with master")
        return self

    def stop(self) -> None:
        for process, out in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            out.close()
        self.processes.clear()
