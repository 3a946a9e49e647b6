"""Per-user job limits of a queue (a site queue's ``max_jobs_per_user``, or
``gpujobqueue.<batch>.max-jobs-per-user``): a cluster holds the jobs it may not submit yet, says so, and
submits them as its own jobs end. A job past the running limit could only wait for one of the cluster's own
(alike) jobs to end, so the bound is the smaller of the two limits. Only the cluster's own jobs are counted (a CPU
pool's in the GPU jobs' queue with them); a batch system's refusal for such a limit (``user_limit_refusals``) is
taken as a limit of the jobs the cluster has then.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from typing import Any, Mapping

from ..errors import ValidationError
from ..settings.limits import MAX_JOBS_PER_CLUSTER
from ..settings.validation import parse_count

logger = logging.getLogger("gpujobqueue.cluster")

# A limit learnt from a refusal is tried again after this long even if none of the cluster's
# own jobs has ended: the user's other jobs in the queue may have.
REFUSAL_RETRY_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class UserJobLimit:
    """A ``queue``'s limits on one user's jobs: ``submitted`` (queued and running together) and ``running`` (at
    once), None where unstated; ``source``: where they come from (``site polaris``, a dask config key)."""

    queue: str
    submitted: int | None
    running: int | None
    source: str

    @classmethod
    def parse(cls, field: str, value: Any, *, queue: str, source: str) -> "UserJobLimit | None":
        """A limit from ``N`` (jobs submitted) or ``{submitted: N, running: M}``, each from 1 to
        :data:`~gpujobqueue.settings.limits.MAX_JOBS_PER_CLUSTER`; None for none; a ValidationError names ``field``."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            value = {"submitted": value}
        unknown = set(value) - {"submitted", "running"}
        if unknown or not value:
            raise ValidationError(field, f"expected {{submitted: N, running: N}} (either or both), got {dict(value)!r}")
        submitted, running = (
            None
            if value.get(key) is None
            else parse_count(f"{field}.{key}", value[key], minimum=1, maximum=MAX_JOBS_PER_CLUSTER, text=False)
            for key in ("submitted", "running")
        )
        if submitted is not None and running is not None and running > submitted:
            raise ValidationError(
                field, f"running ({running}) cannot exceed submitted ({submitted}): queued jobs include running ones"
            )
        return cls(queue=queue, submitted=submitted, running=running, source=source)

    @classmethod
    def of_site_queue(cls, field: str, site: Any, queue: str) -> "UserJobLimit | None":
        """The ``max_jobs_per_user`` of the site's ``queue`` (:meth:`parse`)."""
        return cls.parse(field, site.queue(queue).get("max_jobs_per_user"), queue=queue, source=f"site {site.name}")

    @property
    def bound(self) -> int:
        """The most jobs the cluster has in the queue: the smaller of the two limits."""
        return min(count for count in (self.submitted, self.running) if count is not None)

    def why(self) -> str:
        """``queue debug-scaling takes 1 job per user (site polaris)``, or ``queue gh-dev runs 1 job per
        user at once (site vista)`` where the running limit is the one that binds."""
        jobs = "job" if self.bound == 1 else "jobs"
        if self.submitted is not None and self.submitted == self.bound:
            return f"queue {self.queue} takes {self.bound} {jobs} per user ({self.source})"
        return f"queue {self.queue} runs {self.bound} {jobs} per user at once ({self.source})"


def cpu_pool_job_limit(
    pool: Any, site: Any, gpu_site_queue: str | None, gpu_queue: str | None, gpu_limit: UserJobLimit | None
) -> UserJobLimit | None:
    """The limit on one user's jobs of the queue that a CPU ``pool``'s jobs go to: in the GPU jobs' queue
    (``gpu_site_queue``, the site's name of it, or ``gpu_queue``, the batch system's) the GPU jobs' ``gpu_limit``
    itself, which both pools' jobs count towards; a site queue of its own brings its ``max_jobs_per_user``; of
    another batch queue nothing is known."""
    if pool is None:
        return None
    if pool.site_queue is not None:
        if pool.site_queue == gpu_site_queue:
            return gpu_limit
        return UserJobLimit.of_site_queue(f"queues.{pool.site_queue}.max_jobs_per_user", site, pool.site_queue)
    return gpu_limit if pool.queue in (None, gpu_queue) else None


def refusal_line(text: str, patterns: tuple[str, ...]) -> str | None:
    """The line of a batch system's refusal that matches one of its per-user-limit patterns."""
    for line in text.splitlines():
        if any(re.search(pattern, line) for pattern in patterns):
            return line.strip()
    return None


class JobHold:
    """The jobs a cluster holds back per pool, and why: a queue's stated limit (``limits``, per pool; pools that
    share one limit object count their jobs towards it together), or the batch system's refusal (a limit learnt
    at the jobs the cluster had then)."""

    def __init__(self, limits: Mapping[str, UserJobLimit] | None = None):
        self.limits = dict(limits or {})
        self.refused: dict[str, tuple[int, float, str]] = {}  # pool -> (jobs then, when (monotonic), the words)
        self.held: dict[str, int] = {}
        self._shared: dict[str, int] = {}  # pool -> the other pools' jobs counted towards its limit, when held
        self._said: dict[str, tuple[int, str]] = {}

    def _others(self, pool: str, present: Mapping[str, int]) -> int:
        """The other pools' jobs that count towards ``pool``'s limit (0 where it has none)."""
        limit = self.limits.get(pool)
        if limit is None:
            return 0
        return sum(count for other, count in present.items() if other != pool and self.limits.get(other) is limit)

    def cap(self, pool: str, present: Mapping[str, int]) -> int | None:
        """The most jobs of ``pool`` the cluster may have in the queue now, having ``present`` of
        each pool; None: no bound."""
        caps = []
        if pool in self.limits:
            caps.append(max(0, self.limits[pool].bound - self._others(pool, present)))
        if pool in self.refused:
            jobs, since, _ = self.refused[pool]
            if time.monotonic() - since < REFUSAL_RETRY_SECONDS:
                caps.append(jobs)
            else:  # try again: the user's other jobs may have ended
                del self.refused[pool]
        return min(caps) if caps else None

    def why(self, pool: str) -> str:
        if pool in self.refused:
            return f"the batch system refused more: {self.refused[pool][2]}"
        if pool not in self.limits:
            return "held"
        among = (
            "" if not self._shared.get(pool) else f", the cluster's {'CPU' if pool == 'gpu' else 'GPU'} jobs among them"
        )
        return self.limits[pool].why() + among

    def room(self, pool: str, present: Mapping[str, int], wanted: int) -> int:
        """Jobs of ``pool`` to submit now towards ``wanted``, having ``present`` jobs of each pool;
        records the rest as held."""
        mine = present.get(pool, 0)
        cap = self.cap(pool, present)
        allowed = wanted if cap is None else min(wanted, max(cap, mine))
        self.held[pool] = max(0, wanted - max(mine, allowed))
        self._shared[pool] = self._others(pool, present)
        return max(0, allowed - mine)

    def refusal(self, pool: str, present: int, words: str, held: int) -> None:
        """The batch system refused a submission for a per-user limit: hold past ``present``."""
        self.refused[pool] = (present, time.monotonic(), words)
        self.held[pool] = self.held.get(pool, 0) + held

    def clear(self) -> None:
        self.held.clear()
        self.refused.clear()

    def say(self) -> None:
        """Log the held jobs once per change of their number or reason."""
        for pool, count in self.held.items():
            said = (count, self.why(pool) if count else "")
            if self._said.get(pool, (0, "")) == said:
                continue
            self._said[pool] = said
            if count:
                logger.warning("gpujobqueue: %s: %s", _held(pool, count), said[1])
            else:
                logger.info("gpujobqueue: no %s job held any more", pool)

    def notice(self) -> str | None:
        """``held 2 job(s): queue debug-scaling takes 1 job per user (site polaris)``, or None."""
        parts = [f"{_held(pool, count)}: {self.why(pool)}" for pool, count in self.held.items() if count]
        return "; ".join(parts) or None


def _held(pool: str, count: int) -> str:
    """``held 2 job(s)`` (the GPU pool), ``held 2 cpu job(s)``."""
    return f"held {count} {'' if pool == 'gpu' else pool + ' '}job(s)"
