"""``<destinationInterceptors>``: virtual topics, composite destinations, mirrored queues.

ActiveMQ writes them as::

    <destinationInterceptors>
      <virtualDestinationInterceptor><virtualDestinations>
        <virtualTopic name="VirtualTopic.>" prefix="Consumer.*." selectorAware="false"/>
        <compositeQueue name="ORDERS" forwardOnly="true">
          <forwardTo>
            <queue physicalName="ORDERS.AUDIT"/>
            <topic physicalName="ORDERS.FEED"/>
            <filteredDestination selector="region = 'EU'" queue="ORDERS.EU"/>
          </forwardTo>
        </compositeQueue>
      </virtualDestinations></virtualDestinationInterceptor>
      <mirroredQueue prefix="VirtualTopic.Mirror." postfix=""/>
    </destinationInterceptors>

As in ActiveMQ (``BrokerService.createDefaultDestinationInterceptor``), a file without
``<destinationInterceptors>`` gets the default ones: a virtual topic named
``VirtualTopic.>`` unless ``<broker useVirtualTopics="false">``, and a mirrored queue
with its defaults where ``useMirroredQueues="true"``; a file with its own list replaces
them (``useVirtualTopics`` and ``useMirroredQueues`` then change nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from config.model import (
    CompositeDestination,
    DestinationInterceptors,
    ForwardTo,
    MirroredQueue,
    VirtualTopic,
)
from config.reader import Context, Fields, boolean
from wildcards import has_wildcard_element, problem

if TYPE_CHECKING:
    from config.model import BrokerSettings
    from config.xmltree import Node

#: Nothing to do in stompd, where every copy is routed in one turn and stored in one
#: batch: the copies are sent "concurrently" and "transacted" already.
_ALREADY_SO = ("concurrentSend", "transactedSend")


def default_interceptors(broker: BrokerSettings) -> DestinationInterceptors:
    """ActiveMQ's interceptors for a file that lists none of its own."""
    virtual = (VirtualTopic(name="VirtualTopic.>"),) if broker.use_virtual_topics else ()
    mirrored = MirroredQueue() if broker.use_mirrored_queues else None
    return DestinationInterceptors(virtual_topics=virtual, mirrored=mirrored)


def load_interceptors(ctx: Context, node: Node) -> DestinationInterceptors:
    virtual: list[VirtualTopic] = []
    composites: list[CompositeDestination] = []
    mirrored: MirroredQueue | None = None
    for child in node.children:
        if child.tag == "virtualDestinationInterceptor":
            Fields(ctx, child, child.tag).finish()
            for holder in child.children:
                if holder.tag != "virtualDestinations":
                    ctx.unexpected(holder, child.tag)
                    continue
                for element in holder.children:
                    if element.tag == "virtualTopic":
                        found = _virtual_topic(ctx, element)
                        if found is not None:
                            virtual.append(found)
                    elif element.tag in ("compositeQueue", "compositeTopic"):
                        composite = _composite(ctx, element)
                        if composite is not None:
                            composites.append(composite)
                    else:
                        ctx.unexpected(element, holder.tag)
        elif child.tag == "mirroredQueue":
            if mirrored is not None:
                ctx.error(child, f"a second <mirroredQueue> (the first is on line {mirrored.source.line})")
                continue
            fields = Fields(ctx, child, child.tag)
            fields.get("prefix", "prefix", str)
            fields.get("postfix", "postfix", str)
            fields.get("copyMessage", "copy_message", boolean)
            fields.finish()
            mirrored = MirroredQueue(**fields.values, source=ctx.origin(child), origins=fields.origins)
        else:
            ctx.unexpected(child, node.tag)
    _check_names(ctx, node, composites)
    return DestinationInterceptors(tuple(virtual), tuple(composites), mirrored, ctx.origin(node))


def _virtual_topic(ctx: Context, node: Node) -> VirtualTopic | None:
    fields = Fields(ctx, node, node.tag)
    name = fields.get("name", "name", _pattern)
    prefix = fields.get("prefix", "prefix", str)
    fields.get("postfix", "postfix", str)
    for attr, key in (
        ("selectorAware", "selector_aware"),
        ("local", "local"),
        ("dropOnResourceLimit", "drop_on_resource_limit"),
        ("setOriginalDestination", "set_original_destination"),
    ):
        fields.get(attr, key, boolean)
    fields.skip(*_ALREADY_SO)
    fields.finish()
    if name is None and "name" in node.attrs:
        return None
    if prefix is not None and ">" in prefix.split("."):
        ctx.error(node, f'prefix="{prefix}": ">" cannot stand in a prefix (use "*" for one name element)')
        return None
    return VirtualTopic(**fields.values, source=ctx.origin(node), origins=fields.origins)


def _composite(ctx: Context, node: Node) -> CompositeDestination | None:
    fields = Fields(ctx, node, node.tag)
    name = fields.get("name", "name", _pattern)
    fields.get("forwardOnly", "forward_only", boolean)
    fields.get("sendWhenNotMatched", "send_when_not_matched", boolean)
    fields.get("copyMessage", "copy_message", boolean)
    fields.skip(*_ALREADY_SO)
    fields.finish()
    if name is None:
        if "name" not in node.attrs:
            ctx.error(
                node, f'<{node.tag}> needs a name (the destination clients send to, e.g. name="ORDERS")'
            )
        return None
    targets: list[ForwardTo] = []
    for holder in node.children:
        if holder.tag != "forwardTo":
            ctx.unexpected(holder, node.tag)
            continue
        for target in holder.children:
            found = _forward_to(ctx, target)
            if found is not None:
                targets.append(found)
    if not targets:
        ctx.warn(node, f'<{node.tag} name="{name}"> forwards to nothing: give it a <forwardTo> list')
    kind: Literal["queue", "topic"] = "queue" if node.tag == "compositeQueue" else "topic"
    del fields.values["name"]
    return CompositeDestination(
        kind,
        name,
        **fields.values,
        forward_to=tuple(targets),
        source=ctx.origin(node),
        origins=fields.origins,
    )


def _forward_to(ctx: Context, node: Node) -> ForwardTo | None:
    fields = Fields(ctx, node, node.tag)
    if node.tag in ("queue", "topic"):
        found = fields.get("physicalName", "name", _sendable)
        fields.skip("name")
        fields.finish()
        if found is None:
            if "physicalName" not in node.attrs:
                ctx.error(node, f'<{node.tag}> needs a physicalName (e.g. physicalName="ORDERS.AUDIT")')
            return None
        return ForwardTo(node.tag, found, None, ctx.origin(node))  # type: ignore[arg-type]
    if node.tag != "filteredDestination":
        ctx.unexpected(node, "forwardTo")
        return None
    selector = fields.get("selector", "selector", str)
    queue = fields.get("queue", "queue", _sendable)
    topic = fields.get("topic", "topic", _sendable)
    fields.finish()
    if (queue is None) == (topic is None):
        ctx.error(node, '<filteredDestination> needs one of queue="..." or topic="..."')
        return None
    if selector is None:
        # ActiveMQ's FilteredDestination without a filter matches nothing.
        ctx.error(node, "<filteredDestination> needs a selector (e.g. selector=\"region = 'EU'\")")
        return None
    kind: Literal["queue", "topic"] = "queue" if queue is not None else "topic"
    return ForwardTo(kind, queue or topic or "", selector, ctx.origin(node))


def _check_names(ctx: Context, node: Node, composites: list[CompositeDestination]) -> None:
    seen: dict[tuple[str, str], CompositeDestination] = {}
    for composite in composites:
        key = (composite.kind, composite.name)
        first = seen.setdefault(key, composite)
        if first is not composite:
            ctx.issues.error(
                composite.source.line,
                node.path,
                f"composite {composite.kind} {composite.name!r} is given twice (first on line "
                f"{first.source.line})",
            )


def _pattern(text: str) -> str:
    name = text.strip()
    why = problem(name)
    if why is not None:
        raise ValueError(why)
    return name


def _sendable(text: str) -> str:
    name = _pattern(text)
    if "," in name or has_wildcard_element(name):
        # A message is routed to destinations by their names, never to a pattern.
        raise ValueError("a composite forwards to one destination by its full name, not a wildcard or a list")
    return name
