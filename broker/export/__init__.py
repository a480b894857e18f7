"""The export for Spark (``--export-dir``): metric snapshots and a message event log.

The contract is spark_jobs/README.md (schema version 3); the broker implements it here
and never imports ``spark_jobs`` at run time.  ``files`` names, appends to, rotates and
compresses the files; ``exporter`` takes the core's events (``broker.core.observe``) on
the event loop and hands them to a bounded background writer.
"""
