"""Failed logins answered late: a password guesser waits for each wrong answer.

A CONNECT with a wrong password, or an admin request with wrong basic-auth credentials,
was answered at once: about 3,000 guesses a second from one client.  Each failure now
counts against where it came from (its address; an IPv6 client's /64, which one host
usually has whole) and against the login it tried; past ``FREE`` of them the answer (the
ERROR and close, the 401) waits on the loop's timer, ``FIRST_DELAY`` and twice as long
for each failure more, at most ``MAX_DELAY``.  Nothing sleeps: the connection is simply
not read meanwhile, and the loop serves everyone else.  A login with the right password
is answered at once, however many failures came before it: the delay costs a guesser,
never a user who has the password.  A count forgets one failure every ``FORGET_S``
seconds, and at most ``KEEP`` addresses and ``KEEP`` logins are remembered (the least
recently failing go first), so memory stays bounded whoever guesses.

What this does not do: a guesser that does not wait for its answers (many connections at
once, each dropped after a moment) is slowed only by the listeners' limits, since a
success would have been answered at once; hashed passwords slow it too (each check is a
tenth of a second of a worker thread, two at a time: broker/io/verifier.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger("stompd.security")

#: Failures in a row answered at once (a user mistyping).
FREE: Final = 3
#: The wait of the first failure past those, doubled for each failure more, up to MAX_DELAY.
FIRST_DELAY: Final = 0.25
MAX_DELAY: Final = 5.0
#: A count forgets one failure each this many seconds.
FORGET_S: Final = 30.0
#: Addresses, and logins, remembered at most (about 150 bytes each).
KEEP: Final = 4096


def source_of(address: str | None) -> str:
    """What failures from ``address`` count against: the address, an IPv6 one's /64."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class _Count:
    __slots__ = ("at", "failures")

    def __init__(self, at: float) -> None:
        self.failures = 0.0
        self.at = at

    def add(self, now: float) -> float:
        """One failure more at ``now``, less what was forgotten since the last; the count."""
        self.failures = max(self.failures - (now - self.at) / FORGET_S, 0.0) + 1.0
        self.at = now
        return self.failures


def _first_slowed(failures: float) -> bool:
    return FREE < failures <= FREE + 1.0


class FailedLogins:
    """The failures of the broker's listeners and admin server (one for all of them).
    ``clock`` is monotonic seconds (the loop's)."""

    __slots__ = ("_clock", "_keep", "_logins", "_sources")

    def __init__(self, clock: Callable[[], float] | None = None, keep: int = KEEP) -> None:
        self._clock = clock
        self._keep = keep
        self._sources: OrderedDict[str, _Count] = OrderedDict()
        self._logins: OrderedDict[str, _Count] = OrderedDict()

    def failed(self, address: str | None, login: str | None) -> float:
        """Count a failed login of ``login`` from ``address``: how many seconds its answer
        waits (0: answer now)."""
        now = self._clock() if self._clock is not None else asyncio.get_running_loop().time()
        source = source_of(address)
        # A digest, not the name: a login may be a 10 KB header, and is not ours to keep.
        tried = hashlib.blake2b((login or "").encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
        by_source = self._add(self._sources, source, now)
        by_login = self._add(self._logins, tried, now)
        # The first slowed failure of a run is said once, not each one after it.
        if _first_slowed(by_source):
            log.warning(
                "%d failed logins in a row from %s: each next one is answered later, up to %.0f s",
                round(by_source),
                source or "?",
                MAX_DELAY,
            )
        if _first_slowed(by_login):
            log.warning(
                "%d failed logins in a row as %r: each next one is answered later, up to %.0f s",
                round(by_login),
                login or "",
                MAX_DELAY,
            )
        failures = max(by_source, by_login)
        if failures <= FREE:
            return 0.0
        delay: float = FIRST_DELAY * 2.0 ** (failures - FREE - 1.0)
        return min(delay, MAX_DELAY)

    def _add(self, table: OrderedDict[str, _Count], key: str, now: float) -> float:
        count = table.pop(key, None)
        if count is None:
            count = _Count(now)
        failures = count.add(now)
        table[key] = count
        if len(table) > self._keep:
            table.popitem(last=False)
        return failures

    @property
    def remembered(self) -> int:
        """Addresses and logins counted now."""
        return len(self._sources) + len(self._logins)

    def later(self, delay: float, answer: Callable[[], None]) -> asyncio.TimerHandle:
        """Give a failure its answer after ``delay`` seconds, on the loop's timer (a test
        may hold it instead)."""
        return asyncio.get_running_loop().call_later(delay, answer)

    async def wait(self, delay: float) -> None:
        """``later`` for a coroutine: the admin server's 401 waits here."""
        done = asyncio.get_running_loop().create_future()

        def answer() -> None:
            if not done.done():
                done.set_result(None)

        handle = self.later(delay, answer)
        try:
            await done
        finally:
            handle.cancel()
