"""The HTTP status each admin error answers (``broker.core.admin.errors``: its ``code``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from broker.core.admin.errors import AdminError


STATUS: Final = {
    "error": 500,
    "not_found": 404,
    "invalid": 400,
    "conflict": 409,
    "forbidden": 403,
    "no_space": 503,
    "not_implemented": 501,
    "too_many_operations": 429,
    "too_large": 413,
}


def status_of(error: AdminError) -> int:
    return STATUS.get(error.code, 500)
