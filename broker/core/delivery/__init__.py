"""Where messages go: routing, destinations, sessions, queues and topics, consumers and
subscriptions, durable subscriptions.  They import ``storage`` and ``base``."""
