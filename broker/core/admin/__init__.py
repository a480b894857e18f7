"""The broker's administration, inside the core: what the console, the JSON API,
``stompd-admin``, ``/metrics`` and the exporter ask of a running broker.

It sits above the engine (the top layer of ``broker.core``) and reads and drives only
through it; the HTTP server and the exporter read the broker only through it.

    service.py        ``AdminService``: its parts (below), and the broker as a whole
    destinations.py   every destination, one, its history; make one, delete one
    queues.py         over a whole queue: browse, count, move, copy, remove, purge
    messages.py       one message: show, remove, move, retry; send one (as a SEND)
    connections.py    every connection, one, its producers; close one
    subscriptions.py  every subscription, a topic's; a durable one's browse, purge, delete
    scheduled.py      the scheduled jobs: a page of them, their removal
    operations.py     the pass over a queue's memory and disk parts those run, a batch a step
    requests.py       what a request names, checked (a destination, a target, a cursor)
    rights.py         what an admin user may do to destinations (its authorization entries)
    infos.py          the read models built from the broker's objects
    views.py          the read models: destination, connection, subscription, usage,
                      health, network infos; browse and job pages; an operation's progress
    errors.py         the admin errors (not found, invalid, conflict, ...)
    readout.py        ``Readout``: the numbers /metrics and the exporter's snapshots serve

What grows with the broker comes back as ``Steps``, chores the engine's ``Chores`` runs
(``broker.core.base.chores``) in the one time budget of the broker's background work.
"""
