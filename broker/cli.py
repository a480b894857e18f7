"""``stompd`` command line: argument parsing and exit codes only."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys
from pathlib import Path

from broker.app import BrokerOptions, run
from broker.core.settings import CoreSettings
from broker.http.auth import HttpSecurity
from broker.http.origin import InvalidOrigin, normalize_origin
from broker.http.server import AdminPortError
from broker.http.ws import WebSocketConnector, WebSocketPortError
from broker.io.limits import DEFAULT_MAX_FRAME_SIZE, ConnectionLimits
from config.units import InvalidSize, parse_size
from store.errors import StoreError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stompd", description="STOMP 1.0/1.1/1.2 message broker")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=61613, help="STOMP port (default 61613)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="data directory (default ./data)")
    parser.add_argument(
        "--heartbeat-grace",
        type=float,
        default=1.5,
        help="close a client after its heart-beat interval times this (default 1.5)",
    )
    parser.add_argument(
        "--max-frame-size", type=int, default=DEFAULT_MAX_FRAME_SIZE, help="bytes (default 10 MiB)"
    )
    defaults = CoreSettings()
    usage = parser.add_argument_group("systemUsage (sizes as in activemq.xml: 64mb, 1 gb, ...)")
    usage.add_argument("--memory-limit", type=_size, default=defaults.memory_limit, help="default 1 gb")
    usage.add_argument("--store-limit", type=_size, default=defaults.store_limit, help="default 100 gb")
    usage.add_argument("--temp-limit", type=_size, default=defaults.temp_limit, help="default 50 gb")
    usage.add_argument(
        "--destination-memory-limit", type=_size, default=None, help="each destination's own memoryLimit"
    )
    usage.add_argument(
        "--cursor-memory-high-water-mark",
        type=int,
        default=70,
        metavar="PERCENT",
        help="past this %% of memory, new messages swap to the temp store (default 70)",
    )
    usage.add_argument(
        "--send-fail-if-no-space", action="store_true", help="refuse a SEND with an ERROR instead of waiting"
    )
    usage.add_argument(
        "--send-fail-if-no-space-after-timeout",
        type=int,
        default=0,
        metavar="MS",
        help="wait this long, then refuse",
    )
    parser.add_argument(
        "--maximum-redeliveries",
        type=int,
        default=defaults.max_redeliveries,
        help="redeliveries before a message goes to ActiveMQ.DLQ; -1: never (default 6)",
    )
    parser.add_argument(
        "--redelivery-delay", type=int, default=0, metavar="MS", help="wait before a redelivery (default 0)"
    )
    parser.add_argument(
        "--individual-dead-letter-prefix",
        default=None,
        metavar="PREFIX",
        help="a DLQ per queue, /queue/PREFIX<name> (e.g. ActiveMQ.DLQ.Queue.); default: one ActiveMQ.DLQ",
    )
    parser.add_argument(
        "--drop-expired",
        action="store_true",
        help="drop expired persistent messages instead of sending them to the DLQ (processExpired=false)",
    )
    limits = ConnectionLimits()
    parser.add_argument(
        "--max-headers", type=int, default=limits.max_headers, help="per frame (default 1000)"
    )
    parser.add_argument(
        "--max-header-length",
        type=int,
        default=limits.max_header_length,
        help="bytes per header line (default 10240)",
    )
    http = parser.add_argument_group("admin HTTP server (JSON API, web console, /health)")
    http.add_argument("--http-host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    http.add_argument(
        "--http-port",
        type=int,
        default=8161,
        help="port (default 8161, ActiveMQ's console port); 0 turns it off",
    )
    http.add_argument(
        "--http-allow-remote",
        action="store_true",
        help="with no users configured, accept admin clients not on loopback (default: loopback only)",
    )
    http.add_argument(
        "--http-static-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="also serve DIR at /static/, to anyone who can reach the port (say, a web app using /stomp)",
    )
    ws = parser.add_argument_group("STOMP over WebSocket (also at /stomp on the admin server)")
    ws.add_argument("--ws-host", default="127.0.0.1", help="address of the ws:// and wss:// listeners")
    ws.add_argument("--ws-port", type=int, default=None, help="ws:// port (ActiveMQ's is 61614; default off)")
    ws.add_argument("--wss-port", type=int, default=None, help="wss:// port (needs --wss-cert; default off)")
    ws.add_argument("--wss-cert", type=Path, default=None, metavar="PEM", help="certificate chain for wss://")
    ws.add_argument(
        "--wss-key", type=Path, default=None, metavar="PEM", help="its private key (default: in --wss-cert)"
    )
    ws.add_argument(
        "--ws-allowed-origins",
        type=_origins,
        default=(),
        metavar="ORIGINS",
        help="comma-separated origins (https://app.example.com) whose pages may connect, or *; "
        "default: pages from the same host and port only",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except InvalidSize as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _origins(text: str) -> tuple[str, ...]:
    try:
        return tuple(normalize_origin(origin) for origin in text.split(",") if origin.strip())
    except InvalidOrigin as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _ws_connectors(args: argparse.Namespace) -> tuple[WebSocketConnector, ...]:
    """The ws:// and wss:// listeners the flags ask for; ValueError says what is wrong."""
    connectors = []
    if args.ws_port is not None:
        connectors.append(WebSocketConnector(args.ws_host, args.ws_port, None, args.ws_allowed_origins))
    if args.wss_port is not None:
        if args.wss_cert is None:
            raise ValueError("--wss-port needs --wss-cert (and --wss-key unless the key is in it)")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            context.load_cert_chain(args.wss_cert, args.wss_key)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot load the wss:// certificate {args.wss_cert}: {exc}") from None
        connectors.append(WebSocketConnector(args.ws_host, args.wss_port, context, args.ws_allowed_origins))
    return tuple(connectors)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.heartbeat_grace < 1.0:
        print("stompd: --heartbeat-grace must be at least 1.0", file=sys.stderr)
        return 2
    if not 1 <= args.cursor_memory_high_water_mark <= 100:
        print("stompd: --cursor-memory-high-water-mark must be 1-100", file=sys.stderr)
        return 2
    try:
        ws_connectors = _ws_connectors(args)
    except ValueError as exc:
        print(f"stompd: {exc}", file=sys.stderr)
        return 2
    options = BrokerOptions(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        core=CoreSettings(
            heartbeat_grace=args.heartbeat_grace,
            memory_limit=args.memory_limit,
            store_limit=args.store_limit,
            temp_limit=args.temp_limit,
            destination_memory_limit=args.destination_memory_limit,
            cursor_high_water=args.cursor_memory_high_water_mark / 100,
            send_fail_if_no_space=args.send_fail_if_no_space,
            send_fail_if_no_space_after_timeout=args.send_fail_if_no_space_after_timeout,
            max_redeliveries=args.maximum_redeliveries,
            redelivery_delay_ms=args.redelivery_delay,
            individual_dead_letter_prefix=args.individual_dead_letter_prefix,
            dead_letter_expired=not args.drop_expired,
        ),
        limits=ConnectionLimits(
            max_frame_size=args.max_frame_size,
            max_headers=args.max_headers,
            max_header_length=args.max_header_length,
        ),
        http_host=args.http_host,
        http_port=args.http_port or None,
        http_security=HttpSecurity(allow_remote=args.http_allow_remote),
        http_static_dir=args.http_static_dir,
        ws_connectors=ws_connectors,
        ws_allowed_origins=args.ws_allowed_origins,
    )
    try:
        run(options)
    except StoreError as exc:
        print(f"stompd: {exc}", file=sys.stderr)
        return 1
    except AdminPortError as exc:
        print(f"stompd: {exc} (--http-port 0 turns the admin server off)", file=sys.stderr)
        return 1
    except WebSocketPortError as exc:
        print(f"stompd: {exc.strerror}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"stompd: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
