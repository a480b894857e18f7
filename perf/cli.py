"""`stompd-perf`: command line.

Exit status: 0 when every expected message arrived and there were no errors; 1 when
messages were lost or there were errors (ERROR frames, failed connections, a stalled
run, a missing receipt); 2 for a bad command line.  Duplicates and out-of-order
deliveries are reported but do not change the status: with --priority-mix, or after a
redelivery, a broker may legitimately produce them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from perf.payload import STAMP_SIZE
from perf.report import format_human
from perf.runner import run
from perf.settings import ACK_MODES, Settings

if TYPE_CHECKING:
    from collections.abc import Sequence

EPILOG = """\
Every message body starts with a 32-byte stamp (run id, producer, sequence, send time),
padded to --size; STOMP headers carry nothing the tool relies on.  Latency is end to end,
from the send time (with --rate, the time the message was due) to its arrival.

exit status: 0 nothing lost and no errors; 1 lost > 0 or errors > 0; 2 bad arguments.

examples:
  stompd-perf --destination /queue/a --producers 4 --consumers 4 --messages 200000
  stompd-perf --destination /topic/t --consumers 4 --messages 100000 --processes 2
  stompd-perf --rate 5000 --duration 30 --warmup 5 --json
  stompd-perf --port 61623 --vhost / --login guest --passcode guest      (RabbitMQ)
  stompd-perf --producers 0 --consumers 1 --timeout 5    (drain a queue; counts "foreign")
  stompd-perf --failover 127.0.0.1:61613,127.0.0.1:61623 --persistent --receipt-every 10 \
      --ack client-individual --duration 60       (through a master/slave takeover: lost, gap)
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    return value


def _count(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    return value


def _brokers(text: str) -> tuple[tuple[str, int], ...]:
    brokers = []
    for item in text.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"expected HOST:PORT,HOST:PORT,..., not {item.strip()!r}")
        brokers.append((host.strip("[]"), int(port)))
    return tuple(brokers)


def _ports(text: str) -> tuple[int, ...]:
    try:
        ports = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ports like 61613,61614, not {text!r}") from None
    if not ports or not all(0 < port < 65536 for port in ports):
        raise argparse.ArgumentTypeError(f"ports are 1-65535, not {text!r}")
    return ports


def _property(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {text!r}")
    return name, value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stompd-perf",
        description="Load-test a STOMP broker (stompd, ActiveMQ, RabbitMQ, ...): throughput, "
        "end-to-end latency, lost / duplicated / out-of-order messages.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    conn = p.add_argument_group("connection")
    conn.add_argument("--host", default="127.0.0.1")
    conn.add_argument("--port", type=int, default=61613)
    conn.add_argument(
        "--producer-ports",
        type=_ports,
        default=(),
        metavar="P1,P2",
        help="producers connect to these ports in turn instead of --port (brokers of a network)",
    )
    conn.add_argument(
        "--consumer-ports", type=_ports, default=(), metavar="P1,P2", help="the same for consumers"
    )
    conn.add_argument("--login")
    conn.add_argument("--passcode")
    conn.add_argument("--vhost", default="/", help='CONNECT "host" header (RabbitMQ vhost); default "/"')
    conn.add_argument("--connect-timeout", type=_positive_float, default=10.0, metavar="S")
    conn.add_argument(
        "--failover",
        type=_brokers,
        metavar="HOST:PORT,...",
        help="brokers to try in turn (instead of --host/--port), at the start and whenever a connection "
        "is lost, as ActiveMQ's failover: transport: producers send again what no RECEIPT confirmed, "
        "consumers subscribe again; the summary says how long deliveries stopped (needs --receipt-every "
        "or --transacted from producers)",
    )
    conn.add_argument(
        "--reconnect-timeout",
        type=_positive_float,
        default=60.0,
        metavar="S",
        help="with --failover: how long a lost connection may take to come back (default 60)",
    )

    load = p.add_argument_group("load")
    load.add_argument("--destination", default="/queue/stompd-perf", help="/queue/NAME or /topic/NAME")
    load.add_argument("--producers", type=_count, default=1, metavar="N")
    load.add_argument("--consumers", type=_count, default=1, metavar="M")
    amount = load.add_mutually_exclusive_group()
    amount.add_argument(
        "--messages",
        type=_positive_int,
        metavar="N",
        help="messages to send in TOTAL, split evenly over the producers (default 10000)",
    )
    amount.add_argument(
        "--duration", type=_positive_float, metavar="S", help="send for S seconds (after --warmup)"
    )
    load.add_argument(
        "--size", type=_positive_int, default=1024, metavar="BYTES", help="body size (default 1024)"
    )
    load.add_argument("--persistent", action="store_true", help="send with persistent:true")
    load.add_argument("--priority-mix", action="store_true", help="random priority 0-9 on every message")
    load.add_argument(
        "--property",
        dest="properties",
        type=_property,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra header on every SEND (repeatable), e.g. for --selector",
    )
    load.add_argument(
        "--rate",
        type=_positive_float,
        metavar="MSGS_PER_S",
        help="open loop: send at this total rate; latency counts from when each message was due",
    )
    load.add_argument(
        "--warmup", type=float, default=0.0, metavar="S", help="leave the first S seconds out of the figures"
    )
    load.add_argument(
        "--backlog",
        action="store_true",
        help="queues: consumers subscribe only after every producer has finished (fill, then drain)",
    )

    prod = p.add_argument_group("producers")
    prod.add_argument(
        "--transacted", type=_positive_int, metavar="BATCH", help="BEGIN / COMMIT every BATCH sends"
    )
    prod.add_argument(
        "--receipt-every",
        type=_positive_int,
        metavar="K",
        help="ask for a receipt on every K-th message and wait for it (see --receipt-window)",
    )
    prod.add_argument(
        "--receipt-window",
        type=_positive_int,
        default=1,
        metavar="W",
        help="receipts (and COMMITs) a producer may have unanswered before it waits (default 1)",
    )

    cons = p.add_argument_group("consumers")
    cons.add_argument("--ack", choices=ACK_MODES, default="auto")
    cons.add_argument(
        "--ack-receipts",
        action="store_true",
        help="ask for a RECEIPT on every ACK (not waited for; any missing at the end is an error)",
    )
    cons.add_argument(
        "--prefetch",
        type=_positive_int,
        metavar="N",
        help="sent as both activemq.prefetchSize and prefetch-count (RabbitMQ)",
    )
    cons.add_argument(
        "--selector",
        help="JMS selector on every subscription; every message sent must match it (see --property)",
    )
    cons.add_argument(
        "--timeout",
        type=_positive_float,
        default=10.0,
        metavar="S",
        help="once the producers are done, how long consumers wait with nothing arriving before "
        "the rest counts as lost; before that, how long with nothing sent or received before the "
        "run counts as stalled (default 10)",
    )

    run_ = p.add_argument_group("run")
    run_.add_argument(
        "--processes",
        type=_positive_int,
        default=1,
        metavar="P",
        help="spread producers and consumers over P processes",
    )
    run_.add_argument(
        "--json", action="store_true", help="print the summary as one JSON object, last line of stdout"
    )
    run_.add_argument("--quiet", action="store_true", help="no progress line")
    run_.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="auto", help=argparse.SUPPRESS)
    return p


def settings_from(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Settings:
    if args.size < STAMP_SIZE:
        parser.error(f"--size must be at least {STAMP_SIZE} bytes (the per-message stamp)")
    if args.producers == 0 and args.consumers == 0:
        parser.error("nothing to do: --producers and --consumers are both 0")
    if not args.destination.startswith("/"):
        parser.error("--destination must look like /queue/NAME or /topic/NAME")
    if args.backlog and args.destination.startswith("/topic/"):
        parser.error("--backlog needs a queue: a topic keeps nothing for consumers that are not there yet")
    if args.warmup < 0:
        parser.error("--warmup must be >= 0")
    if args.failover and args.producers and not (args.receipt_every or args.transacted):
        parser.error(
            "--failover needs --receipt-every or --transacted: a RECEIPT is how a producer knows what the "
            "broker kept, and what to send again after a failover"
        )
    if args.ack_receipts and args.ack == "auto":
        parser.error("--ack-receipts needs --ack client or client-individual")
    messages = args.messages if args.messages is not None or args.duration is not None else 10_000
    return Settings(
        host=args.host,
        port=args.port,
        failover=args.failover or (),
        reconnect_timeout=args.reconnect_timeout,
        producer_ports=args.producer_ports,
        consumer_ports=args.consumer_ports,
        login=args.login,
        passcode=args.passcode,
        vhost=args.vhost,
        destination=args.destination,
        producers=args.producers,
        consumers=args.consumers,
        messages=messages,
        duration=args.duration,
        size=args.size,
        persistent=args.persistent,
        ack=args.ack,
        ack_receipts=args.ack_receipts,
        prefetch=args.prefetch,
        transacted=args.transacted,
        receipt_every=args.receipt_every,
        receipt_window=args.receipt_window,
        priority_mix=args.priority_mix,
        selector=args.selector,
        properties=tuple(args.properties),
        rate=args.rate,
        warmup=args.warmup,
        processes=args.processes,
        timeout=args.timeout,
        connect_timeout=args.connect_timeout,
        backlog=args.backlog,
        progress=not args.quiet,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    settings = settings_from(args, parser)
    summary = run(settings, progress=sys.stderr, loop=args.loop)
    if args.json:
        print(format_human(summary), file=sys.stderr)
        print(json.dumps(summary.to_json()), flush=True)
    else:
        print(format_human(summary), flush=True)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
