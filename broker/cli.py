"""``stompd`` command line: argument parsing and exit codes only.

``stompd [--config FILE] [-Dname=value ...] [flags]`` runs the broker; ``stompd
--check-config FILE`` prints the effective configuration and every warning; ``stompd
hash-password`` prints a password hash for activemq.xml.  Exit codes: 0 fine, 1 the
configuration (or the store, or the port) is not usable, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import logging
import sys
from importlib import metadata
from pathlib import Path
from typing import TextIO

from broker import logs
from broker.ha import run
from broker.http import AdminPortError
from broker.io.listener import ListenError
from broker.security.guard import Security
from broker.security.reload import Reloader
from broker.settings_bridge import CannotRun, broker_options, not_applied, not_applied_in_file
from config import overrides, passwords
from config.issues import ConfigError
from config.loader import load
from config.loader_transports import allowed_origins
from config.model import BrokerConfig
from config.report import not_applied_lines, render
from config.units import InvalidSize, parse_size
from store.errors import StoreError

log = logging.getLogger("stompd")
_DEFAULTS = BrokerConfig()


USAGE = """stompd [--config FILE | --check-config FILE] [-D NAME=VALUE ...] [OPTION ...]
       stompd hash-password [--scheme {scrypt,pbkdf2-sha256}]
       stompd --version"""


def version() -> str:
    """stompd's version, as installed."""
    try:
        return metadata.version("stompd")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    # Flags default to None: only the ones given override the file (or the embedded defaults).
    parser = argparse.ArgumentParser(
        prog="stompd",
        # Every form, hash-password's too (argparse's own would list the options only).
        usage=USAGE,
        description="STOMP 1.0/1.1/1.2 message broker.  `stompd hash-password` makes a password hash.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    config = parser.add_argument_group("configuration")
    config.add_argument("--config", type=Path, metavar="FILE", help="run from this activemq.xml")
    config.add_argument(
        "--check-config",
        type=Path,
        metavar="FILE",
        help="check FILE, print every setting with where it came from and every warning, and exit",
    )
    config.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="define ${NAME} for the file (e.g. -Dactivemq.data=/var/lib/stompd)",
    )
    parser.add_argument("--host", help="address of the first STOMP listener (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port of the first STOMP listener (default 61613)")
    parser.add_argument("--data-dir", type=Path, help="data directory (default ./data)")
    parser.add_argument(
        "--tmp-data-dir",
        type=Path,
        metavar="DIR",
        help="the temp (swap) store, wiped at start (tmpDataDirectory; default DATA_DIR/tmp_storage)",
    )
    pair = parser.add_argument_group(
        "shared-store master/slave (two brokers on one data directory: the one holding the store's "
        "lock serves, the other waits listening on nothing)"
    )
    pair.add_argument(
        "--lock-acquire-sleep-interval",
        type=_milliseconds,
        metavar="MS",
        help="a standby tries the store's lock this often (shared-file-locker lockAcquireSleepInterval; "
        "default 10000)",
    )
    pair.add_argument(
        "--lock-keep-alive-period",
        type=_milliseconds,
        metavar="MS",
        help="the master checks this often that the lock is still its own and stops serving if not "
        "(lockKeepAlivePeriod; default 0: never)",
    )
    parser.add_argument(
        "--heartbeat-grace",
        type=float,
        help="a heart-beat read check's period is the client's interval times this; silent for "
        "two periods (three after CONNECT), it is closed (default 1.0, as ActiveMQ)",
    )
    parser.add_argument("--max-frame-size", type=_size, help="bytes (default 100 mb, ActiveMQ's)")
    usage = parser.add_argument_group("systemUsage (sizes as in activemq.xml: 64mb, 1 gb, ...)")
    usage.add_argument("--memory-limit", type=_size, help="default 1 gb")
    usage.add_argument("--store-limit", type=_size, help="default 100 gb")
    usage.add_argument("--temp-limit", type=_size, help="default 50 gb")
    usage.add_argument("--destination-memory-limit", type=_size, help="each destination's own memoryLimit")
    usage.add_argument(
        "--cursor-memory-high-water-mark",
        type=int,
        metavar="PERCENT",
        help="past this %% of memory, new messages swap to the temp store (default 70)",
    )
    usage.add_argument(
        "--send-fail-if-no-space",
        action="store_true",
        default=None,
        help="refuse a SEND with an ERROR instead of waiting",
    )
    usage.add_argument(
        "--send-fail-if-no-space-after-timeout", type=int, metavar="MS", help="wait this long, then refuse"
    )
    parser.add_argument(
        "--prioritized-messages",
        action="store_true",
        default=None,
        help="dispatch by priority, 9 first (prioritizedMessages=true); default: arrival order, as ActiveMQ",
    )
    parser.add_argument(
        "--maximum-redeliveries",
        type=int,
        help="redeliveries before a message goes to ActiveMQ.DLQ; -1: never (default 6)",
    )
    parser.add_argument(
        "--redelivery-delay", type=int, metavar="MS", help="wait before a redelivery (default 0)"
    )
    parser.add_argument(
        "--individual-dead-letter-prefix",
        metavar="PREFIX",
        help="a DLQ per queue, /queue/PREFIX<name> (e.g. ActiveMQ.DLQ.Queue.); default: one ActiveMQ.DLQ",
    )
    parser.add_argument(
        "--drop-expired",
        action="store_true",
        default=None,
        help="drop expired persistent messages instead of sending them to the DLQ (processExpired=false)",
    )
    parser.add_argument("--max-headers", type=int, help="per frame (default 1000)")
    parser.add_argument("--max-header-length", type=int, help="bytes per header line (default 10240)")
    http = parser.add_argument_group("admin HTTP server (JSON API, web console, /health)")
    http.add_argument("--http-host", help="address to listen on (default 127.0.0.1)")
    http.add_argument(
        "--http-port", type=int, help="port (default 8161, ActiveMQ's console port); 0 turns it off"
    )
    http.add_argument(
        "--http-allow-remote",
        action="store_true",
        default=None,
        help="with no users configured, accept admin clients not on loopback (default: loopback only)",
    )
    http.add_argument(
        "--http-static-dir",
        type=Path,
        metavar="DIR",
        help="also serve DIR at /static/, to anyone who can reach the port (say, a web app using /stomp)",
    )
    ws = parser.add_argument_group("STOMP over WebSocket (also at /stomp on the admin server)")
    ws.add_argument("--ws-host", help="address of the ws:// and wss:// listeners (default 127.0.0.1)")
    ws.add_argument(
        "--ws-port", type=int, help="port of the first ws:// listener (ActiveMQ's is 61614; default off)"
    )
    ws.add_argument(
        "--wss-port", type=int, help="port of the first wss:// listener (needs --wss-cert; default off)"
    )
    ws.add_argument(
        "--wss-cert", type=Path, metavar="PEM", help="certificate chain of the TLS listeners (<sslContext>)"
    )
    ws.add_argument("--wss-key", type=Path, metavar="PEM", help="its private key (default: in --wss-cert)")
    ws.add_argument(
        "--ws-allowed-origins",
        type=_origins,
        metavar="ORIGINS",
        help="comma-separated origins (https://app.example.com) whose pages may connect, or *; "
        "default: pages from the same host and port only",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log messages of this level and above, to standard error (default INFO)",
    )
    parser.add_argument(
        "--export-dir",
        type=Path,
        metavar="DIR",
        help="write metric snapshots and the message event log there, for stompd-report (<export>)",
    )
    return parser


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except InvalidSize as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _milliseconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of milliseconds: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _origins(text: str) -> tuple[str, ...]:
    try:
        return allowed_origins(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _argument_problem(args: argparse.Namespace) -> str | None:
    if args.config is not None and args.check_config is not None:
        return "give --config or --check-config, not both"
    if args.lock_acquire_sleep_interval == 0:
        return "--lock-acquire-sleep-interval must be at least 1 ms"
    if args.heartbeat_grace is not None and args.heartbeat_grace < 1.0:
        return "--heartbeat-grace must be at least 1.0"
    if args.cursor_memory_high_water_mark is not None and not 1 <= args.cursor_memory_high_water_mark <= 100:
        return "--cursor-memory-high-water-mark must be 1-100"
    for name in ("port", "ws_port", "wss_port"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= 65535:
            return f"--{name.replace('_', '-')} must be 0-65535"
    file = args.config or args.check_config
    if args.wss_port is not None and args.wss_cert is None and file is None:
        return "--wss-port needs --wss-cert (and --wss-key unless the key is in it)"
    if any("=" not in define for define in args.defines):
        return "-D takes NAME=VALUE"
    return None


def _overrides(args: argparse.Namespace) -> list[overrides.Override]:
    return [
        overrides.Override(key, getattr(args, key), "--" + key.replace("_", "-"))
        for key in overrides.KEYS
        if getattr(args, key, None) is not None
    ]


def _print_issues(title: str, issues: list[object], out: TextIO | None = None) -> None:
    """On ``out``, stderr if not given (looked up now: a test's capture replaces it)."""
    out = out or sys.stderr
    if issues:
        print(f"{title}:", file=out)
        for issue in issues:
            print(f"  {issue}", file=out)


def hash_password(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="stompd hash-password",
        description="Reads a password (prompted, or one line on standard input) and prints its hash "
        'for <authenticationUser password="...">.',
    )
    parser.add_argument("--scheme", choices=["scrypt", "pbkdf2-sha256"], default="scrypt")
    args = parser.parse_args(argv)
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            print("stompd: the passwords differ", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("stompd: empty password", file=sys.stderr)
        return 1
    print(passwords.hash_password(password, args.scheme))
    return 0


def warn_not_applied(config: BrokerConfig) -> None:
    """At start, a warning for each setting the broker does not apply yet, named as
    --check-config names it: the XML's names, and where it was set."""
    for line in not_applied_lines(config, not_applied_in_file(config)):
        log.warning("%s: checked but not applied yet (stompd --check-config shows every setting)", line)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hash-password"]:
        return hash_password(argv[1:])
    args = build_parser().parse_args(argv)
    # One record, one line: what clients put in names and headers is escaped (broker/logs.py).
    logs.install()
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    problem = _argument_problem(args)
    if problem is not None:
        print(f"stompd: {problem}", file=sys.stderr)
        return 2
    file: Path | None = args.check_config or args.config
    warnings: list[object] = []
    config = _DEFAULTS
    defines = dict(define.split("=", 1) for define in args.defines)
    if file is not None:
        try:
            loaded = load(file, defines)
        except ConfigError as exc:
            _print_issues("warnings", list(exc.warnings))
            _print_issues(f"{file}: {len(exc.errors)} error(s)", list(exc.errors))
            return 1
        config, warnings = loaded.config, list(loaded.warnings)
    config = overrides.apply(config, _overrides(args))
    try:
        options = broker_options(config)
    except CannotRun as exc:
        _print_issues("warnings", warnings)
        print(f"stompd: {exc}", file=sys.stderr)
        return 1
    if args.check_config is not None:
        missing = not_applied(config)
        print(f"stompd configuration from {file}  (value, then where it came from)")
        print(render(config, lambda key: key not in missing))
        # The whole report on stdout, verdict included (``> report.txt`` keeps all of
        # it); a file refused is said on stderr, with exit status 1.
        _print_issues(f"{len(warnings)} warning(s)", warnings, sys.stdout)
        print(f"{file}: OK")
        return 0
    if file is not None and isinstance(options.guard, Security):
        options = dataclasses.replace(options, on_reload=Reloader(options.guard, file, defines))
    for warning in warnings:
        log.warning("%s", warning)
    warn_not_applied(config)
    try:
        run(options)
    except StoreError as exc:
        print(f"stompd: {exc}", file=sys.stderr)
        return 1
    except AdminPortError as exc:
        print(f"stompd: {exc} (--http-port 0 turns the admin server off)", file=sys.stderr)
        return 1
    except ListenError as exc:
        print(f"stompd: {exc.strerror}", file=sys.stderr)
        return 1
    except OSError as exc:
        # The data directory cannot be made or written, say.
        where = f": {exc.filename}" if exc.filename else ""
        print(f"stompd: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
