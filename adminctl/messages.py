"""``stompd-admin``'s commands on one message and on the broker as ActiveMQ's console has
them: send, show, remove-message, move-message, retry, info, connection."""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from adminctl import format as fmt
from adminctl.client import AdminClient, destination_segment
from adminctl.common import CommandFailed, dest_path, positive, print_message, queue_name

if TYPE_CHECKING:
    from collections.abc import Callable


def message_path(dest: str, message_id: str) -> str:
    return dest_path(dest) + "/messages/" + quote(message_id, safe="")


def cmd_send(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """Send one message, as a producer would (authorized as the admin user)."""
    name = queue_name(args.dest)
    request: dict[str, Any] = {"headers": _header_pairs(args.header)}
    if args.file is not None:
        request.update(_body_fields(_read_body(args.file)))
    elif args.body is not None:
        request["body"] = args.body
    else:
        raise CommandFailed("give the body, or --file PATH (- reads standard input)")
    if args.persistent is not None:
        request["persistent"] = args.persistent
    for key in ("priority", "delay"):
        if getattr(args, key) is not None:
            request[key] = getattr(args, key)
    result: dict[str, Any] = client.post(dest_path(name) + "/messages", request)
    if not args.json:
        later = f", due in {args.delay} ms" if args.delay else ""
        out.write(f"sent {result['body_size']} byte(s) to {name}{later}\n")
    return result


def _body_fields(data: bytes) -> dict[str, str]:
    """A file's body as the API takes it, in the smaller of its two encodings: UTF-8 text
    (JSON escapes some of it: a control character takes six bytes), else base64 (a third
    more); base64 too for what is not UTF-8.  The broker takes up to its maxFrameSize in
    base64, so a body that fits a frame fits the request."""
    encoded = base64.b64encode(data).decode("ascii")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"body": encoded, "body_encoding": "base64"}
    if len(json.dumps(text, ensure_ascii=False).encode()) <= len(encoded):
        return {"body": text}
    return {"body": encoded, "body_encoding": "base64"}


def _header_pairs(pairs: list[str]) -> dict[str, str]:
    headers = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CommandFailed(f"--header takes NAME=VALUE, not {pair!r}")
        headers[key] = value
    return headers


def _read_body(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise CommandFailed(f"cannot read {path}: {exc.strerror or exc}") from None


def cmd_show(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """One message whole: its headers and its body."""
    result: dict[str, Any] = client.get(message_path(args.dest, args.id))
    if not args.json:
        print_message(None, result, out)
    return result


def cmd_remove_message(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.delete(message_path(args.dest, args.id))
    if not args.json:
        out.write(f"removed {result['removed']} from {result['destination']}\n")
    return result


def cmd_move_message(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    path = message_path(args.dest, args.id) + "/move"
    result: dict[str, Any] = client.post(path, {"to": queue_name(args.target)})
    if not args.json:
        out.write(f"moved {result['moved']} from {result['destination']} to {result['target']}\n")
    return result


def cmd_retry(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """ActiveMQ's Retry: a dead-lettered message back to the destination it came from."""
    result: dict[str, Any] = client.post(message_path(args.dest, args.id) + "/retry", {})
    if not args.json:
        out.write(f"retried {result['retried']}: moved from {result['destination']} to {result['target']}\n")
    return result


def cmd_info(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get("/broker")
    if not args.json:
        pairs = [
            ("broker", result["name"]),
            ("version", result["version"]),
            ("started", fmt.since(result["started"])),
            ("uptime", fmt.duration(result["uptime"])),
            ("role", _role(result)),
        ]
        if "counters_since" in result:  # (a broker older than this client has no such field)
            pairs.append(("counts", counters_text(result)))
        out.write(fmt.key_values(pairs) + "\n")
    return result


def counters_text(info: dict[str, Any]) -> str:
    """Since when the broker's counts count: a pair's new master starts them from 0."""
    since = f"since {fmt.since(info['counters_since'])}"
    if info.get("took_over") is None:
        return since
    taken_from = f" from {info['took_over_from']}" if info.get("took_over_from") else ""
    return f"{since} (took over at {fmt.since(info['took_over'])}{taken_from})"


def _role(info: dict[str, Any]) -> str:
    """master or standby of a shared-store pair, and since when; a lone broker's "master"."""
    if not info.get("pair"):
        return f"{info.get('role', 'master')} (not one of a pair)"
    return f"{info['role']} of a shared-store pair since {fmt.since(info['role_since'])}"


def cmd_connection(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """One connection, with its producers and consumers (as ActiveMQ's connection page)."""
    c: dict[str, Any] = client.get("/connections/" + destination_segment(args.id))
    if not args.json:
        pairs = [
            ("id", c["id"]),
            ("connector", f"{c['connector']} ({c['transport']})"),
            ("peer", c["peer"]),
            ("login", c["login"]),
            ("client id", c["client_id"]),
            ("version", c["version"]),
            ("connected since", fmt.since(c["connected_since"])),
        ]
        out.write(fmt.key_values(pairs) + "\n\nProducers\n")
        out.write(fmt.table(["Destination"], [[name] for name in c["producer_list"]]) + "\n\nConsumers\n")
        keys = ["id", "destination", "ack", "selector", "prefetch", "in_flight", "delivered"]
        rows = [[s[k] for k in keys] for s in c["subscription_list"]]
        headers = ["ID", "Destination", "Ack", "Selector", "Prefetch", "In flight", "Delivered"]
        out.write(fmt.table(headers, rows) + "\n")
    return c


def add_message_commands(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    dest = "the queue (a bare name is one)"
    message_id = "the message's message-id (as browse shows it)"
    p = command("send", "send a message, as a producer would (authorized as the admin user)")
    p.add_argument("dest", help="the destination: a queue (a bare name is one) or /topic/NAME")
    p.add_argument("body", nargs="?", help="the body (or --file)")
    p.add_argument(
        "--file",
        "-f",
        metavar="PATH",
        help="the body from a file (- : standard input), up to the broker's maxFrameSize",
    )
    p.add_argument(
        "--header", "-H", action="append", default=[], metavar="NAME=VALUE", help="a header; repeatable"
    )
    p.add_argument(
        "--persistent",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="persistent or not (default: the broker's, non-persistent as a STOMP SEND)",
    )
    p.add_argument("--priority", type=int, choices=range(10), metavar="0-9", help="JMS priority (default 4)")
    p.add_argument("--delay", type=positive, metavar="MS", help="deliver after this many ms")
    p = command("show", "one message whole: headers and body")
    p.add_argument("dest", help=dest)
    p.add_argument("id", metavar="MESSAGE-ID", help=message_id)
    p = command("remove-message", "remove one message by its id")
    p.add_argument("dest", help=dest)
    p.add_argument("id", metavar="MESSAGE-ID", help=message_id)
    p = command("move-message", "move one message by its id to a queue")
    p.add_argument("dest", help=dest)
    p.add_argument("id", metavar="MESSAGE-ID", help=message_id)
    p.add_argument("target", help="the queue to move it to (a bare name is one); made if missing")
    p = command("retry", "move a dead-lettered message back to its original destination")
    p.add_argument("dest", help="the dead-letter queue (as ActiveMQ.DLQ)")
    p.add_argument("id", metavar="MESSAGE-ID", help=message_id)
    command("info", "the broker's name, version, uptime, role in a pair, and since when it counts")
    p = command("connection", "one connection, with its producers and consumers")
    p.add_argument("id", help="the connection's id (as `connections` lists it)")
