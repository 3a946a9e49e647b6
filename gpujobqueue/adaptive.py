"""Adaptive scaling that retires whole jobs and leaves the cluster's pinned jobs alone."""

from __future__ import annotations

import pickle

from distributed.deploy.adaptive import Adaptive


class GPUAdaptive(Adaptive):
    """:class:`distributed.deploy.Adaptive` that never picks the workers of a pinned job
    (the job running the scheduler, with ``scheduler="job"``) to retire."""

    async def workers_to_close(self, target: int) -> list[str]:
        pinned = getattr(self.cluster, "pinned_jobs", set())
        if not pinned:
            return await super().workers_to_close(target)
        # Every worker in the scheduler's order of preference (idle, then least data first),
        # grouped by job; take whole unpinned jobs until only `target` workers would remain.
        ordered = await self.scheduler.workers_to_close(
            target=0, key=pickle.dumps(self.worker_key) if self.worker_key else None, attribute="name", **self._workers_to_close_kwargs,
        )
        job_of = getattr(self.worker_key, "job_of", None) or (lambda name: name)  # our WorkerJobKey maps names to jobs
        jobs: dict[str, list[str]] = {}
        for name in ordered:
            jobs.setdefault(job_of(str(name)), []).append(name)
        remaining = len(ordered)
        chosen: list[str] = []
        for job, names in jobs.items():
            if job in pinned:
                continue
            if remaining - len(names) < target:
                break
            chosen += names
            remaining -= len(names)
        return chosen
