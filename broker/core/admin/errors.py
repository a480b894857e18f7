"""What an admin request can be refused for; ``code`` names the kind (the HTTP API maps
each to a status, ``broker.http.statuses.STATUS``)."""

from __future__ import annotations


class AdminError(Exception):
    """An admin request the broker refuses."""

    code = "error"


class NotFound(AdminError):
    code = "not_found"


class Invalid(AdminError):
    code = "invalid"


class Conflict(AdminError):
    code = "conflict"


class Forbidden(AdminError):
    """The admin user may not do this (the broker's authorization entries say so)."""

    code = "forbidden"


class NoRoom(AdminError):
    """The broker has no room for it now (its memory or store limit, sendFailIfNoSpace)."""

    code = "no_space"


class NotAvailable(AdminError):
    """The operation exists in the API but the broker core does not provide it yet."""

    code = "not_implemented"
