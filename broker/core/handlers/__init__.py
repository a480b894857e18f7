"""What a frame or a tick sets off: the handlers of each command (CONNECT, SEND, ACK,
SUBSCRIBE, BEGIN/COMMIT/ABORT, browsing), start-up recovery, housekeeping, flow control,
scheduled delivery, settlement (acks, redelivery, dead letters) and the admin operations
over a queue.  They import ``delivery``, ``storage`` and ``base``, never the engine."""
