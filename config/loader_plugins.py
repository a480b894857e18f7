"""``<plugins>``' message-rewriting plugins: ``<timeStampingBrokerPlugin>`` and
``<forcePersistencyModeBrokerPlugin>`` (the last of each, if several)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from config.model import ForcePersistencyPlugin, TimeStampingPlugin
from config.reader import Context, Fields, boolean, integer

if TYPE_CHECKING:
    from config.xmltree import Node

#: The plugins this module reads; ``load_plugins`` leaves them to it.
TAGS = frozenset({"timeStampingBrokerPlugin", "forcePersistencyModeBrokerPlugin"})


def time_stamping(ctx: Context, node: Node) -> TimeStampingPlugin | None:
    found = None
    for child in _each(ctx, node, "timeStampingBrokerPlugin"):
        fields = Fields(ctx, child, "timeStampingBrokerPlugin")
        # ActiveMQ takes a negative one as none (its checks are "> 0"); so does stompd.
        fields.get("zeroExpirationOverride", "zero_expiration_override", integer())
        fields.get("ttlCeiling", "ttl_ceiling", integer())
        fields.get("futureOnly", "future_only", boolean)
        fields.get("processNetworkMessages", "process_network_messages", boolean)
        fields.finish()
        found = TimeStampingPlugin(**fields.values, source=ctx.origin(child), origins=fields.origins)
    return found


def force_persistency(ctx: Context, node: Node) -> ForcePersistencyPlugin | None:
    found = None
    for child in _each(ctx, node, "forcePersistencyModeBrokerPlugin"):
        fields = Fields(ctx, child, "forcePersistencyModeBrokerPlugin")
        fields.get("persistenceFlag", "persistence_flag", boolean)
        fields.finish()
        found = ForcePersistencyPlugin(**fields.values, source=ctx.origin(child), origins=fields.origins)
    return found


def _each(ctx: Context, node: Node, tag: str) -> list[Node]:
    found = [child for child in node.children if child.tag == tag]
    for child in found:
        for grandchild in child.children:
            ctx.unexpected(grandchild, tag)
    return found
