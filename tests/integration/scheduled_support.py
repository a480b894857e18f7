"""The scheduler's management topic and removing a job through it (moved here from
test_scheduled.py)."""

from __future__ import annotations

from tests.clients import Client

MANAGEMENT = "/topic/ActiveMQ.Scheduler.Management"


def remove_job(c: Client, job_id: str) -> None:
    """REMOVE that job (its RECEIPT says it is done)."""
    c.send(MANAGEMENT, "", sync=True, AMQ_SCHEDULER_ACTION="REMOVE", scheduledJobId=job_id)
