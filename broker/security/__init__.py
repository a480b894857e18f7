"""Security from the configuration: who may connect (``users``), what each may do with
which destination (``access``), both behind the core's ``Guard`` (``guard``), and the
SIGHUP reload of them (``reload``).  Sans-IO but for ``reload``, which reads the file."""
