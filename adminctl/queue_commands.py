"""``stompd-admin``'s commands for what ActiveMQ's console does to a queue and a topic
beside browsing it: pause and resume a queue's dispatch (QueueView.pause/resume), copy
one message, a queue's consumers and a destination's producers, and a durable topic
subscriber made offline ("Create Durable Topic Subscriber")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from adminctl import format as fmt
from adminctl.common import dest_path, queue_name
from adminctl.messages import message_path

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from adminctl.client import AdminClient


def cmd_pause(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.post(dest_path(args.dest) + "/pause", {})
    if not args.json:
        out.write(
            f"paused {result['name']}: messages are taken and kept ({result['depth']} waiting), "
            "none is dispatched until resume (a restart resumes it too)\n"
        )
    return result


def cmd_resume(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.post(dest_path(args.dest) + "/resume", {})
    if not args.json:
        out.write(f"resumed {result['name']}: dispatching again\n")
    return result


def cmd_copy_message(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    path = message_path(args.dest, args.id) + "/copy"
    result: dict[str, Any] = client.post(path, {"to": queue_name(args.target)})
    if not args.json:
        out.write(f"copied {result['copied']} from {result['destination']} to {result['target']}\n")
    return result


def cmd_consumers(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get(dest_path(args.dest) + "/consumers")
    if not args.json:
        keys = [
            "connection",
            "client_id",
            "id",
            "selector",
            "ack",
            "prefetch",
            "delivered",
            "in_flight",
            "pending",
        ]
        rows = [[c[k] for k in keys] for c in result["consumers"]]
        headers = ["Connection", "Client ID", "ID", "Selector", "Ack", "Prefetch", "Dispatched"]
        out.write(fmt.table([*headers, "In flight", "Pending"], rows) + "\n")
    return result


def cmd_producers(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    result: dict[str, Any] = client.get(dest_path(args.dest) + "/producers")
    if not args.json:
        rows = [
            [p["id"], p["peer"], p["connector"], p["login"], p["client_id"], fmt.since(p["connected_since"])]
            for p in result["producers"]
        ]
        headers = ["Connection", "Peer", "Connector", "Login", "Client ID", "Connected since"]
        out.write(fmt.table(headers, rows) + "\n")
        out.write("(a producer is a connection that has sent here: STOMP has no producer of its own)\n")
    return result


def cmd_create_durable(client: AdminClient, args: argparse.Namespace, out: TextIO) -> dict[str, Any]:
    topic = args.topic if args.topic.startswith("/topic/") else "/topic/" + args.topic
    body = {"client_id": args.client_id, "name": args.name, "destination": topic, "selector": args.selector}
    result: dict[str, Any] = client.post("/subscriptions", body)
    if not args.json:
        selector = f" (selector {result['selector']})" if result["selector"] else ""
        out.write(
            f"created durable subscription {result['durable']} of client {result['client_id']} on "
            f"{result['destination']}{selector}: offline, it keeps what is sent there from now on\n"
        )
    return result


COMMANDS: dict[str, Callable[[AdminClient, argparse.Namespace, TextIO], dict[str, Any]]] = {
    "pause": cmd_pause,
    "resume": cmd_resume,
    "copy-message": cmd_copy_message,
    "consumers": cmd_consumers,
    "producers": cmd_producers,
    "create-durable": cmd_create_durable,
}


def add_queue_commands(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = command("pause", "pause a queue's dispatch: messages are taken and kept, none is dispatched")
    p.add_argument("dest", metavar="QUEUE", help="a queue (a bare name is one)")
    p = command("resume", "resume a paused queue's dispatch")
    p.add_argument("dest", metavar="QUEUE", help="a paused queue (a bare name is one)")
    p = command("copy-message", "copy one message by its id to a queue (the original stays)")
    p.add_argument("dest", metavar="QUEUE", help="the queue it is on")
    p.add_argument("id", metavar="MESSAGE-ID", help="the message's message-id (as browse shows it)")
    p.add_argument("target", metavar="TARGET", help="the queue to copy it to")
    p = command("consumers", "a queue's consumers: client id, selector, prefetch, dispatched, in flight")
    p.add_argument("dest", metavar="QUEUE", help="the queue (a bare name is one)")
    p = command("producers", "the connections that have sent to a destination")
    p.add_argument("dest", metavar="DESTINATION", help="/queue/NAME or /topic/NAME (a bare name is a queue)")
    p = command("create-durable", "make an offline durable topic subscription that keeps messages")
    p.add_argument("topic", metavar="TOPIC", help="the topic (/topic/ is added if missing)")
    p.add_argument("client_id", metavar="CLIENT-ID", help="the client id its subscriber will CONNECT with")
    p.add_argument("name", metavar="NAME", help="its activemq.subscriptionName")
    p.add_argument("--selector", default="", help="a JMS selector (default: every message)")
