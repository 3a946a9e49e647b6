"""Jobs hand over to their replacements one at a time before their walltime.

Workers retire before their job's walltime (``walltime_margin``). Jobs started together would
retire together and leave the cluster without workers until their replacements start, losing
the results those workers held. So the cluster plans each job's retirement: no later than its
workers' own lifetime would end it, and at least one job start-up time (measured: from
submission to the first worker connected) after the job before it, so that never all of a
pool's jobs leave at once. A job is counted as leaving one start-up time before its planned
retirement, which is when ``scale()``'s replacement (or ``adapt()``'s, within its maximum) is
submitted: where the batch system has room, the replacement's workers connect as the leaving
ones go; where it has none, the replacement waits in the queue and starts as soon as the
leaving job ends. At its planned time the job's workers are retired through the scheduler, as
``adapt()`` retires workers: their results move to the workers that stay, then they close and
the job ends by itself. The workers' own lifetime stays the bound, should the cluster not
retire them first.
"""

from __future__ import annotations

import asyncio
import logging
import math
import statistics
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Awaitable, Iterable

logger = logging.getLogger(__name__)

# Start-up times remembered: recent jobs say more about the queue than the first ones.
STARTUPS_KEPT = 32


@dataclass(frozen=True)
class Tenure:
    """One job's time in the cluster, as far as its retirement goes.

    Parameters
    ----------
    name : str
        The job's name in the cluster.
    pool : str
        ``"gpu"`` or ``"cpu"``: retirements are spread within a pool.
    connected : float
        When its first worker connected (``time.monotonic()``).
    lifetime : int
        Seconds its workers live (the walltime less its margin).
    stagger : int
        Seconds by which each worker's own lifetime may end earlier (or later), at random.
    """

    name: str
    pool: str
    connected: float
    lifetime: int
    stagger: int

    @property
    def latest_end(self) -> float:
        """The latest time the cluster may retire the job: before any of its workers' own lifetimes ends."""
        return self.connected + self.lifetime - self.stagger


def retirement_plan(tenures: Iterable[Tenure], spacing: float) -> dict[str, float]:
    """When each job of one pool retires: at its :attr:`~Tenure.latest_end`, or earlier where that
    keeps ``spacing`` seconds between two retirements.

    Examples
    --------
    >>> jobs = [Tenure(f"j{i}", "gpu", connected=0.0, lifetime=45, stagger=3) for i in range(3)]
    >>> retirement_plan(jobs, spacing=7.0)
    {'j2': 42.0, 'j1': 35.0, 'j0': 28.0}
    """
    plan: dict[str, float] = {}
    later = math.inf
    for tenure in sorted(tenures, key=lambda tenure: (tenure.latest_end, tenure.name), reverse=True):
        later = plan[tenure.name] = min(tenure.latest_end, later - spacing)
    return plan


def retirement_spacing(startup: float, lifetime: float, jobs: int) -> float:
    """Seconds between two retirements of a pool of ``jobs`` jobs: one job start-up, but never so
    much that the first of jobs started together retires before half its lifetime.

    Examples
    --------
    >>> retirement_spacing(startup=8.0, lifetime=45, jobs=4)
    7.5
    >>> retirement_spacing(startup=5.0, lifetime=3420, jobs=4)
    5.0
    """
    if jobs < 2:
        return 0.0
    return min(startup, lifetime / 2 / (jobs - 1))


class Handover:
    """The cluster's plan of retirements, and the retirements under way.

    Parameters
    ----------
    poll_interval : float
        Seconds between two looks of the job watch, which acts on the plan: a replacement is
        submitted that much earlier, since the plan is only read at each look.
    """

    def __init__(self, poll_interval: float):
        self.poll_interval = poll_interval
        self.startups: deque[float] = deque(maxlen=STARTUPS_KEPT)
        self.plan: dict[str, float] = {}  # job -> when it retires (time.monotonic())
        self.lead: dict[str, float] = {}  # job -> seconds before that its replacement is submitted
        self.retiring: set[str] = set()
        self._tasks: set[asyncio.Task] = set()

    def job_started(self, submitted_at: float | None) -> None:
        """A job's first worker connected now; it was submitted at ``submitted_at`` (``time.time()``)."""
        if submitted_at is not None:
            self.startups.append(max(0.0, time.time() - submitted_at))

    @property
    def startup(self) -> float:
        """A job's start-up time, from submission to its first worker: the median of recent jobs'."""
        return statistics.median(self.startups) if self.startups else self.poll_interval

    def replan(self, tenures: Iterable[Tenure]) -> None:
        """Plan the retirements of the cluster's connected jobs (those it no longer has are forgotten)."""
        by_pool: dict[str, list[Tenure]] = {}
        for tenure in tenures:
            by_pool.setdefault(tenure.pool, []).append(tenure)
        self.plan, self.lead = {}, {}
        for group in by_pool.values():
            lifetime = min(tenure.lifetime for tenure in group)
            self.plan.update(retirement_plan(group, retirement_spacing(self.startup, lifetime, len(group))))
            lead = min(self.startup + self.poll_interval, lifetime / 2)
            self.lead.update({tenure.name: lead for tenure in group})
        self.retiring &= set(self.plan)

    def leaving(self, now: float | None = None) -> set[str]:
        """Jobs that retire within their replacement's lead time, or are retiring: counted as gone."""
        now = time.monotonic() if now is None else now
        return {name for name, at in self.plan.items() if at - self.lead[name] <= now} | self.retiring

    def due(self, now: float | None = None) -> list[str]:
        """Jobs whose planned retirement has come and that are not retiring yet, earliest first."""
        now = time.monotonic() if now is None else now
        return sorted((name for name, at in self.plan.items() if at <= now and name not in self.retiring), key=str)

    def retire(self, job: str, retiring: Awaitable[Any]) -> None:
        """Run ``retiring`` (the scheduler's retirement of ``job``'s workers) in the background; if it
        retired none of them (no other worker could take their results), it is tried again at the
        next look."""

        async def run() -> None:
            try:
                retired = await retiring
            except Exception as error:  # the workers' own lifetime still retires them
                logger.warning("gpujobqueue: could not retire the workers of job %s: %s", job, error)
                retired = None
            if not retired:
                self.retiring.discard(job)

        self.retiring.add(job)
        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Stop the retirements under way (the cluster is closing)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
