"""Adaptive scaling in whole jobs, with hysteresis, leaving the cluster's pinned jobs alone."""

from __future__ import annotations

import math
import pickle
from typing import Any

from distributed.deploy.adaptive import Adaptive

from ..errors import ValidationError
from ..settings.limits import MAX_JOBS_PER_CLUSTER
from ..settings.validation import parse_count


def _bound(bound: str, workers_per_job: int, given: dict[str, Any]) -> tuple[str, int | float] | None:
    """One bound of ``adapt()`` in GPU workers, with the keyword that gave it; None where none did."""
    found: dict[str, int | float] = {}
    for field, workers_each in ((bound, 1), (f"{bound}_gpus", 1), (f"{bound}_jobs", workers_per_job)):
        value = given.get(field)
        if value is None:
            continue
        if bound == "maximum" and isinstance(value, float) and value == math.inf:
            found[field] = math.inf  # no most
        else:
            most = MAX_JOBS_PER_CLUSTER * workers_per_job // workers_each
            found[field] = workers_each * parse_count(field, value, maximum=most)
    if len(set(found.values())) > 1:
        spelt = ", ".join(f"{field}={given[field]!r}" for field in found)
        raise ValidationError(list(found)[1], f"{spelt} ask for different GPU workers; give one of them")
    return next(iter(found.items()), None)


def adapt_bounds(workers_per_job: int, keywords: dict[str, Any]) -> tuple[int, int | float]:
    """``adapt()``'s least and most GPU workers, taken out of its ``keywords`` (``minimum``, ``minimum_gpus``,
    ``minimum_jobs``, and the same of ``maximum``); a ValidationError names a bound out of range, two spellings of
    one bound that differ, or a most below the least."""
    spellings = [f"{bound}{unit}" for bound in ("minimum", "maximum") for unit in ("", "_gpus", "_jobs")]
    given = {field: keywords.pop(field, None) for field in spellings}
    least, most = _bound("minimum", workers_per_job, given), _bound("maximum", workers_per_job, given)
    if least is not None and most is not None and most[1] < least[1]:
        raise ValidationError(most[0], f"{most[0]}={given[most[0]]!r} is below {least[0]}={given[least[0]]!r}")
    return (int(least[1]) if least else 0), (most[1] if most else math.inf)


class GPUAdaptive(Adaptive):
    """:class:`distributed.deploy.Adaptive` that counts whole jobs and does not churn.

    - The target is rounded up to whole jobs, ``minimum`` up and ``maximum`` down, so a target between
      two job sizes cannot make it submit and cancel a job again and again (dask-jobqueue #498).
    - It scales up at once, and down only once the need has settled below the jobs it has: the same
      for ``wait_count`` looks in a row, or below them for three times as long while varying.
    - The job running the scheduler (``scheduler="job"``) is never cancelled (:meth:`jobs_to_close`).
    - A job retiring before its walltime no longer counts: its replacement is submitted as its
      workers start to leave (dask-jobqueue #691), within ``maximum``.

    ``scaling``: the cluster's :class:`~gpujobqueue.scaling.Scaling`; the rest as distributed's.
    """

    def __init__(self, cluster: Any = None, *args: Any, scaling: Any, **kwargs: Any):
        self.scaling = scaling
        super().__init__(cluster, *args, **kwargs)
        self._low_needs: list[int] = []  # jobs needed at each look since the need fell below the jobs held

    @property
    def workers_per_job(self) -> int:
        return self.scaling.workers_per_job

    def _job_of(self, worker_name: Any) -> str:
        return self.worker_key.job_of(str(worker_name)) if self.worker_key is not None else str(worker_name)

    async def safe_target(self) -> int:
        """The scheduler's target, within ``minimum`` and ``maximum``, in whole jobs' workers."""
        per_job = self.workers_per_job
        fewest = math.ceil(self.minimum / per_job)
        most = math.inf if math.isinf(self.maximum) else max(fewest, math.floor(self.maximum / per_job))
        jobs = min(max(math.ceil(await self.target() / per_job), fewest), most)
        return int(jobs) * per_job

    def planned_jobs(self) -> dict[str, list[str]]:
        """The cluster's jobs, queued or running, each with its workers' names."""
        jobs: dict[str, list[str]] = {}
        for name in sorted(self.plan, key=str):
            jobs.setdefault(self._job_of(name), []).append(name)
        return jobs

    async def recommendations(self, target: int) -> dict:
        planned = self.planned_jobs()
        leaving = self.scaling.book.leaving() & set(planned)
        planned = {job: names for job, names in planned.items() if job not in leaving}
        needed = target // self.workers_per_job
        if needed >= len(planned):
            self._low_needs.clear()
            if needed == len(planned):
                return {"status": "same"}
            # a leaving job is replaced before it ends only while that keeps the jobs within the maximum
            held = needed + len(leaving)
            if not math.isinf(self.maximum):
                held = min(held, max(needed, math.floor(self.maximum / self.workers_per_job)))
            if held <= len(self.planned_jobs()):
                return {"status": "same"}
            return {"status": "up", "n": held * self.workers_per_job}
        self._low_needs.append(needed)
        recent = self._low_needs[-self.wait_count :]
        if len(recent) < self.wait_count:
            return {"status": "same"}
        if len(set(recent)) == 1:
            keep = needed
        elif len(self._low_needs) >= 3 * self.wait_count:
            keep = max(recent)
        else:
            return {"status": "same"}
        self._low_needs.clear()
        jobs = await self.jobs_to_close(planned, len(planned) - keep)
        if not jobs:
            return {"status": "same"}
        return {"status": "down", "workers": [name for job in jobs for name in planned[job]]}

    async def scale_up(self, n: int) -> None:
        """Scale to ``n`` workers in whole jobs, unless failures in a row stopped the replacing."""
        if not self.scaling.replacement.may_replace:
            return
        await self.scaling.scale_jobs(math.ceil(n / self.workers_per_job))

    async def jobs_to_close(self, planned: dict[str, list[str]], count: int) -> list[str]:
        """``count`` jobs to cancel: queued ones (newest first), then running ones in the scheduler's order."""
        pinned = self.scaling.book.pinned
        connected = {self._job_of(name) for name in self.observed}
        chosen = [job for job in reversed(list(planned)) if job not in connected and job not in pinned][:count]
        if len(chosen) < count:
            ordered = await self.scheduler.workers_to_close(
                target=0,
                key=pickle.dumps(self.worker_key) if self.worker_key else None,
                attribute="name",
                **self._workers_to_close_kwargs,
            )
            for name in ordered:
                job = self._job_of(name)
                if job in planned and job not in pinned and job not in chosen:
                    chosen.append(job)
                    if len(chosen) == count:
                        break
        return chosen
