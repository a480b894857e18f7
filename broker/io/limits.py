"""Per-connection limits the edge enforces: a listener's (ActiveMQ's wireFormat and transport options)."""

from __future__ import annotations

from dataclasses import dataclass

#: ActiveMQ's STOMP limit (StompWireFormat.MAX_DATA_LENGTH, 100 MiB of body): a bigger
#: one is read as flow control, charged to memoryUsage before its body is read
#: (``connection.CHARGE_ABOVE``), so the default costs no more RAM than memory allows.
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    max_headers: int = 1000
    max_header_length: int = 10 * 1024
    #: ActiveMQ's transport.connectAttemptTimeout is 30 s.
    connect_timeout: float = 30.0
    #: Above this many bytes queued in the transport (or held for the store), dispatch
    #: to the connection stops.
    write_high_water: int = 256 * 1024
    #: Above this many bytes held for the store (MESSAGEs waiting for their dispatch marks
    #: to be durable), dispatch to the connection stops.  Higher than ``write_high_water``:
    #: a consumer takes at most this much per group commit, and at 256 KB (about 230 1 KiB
    #: messages a commit) one auto-ack consumer fell behind 8 persistent producers, so
    #: its queue's backlog lived long enough to be flushed and compacted by LevelDB and
    #: went through the cursor: 8 -> 1 cost 36 us of broker CPU a message, 29 at 1 MB
    #: (``bench_persist_cpu.py --producers 8``).  Held bytes are charged to the memory limit.
    held_high_water: int = 1024 * 1024
    #: Above this many bytes waiting to be written, the client is a slow consumer and
    #: is closed with an ERROR (nats-server's max_pending, and its default).
    max_pending: int = 64 << 20
    #: transport.hbGracePeriodMultiplier: the period of a heart-beat read check is the
    #: client's interval times this (ActiveMQ's default, 1.0): a client is closed after two
    #: periods without a byte from it, three after its CONNECT (``StompConnection``).
    heartbeat_grace: float = 1.0
    #: transport.defaultHeartBeat: the (cx, cy) taken for a CONNECT without a heart-beat header.
    default_heart_beat: tuple[int, int] = (0, 0)
