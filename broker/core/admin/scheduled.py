"""The admin service's scheduled jobs: a page of them, and their removal, each a call to
the engine's scheduler and a wait for its answer (the store is read, or written)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.core.admin import infos
from broker.core.admin.errors import AdminError
from broker.core.admin.requests import job_position
from broker.core.admin.views import JobPage
from broker.core.base.chores import Wait
from broker.core.storage.jobs import REMOVE, REMOVEALL, Request
from store.api import Failed

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.admin.rights import Rights
    from broker.core.base.chores import Steps
    from broker.core.engine import Engine
    from broker.core.storage.jobs import Job
    from store.api import Outcome


class ScheduledAdmin:
    __slots__ = ("_engine", "_rights")

    def __init__(self, engine: Engine, rights: Rights) -> None:
        self._engine = engine
        self._rights = rights

    def page(self, limit: int, cursor: str | None, preview: int) -> Steps[JobPage]:
        """Up to ``limit`` scheduled jobs after ``cursor`` (None: the soonest first)."""
        self._rights.scheduler()
        return jobs_page(self._engine, job_position(cursor), limit, preview)

    def remove(self, job_id: str | None, window: tuple[int, int] | None) -> Steps[int]:
        """Remove job ``job_id``, or (None) every job next due in ``window`` (None: every
        job); how many there were."""
        self._rights.scheduler()
        request = Request(REMOVE, job_id, None) if job_id is not None else Request(REMOVEALL, None, window)
        return remove_jobs(self._engine, request)


def jobs_page(engine: Engine, after: tuple[int, int] | None, limit: int, preview: int) -> Steps[JobPage]:
    """Up to ``limit`` scheduled jobs due after ``after`` (None: the soonest first), and
    where the next page starts: None when nothing follows (one job more is read to know,
    so a page that is exactly the last one full has no next)."""
    wait = Wait()
    listed: list[Outcome[list[Job]]] = []
    engine.scheduler.list_jobs(after, limit + 1, _answer(listed, wait))
    # The read waits for the work's store batch: this is the work's end.
    engine.flush()
    if not listed:
        yield wait
    outcome = listed[0]
    if isinstance(outcome, Failed):
        raise AdminError(f"reading the scheduled messages failed: {outcome.error}")
    jobs = outcome.value
    last = jobs[limit - 1] if len(jobs) > limit else None
    return JobPage(
        [infos.scheduled_job(job, preview) for job in jobs[:limit]],
        f"{last.due}:{last.seq}" if last is not None else None,
    )


def remove_jobs(engine: Engine, request: Request) -> Steps[int]:
    """Carry out ``request`` (remove one job, or those of a window); how many it removed."""
    wait = Wait()
    removed: list[int] = []
    engine.scheduler.manage(request, None, _answer(removed, wait))
    engine.flush()
    if not removed:
        yield wait
    # Its deletions go to the store now, not with whatever comes next.
    engine.flush()
    return removed[0]


def _answer(box: list[Any], wait: Wait) -> Callable[[Any], None]:
    """A callback that keeps the broker's answer in ``box`` and resumes ``wait``."""

    def answer(value: Any) -> None:
        box.append(value)
        wait.resume()

    return answer
