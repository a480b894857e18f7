"""The broker's administration, inside the core: what the console, the JSON API,
``stompd-admin``, ``/metrics`` and the exporter ask of a running broker.

It sits above the engine (the top layer of ``broker.core``) and reads and drives only
through it; the HTTP server and the exporter read the broker only through it.

    views.py    the read models: destination, connection, subscription, usage, health,
                network infos; browse and job pages; an operation's progress
    errors.py   the admin errors (not found, invalid, conflict, ...)
    infos.py    those read models built from the broker's objects
    steps.py    sliced and waiting work as generators: a step, then the loop runs
    readout.py  ``Readout``: the numbers /metrics and the exporter's snapshots serve
    service.py  ``AdminService``: the read models, and browse, count, move, copy,
                remove, purge, delete and scheduled jobs, a bounded step at a time
"""
