"""A small job queue with retries and a dead-letter list, run by the scheduler every minute."""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

log = logging.getLogger("inkwell.jobs")

MAX_ATTEMPTS = 5


@dataclass
class Job:
    name: str
    run: Callable[[], object]
    attempts: int = 0
    not_before: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    last_error: str = ""


def backoff(attempt: int) -> timedelta:
    """1, 2, 4, 8 ... minutes, capped at one hour."""
    return timedelta(minutes=min(60, 2 ** (attempt - 1)))


class JobQueue:
    def __init__(self) -> None:
        self.pending: list[Job] = []
        self.dead: list[Job] = []
        self.completed: list[str] = []

    def enqueue(self, name: str, run: Callable[[], object], at: datetime | None = None) -> Job:
        job = Job(name, run, not_before=at or datetime.now(timezone.utc))
        self.pending.append(job)
        return job

    def run_pending(self, now: datetime | None = None) -> int:
        """Run every due job once; failures are rescheduled or moved to the dead-letter list."""
        now = now or datetime.now(timezone.utc)
        due = [job for job in self.pending if job.not_before <= now]
        for job in due:
            self.pending.remove(job)
            job.attempts += 1
            try:
                job.run()
            except Exception as exc:  # a job failure must not stop the other jobs
                job.last_error = f"{type(exc).__name__}: {exc}"
                if job.attempts >= MAX_ATTEMPTS:
                    log.error("job %s gave up after %d attempts: %s", job.name, job.attempts, job.last_error)
                    self.dead.append(job)
                else:
                    job.not_before = now + backoff(job.attempts)
                    self.pending.append(job)
                continue
            self.completed.append(job.name)
        return len(due)

    def retry_dead(self, name: str) -> int:
        """Operator action from the runbook: put dead jobs of one kind back in the queue."""
        revived = [job for job in self.dead if job.name == name]
        for job in revived:
            self.dead.remove(job)
            job.attempts = 0
            job.not_before = datetime.now(timezone.utc)
            self.pending.append(job)
        return len(revived)
