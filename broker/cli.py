"""``stompd`` command line: argument parsing and exit codes only."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from broker.app import BrokerOptions, run
from broker.core.settings import CoreSettings
from broker.io.limits import DEFAULT_MAX_FRAME_SIZE, ConnectionLimits


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
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.heartbeat_grace < 1.0:
        print("stompd: --heartbeat-grace must be at least 1.0", file=sys.stderr)
        return 2
    options = BrokerOptions(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        core=CoreSettings(heartbeat_grace=args.heartbeat_grace),
        limits=ConnectionLimits(max_frame_size=args.max_frame_size),
    )
    try:
        run(options)
    except OSError as exc:
        print(f"stompd: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
