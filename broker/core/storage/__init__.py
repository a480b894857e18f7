"""Where messages wait: cursors (memory part, disk part and its reads), the temp store's
logs, the message store's batches, the store's worker, and a message as the stores'
records.  They import ``base`` (and ``store.api``)."""
