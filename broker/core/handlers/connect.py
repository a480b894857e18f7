"""CONNECT (or STOMP) and DISCONNECT, and the connection's phases as a table.

``TRANSITIONS`` says which client frames each phase accepts and the phase after
them, as h11's ``_state.py`` does for HTTP: a connection starts in AWAIT_CONNECT,
where only CONNECT or STOMP may come; CONNECTED takes every other client frame, and
DISCONNECT moves it to CLOSING, where frames are ignored while it closes.  A pair
the table lacks is a protocol error (tests/broker/test_phases.py checks every pair).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.base import bridging
from broker.core.base.errors import AccessDenied, ClientIdInUse, InvalidHeader
from broker.core.base.guard import ADMINS
from broker.core.delivery.session import AWAIT_CONNECT, CLOSING, CONNECTED, IncomingBridge
from protocol import frames as f
from protocol.errors import AlreadyConnected, UnexpectedFrame
from protocol.negotiation import negotiate_heartbeat, negotiate_version, parse_heartbeat

if TYPE_CHECKING:
    from broker.core.base.guard import Guard
    from broker.core.base.observe import Observer
    from broker.core.base.settings import CoreSettings
    from broker.core.delivery.session import Session
    from broker.core.handlers.advisory import Advisories

OPENING: Final = frozenset({f.CONNECT, f.STOMP})
#: The frames a client may send once connected.
IN_SESSION: Final = f.CLIENT_COMMANDS - OPENING

#: (phase, client command) -> the phase once the frame is handled.
TRANSITIONS: Final[dict[tuple[str, str], str]] = {
    **{(AWAIT_CONNECT, command): CONNECTED for command in OPENING},
    **{(CONNECTED, command): CONNECTED for command in IN_SESSION - {f.DISCONNECT}},
    (CONNECTED, f.DISCONNECT): CLOSING,
    # The connection is closing: whatever still comes is not handled.
    **{(CLOSING, command): CLOSING for command in f.CLIENT_COMMANDS},
}


def next_phase(phase: str, command: str) -> str:
    """The phase after a client's ``command`` in ``phase``, or ``UnexpectedFrame``."""
    after = TRANSITIONS.get((phase, command))
    if after is not None:
        return after
    if phase is AWAIT_CONNECT:
        raise UnexpectedFrame(f"{command} before CONNECT: the first frame must be CONNECT or STOMP")
    raise AlreadyConnected("already connected: CONNECT may only be sent once")


class Connect:
    """The CONNECT/STOMP and DISCONNECT handlers."""

    __slots__ = ("advisories", "client_ids", "guard", "observer", "settings")

    def __init__(
        self,
        settings: CoreSettings,
        guard: Guard,
        client_ids: dict[str, Session],
        advisories: Advisories,
        observer: Observer,
    ) -> None:
        self.settings = settings
        self.guard = guard
        #: Told of each connection accepted (``ActiveMQ.Advisory.Connection``).
        self.advisories = advisories
        #: The engine's: client-id -> the open connection that has it.
        self.client_ids = client_ids
        #: Its sink (export on) is told who each connection is, once.
        self.observer = observer

    def on_connect(self, session: Session, frame: f.Frame) -> None:
        after = next_phase(session.phase, frame.command)
        headers = frame.headers
        version = negotiate_version(headers.get("accept-version"))
        session.version = version
        session.login = login = headers.get("login")
        # A wrong login is fatal: the ERROR goes out and the connection closes.
        verdict, session.login_verdict = session.login_verdict, None
        session.principal = self.guard.login(login, headers.get("passcode"), verdict)
        network = headers.get(bridging.NETWORK)
        if network is not None:
            self._bridge(session, network)
            session.bridge = IncomingBridge(headers.get(bridging.NETWORK_DUPLEX) == "true")
        client_id = headers.get("client-id")
        if client_id:
            self._claim(session, client_id)
        # Without one, a durable subscription it makes is kept under the connection's own
        # id, as ActiveMQ's ProtocolConverter gives it one (``subscribing``).
        session.client_id = client_id
        settings = self.settings
        # broker-name: which node of a network this is (a bridge's path check needs it).
        reply = {
            "version": version,
            "server": settings.server,
            "session": session.id,
            "broker-name": settings.broker_name,
        }
        if version != f.V1_0 or "heart-beat" in headers:
            cx, cy = parse_heartbeat(headers.get("heart-beat"))
            # Like ActiveMQ we take the client's intervals (echoing them back), but we
            # never beat faster than our floor and we allow a grace on receipt.
            ours = (max(cy, self.settings.heartbeat_min_send_ms) if cy else 0, cx)
            send_ms, recv_ms = negotiate_heartbeat((cx, cy), ours)
            session.heartbeat_send_ms = send_ms
            session.heartbeat_recv_ms = recv_ms
            reply["heart-beat"] = f"{ours[0]},{ours[1]}"
        request_id = headers.get("request-id")
        if request_id is not None:
            reply["response-id"] = request_id
        session.phase = after
        session.host = headers.get("host")
        session.send_frame(f.Frame(f.CONNECTED, reply))
        session.announced = True
        self.advisories.connected(session)
        events = self.observer.events
        if events is not None:
            events.connected(session.id, login, client_id or None, session.address)

    def _bridge(self, session: Session, network: str) -> None:
        """The connection says it is broker ``network``'s bridge: its SENDs' ``_STOMPD_*``
        headers will be taken (a message's id, redelivered and path), so the guard must
        let its user be one; a refusal is an ERROR (the bridge says why), never a bridge
        whose headers are quietly dropped."""
        if not network or "," in network:
            raise InvalidHeader(f"{bridging.NETWORK} names the broker this is the bridge of, got {network!r}")
        principal = session.principal
        if not self.guard.may_bridge(principal):
            raise AccessDenied(
                f"User {principal.user} may not connect as a network bridge (of {network}): "
                f"that is for the group {ADMINS}"
            )
        session.network = network

    def _claim(self, session: Session, client_id: str) -> None:
        """Take ``client_id`` for ``session``, unless another open connection has it: two
        processes must not share one durable subscription (ActiveMQ's RegionBroker
        refuses the second with an InvalidClientIDException, worded so)."""
        holder = self.client_ids.get(client_id)
        if holder is not None and holder is not session:
            raise ClientIdInUse(
                f"Broker: {self.settings.broker_name} - Client: {client_id} already connected "
                f"from {holder.address}"
            )
        self.client_ids[client_id] = session

    def on_disconnect(self, session: Session, frame: f.Frame) -> None:
        session.phase = next_phase(session.phase, frame.command)
