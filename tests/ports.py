"""Free TCP ports for brokers the tests start as processes (which must be told a port).

A child is told its port seconds before it binds it (a broker's imports, a JVM's start),
so the port must stay free meanwhile:

* it is taken from just below the kernel's ephemeral range (``ip_local_port_range``),
  where ``bind(0)`` and ``connect()`` never pick one, so neither a listener another test
  binds to port 0 nor any client socket can take it first;
* every process on the machine that asks (the workers of a parallel run, another
  checkout's run) locks it in one shared file, a byte per port: it is given to one
  process at a time, and stays that process's until the process exits (a broker
  restarted on its port after ``kill -9`` finds it still free). The kernel drops a
  dead process's locks, so nothing is left to clean up.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path
from typing import Final

#: The lock file every run on this machine shares.
LOCKS: Final = Path(tempfile.gettempdir()) / "stompd-test-ports.lock"
#: How many ports below the ephemeral range are handed out.
SPAN: Final = 12_000

#: Ports handed out in this process: a process's own locks never conflict with each
#: other, and two listeners of one broker (STOMP and WebSocket, say) must not share one.
_GIVEN: set[int] = set()
_lock_fd: int | None = None
#: Its own generator: a test that seeds ``random`` gets the same numbers whatever ports it asked for.
_choose = random.Random()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _range() -> range:
    low = _ephemeral_low()
    return range(max(1024, low - SPAN), low)


def _locked(port: int) -> bool:
    """Lock ``port``'s byte for this process; False if another process holds it."""
    global _lock_fd
    if _lock_fd is None:
        _lock_fd = os.open(LOCKS, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.lockf(_lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
    except OSError:
        return False
    return True


def _bindable(port: int) -> bool:
    # No SO_REUSEADDR: a port any socket still uses (TIME_WAIT included) is passed over.
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port nothing uses now on 127.0.0.1, outside the ephemeral range, that no other
    process of the machine's test runs was or will be handed while this one lives."""
    ports = _range()
    for _ in range(10 * len(ports)):
        port = _choose.choice(ports)
        if port not in _GIVEN and _locked(port) and _bindable(port):
            _GIVEN.add(port)
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1} (see tests/ports.py)")
