"""The export for Spark (``--export-dir``): metric snapshots and a message event log.

The contract is spark_jobs/README.md (schema version 4): its version, names, run ids,
rotation and field lists are ``export_format``'s (a standard-library leaf the Spark
jobs read by too; the broker never imports ``spark_jobs``).  ``writer`` encodes the lines
(msgspec) and appends them through ``export_format.files`` (ISA-L's gzip at rotation);
``exporter`` takes the core's events (``broker.core.base.observe``) on the event loop and
hands them to a bounded background writer.
"""
