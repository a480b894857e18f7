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
    conn.add_argument("--login")
    conn.add_argument("--passcode")
    conn.add_argument("--vhost", default="/", help='CONNECT "host" header (RabbitMQ vhost); default "/"')
    conn.add_argument("--connect-timeout", type=_positive_float, default=10.0, metavar="S")

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
    if args.ack_receipts and args.ack == "auto":
        parser.error("--ack-receipts needs --ack client or client-individual")
    messages = args.messages if args.messages is not None or args.duration is not None else 10_000
    return Settings(
        host=args.host,
        port=args.port,
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
