"""Wiring: settings -> engine -> server.  No broker logic lives here."""

from __future__ import annotations

import asyncio
import ctypes
import functools
import gc
import logging
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from broker.core.admin.readout import Readout
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from broker.export.exporter import Exporter, ExportSettings
from broker.http.auth import HttpSecurity
from broker.io.descriptors import Descriptors
from broker.io.limits import ConnectionLimits
from broker.io.listener import Listener
from broker.io.server import StompServer
from broker.io.space import DiskWatch
from broker.role import Role
from store.api import Stores
from store.errors import StoreFenced, StoreFull
from store.leveldb import DESCRIPTORS
from store.persistent import MessageStore
from store.space import Ballast
from store.temp import TempStore
from store.worker import IOWorker

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.guard import Guard
    from broker.http.server import HttpServer
    from broker.io.logins import FailedLogins
    from broker.network import Network, NetworkSettings
    from broker.ws.endpoint import WebSocketListener

#: Descriptors no connection may take: the message and temp stores' (``DESCRIPTORS``
#: each), and the broker's own files beside them (the store's lock, the export's, a
#: reload's read, the network bridges' sockets, the loop's).
DESCRIPTOR_RESERVE: Final = 2 * DESCRIPTORS + 64

#: How often the engine is ticked (parked-SEND deadlines, retries of blocked producers).
TICK_S = 0.05
#: Ticks between malloc_trim calls, and between disk space checks (one second).
TRIM_EVERY = 20

log = logging.getLogger("stompd")


def _default_listeners() -> tuple[Listener, ...]:
    return (Listener(),)


@dataclass(frozen=True, slots=True)
class LockSettings:
    """The store's lock: ``<locker><shared-file-locker>`` and ``lockKeepAlivePeriod``
    (broker/ha.py; ActiveMQ's defaults)."""

    #: A broker that finds the store locked (the standby) tries again this often.
    acquire_interval_ms: int = 10_000
    #: The master checks this often that the lock is still its own (0: never).
    keep_alive_ms: int = 0
    #: A broker that finds the store locked exits instead of waiting.
    fail_if_locked: bool = False


@dataclass(frozen=True, slots=True)
class BrokerOptions:
    #: activemq.xml's transportConnectors: STOMP, STOMP over TLS, ws:// and wss://, each
    #: with its own limits (the default: STOMP on 127.0.0.1:61613).
    listeners: tuple[Listener, ...] = field(default_factory=_default_listeners)
    data_dir: Path = Path("data")
    #: The persistent message store (None: ``data_dir/store``).
    store_dir: Path | None = None
    #: The temp (swap) store, wiped at start (None: ``data_dir/tmp_storage``).
    temp_dir: Path | None = None
    #: The store's lock, for the command line's broker (broker/ha.py): embedded brokers
    #: (``BrokerThread``) take none.
    lock: LockSettings = field(default_factory=LockSettings)
    core: CoreSettings = field(default_factory=CoreSettings)
    #: The admin HTTP server (API, console, /health): None turns it off (embedded
    #: brokers and tests), 0 picks a free port; the command line's default is 8161.
    http_host: str = "127.0.0.1"
    http_port: int | None = None
    http_security: HttpSecurity = field(default_factory=HttpSecurity)
    #: A directory the admin server also serves, openly, at /static/.
    http_static_dir: Path | None = None
    #: STOMP over WebSocket at /stomp on the admin server: its connections' limits
    #: (<transportDefaults>), and the origins whose pages may use it (none: same origin).
    http_stomp_limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    http_allowed_origins: tuple[str, ...] = ()
    #: ``<httpServer maximumConnections>``: HTTP connections open at once (a /stomp
    #: WebSocket leaves the count once upgraded).
    http_max_connections: int = 256
    #: The descriptors the process may have open (None: its soft RLIMIT_NOFILE); what
    #: connections may take of them is that less ``DESCRIPTOR_RESERVE`` and what was open
    #: at start (broker/io/descriptors.py).
    descriptor_limit: int | None = None
    #: Failed logins of every listener and the admin server, answered late past a few
    #: (None: the broker's own; a test's may hold the answers).
    failed_logins: FailedLogins | None = field(default=None, compare=False)
    #: ``--export-dir`` / ``<export>``: metric snapshots and the event log (None: off).
    export: ExportSettings | None = None
    #: Who may connect and what each may do (None: anyone, everything).
    guard: Guard | None = field(default=None, compare=False)
    #: Called on SIGHUP (the command line's: reload users and authorization entries).
    on_reload: Callable[[], object] | None = field(default=None, compare=False)
    #: ``<networkConnectors>``: bridges to other brokers (None: none).
    network: NetworkSettings | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class StoreFence:
    """A pair's master writes its store only while it holds the store's lock (broker/ha.py)."""

    #: None while the lock is ours, else why not; asked by the store's writer thread
    #: before each batch and before the batch's receipts.
    check: Callable[[], str | None]
    #: Told on the loop when ``check`` found the lock lost (the store is fenced off by then).
    lost: Callable[[str], None]


class Broker:
    """One broker: temp store, engine and listener.  ``start``/``stop`` run on the event loop."""

    def __init__(
        self, options: BrokerOptions, role: Role | None = None, fence: StoreFence | None = None
    ) -> None:
        self.options = options
        #: What /health and /metrics say of this broker's part in a pair.
        self.role = role or Role()
        self.fence = fence
        #: The ports the listeners are bound to, in ``options.listeners`` order.
        self.ports: list[int] = []
        #: The first STOMP (TCP or TLS) listener's port (0: there is none).
        self.port = 0
        #: The WebSocket listeners' ports, in order.
        self.ws_ports: list[int] = []
        #: The port the HTTP server is bound to (0: it is off).
        self.http_port = 0
        self.http: HttpServer | None = None
        self.ws: list[WebSocketListener] = []
        self.exporter: Exporter | None = None
        #: The network bridges (None: no networkConnector).
        self.network: Network | None = None
        self._tick: asyncio.TimerHandle | None = None
        self._ticks = 0
        self._libc = _libc()

    @property
    def store_path(self) -> Path:
        return self.options.store_dir or self.options.data_dir / "store"

    @property
    def temp_path(self) -> Path:
        return self.options.temp_dir or self.options.data_dir / "tmp_storage"

    async def start(self) -> int:
        """Open the stores, recover, and listen; returns the first STOMP port.

        Raises ``StoreLocked``, having made nothing, while another process still has the
        message store open (a master that lost its lock and is still closing it).
        """
        options = self.options
        loop = asyncio.get_running_loop()
        options.data_dir.mkdir(parents=True, exist_ok=True)
        # The message store first: a corrupt or unreadable one raises StoreError naming its
        # path (never an empty broker that silently forgot what it had stored), and once it
        # is open, LevelDB's own lock says nobody else uses this data any more.
        started = time.perf_counter()
        store_path = self.store_path
        ballast = Ballast(options.data_dir / "disk-reserve")
        try:
            self.message_store = MessageStore.open(store_path)
        except StoreFull:
            if not ballast.release():
                raise
            self.message_store = MessageStore.open(store_path)
        ballast.ensure()
        # ActiveMQ's tmp_storage: rebuilt at every start, never fsynced, opened at its
        # first write (so that a full disk only delays swapping).
        temp_path = self.temp_path
        self.temp_store = TempStore.open(temp_path)

        def post(fn: Callable[[], None]) -> None:
            loop.call_soon_threadsafe(self._io_done, fn)

        self.worker = IOWorker(post, name="stompd-temp")
        self.message_store.start_committer(
            post,
            self._store_failed,
            on_stall=self._store_stalled,
            guard=self.fence.check if self.fence is not None else None,
        )
        stores = Stores(messages=self.message_store, temp=self.temp_store, worker=self.worker)
        self.engine = Engine(options.core, stores=stores, guard=options.guard)
        self.engine.chores.wake = functools.partial(loop.call_soon, self._run_chores)
        # A slice of background work ends after its time too (``Chores.seconds``).
        self.engine.chores.timer = time.perf_counter
        stored = self.engine.recover()
        log.info(
            "message store %s: %d stored messages recovered in %.1f ms",
            store_path,
            stored,
            (time.perf_counter() - started) * 1000,
        )
        self.disk_watch = DiskWatch()
        defaults = CoreSettings()
        watch = self.disk_watch.watch
        watch(
            "Store", self.engine.usage.store, store_path, self.message_store.db.compact, defaults.store_limit
        )
        watch(
            "Temporary Store", self.engine.usage.temp, temp_path, self.temp_store.compact, defaults.temp_limit
        )
        self.disk_watch.report()
        #: What /metrics and the exporter read the broker through.
        self.readout = Readout(self.engine)
        if options.export is not None:
            self.exporter = Exporter(options.export, self.readout)
            self.exporter.start()
        descriptors = Descriptors(DESCRIPTOR_RESERVE, options.descriptor_limit)
        # Once the stores are open: what they hold now is counted as open already.
        descriptors.start()
        self.server = StompServer(self.engine, descriptors, options.failed_logins)
        try:
            await self._listen()
        except BaseException:
            # A port taken, an address not ours: close what did open, then say why.
            await self.stop()
            raise
        self._tick = loop.call_later(TICK_S, self._on_tick)
        if options.network is not None and options.network.connectors:
            # Here, not at the top: the bridges' code is loaded by a broker that has some.
            from broker.network import Network

            self.network = Network(self.engine, options.network)
            self.network.start()
        addresses = ", ".join(
            _address(listener, port) for listener, port in zip(options.listeners, self.ports, strict=True)
        )
        log.info("stompd listening on %s (data dir %s)", addresses, options.data_dir)
        return self.port

    async def _listen(self) -> None:
        options = self.options
        if options.http_port is not None:
            # Here, not at the top: aiohttp is loaded only by a broker that serves HTTP.
            from broker.core.admin.service import AdminService
            from broker.http import metrics
            from broker.http.server import HttpServer
            from broker.ws.endpoint import PATH, StompWebSocketEndpoint

            self.http = HttpServer(
                AdminService(self.engine, self.server.peers, self.role, self._network_status),
                options.http_security,
                options.http_static_dir,
                self.server.verifier,
                limits=options.http_stomp_limits,
                max_connections=options.http_max_connections,
                descriptors=self.server.descriptors,
                logins=self.server.logins,
                # An admin SEND takes a message as big as a client's could be.
                max_message=max(
                    [options.http_stomp_limits.max_frame_size]
                    + [listener.limits.max_frame_size for listener in options.listeners]
                ),
            )
            endpoint = StompWebSocketEndpoint(
                self.server,
                options.http_stomp_limits,
                options.http_allowed_origins,
                on_upgraded=self.http.hand_over,
                # The admin port's /stomp: listed apart from the transportConnectors'.
                via=("admin", "ws"),
            )
            self.http.add_websocket(PATH, endpoint.handle)
            self.http.app.router.add_get(
                metrics.PATH,
                metrics.handler(self.readout, self._events_dropped, self.role, self._network_status),
            )
            self.http_port = await self.http.start(options.http_host, options.http_port)
            log.info("admin console on http://%s:%d/console/", options.http_host, self.http_port)
        listeners = options.listeners
        ports = [0] * len(listeners)
        # The WebSocket listeners first: once a STOMP port answers, every listener does.
        for index in sorted(range(len(listeners)), key=lambda i: not listeners[i].websocket):
            listener = listeners[index]
            if listener.websocket:
                from broker.ws.endpoint import WebSocketListener

                websocket = WebSocketListener(self.server, listener)
                self.ws.append(websocket)
                ports[index] = await websocket.start()
            else:
                ports[index] = await self.server.listen(listener)
        self.ports = ports
        self.ws_ports = [port for listener, port in zip(listeners, ports, strict=True) if listener.websocket]
        self.port = next(
            (port for listener, port in zip(listeners, ports, strict=True) if not listener.websocket), 0
        )

    def _network_status(self) -> list[dict[str, object]]:
        return self.network.status() if self.network is not None else []

    def _events_dropped(self) -> int:
        return self.exporter.dropped if self.exporter is not None else 0

    def _io_done(self, callback: Callable[[], None]) -> None:
        self.engine.clock.set(time.time())
        self.engine.after_io(callback)

    def _run_chores(self) -> None:
        """A slice of the engine's big jobs, then the loop serves others before the next."""
        engine = self.engine
        engine.clock.set(time.time())
        if engine.chores.run():
            asyncio.get_running_loop().call_soon(self._run_chores)
        engine.flush()

    def _store_failed(self, exc: BaseException) -> None:
        if isinstance(exc, StoreFenced) and self.fence is not None:
            # The pair abandons this broker at once; nothing waiting is receipted meanwhile.
            self.fence.lost(str(exc))
            return
        self.engine.persistence.store_failed(exc)

    def _store_stalled(self, exc: BaseException | None) -> None:
        self.engine.persistence.store_stalled(exc)

    def _on_tick(self) -> None:
        self.engine.clock.set(time.time())
        self.engine.tick()
        if self.exporter is not None:
            self.exporter.tick()
        self._ticks += 1
        if self._ticks % TRIM_EVERY == 0:
            self.disk_watch.check()
            if self._libc is not None:
                # Message bodies are malloc'd and freed by the million while swapping; give
                # the freed pages back so RSS follows the memory limit, not the backlog.
                self._libc.malloc_trim(0)
        self._tick = asyncio.get_running_loop().call_later(TICK_S, self._on_tick)

    async def stop(self) -> None:
        # Ticks go on while connections close: they flush what closing them stored.
        # The bridges first (what they had in flight goes back to its queues), then
        # STOMP, WebSocket clients included, so the HTTP servers find no handler
        # still running when they stop.
        if self.network is not None:
            await self.network.stop()
        await self._close_listeners(grace=5.0)
        if self._tick is not None:
            self._tick.cancel()
        # What closing the connections left to do (their subscriptions end), all of it now.
        self.engine.chores.run_all()
        self.engine.flush()
        # The dead letters of the interval under way are summed up now, not lost.
        self.engine.settlement.dead_letters.flush()
        self.engine.settlement.discards.flush()
        self._close_stores()
        log.info("stompd stopped")

    async def abandon(self) -> None:
        """Stop serving at once, writing nothing more to the message store: its lock was
        lost, and another broker may be its master now.  Clients are cut off, nothing they
        were not yet told is durable is receipted, and the stores are closed (LevelDB's
        own lock on the message store goes last)."""
        self.message_store.fence()
        if self._tick is not None:
            self._tick.cancel()
        if self.network is not None:
            await self.network.stop()
        await self._close_listeners(grace=0.0)
        self._close_stores()
        log.info("stompd stopped serving")

    async def _close_listeners(self, grace: float) -> None:
        await self.server.stop(grace)
        for listener in self.ws:
            await listener.stop()
        if self.http is not None:
            await self.http.stop()

    def _close_stores(self) -> None:
        if self.exporter is not None:
            # Its last snapshot and events written, its files rotated (a few ms of disk work).
            self.exporter.close()
        self.worker.close()
        self.temp_store.close()
        # Acks still in the committer's queue are written before the store closes.
        self.message_store.close()


def _address(listener: Listener, port: int) -> str:
    # Plain STOMP as it always read (host:port); anything else with its scheme.
    if listener.scheme in ("stomp", "stomp+nio"):
        return f"{listener.host}:{port}"
    return listener.url(port)


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        log.warning("uvloop is not installed; using the stock asyncio event loop (slower)")
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


#: glibc's ``mallopt`` parameters (malloc.h).
M_TRIM_THRESHOLD: Final = -1
M_MMAP_THRESHOLD: Final = -3
M_ARENA_MAX: Final = -8
#: With the export on: freed memory kept at the top of the heap before it goes back to
#: the kernel, and the size from which an allocation is a mapping of its own.
EXPORT_TRIM_THRESHOLD: Final = 8 << 20
EXPORT_MMAP_THRESHOLD: Final = 4 << 20


#: The soft limit taken when the hard one is unlimited.
FD_LIMIT_WITHOUT_HARD: Final = 1 << 20


def tune_malloc(export: bool = False) -> None:
    """One glibc malloc arena per thread lets freed swap buffers pile up as RSS.

    The store's worker thread allocates and frees a message's worth of bytes per
    record; capping the arenas keeps that memory reusable by the main thread instead
    of stranded in a per-thread arena.  Must run before any thread starts.

    ``export``: the loop encodes the event lines in chunks (``CHUNK`` lines: tens of KB;
    half a MB when this was measured), which the export's writer thread frees once
    written, several MB a second.  Under glibc's dynamic thresholds what it freed went
    back to the kernel at once (the heap trimmed, or a chunk its own mapping), and the
    loop took a page fault for each 4 KB of the next chunks: 17,000 in a 200,000-message
    run against 440 with the export off (benchmarks/README.md, "export"; with schema v3's
    chunks, 15 faults a 1,000 queue messages untuned against 10 tuned).  Fixed
    thresholds keep up to ``EXPORT_TRIM_THRESHOLD`` of it for the next chunks; the
    broker's ``malloc_trim`` every second still gives back what stays free.
    """
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_ARENA_MAX, 2)
        if export:
            libc.mallopt(M_MMAP_THRESHOLD, EXPORT_MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, EXPORT_TRIM_THRESHOLD)


#: Allocations of container objects between two young-generation collections (Python's
#: default is 700).  See ``tune_gc``.
GC_YOUNG_THRESHOLD: Final = 10_000


def tune_gc() -> None:
    """Collect cyclic garbage less often.  The broker makes little of it, but a queue's
    backlog is new objects the collector keeps tracing: at Python's default threshold a
    young collection ran every few hundred messages held, and the older generations'
    collections traced the backlog again (persistent 8 -> 1, ``perf record`` of the
    broker: the collector's functions 2.5 % of its CPU, 0.7 % with this).  What start-up
    built (modules, configuration) is moved out of the collector's sight for good
    (``gc.freeze``).  A process-wide setting: the broker's own process only, not a
    broker embedded in another (``BrokerThread``)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


def raise_fd_limit() -> int:
    """Every connection is a file descriptor: the soft limit goes up to the hard one (often
    1,024 against 1,048,576), as far as this process may, and the log says what it is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, FD_LIMIT_WITHOUT_HARD)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            log.info("file descriptors: limit raised from %d to %d (the hard limit)", soft, target)
            return target
        except (OSError, ValueError) as exc:
            log.warning("file descriptors: limit %d; could not raise it to %d: %s", soft, target, exc)
            return soft
    log.info("file descriptors: limit %d", soft)
    return soft
