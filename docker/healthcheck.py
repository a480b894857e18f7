#!/usr/bin/env python3
"""The stompd image's HEALTHCHECK: is the broker inside this container serving?

Two checks, both against 127.0.0.1 inside the container, standard library only:

1. ``GET /health`` on the admin HTTP server answers 200 (it answers 503 naming the
   problem when the message store has failed);
2. the STOMP listener answers a CONNECT with a frame (CONNECTED; an ERROR, such as a
   refused login, still proves the listener and the engine are serving).

Ports come from the variables the image's activemq.xml reads (``STOMPD_HTTP_PORT``,
``STOMPD_STOMP_PORT``), so the check follows a changed port; ``STOMPD_HTTP_PORT=0``
(admin server off) leaves only the STOMP check.  ``STOMPD_HEALTH_LOGIN`` and
``STOMPD_HEALTH_PASSCODE`` log the CONNECT in where users are configured.

Exit status 0: healthy; 1: not (one line on stdout says why, which ``docker inspect``
shows).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.error
import urllib.request

HOST = "127.0.0.1"
#: Docker's HEALTHCHECK --timeout is 5 s; both checks fit in it.
TIMEOUT_S = 2.0


def check_http(port: int) -> str | None:
    """None when /health says ok, else why not."""
    url = f"http://{HOST}:{port}/health"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return None if response.status == 200 else f"{url}: HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        try:
            problems = json.loads(exc.read()).get("problems") or []
        except (ValueError, AttributeError):
            problems = []
        return f"{url}: HTTP {exc.code}" + (f": {'; '.join(map(str, problems))}" if problems else "")
    except (OSError, ValueError) as exc:
        return f"{url}: {getattr(exc, 'reason', None) or exc}"


def check_stomp(port: int, login: str | None, passcode: str | None) -> str | None:
    """None when the listener answers CONNECT with a frame, else why not."""
    headers = ["accept-version:1.0,1.1,1.2", "host:localhost"]
    if login is not None:
        headers += [f"login:{login}", f"passcode:{passcode or ''}"]
    connect = ("CONNECT\n" + "\n".join(headers) + "\n\n\0").encode()
    where = f"stomp://{HOST}:{port}"
    try:
        with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as sock:
            sock.sendall(connect)
            reply = b""
            while b"\0" not in reply:
                chunk = sock.recv(4096)
                if not chunk:
                    return f"{where}: closed without answering CONNECT"
                reply += chunk
            command = reply.lstrip(b"\r\n").split(b"\n", 1)[0].strip()
            if command == b"CONNECTED":
                sock.sendall(b"DISCONNECT\n\n\0")
            elif command != b"ERROR":
                return f"{where}: answered CONNECT with {command[:40]!r}"
    except OSError as exc:
        return f"{where}: {exc.strerror or exc}"
    return None


def main() -> int:
    env = os.environ
    try:
        http_port = int(env.get("STOMPD_HTTP_PORT", "8161"))
        stomp_port = int(env.get("STOMPD_STOMP_PORT", "61613"))
    except ValueError as exc:
        print(f"unhealthy: bad port in the environment: {exc}")
        return 1
    problems = [
        problem
        for problem in (
            check_http(http_port) if http_port else None,
            check_stomp(stomp_port, env.get("STOMPD_HEALTH_LOGIN"), env.get("STOMPD_HEALTH_PASSCODE")),
        )
        if problem is not None
    ]
    if problems:
        print("unhealthy: " + "; ".join(problems))
        return 1
    print("healthy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
