"""``stompd-admin``'s commands on one message and on the broker as ActiveMQ's console has
them: send, show, remove-message, move-message, retry, info, connection."""

from __future__ import annotations

import argparse
import base64
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
        data = _read_body(args.file)
        try:
            request["body"] = data.decode("utf-8")
        except UnicodeDecodeError:
            request.update(body=base64.b64encode(data).decode("ascii"), body_encoding="base64")
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
        out.write(fmt.key_values(pairs) + "\n")
    return result


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
    p = command("send", "send a message, as a producer would (authorized as the admin user)")
    p.add_argument("dest")
    p.add_argument("body", nargs="?", help="the body (or --file)")
    p.add_argument("--file", "-f", metavar="PATH", help="the body from a file (- : standard input)")
    p.add_argument("--header", "-H", action="append", default=[], metavar="NAME=VALUE", help="repeatable")
    p.add_argument("--persistent", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--priority", type=int, choices=range(10), metavar="0-9")
    p.add_argument("--delay", type=positive, metavar="MS", help="deliver after this many ms")
    p = command("show", "one message whole: headers and body")
    p.add_argument("dest")
    p.add_argument("id", metavar="MESSAGE-ID")
    p = command("remove-message", "remove one message by its id")
    p.add_argument("dest")
    p.add_argument("id", metavar="MESSAGE-ID")
    p = command("move-message", "move one message by its id to a queue")
    p.add_argument("dest")
    p.add_argument("id", metavar="MESSAGE-ID")
    p.add_argument("target")
    p = command("retry", "move a dead-lettered message back to its original destination")
    p.add_argument("dest", help="the dead-letter queue (as ActiveMQ.DLQ)")
    p.add_argument("id", metavar="MESSAGE-ID")
    command("info", "the broker's name, version, uptime and role in a pair")
    p = command("connection", "one connection, with its producers and consumers")
    p.add_argument("id")
