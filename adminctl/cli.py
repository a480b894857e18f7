"""``stompd-admin``: look at and operate a running stompd through its admin API.

In the spirit of ActiveMQ's ``activemq dstat / browse / purge``.  Tables for people by
default; ``--json`` prints one JSON object as the last line of output, for scripts.
Exit status: 0 done, 1 the broker refused or failed (one line on stderr says why,
also when it cannot be reached or ``--url`` names something else, such as a STOMP
port: never a traceback), 2 bad usage, 130 interrupted (a running operation is asked to
stop first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from adminctl import format as fmt
from adminctl.client import AdminClient, AdminClientError, destination_segment
from adminctl.common import CommandFailed, dest_path, positive, print_message, queue_name
from adminctl.messages import (
    add_message_commands,
    cmd_connection,
    cmd_info,
    cmd_move_message,
    cmd_remove_message,
    cmd_retry,
    cmd_send,
    cmd_show,
)
from adminctl.progress import APPLIED, run_operation
from adminctl.queue_commands import COMMANDS as QUEUE_COMMANDS
from adminctl.queue_commands import add_queue_commands

if TYPE_CHECKING:
    from collections.abc import Callable

DEFAULT_URL = "http://127.0.0.1:8161"


# -- commands -------------------------------------------------------------------------


def cmd_list(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get("/destinations", kind=args.kind)
    if not args.json:
        rows = [
            [
                d["name"],
                d["depth"],
                d["producers"],
                d["consumers"],
                d["enqueued"],
                d["dequeued"],
                d["in_flight"],
                f"{d['memory_percent']:.1f}",
                fmt.size(d["memory_bytes"]),
                d["disk_messages"],
            ]
            for d in result["destinations"]
        ]
        headers = ["Name", "Depth", "Producers", "Consumers", "Enqueued", "Dequeued", "In flight"]
        out.write(fmt.table([*headers, "Memory %", "Memory", "On disk"], rows) + "\n")
    return result


def cmd_stat(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    d: dict[str, Any] = client.get(dest_path(args.dest))
    if not args.json:
        pairs = [
            ("name", d["name"]),
            ("kind", d["kind"]),
            *([("dispatch", "PAUSED (stompd-admin resume starts it again)")] if d.get("paused") else []),
            ("depth", d["depth"]),
            ("  in memory", d["memory_messages"]),
            ("  on disk", d["disk_messages"]),
            ("enqueued", d["enqueued"]),
            ("dequeued", d["dequeued"]),
            ("dispatched", d["dispatched"]),
            ("in flight", d["in_flight"]),
            ("expired", d["expired"]),
            ("consumers", d["consumers"]),
            ("producers", d["producers"]),
            (
                "memory",
                f"{fmt.size(d['memory_bytes'])} of {fmt.size(d['memory_limit'])} ({d['memory_percent']}%)",
            ),
        ]
        out.write(fmt.key_values(pairs) + "\n")
    return d


def cmd_browse(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    name = queue_name(args.dest)
    return _browse(client, args, out, dest_path(name) + "/messages", name)


def cmd_browse_durable(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    return _browse(client, args, out, _durable_path(args) + "/messages", f"{args.client_id}/{args.name}")


def cmd_purge_durable(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    op = run_operation(client, args, _durable_path(args) + "/purge", {})
    if not args.json:
        out.write(
            f"purged durable subscription {args.client_id}/{args.name}: {op['removed']} message(s) removed\n"
        )
    return op


def cmd_delete_durable(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.delete(_durable_path(args))
    if not args.json:
        out.write(
            f"deleted durable subscription {args.client_id}/{args.name}: "
            f"{result['removed']} message(s) it was owed dropped\n"
        )
    return result


def _durable_path(args: argparse.Namespace) -> str:
    return f"/subscriptions/{quote(args.client_id, safe='')}/{quote(args.name, safe='')}"


def _browse(
    client: AdminClient, args: argparse.Namespace, out: TextIO, path: str, name: str
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    cursor: str | None = args.cursor
    while len(messages) < args.limit:
        page = client.get(
            path,
            selector=args.selector,
            limit=min(args.limit - len(messages), 500),
            cursor=cursor,
            preview=args.preview,
        )
        if not args.json:
            for message in page["messages"]:
                print_message(len(messages) + 1, message, out)
                messages.append(message)
        else:
            messages.extend(page["messages"])
        cursor = page["next"]
        if cursor is None:
            break
    if not args.json:
        out.write(f"{len(messages)} message(s) browsed on {name}{_more(cursor)}\n")
    return {"destination": name, "messages": messages, "next": cursor}


def _more(cursor: str | None) -> str:
    return f" (more follow: raise --limit, or go on with --cursor {cursor})" if cursor is not None else ""


def cmd_count(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    name = queue_name(args.dest)
    op = run_operation(client, args, dest_path(name) + "/count", {"selector": args.selector})
    if not args.json:
        what = f" matching {args.selector!r}" if args.selector else ""
        out.write(f"{op['matched']} message(s) on {name}{what}\n")
    return op


def cmd_transfer(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    source, target = queue_name(args.source), queue_name(args.target)
    body = {"to": target, "selector": args.selector, "max": args.max}
    op = run_operation(client, args, dest_path(source) + "/" + args.command, body)
    if not args.json:
        out.write(f"{APPLIED[args.command]} {_summary(op)} from {source} to {target}\n")
    return op


def cmd_remove(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    name = queue_name(args.dest)
    op = run_operation(
        client, args, dest_path(name) + "/remove", {"selector": args.selector, "max": args.max}
    )
    if not args.json:
        out.write(f"removed {_summary(op)} from {name}\n")
    return op


def cmd_purge(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    name = queue_name(args.dest)
    op = run_operation(client, args, dest_path(name) + "/purge", {})
    if not args.json:
        out.write(f"purged {name}: {op['removed']} message(s) removed\n")
    return op


def _summary(op: dict[str, Any]) -> str:
    applied = op[APPLIED[op["kind"]]]
    took = f"{op['scanned']} scanned, {op['elapsed_ms']:.0f} ms"
    return f"{applied} of {op['matched']} matching message(s) ({took})"


def cmd_delete(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.delete(dest_path(args.dest))
    if not args.json:
        out.write(f"deleted {result['deleted']} ({result['removed']} message(s) dropped)\n")
    return result


def cmd_scheduled(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """Scheduled messages (``AMQ_SCHEDULED_*``): list them, remove one, or all."""
    if args.action == "remove":
        removed: dict[str, Any] = client.delete("/scheduled/" + quote(args.id, safe=""))
        if not args.json:
            out.write(f"removed scheduled job {args.id}\n")
        return removed
    if args.action == "remove-all":
        if (args.start is None) != (args.end is None):
            raise CommandFailed("--start and --end go together (a window of due times, epoch ms)")
        removed = client.delete("/scheduled", start=args.start, end=args.end)
        if not args.json:
            window = f" due from {args.start} to {args.end}" if args.start is not None else ""
            out.write(f"removed {removed['removed']} scheduled job(s){window}\n")
        return removed
    jobs: list[dict[str, Any]] = []
    cursor: str | None = args.cursor
    while len(jobs) < args.limit:
        page = client.get("/scheduled", limit=min(args.limit - len(jobs), 500), cursor=cursor, preview=64)
        jobs.extend(page["jobs"])
        cursor = page["next"]
        if cursor is None:
            break
    if not args.json:
        rows = [
            [
                j["id"],
                j["destination"],
                fmt.since(j["next_due"] / 1000),
                j["cron"],
                j["delay"] or None,
                j["period"] or None,
                f"{j['repeats_left']}/{j['repeat']}" if j["repeat"] else None,
                fmt.size(j["body_size"]),
            ]
            for j in jobs
        ]
        headers = ["Id", "Destination", "Next due", "Cron", "Delay ms", "Period ms", "Repeats left", "Body"]
        out.write(fmt.table(headers, rows) + "\n")
        out.write(f"{len(jobs)} scheduled job(s){_more(cursor)}\n")
    return {"jobs": jobs, "next": cursor}


def cmd_connections(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get("/connections")
    if not args.json:
        # By connector, as ActiveMQ's console lists them (a bridge's apart).
        result["connections"].sort(key=lambda c: (c["network"] is not None, c["connector"]))
        rows = [
            [
                c["id"],
                c["connector"] if c["network"] is None else f"network bridge ({c['network']})",
                c["transport"],
                c["peer"],
                c["login"],
                c["client_id"],
                c["version"],
                c["subscriptions"],
                c["in_flight"],
                fmt.since(c["connected_since"]),
            ]
            for c in result["connections"]
        ]
        headers = [
            "ID",
            "Connector",
            "Transport",
            "Peer",
            "Login",
            "Client ID",
            "Version",
            "Subscriptions",
            "In flight",
            "Connected since",
        ]
        out.write(fmt.table(headers, rows) + "\n")
    return result


def cmd_close_connection(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.delete("/connections/" + destination_segment(args.id))
    if not args.json:
        out.write(f"closed connection {result['closed']}\n")
    return result


def cmd_subscriptions(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get("/subscriptions")
    if not args.json:
        keys = ["id", "destination", "ack", "selector", "durable", "client_id", "in_flight", "pending"]
        rows = [
            [s["connection"] or "(offline)", *(s[k] for k in keys), s["delivered"]]
            for s in result["subscriptions"]
        ]
        headers = ["Connection", "ID", "Destination", "Ack", "Selector", "Durable", "Client ID"]
        out.write(fmt.table([*headers, "In flight", "Pending", "Delivered"], rows) + "\n")
    return result


def cmd_usage(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get("/usage")
    if not args.json:
        rows = [
            [name, fmt.size(m["used"]), fmt.size(m["limit"]), f"{m['percent']:.1f}", fmt.size(m["peak"])]
            for name, m in ((k, result[k]) for k in ("memory", "store", "temp"))
        ]
        out.write(fmt.table(["Usage", "Used", "Limit", "%", "Peak"], rows) + "\n")
        out.write(
            f"{result['connections']} connection(s), {result['destinations']} destination(s), "
            f"{result['blocked_producers']} blocked producer(s)\n"
        )
    return result


def cmd_network(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get("/network")
    if not args.json:
        rows = [
            [
                b["connector"],
                b["direction"],
                "yes" if b["duplex"] else "no",
                b["remote"],
                b["remote_broker"] or "",
                b["state"],
                fmt.since(b["connected_since"]) if b["connected_since"] else "",
                b["forwarded"],
                b["received"],
                b["in_flight"],
                b["pending"],
                ", ".join(b["forwarding"]),
                ", ".join(b["pulling"]),
                b["last_error"] or "",
            ]
            for b in result["bridges"]
        ]
        headers = [
            "Connector",
            "Direction",
            "Duplex",
            "Remote",
            "Broker",
            "State",
            "Connected since",
            "Forwarded",
            "Received",
            "In flight",
            "Pending",
            "Forwarding",
            "Pulling",
            "Last error",
        ]
        if rows:
            out.write(fmt.table(headers, rows) + "\n")
        else:
            out.write(
                "no network bridges (no <networkConnector> in activemq.xml, "
                "and no other broker's duplex bridge connected)\n"
            )
    return result


def cmd_create(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """ActiveMQ's addQueue / addTopic: nothing happens to one that exists."""
    name = queue_name(args.dest)
    try:
        existing: dict[str, Any] = client.get(dest_path(name))
    except AdminClientError as exc:
        if exc.status != 404:
            raise
    else:
        if not args.json:
            out.write(f"{name} exists already ({existing['depth']} message(s))\n")
        return {**existing, "created": False}
    made: dict[str, Any] = client.post("/destinations", {"name": name})
    if not args.json:
        out.write(f"created {made['name']}\n")
    return {**made, "created": True}


def cmd_health(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    """/health: 0 when the broker serves (a standby has no admin server: it cannot be
    reached, and that is a 1 too), 1 when it says it fails."""
    status, health = client.health()
    role = f"{health.get('role', 'master')} since {fmt.since(health['since'])}" if health.get("since") else ""
    if status != 200 or health.get("status") != "ok":
        problems = "; ".join(health.get("problems") or []) or f"HTTP {status}"
        raise CommandFailed(f"{health.get('status', 'failing')}: {problems}", health)
    if not args.json:
        out.write(f"ok{': ' + role if role else ''}\n")
    return health


# -- one message, sending, the broker ---------------------------------------------------


# -- arguments ------------------------------------------------------------------------

COMMANDS: dict[str, Callable[[AdminClient, argparse.Namespace, TextIO], dict[str, Any]]] = {
    "list": cmd_list,
    "stat": cmd_stat,
    "browse": cmd_browse,
    "count": cmd_count,
    "move": cmd_transfer,
    "copy": cmd_transfer,
    "remove": cmd_remove,
    "purge": cmd_purge,
    "delete": cmd_delete,
    "connections": cmd_connections,
    "close-connection": cmd_close_connection,
    "subscriptions": cmd_subscriptions,
    "browse-durable": cmd_browse_durable,
    "purge-durable": cmd_purge_durable,
    "delete-durable": cmd_delete_durable,
    "usage": cmd_usage,
    "network": cmd_network,
    "create": cmd_create,
    "health": cmd_health,
    "scheduled": cmd_scheduled,
    "send": cmd_send,
    "show": cmd_show,
    "remove-message": cmd_remove_message,
    "move-message": cmd_move_message,
    "retry": cmd_retry,
    "info": cmd_info,
    "connection": cmd_connection,
    **QUEUE_COMMANDS,
}


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def version() -> str:
    """stompd's version, as installed."""
    try:
        return metadata.version("stompd")
    except metadata.PackageNotFoundError:
        return "(not installed)"


DEST_HELP = "the destination: /queue/NAME, /topic/NAME (a bare name is a queue)"
SELECTOR_HELP = (
    "a JMS selector over headers and JMS names, as a consumer's (JMSPriority > 4 AND region = 'EU'); "
    'none, or --selector "", counts every message'
)
SELECTOR_REQUIRED_HELP = (
    "a JMS selector over headers and JMS names (JMSPriority > 4 AND region = 'EU'), required so "
    'that nothing is done to every message by mistake: --selector "" means every message'
)
CURSOR_HELP = "go on from where an earlier run stopped (the cursor its 'more follow' line gave)"


def _browse_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--selector", "-s", help='only the messages it matches (a JMS selector); none, or "", shows all'
    )
    p.add_argument("--limit", "-n", type=positive, default=100, help="at most this many (default 100)")
    p.add_argument("--preview", type=int, default=256, help="body bytes to show (default 256)")
    p.add_argument("--cursor", help=CURSOR_HELP)


def _durable_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("client_id", metavar="CLIENT-ID", help="the subscriber's client-id (CONNECT's client-id)")
    p.add_argument("name", metavar="NAME", help="the subscription's name (activemq.subscriptionName)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stompd-admin",
        description="Operate a running stompd through its admin HTTP API. A bare name is a queue.",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("STOMPD_ADMIN_URL", DEFAULT_URL),
        help=(
            f"the broker's admin server, HOST[:PORT] or a URL; without a port 8161 "
            f"(default {DEFAULT_URL}, or $STOMPD_ADMIN_URL)"
        ),
    )
    parser.add_argument("--user", default=os.environ.get("STOMPD_ADMIN_USER"), help="or $STOMPD_ADMIN_USER")
    parser.add_argument(
        "--password",
        default=os.environ.get("STOMPD_ADMIN_PASSWORD"),
        help="or $STOMPD_ADMIN_PASSWORD (keeps it out of the process list)",
    )
    parser.add_argument("--timeout", type=_seconds, default=30.0, help="seconds per request (default 30)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON object"
    )
    common.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS, help="no progress")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text, parents=[common])

    p = command("list", "destinations with their statistics (like activemq dstat)")
    p.add_argument("--kind", choices=["queue", "topic", "temp-queue", "temp-topic"], help="only these")
    p = command("stat", "one destination's statistics")
    p.add_argument("dest", help=DEST_HELP)
    p = command("create", "create a queue or a topic, as ActiveMQ's console (addQueue, addTopic)")
    p.add_argument("dest", help="the queue (a bare name, or /queue/NAME) or /topic/NAME to create")
    p = command("browse", "show messages without consuming them")
    p.add_argument("dest", help="the queue (a bare name is one)")
    _browse_arguments(p)
    p = command("count", "count messages (matching a selector)")
    p.add_argument("dest", help="the queue (a bare name is one)")
    p.add_argument("--selector", "-s", help=SELECTOR_HELP)
    for name, verb in (("move", "move"), ("copy", "copy")):
        p = command(name, f"{verb} the messages that match a selector to another destination")
        p.add_argument("source", help=f"the queue to {verb} messages from (a bare name is one)")
        p.add_argument("target", help=f"the queue to {verb} them to (a bare name is one); made if missing")
        p.add_argument("--selector", "-s", required=True, help=SELECTOR_REQUIRED_HELP)
        p.add_argument("--max", type=positive, help=f"{verb} at most this many messages")
    p = command("remove", "remove the messages that match a selector")
    p.add_argument("dest", help="the queue (a bare name is one)")
    p.add_argument("--selector", "-s", required=True, help=SELECTOR_REQUIRED_HELP)
    p.add_argument("--max", type=positive, help="remove at most this many messages")
    p = command("purge", "remove every message that is not in flight")
    p.add_argument("dest", help="the queue (a bare name is one)")
    p = command("delete", "delete a destination and its messages")
    p.add_argument("dest", help=DEST_HELP)
    command("connections", "client connections")
    p = command("close-connection", "close a client connection (it gets an ERROR frame)")
    p.add_argument("id", help="the connection's id (as `connections` lists it)")
    command("subscriptions", "subscriptions, and durable ones whose subscriber is away")
    p = command("browse-durable", "show what a durable subscription is owed, without consuming it")
    _durable_arguments(p)
    _browse_arguments(p)
    p = command("purge-durable", "remove what a durable subscription is owed (not what is in flight)")
    _durable_arguments(p)
    p = command(
        "delete-durable", "end a durable subscription whose subscriber is offline, and what it is owed"
    )
    _durable_arguments(p)
    command("usage", "memory, store and temp usage against their limits")
    command(
        "network",
        "network bridges: this broker's <networkConnectors> and other brokers' duplex ones to it",
    )
    command(
        "health",
        "the broker's /health: exit status 0 when it is up (a pair's master), 1 when not (for scripts)",
    )
    p = command("scheduled", "scheduled messages (AMQ_SCHEDULED_*): list them, or remove one or all")
    p.set_defaults(action="list")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="the jobs, soonest first (the default)", parents=[common])
    listing.add_argument("--limit", "-n", type=positive, default=100, help="at most this many (default 100)")
    listing.add_argument("--cursor", help=CURSOR_HELP)
    p.set_defaults(limit=100, cursor=None)
    removing = actions.add_parser(
        "remove", help="remove one job (a cron job too) by its id", parents=[common]
    )
    removing.add_argument("id", metavar="ID", help="the job's id (as `scheduled list` shows it)")
    every = actions.add_parser(
        "remove-all", help="remove every job (or those due in a window)", parents=[common]
    )
    every.add_argument(
        "--start", type=int, metavar="MS", help="with --end: only jobs next due from (epoch ms)"
    )
    every.add_argument("--end", type=int, metavar="MS", help="with --start: to (epoch ms, included)")
    add_message_commands(command)
    add_queue_commands(command)
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    client = AdminClient(args.url, args.user, args.password, args.timeout)
    try:
        result = COMMANDS[args.command](client, args, out)
        if args.json:
            out.write(json.dumps(result) + "\n")
        out.flush()
    except AdminClientError as exc:
        return _fail(str(exc), args, exc.body, out)
    except CommandFailed as exc:
        return _fail(str(exc), args, exc.payload, out)
    except KeyboardInterrupt:
        print("stompd-admin: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``stompd-admin list | head``): nothing more to say, and the
        # interpreter must not complain flushing stdout at exit either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyError as exc:
        return _fail(f"{args.url} answered without {exc}: is it stompd's admin server?", args, None, out)
    except Exception as exc:
        # Never a traceback to a user: one line, what failed.
        return _fail(f"failed: {type(exc).__name__}: {exc}", args, None, out)
    return 0


def _fail(message: str, args: argparse.Namespace, payload: dict[str, Any] | None, out: TextIO) -> int:
    print(f"stompd-admin: {message}", file=sys.stderr)
    if args.json:
        out.write(json.dumps(payload if payload is not None else {"error": {"message": message}}) + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
