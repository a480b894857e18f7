"""Networks of brokers: ``<networkConnectors>``, demand forwarding over STOMP (docs/network.md).

The IO edge of the feature: each bridge is a STOMP client of the remote broker
(``link``) and of this one (``local``: an internal session of the engine); ``demand``
reads consumer advisories (sans-IO), ``bridge`` moves messages and keeps the connection
up.  What the core knows of it is in ``broker.core.base.bridging``, ``broker.core.handlers.advisory``
and ``broker.core.base.audit``.
"""

from broker.network.network import Network, NetworkSettings

__all__ = ["Network", "NetworkSettings"]
