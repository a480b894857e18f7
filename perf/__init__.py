"""stompd-perf: a load generator and checker for any STOMP broker.

A standalone client: it imports nothing from stompd's own packages, so it measures
stompd, ActiveMQ or RabbitMQ the same way, and a bug in stompd's codec cannot hide
behind the same bug in the tool.

    cli.py        command line, exit status
    settings.py   what a run is asked to do
    runner.py     workers (a thread, or spawned processes), start, stop, collect
    board.py      shared-memory counters between the parent and its workers
    workload.py   producers, consumers, and one worker's event loop
    client.py     asyncio STOMP connection: pipelined writes, receipts, ERROR frames
    frames.py     frame splitter and encoders
    payload.py    the stamp at the start of every body (run, producer, sequence, time)
    histogram.py  log-linear latency histogram, mergeable across processes
    report.py     loss / duplicates / throughput / percentiles, human and JSON output
    sink.py       a fake broker for testing the tool, and the tool's speed ceiling
"""
