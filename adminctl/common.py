"""What ``stompd-admin``'s commands share: their failure, how a name becomes a queue and
an API path, a message printed, a count argument."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from adminctl import format as fmt
from adminctl.client import destination_segment


class CommandFailed(Exception):
    def __init__(self, message: str, payload: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.payload = payload


#: The prefixes of a STOMP destination name (the broker's names.PREFIXES, which this
#: client does not import): a name without one is a queue.
_PREFIXES = (
    "/queue/",
    "/topic/",
    "/temp-queue/",
    "/temp-topic/",
    "/remote-temp-queue/",
    "/remote-temp-topic/",
)


def queue_name(text: str) -> str:
    """The full name of ``text``: one without a STOMP prefix is a queue, as in ``activemq
    browse`` and as a SEND to it (``orders`` is ``/queue/orders``, ``/custom/x`` the queue
    ``/queue//custom/x``)."""
    text = text.strip()
    return text if text.startswith(_PREFIXES) else "/queue/" + text


def dest_path(name: str) -> str:
    return "/destinations/" + destination_segment(queue_name(name))


def print_message(n: int | None, m: dict[str, Any], out: TextIO) -> None:
    flags = [f"priority {m['priority']}", "persistent" if m["persistent"] else "non-persistent"]
    if m["redelivered"]:
        flags.append("redelivered")
    number = f"{n}: " if n is not None else ""
    out.write(f"--- {number}{m['id']}  {', '.join(flags)}  {fmt.since(m['timestamp'] / 1000)}\n")
    for key, value in m["headers"].items():
        out.write(f"{key}:{value}\n")
    body = m["body"] if m["body_encoding"] == "utf-8" else f"(binary, base64) {m['body']}"
    tail = f"... ({m['body_size']} bytes)" if m["truncated"] else ""
    out.write(f"\n{body}{tail}\n")


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
