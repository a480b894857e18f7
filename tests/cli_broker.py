"""``stompd`` run by its command line in a process of its own, as an operator runs it: its
ports read from its log, its log (stderr) read line by line as it comes."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Log:
    """The broker's stderr, line by line, waited on without blocking forever."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert process.stderr is not None
        self.stream = stream = process.stderr
        self.reader = threading.Thread(target=lambda: [self.lines.put(line) for line in stream], daemon=True)
        self.reader.start()

    def close(self) -> None:
        """Once the process has exited: the rest of its output, and the pipe closed."""
        self.reader.join(timeout=10)
        self.stream.close()
        self.drain()

    def drain(self) -> list[str]:
        """Every line come in so far (kept in ``seen`` too)."""
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.seen

    def wait_for(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no log line like {pattern!r} in:\n{''.join(self.seen)}") from None
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match


#: ``python -m broker`` under a limit of open files.
_LIMITED = (
    "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({files}, {files})); "
    "sys.argv[0] = 'stompd'; runpy.run_module('broker', run_name='__main__', alter_sys=True)"
)


class CliBroker:
    """``python -m broker --config FILE ARGS``; ``port`` is its first STOMP listener's and
    ``http_port`` its admin server's (0 if it has none); ``files``: its RLIMIT_NOFILE."""

    def __init__(self, config: Path, *args: str, http: bool = True, files: int | None = None) -> None:
        command = [sys.executable, "-m", "broker", "--config", str(config), *args]
        if not http:
            # Else it would listen on the default 8161, which another broker may hold (an
            # ActiveMQ peer's console, or a test running beside this one).
            command += ["--http-port", "0"]
        if files is not None:
            # At most ``files`` descriptors, soft and hard alike (stompd raises its soft limit
            # to the hard one), set by the child itself (no preexec_fn in a threaded parent).
            command[1:3] = ["-c", _LIMITED.format(files=files)]
        self.process = subprocess.Popen(
            command,
            cwd=config.parent,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.log = Log(self.process)
        try:
            self.http_port = (
                int(self.log.wait_for(r"admin console on http://[^:]+:(\d+)/").group(1)) if http else 0
            )
            self.port = int(self.log.wait_for(r"stompd listening on [^:]+:(\d+)").group(1))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> int:
        """SIGTERM, then wait for it to exit; its exit code (the log is complete then)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.log.close()
        return self.process.returncode

    @property
    def text(self) -> str:
        return "".join(self.log.drain())
