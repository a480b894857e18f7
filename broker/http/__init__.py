"""The broker's HTTP side (admin API, console, ``/metrics``, WebSocket STOMP), on aiohttp.

Nothing here imports aiohttp at package level: a broker with the admin server off
(``--http-port 0``) and no WebSocket listener never loads it (about 12 MB of RSS).
"""


class AdminPortError(OSError):
    """The admin server could not listen (port taken, address not ours)."""
