"""Jobs hand over to their replacements one at a time before their walltime.

Each job's retirement is planned a guard ahead of the earliest end of its workers' own lifetime, and one job
start-up after the job before it; a job counts as leaving (its replacement submitted) one start-up before that.
Its workers are retired through the scheduler, as ``adapt()`` retires them: their results move to those that stay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import statistics
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Awaitable, Iterable, Iterator

logger = logging.getLogger(__name__)

# Start-up times remembered: recent jobs say more about the queue than the first ones.
STARTUPS_KEPT = 32

# Seconds by which a worker's own lifetime may start before the connection the cluster sees.
CONNECT_SECONDS = 3.0

# At close, how long a retirement under way may take to end (its workers' results moved).
CLOSE_WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class Tenure:
    """One job's time in the cluster: its pool, when its first worker connected (``time.monotonic()``), its workers'
    lifetime (s) and the stagger (s) by which each worker's own lifetime may end earlier or later."""

    name: str
    pool: str
    connected: float
    lifetime: int
    stagger: int

    @property
    def latest_end(self) -> float:
        """The earliest moment (from its connection) one of its workers' own lifetimes may end."""
        return self.connected + self.lifetime - self.stagger


def retirement_guard(poll_interval: float, window: float) -> float:
    """Seconds by which a job's retirement is planned ahead of :attr:`~Tenure.latest_end` (two looks and a
    connection's lead), at most a quarter of the ``window`` from connection to that end."""
    return min(2 * poll_interval + CONNECT_SECONDS, window / 4)


def retirement_plan(tenures: Iterable[Tenure], spacing: float, guard: float = 0.0) -> dict[str, float]:
    """When each job of one pool retires: ``guard`` seconds before its :attr:`~Tenure.latest_end`, or
    earlier where that keeps ``spacing`` seconds between two retirements."""
    plan: dict[str, float] = {}
    later = math.inf
    for tenure in sorted(tenures, key=lambda tenure: (tenure.latest_end, tenure.name), reverse=True):
        later = plan[tenure.name] = min(tenure.latest_end - guard, later - spacing)
    return plan


def retirement_spacing(startup: float, lifetime: float, jobs: int) -> float:
    """Seconds between two retirements of a pool of ``jobs`` jobs: one job start-up, but never so much that
    the first of jobs started together retires before half the ``lifetime`` planned."""
    if jobs < 2:
        return 0.0
    return min(startup, lifetime / 2 / (jobs - 1))


class Handover:
    """The cluster's plan of retirements, and the one under way; the job watch acts on it every look."""

    def __init__(self, poll_interval: float):
        self.poll_interval = poll_interval
        self.startups: deque[float] = deque(maxlen=STARTUPS_KEPT)
        self.plan: dict[str, float] = {}  # job -> when it retires (time.monotonic())
        self.latest: dict[str, float] = {}  # job -> the latest it retires, whatever the retirement before it
        self.gap: dict[str, float] = {}  # job -> seconds after the last retirement began that it may begin
        self.lead: dict[str, float] = {}  # job -> seconds before that its replacement is submitted
        self.retiring: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        self.began = self.ended = -math.inf  # when the last retirement began and ended
        self.unreplaced = 0  # retirements begun that no job's first connection has made up for yet

    def job_started(self, submitted_at: float | None) -> None:
        """A job's first worker connected now; its start-up counts from ``submitted_at`` or the last retirement."""
        now = time.monotonic()
        self.unreplaced = max(0, self.unreplaced - 1)
        if submitted_at is not None:
            could_start = max(now - max(0.0, time.time() - submitted_at), self.ended)
            self.startups.append(max(0.0, now - could_start))

    @property
    def startup(self) -> float:
        """A job's start-up time, from submission to its first worker: the median of recent jobs'."""
        return statistics.median(self.startups) if self.startups else self.poll_interval

    def replan(self, tenures: Iterable[Tenure]) -> None:
        """Plan the retirements of the cluster's connected jobs (those it no longer has are forgotten)."""
        by_pool: dict[str, list[Tenure]] = {}
        for tenure in tenures:
            by_pool.setdefault(tenure.pool, []).append(tenure)
        self.plan, self.latest, self.gap, self.lead = {}, {}, {}, {}
        for group in by_pool.values():
            window = min(tenure.lifetime - tenure.stagger for tenure in group)
            guard = retirement_guard(self.poll_interval, window)
            spacing = retirement_spacing(self.startup, window - guard, len(group))
            self.plan.update(retirement_plan(group, spacing, guard))
            self.latest.update({tenure.name: tenure.latest_end - guard for tenure in group})
            self.gap.update({tenure.name: spacing for tenure in group})
            lead = min(self.startup + self.poll_interval, (window - guard) / 2)
            self.lead.update({tenure.name: lead for tenure in group})
        self.retiring &= set(self.plan)

    def leaving(self, now: float | None = None) -> set[str]:
        """Jobs that retire within their replacement's lead time, or are retiring: counted as gone."""
        now = time.monotonic() if now is None else now
        return {name for name, at in self.plan.items() if at - self.lead[name] <= now} | self.retiring

    def due(self, now: float | None = None) -> list[str]:
        """The job to retire now, if any: the earliest due, once the last retirement was made up for (or waited out)."""
        now = time.monotonic() if now is None else now
        if self._tasks:
            return []
        waiting = sorted((at, name) for name, at in self.plan.items() if at <= now and name not in self.retiring)
        if not waiting:
            return []
        name = waiting[0][1]
        ready = not self.unreplaced or now >= self.began + self.gap[name] or now >= self.latest[name]
        return [name] if ready else []

    def retire(self, job: str, retiring: Awaitable[Any]) -> None:
        """Run ``retiring`` (of ``job``'s workers) in the background; if it retired none, a later look tries again."""

        async def run() -> None:
            try:
                retired = await retiring
            except Exception as error:  # the workers' own lifetime still retires them
                logger.warning("gpujobqueue: could not retire the workers of job %s: %s", job, error)
                retired = None
            finally:
                self.ended = time.monotonic()
            if not retired:
                self.retiring.discard(job)
                self.unreplaced = max(0, self.unreplaced - 1)

        self.began = time.monotonic()
        self.unreplaced += 1
        self.retiring.add(job)
        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self, timeout: float = CLOSE_WAIT_SECONDS) -> None:
        """Let the retirement under way end, for ``timeout`` seconds at most, then stop it (the cluster closes)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class _NoCancellations(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


@contextlib.contextmanager
def quiet_cancellations() -> Iterator[None]:
    """Leave out of the scheduler's log, while closing, the CancelledError it logs of workers just retired."""
    scheduler_log, quiet = logging.getLogger("distributed.scheduler"), _NoCancellations()
    scheduler_log.addFilter(quiet)
    try:
        yield
    finally:
        scheduler_log.removeFilter(quiet)
