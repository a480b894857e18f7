"""stompd's export format, for whoever writes or reads it: the broker's exporter
(``broker.export``) and the Spark jobs (``spark_jobs``).  Standard library only, and it
imports nothing else of ours.

    schema.py   schema version 3 (1 and 2 still read): kinds, fields and their checks,
                events, row types, the destination row's counters and gauges
    files.py    file names, run ids, appending, rotation by size and age, gzip on rotation
    lines.py    a pure-Python writer and checker of lines (tests, benchmarks, and a
                reference for the broker's faster writer)

spark_jobs/README.md is the prose contract.
"""
