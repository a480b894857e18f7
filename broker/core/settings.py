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
    #: <systemUsage> limits (ActiveMQ's defaults: memory 1 GB, store 100 GB, temp 50 GB).
    memory_limit: int = 1 << 30
    store_limit: int = 100 << 30
    temp_limit: int = 50 << 30
    #: A destination's own memoryLimit (None: only the broker-wide limit applies).
    destination_memory_limit: int | None = None
    #: cursorMemoryHighWaterMark: past this fraction of memory, new messages swap to disk.
    cursor_high_water: float = 0.70
    #: Messages read back from the temp store per page-in.
    page_size: int = 500
    #: ActiveMQ's RedeliveryPolicy default; past it a message goes to the DLQ (-1: never).
    max_redeliveries: int = 6
    dead_letter_queue: str = "/queue/ActiveMQ.DLQ"
    #: individualDeadLetterStrategy: a DLQ per destination, named prefix + its name
    #: (queuePrefix "ActiveMQ.DLQ.Queue." in ActiveMQ); None: the shared one above.
    individual_dead_letter_prefix: str | None = None
    individual_dead_letter_topic_prefix: str = "ActiveMQ.DLQ.Topic."
    #: processExpired: expired persistent messages go to the DLQ (non-persistent ones
    #: are dropped and counted either way).
    dead_letter_expired: bool = True
    #: RedeliveryPolicy redeliveryDelay: a message given back waits this long (ms).
    redelivery_delay_ms: int = 0
    send_fail_if_no_space: bool = False
    #: ms; 0 means wait as long as it takes.
    send_fail_if_no_space_after_timeout: int = 0
    #: Past this many bytes of parked frames a blocked connection stops being read.
    max_parked_bytes: int = 4 << 20
