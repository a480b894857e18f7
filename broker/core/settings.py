"""What the broker core can be told, with ActiveMQ's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CoreSettings:
    server: str = "stompd/0.1.0"
    #: A client whose heart-beats stop is closed after interval x grace (ActiveMQ's
    #: default is 1.0, strict, which is a top complaint about it).
    heartbeat_grace: float = 1.5
    #: We beat at least this far apart whatever the client asks for.
    heartbeat_min_send_ms: int = 100
    queue_prefetch: int = 1000
    topic_prefetch: int = 32767
