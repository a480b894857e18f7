"""STOMP over WebSocket: the ``ws://``/``wss://`` listeners and the admin server's ``/stomp``.

    endpoint.py   the WebSocket upgrade (origins, subprotocols, limits) and the listeners
    transport.py  a WebSocket as a STOMP connection's transport (frames in messages)
    origin.py     which web pages may open one (``allowedOrigins``)

A WebSocket connection is an ordinary STOMP connection of ``broker.io``: only the
transport differs (docs/websocket.md).
"""
