"""Start-up: rebuild queues, durable subscriptions and the schedule from the message
store's records and counters.  No message is read: a cursor starts with its counts on
disk and pages its messages in from the store when they are wanted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.delivery.durable import Stored, new_durable
from broker.core.storage.persistence import TOPIC_KIND

if TYPE_CHECKING:
    from broker.core.delivery.destinations import Destinations
    from broker.core.delivery.durable import DurableSubscriptions
    from broker.core.delivery.routing import Routing
    from broker.core.handlers.scheduler import Scheduler
    from broker.core.storage.persistence import Persistence


def recover(
    persistence: Persistence,
    destinations: Destinations,
    durables: DurableSubscriptions,
    routing: Routing,
    scheduler: Scheduler,
) -> int:
    """Rebuild what the store holds; returns how many stored messages there are."""
    recovery = persistence.recover()
    last_seq = recovery.next_seq - 1
    routing.seq = max(routing.seq, last_seq)
    for sub_record in recovery.subscriptions:
        stored = Stored(sub_record.data)
        # With its owner's read rights, as it was made: what it keeps after a restart is
        # what it kept before.
        durables.add(
            new_durable(
                destinations.guard,
                sub_record.id,
                sub_record.client_id,
                sub_record.name,
                stored.destination,
                stored.selector_text,
                stored.no_local,
                stored.owner,
            )
        )
    for sub_id in recovery.draining:
        persistence.drain(sub_id)
    scheduler.recovered(recovery.next_due_ms)
    total = 0
    for record in recovery.destinations:
        total += sum(record.counts)
        if record.kind == TOPIC_KIND:
            # Read back through durable subscriptions' pointers; the store knows its id.
            continue
        queue = destinations.queue(record.name)
        destinations.used(queue)
        queue.store_id = record.id
        queue.cursor.recovered(persistence.queue_reader(record.id), record.counts, last_seq)
    return total
