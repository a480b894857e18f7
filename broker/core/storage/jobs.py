"""Scheduled jobs as their owners see them: a job's id, and ActiveMQ's management requests.

A job (a SEND with ``AMQ_SCHEDULED_*`` headers, kept in the message store until due) has
an id from the moment it is scheduled, kept by every job it becomes (a cron job coming
due, the plain job it starts, a repeat): its message's id, ``ID-<boot>-<sequence>``.  Each
delivery carries it as ``scheduledJobId``, as ActiveMQ's do, so a consumer can remove the
job that sent it.

ActiveMQ's management API (``ScheduledMessage``, ``SchedulerBroker.send``) is a SEND to
``ActiveMQ.Scheduler.Management`` (a topic or a queue: the name, any case, is what
counts) with ``AMQ_SCHEDULER_ACTION``:

* ``BROWSE``: a copy of each job's message goes to the SEND's ``reply-to``, with its
  ``scheduledJobId``, ``original-destination`` the job's destination, ``type:Advisory``,
  non-persistent, a new id;
* ``REMOVE`` with ``scheduledJobId``: that job goes, a cron job too;
* ``REMOVEALL``: every job goes.

``ACTION_START_TIME`` and ``ACTION_END_TIME`` (epoch ms, both or neither) narrow BROWSE
and REMOVEALL to the jobs next due within that window, ends included.  What stompd adds:
a request it cannot carry out (BROWSE without ``reply-to``, REMOVE without an id, an
unknown action, a bad time, a window given as ``AMQ_SCHEDULED_START``/``_END``) gets an
ERROR, where ActiveMQ does nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from broker.core.base.errors import LONG_MAX, InvalidHeader, shown

if TYPE_CHECKING:
    from broker.core.base.message import Message

MANAGEMENT: Final = "ActiveMQ.Scheduler.Management"
ACTION: Final = "AMQ_SCHEDULER_ACTION"
BROWSE: Final = "BROWSE"
REMOVE: Final = "REMOVE"
REMOVEALL: Final = "REMOVEALL"
START: Final = "ACTION_START_TIME"
END: Final = "ACTION_END_TIME"
#: Names a window is easily mistaken for (no ActiveMQ header has them).
NOT_WINDOW: Final = ("AMQ_SCHEDULED_START", "AMQ_SCHEDULED_END")
#: The header naming a job: on its deliveries and browsed copies, and in a REMOVE.
JOB_ID: Final = "scheduledJobId"
#: A browsed copy's ``type`` (ActiveMQ's ``AdvisorySupport.ADIVSORY_MESSAGE_TYPE``).
ADVISORY: Final = "Advisory"

#: Due times in a window, ends included (None: every job).
Window = tuple[int, int] | None


def is_management(name: str) -> bool:
    """Is ``name`` (a destination without its ``/queue/`` or ``/topic/``) the management one?"""
    return name[: len(MANAGEMENT)].lower() == MANAGEMENT.lower()


class Job(NamedTuple):
    """One scheduled job as the store keeps it."""

    id: str
    #: When it is next due (epoch ms), and the key's sequence beside it.
    due: int
    seq: int
    #: Where its deliveries go (a composite's names joined by commas).
    destination: str
    message: Message
    #: Its period (ms) and the repeats it has left; a cron job's entry is in its headers.
    period: int
    repeats: int
    #: Bytes of its record in the store.
    size: int

    @property
    def cron(self) -> str | None:
        return self.message.headers.get("AMQ_SCHEDULED_CRON")


class Request(NamedTuple):
    """A management SEND's request."""

    action: str
    job_id: str | None
    window: Window


def request_of(headers: dict[str, str]) -> Request:
    """The request a SEND to the management destination makes (``InvalidHeader`` if it
    cannot be carried out)."""
    action = headers.get(ACTION)
    if action not in (BROWSE, REMOVE, REMOVEALL):
        raise InvalidHeader(
            f"{ACTION} must be {BROWSE}, {REMOVE} or {REMOVEALL} on {MANAGEMENT}, got {action!r}"
        )
    job_id = headers.get(JOB_ID)
    if action == REMOVE and not job_id:
        raise InvalidHeader(f"{ACTION}:{REMOVE} needs the '{JOB_ID}' of the job to remove")
    if action == BROWSE and not headers.get("reply-to"):
        raise InvalidHeader(f"{ACTION}:{BROWSE} sends the jobs to the SEND's 'reply-to': it has none")
    for name in NOT_WINDOW:
        if name in headers:
            # Left unread, a REMOVEALL meant for a window would remove every job.
            raise InvalidHeader(f"'{name}' is not a window header: ActiveMQ's are '{START}' and '{END}'")
    return Request(action, job_id, window_of(headers.get(START), headers.get(END)))


def window_of(start: str | None, end: str | None) -> Window:
    """``ACTION_START_TIME``/``ACTION_END_TIME`` as a window (both, or neither: None)."""
    if start is None and end is None:
        return None
    if start is None or end is None:
        raise InvalidHeader(f"'{START}' and '{END}' go together: a window needs both ends")
    return _epoch_ms(START, start), _epoch_ms(END, end)


def _epoch_ms(name: str, text: str) -> int:
    """A window's end: epoch ms, 0 to what a job's due time can be (``LONG_MAX``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= LONG_MAX:
        raise InvalidHeader(
            f"header {name!r} must be a time in epoch milliseconds (0 to {LONG_MAX}), got {shown(text)}"
        )
    return value


def within(due: int, window: Window) -> bool:
    return window is None or window[0] <= due <= window[1]


def browsed_copy(job: Job, reply_to: str) -> Message:
    """What BROWSE sends to ``reply-to`` for ``job`` (as ActiveMQ's ``sendScheduledJob``)."""
    headers = job.message.headers
    headers.pop("persistent", None)
    headers[JOB_ID] = job.id
    headers["original-destination"] = job.destination
    headers["type"] = ADVISORY
    copy = job.message.copy_to(0, "", reply_to, headers)
    copy.persistent = False
    return copy
