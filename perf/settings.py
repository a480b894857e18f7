"""What one run is asked to do: the parsed command line, shared by every worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AckMode = Literal["auto", "client", "client-individual"]
ACK_MODES: tuple[AckMode, ...] = ("auto", "client", "client-individual")


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 61613
    # --failover: brokers to try in turn, at the start and whenever a connection is lost
    # (a shared-store pair, say); empty: host and port only, and a lost connection is an error.
    failover: tuple[tuple[str, int], ...] = ()
    # How long a lost connection may take to come back through --failover.
    reconnect_timeout: float = 60.0
    #: Ports producers and consumers connect to instead of ``port``, round-robin by
    #: their number (brokers of a network: send to one node, receive from another).
    producer_ports: tuple[int, ...] = ()
    consumer_ports: tuple[int, ...] = ()
    login: str | None = None
    passcode: str | None = None
    # CONNECT's `host` header.  RabbitMQ treats it as the vhost and needs "/"; ActiveMQ
    # and stompd ignore it.
    vhost: str = "/"
    destination: str = "/queue/stompd-perf"
    producers: int = 1
    consumers: int = 1
    # Total across all producers (split as evenly as possible); None when --duration.
    messages: int | None = 10_000
    duration: float | None = None
    size: int = 1024
    persistent: bool = False
    ack: AckMode = "auto"
    # Every ACK asks for a RECEIPT (not waited for; one missing at the end is an error).
    ack_receipts: bool = False
    prefetch: int | None = None
    transacted: int | None = None
    receipt_every: int | None = None
    receipt_window: int = 1
    priority_mix: bool = False
    selector: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    rate: float | None = None
    warmup: float = 0.0
    processes: int = 1
    timeout: float = 10.0
    connect_timeout: float = 10.0
    # Consumers subscribe only once every producer has finished: fill a backlog, then
    # drain it, in one run (so one run id covers both halves).
    backlog: bool = False
    progress: bool = True

    def port_of(self, role: str, number: int) -> int:
        """The port producer (or consumer) ``number`` connects to."""
        ports = self.producer_ports if role == "producer" else self.consumer_ports
        return ports[number % len(ports)] if ports else self.port

    def brokers_of(self, role: str, number: int) -> tuple[tuple[str, int], ...]:
        """Where producer (or consumer) ``number`` connects, in the order to try them."""
        return self.failover or ((self.host, self.port_of(role, number)),)

    @property
    def is_topic(self) -> bool:
        return self.destination.startswith("/topic/")

    def messages_for(self, producer: int) -> int | None:
        """This producer's share of --messages: the first N % P producers send one more."""
        if self.messages is None:
            return None
        share, extra = divmod(self.messages, self.producers)
        return share + (1 if producer < extra else 0)

    def expected(self, sent: int) -> int:
        """Deliveries owed for `sent` messages: every consumer of a topic should get every
        message (selectors are assumed to match all of them); a queue's consumers share them."""
        return sent * (self.consumers if self.is_topic else min(self.consumers, 1))
