"""ActiveMQ's XML feeds, ``/admin/xml/queues.jsp``, ``topics.jsp`` and ``subscribers.jsp``,
as its 5.17 web console writes them, for the tools that read them (Telegraf's ``activemq``
input, Datadog's ``activemq_xml`` check, netdata, scripts).

The text is what ActiveMQ's JSPs (``activemq-web-console/src/main/webapp/xml/``) put out,
byte for byte where the values agree: the blank lines their directives leave before the
root element, the attributes' layout, JSTL ``<c:out>``'s escaping, the stray space after
a topic's name (``name="prices "``: Telegraf's tag keeps it, as it does with ActiveMQ's),
and a queue's ``<feed>`` links with their doubled ``&amp;amp;``.  The figures are the
``Readout``'s, as ``/metrics`` and Jolokia give them: ``size`` is ActiveMQ's QueueSize
(in flight included).  The destinations are read, and the text written, a slice at a time.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING

from aiohttp import web

from broker.http import api, slices

if TYPE_CHECKING:
    from collections.abc import Iterable

    from broker.core.admin.readout import DestinationRow
    from broker.core.admin.views import SubscriptionInfo

PREFIX = "/admin/xml/"
CONTENT_TYPE = "text/xml;charset=UTF-8"

#: What the JSPs' page directive, licence comment and tag-library include leave before
#: the root element: one line end each.
_PRELUDE = "\n" * 9

_QUEUE = """
<queue name="{name}">

  <stats size="{size}"
         consumerCount="{consumers}"
         enqueueCount="{enqueued}"
         dequeueCount="{dequeued}"/>


  <feed>
    <atom>{atom}</atom>
    <rss>{rss}</rss>
  </feed>
</queue>
"""

_TOPIC = """
<topic name="{name} ">

  <stats size="{size}"
         consumerCount="{consumers}"
         enqueueCount="{enqueued}"
         dequeueCount="{dequeued}"/>

</topic>
"""

# Four of its lines end in a space (kept: the text is ActiveMQ's).
_SUBSCRIBER = (
    "\n"
    '<subscriber clientId="{client_id}" \n'
    '            subscriptionName="{name}" \n'
    '            connectionId="{connection}"\n'
    '            destinationName="{destination}" \n'
    '            selector="{selector}" \n'
    '            active="{active}" >\n'
    '  <stats pendingQueueSize="{pending}"\n'
    '         dispatchedQueueSize="{dispatched_now}"\n'
    '         dispatchedCounter="{dispatched}"\n'
    '         enqueueCounter="{enqueued}"\n'
    '         dequeueCounter="{dequeued}"{close}\n'
    "\n"
    "</subscriber>\n"
)

#: JSTL's ``escapeXml``, which ``<c:out>`` applies.
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#039;", '"': "&#034;"})

#: What ActiveMQ says of an offline durable subscription's connection.
NOT_SET = "NOTSET"

routes = web.RouteTableDef()


def out(value: object) -> str:
    """``<c:out value="...">``: the value's text, escaped; nothing for null."""
    return "" if value is None else str(value).translate(_ESCAPES)


def queue_entry(name: str, row: DestinationRow) -> str:
    # The JSP's c:out escapes a value whose own "&amp;" is literal text: "&amp;amp;".
    link = out(f"queueBrowse/{name}?view=rss&amp;feedType=")
    return _QUEUE.format(
        name=out(name),
        size=row.messages,
        consumers=row.consumers,
        enqueued=row.enqueued_total,
        dequeued=row.dequeued_total,
        atom=link + "atom_1.0",
        rss=link + "rss_2.0",
    )


def topic_entry(name: str, row: DestinationRow) -> str:
    return _TOPIC.format(
        name=out(name),
        size=row.messages,
        consumers=row.consumers,
        enqueued=row.enqueued_total,
        dequeued=row.dequeued_total,
    )


def subscriber_entry(sub: SubscriptionInfo) -> str:
    """A durable subscription.  ActiveMQ counts, per subscription, what was enqueued to it,
    dispatched and acknowledged; stompd keeps deliveries (``delivered``, redeliveries
    included), what is in flight and what is pending, and derives the rest from them."""
    active = sub.connection is not None
    acked = max(sub.delivered - sub.in_flight, 0)
    return _SUBSCRIBER.format(
        client_id=out(sub.client_id),
        name=out(sub.durable),
        connection=out(sub.connection if active else NOT_SET),
        destination=out(sub.destination.removeprefix("/topic/")),
        selector=out(sub.selector),
        active="yes" if active else "no",
        pending=sub.pending,
        dispatched_now=sub.in_flight,
        dispatched=sub.delivered,
        enqueued=acked + sub.in_flight + sub.pending,
        dequeued=acked,
        # The two loops of the JSP end their <stats> differently.
        close=" />" if active else "/>",
    )


async def _write(
    request: web.Request, root: str, entries: Iterable[str], tail: str = ""
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": CONTENT_TYPE})
    await response.prepare(request)
    await response.write(f"{_PRELUDE}<{root}>\n".encode())
    chunk: list[str] = []
    for entry in entries:
        chunk.append(entry)
        if len(chunk) == slices.SLICE:
            await response.write("".join(chunk).encode())
            chunk.clear()
            await asyncio.sleep(0)
    await response.write(("".join(chunk) + f"{tail}\n</{root}>\n").encode())
    await response.write_eof()
    return response


@routes.get(PREFIX + "queues.jsp")
async def queues(request: web.Request) -> web.StreamResponse:
    ops = api.ops_of(request)
    rows = await api.done(ops, ops.mbeans.destinations("Queue"))
    return await _write(request, "queues", (queue_entry(name, row) for name, row in rows))


@routes.get(PREFIX + "topics.jsp")
async def topics(request: web.Request) -> web.StreamResponse:
    ops = api.ops_of(request)
    rows = await api.done(ops, ops.mbeans.destinations("Topic"))
    return await _write(request, "topics", (topic_entry(name, row) for name, row in rows))


@routes.get(PREFIX + "subscribers.jsp")
async def subscribers(request: web.Request) -> web.StreamResponse:
    ops = api.ops_of(request)
    every = await api.done(ops, ops.subscriptions.every())
    # The JSP's two loops: the active durable subscriptions, then the offline ones.
    online = (
        subscriber_entry(sub) for sub in every if sub.durable is not None and sub.connection is not None
    )
    away = (subscriber_entry(sub) for sub in every if sub.durable is not None and sub.connection is None)
    return await _write(request, "subscribers", itertools.chain(online, ["\n\n"], away), "\n\n")
