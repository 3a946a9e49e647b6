"""Per-user job limits of a queue: how many of a user's jobs a queue takes (queued and running
together) and runs at once, where the centre states them (a site queue's ``max_jobs_per_user``,
or ``gpujobqueue.<batch>.max-jobs-per-user``), and what a cluster does past them: it holds the
jobs it may not submit yet, says so, and submits them as its own jobs end.

A cluster's jobs are all alike, so a job past the running limit could only wait in the queue for
one of the cluster's own jobs to end: the cluster holds it itself instead (the bound is the
smaller of the two limits), which leaves the user's submit limit to the user's other work.

Only the cluster's own jobs are counted: the user's other jobs in the same queue are unknown
to it. A batch system that refuses a submission for such a limit (its words are in each batch
module, ``user_limit_refusals``) is taken as a limit of the jobs the cluster has then.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from typing import Any, Mapping

from .errors import ValidationError
from .limits import MAX_JOBS_PER_CLUSTER

logger = logging.getLogger("gpujobqueue.cluster")

# A limit learnt from a refusal is tried again after this long even if none of the cluster's
# own jobs has ended: the user's other jobs in the queue may have.
REFUSAL_RETRY_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class UserJobLimit:
    """A queue's limits on one user's jobs.

    Parameters
    ----------
    queue : str
        The queue (as the site or the batch system names it).
    submitted : int or None
        Jobs queued and running together (what centres call "submitted"); the cluster never
        has more in the queue.
    running : int or None
        Jobs running at once; the batch system would queue more, to wait, but the cluster holds them.
    source : str
        Where the limit comes from (``site polaris``, a dask config key), for messages.
    """

    queue: str
    submitted: int | None
    running: int | None
    source: str

    @classmethod
    def parse(cls, field: str, value: Any, *, queue: str, source: str) -> "UserJobLimit | None":
        """A limit from ``N`` (jobs submitted) or ``{submitted: N, running: M}``; None for none.

        Raises
        ------
        ValidationError
            Naming ``field``: not a mapping of those keys to whole numbers from 1 to
            :data:`~gpujobqueue.limits.MAX_JOBS_PER_CLUSTER`, or more running than submitted.
        """
        if value is None:
            return None
        if not isinstance(value, Mapping):
            value = {"submitted": value}
        unknown = set(value) - {"submitted", "running"}
        if unknown or not value:
            raise ValidationError(field, f"expected {{submitted: N, running: N}} (either or both), got {dict(value)!r}")
        counts = {}
        for key in ("submitted", "running"):
            count = value.get(key)
            if count is not None and (
                isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_JOBS_PER_CLUSTER
            ):
                raise ValidationError(
                    f"{field}.{key}", f"expected a whole number of jobs from 1 to {MAX_JOBS_PER_CLUSTER}, got {count!r}"
                )
            counts[key] = count
        submitted, running = counts["submitted"], counts["running"]
        if submitted is not None and running is not None and running > submitted:
            raise ValidationError(
                field, f"running ({running}) cannot exceed submitted ({submitted}): queued jobs include running ones"
            )
        return cls(queue=queue, submitted=submitted, running=running, source=source)

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


def refusal_line(text: str, patterns: tuple[str, ...]) -> str | None:
    """The line of a batch system's refusal that matches one of its per-user-limit patterns."""
    for line in text.splitlines():
        if any(re.search(pattern, line) for pattern in patterns):
            return line.strip()
    return None


class JobHold:
    """The jobs a cluster holds back per pool, and why: a queue's stated limit, or the batch
    system's refusal (a limit learnt at the jobs the cluster had then).

    Parameters
    ----------
    limit : UserJobLimit or None
        The GPU jobs' queue's limit.
    """

    def __init__(self, limit: UserJobLimit | None = None):
        self.limit = limit
        self.refused: dict[str, tuple[int, float, str]] = {}  # pool -> (jobs then, when (monotonic), the words)
        self.held: dict[str, int] = {}
        self._said: dict[str, tuple[int, str]] = {}

    def cap(self, pool: str) -> int | None:
        """The most jobs of ``pool`` the cluster may have in the queue now; None: no bound."""
        caps = []
        if pool == "gpu" and self.limit is not None:
            caps.append(self.limit.bound)
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
        return self.limit.why() if self.limit is not None else "held"

    def room(self, pool: str, present: int, wanted: int) -> int:
        """Jobs of ``pool`` to submit now towards ``wanted``, having ``present``; records the rest as held."""
        cap = self.cap(pool)
        allowed = wanted if cap is None else min(wanted, max(cap, present))
        self.held[pool] = max(0, wanted - max(present, allowed))
        return max(0, allowed - present)

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
                kind = "" if pool == "gpu" else f"{pool} "
                logger.warning("gpujobqueue: held %d %sjob(s): %s", count, kind, said[1])
            else:
                logger.info("gpujobqueue: no %s job held any more", pool)

    def notice(self) -> str | None:
        """``held 2 job(s): queue debug-scaling takes 1 job per user (site polaris)``, or None."""
        parts = [f"held {count} job(s): {self.why(pool)}" for pool, count in self.held.items() if count]
        return "; ".join(parts) or None
