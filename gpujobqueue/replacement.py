"""Keep n means keep n: the jobs that ``scale()`` asked for are kept until the cluster closes.

A job that ends early (cancelled from outside, a node failure, its walltime) is replaced by
a new one; a job that ends before its workers connect counts as a failure, and ``k``
failures in a row (``gpujobqueue.replace.max-failures``, default 3) stop the replacing, so a
broken script cannot become a submit storm; a job that can never start (its request exceeds
what its partition allows) stops it at once. A submission refused while the batch system
cannot be reached is tried again once it answers.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Mapping

from .errors import GPUJobQueueError, SubmissionError
from .intervals import max_failures
from .job_status import JobCannotStartError
from .user_limits import JobHold, UserJobLimit, refusal_line

logger = logging.getLogger(__name__)


class Replacement:
    """What the cluster keeps: a number of jobs per pool, and whether replacing goes on.

    Parameters
    ----------
    limit : int, optional
        Failures in a row that stop the replacing (default :func:`~gpujobqueue.intervals.max_failures`).
    user_limits : mapping, optional
        Each pool's queue's limit on one user's jobs (``"gpu"``, ``"cpu"``; None: none known):
        jobs past it are held.

    Attributes
    ----------
    targets : dict
        Jobs to keep per pool (``"gpu"``, ``"cpu"``), as the last ``scale()`` set them.
    failures_in_a_row : int
        Jobs that ended before their workers connected since a job's workers last connected.
    stopped : GPUJobQueueError or None
        The failure that stopped the replacing (a :class:`JobFailedError`, or the
        :class:`SubmissionError` of a retried submission refused by a reachable batch system).
    deferred_since : float or None
        Since when (``time.time()``) a submission refused during an outage waits to be retried.
    replaced : int
        Replacement jobs submitted.
    hold : JobHold
        The jobs held back by a per-user limit of the queue, and why.
    """

    def __init__(self, limit: int | None = None, user_limits: Mapping[str, UserJobLimit | None] | None = None):
        self.limit = max_failures() if limit is None else limit
        self.targets: dict[str, int] = {}
        self.failures_in_a_row = 0
        self.stopped: GPUJobQueueError | None = None
        self._stop_raised = False
        self.deferred_since: float | None = None
        self.replaced = 0
        self.hold = JobHold({pool: limit for pool, limit in (user_limits or {}).items() if limit is not None})

    def set_target(self, pool: str, jobs: int) -> None:
        self.targets[pool] = jobs

    def resume(self) -> None:
        """The user asked again (``scale()``): count failures afresh and replace again."""
        self.failures_in_a_row = 0
        self.stopped = None
        self._stop_raised = False

    def worker_connected(self) -> None:
        """A job's workers connected: the script works, the failures in a row are over."""
        self.failures_in_a_row = 0

    def job_failed(self, failure: GPUJobQueueError) -> bool:
        """Count a job that ended before its workers connected; False once the replacing stops."""
        if self.stopped is not None:
            return False
        self.failures_in_a_row += 1
        if isinstance(failure, JobCannotStartError):  # the same request would wait for ever again
            self.stopped = failure
            logger.error("gpujobqueue: %s; no more jobs are submitted until scale() is called again", failure)
            return False
        if self.failures_in_a_row >= self.limit:
            self.stopped = failure
            logger.error(
                "gpujobqueue: %d jobs in a row ended before their workers connected; no more are "
                "submitted until scale() is called again (gpujobqueue.replace.max-failures: %d)",
                self.failures_in_a_row,
                self.limit,
            )
            return False
        return True

    def submission_refused(self, error: SubmissionError) -> None:
        """A retried submission was refused while the batch system answered: stop."""
        self.stopped = error
        self.deferred_since = None

    def take_stop(self) -> GPUJobQueueError | None:
        """The failure that stopped the replacing, once (for ``wait_for_workers`` to raise)."""
        if self.stopped is None or self._stop_raised:
            return None
        self._stop_raised = True
        return self.stopped

    @property
    def may_replace(self) -> bool:
        return self.stopped is None

    def missing(self, cluster: Any, pool: str) -> int:
        """Jobs the pool lacks to reach its target."""
        return max(0, self.targets.get(pool, 0) - pool_jobs(cluster, pool))

    def to_submit(self, cluster: Any, pool: str) -> int:
        """Jobs the pool lacks that a per-user limit of the queue lets it submit now (the rest are
        held), and replacements of its leaving jobs (:mod:`gpujobqueue.handover`) where the limit
        leaves room for them (they are not held: they go when the leaving jobs have gone).
        Under ``adapt()``, which counts leaving jobs itself within its maximum, none ahead."""
        present = {counted: pool_jobs(cluster, counted) for counted in {pool, *self.hold.limits}}
        target = self.targets.get(pool, 0)
        lacking = self.hold.room(pool, present, target)
        if adaptive_running(cluster):
            return lacking
        leaving = sum(1 for job in cluster.retiring_jobs() if cluster.worker_spec[job].get("pool", "gpu") == pool)
        after = {**present, pool: present[pool] + lacking}
        ahead = max(0, target + leaving - after[pool])
        cap = self.hold.cap(pool, after)
        return lacking + (ahead if cap is None else min(ahead, max(0, cap - after[pool])))

    def defer(self) -> None:
        if self.deferred_since is None:
            self.deferred_since = time.time()


def adaptive_running(cluster: Any) -> bool:
    """Whether ``adapt()`` sizes the cluster now (it then replaces ended jobs itself)."""
    adaptive = getattr(cluster, "_adaptive", None)
    callback = getattr(adaptive, "periodic_callback", None)
    return bool(callback is not None and callback.is_running())


def pool_jobs(cluster: Any, pool: str) -> int:
    """The pool's jobs that the cluster has (submitted, or about to be)."""
    return sum(1 for spec in cluster.worker_spec.values() if spec.get("pool", "gpu") == pool)


def held_for_user_limit(cluster: Any, error: SubmissionError, before: dict[str, int]) -> bool:
    """Whether a refused submission was refused for a per-user job limit of the queue (the batch
    module's ``user_limit_refusals``); if so the jobs not submitted are held, not failed.

    Call it after :func:`forget_unsubmitted`; ``before`` holds each pool's jobs before that.
    """
    words = refusal_line(str(error), cluster.batch_system.user_limit_refusals)
    if words is None:
        return False
    hold = cluster._replacement.hold
    for pool, count in before.items():
        now = pool_jobs(cluster, pool)
        if now < count:
            hold.refusal(pool, now, words, count - now)
    hold.say()
    return True


def forget_unsubmitted(cluster: Any) -> int:
    """Drop the jobs whose submission failed (no job id) from the cluster; how many."""
    dropped = 0
    for job_name, job in list(cluster.workers.items()):
        if getattr(job, "job_id", True) is None:
            cluster.worker_spec.pop(job_name, None)
            cluster.workers.pop(job_name, None)
            dropped += 1
    return dropped


async def top_up(cluster: Any) -> int:
    """Submit the jobs each pool lacks (jobs that ended, submissions deferred during an
    outage), unless ``adapt()`` sizes the cluster or the replacing has stopped.

    Returns
    -------
    int
        Jobs submitted.
    """
    replacement: Replacement = cluster._replacement
    if not replacement.may_replace or adaptive_running(cluster) or cluster.status.name in ("closing", "closed"):
        return 0
    added, was_held = 0, sum(replacement.hold.held.values())
    for pool in sorted(replacement.targets, key=lambda pool: pool != "gpu"):  # the GPU pool first, as scale() does
        for _ in range(replacement.to_submit(cluster, pool)):
            cluster.worker_spec.update(cluster.new_worker_spec() if pool == "gpu" else cluster._new_cpu_job_spec())
            added += 1
    if not added:
        replacement.hold.say()
        return 0
    planned = {pool: pool_jobs(cluster, pool) for pool in replacement.targets}
    try:
        await cluster._correct_state()
    except SubmissionError as error:
        forget_unsubmitted(cluster)
        if held_for_user_limit(cluster, error, planned):
            return 0
        if not await cluster._batch_reachable():
            replacement.defer()
            logger.warning(
                "gpujobqueue: the batch system cannot be reached; %d job(s) will be submitted when it answers: %s",
                added,
                error,
            )
            return 0
        replacement.submission_refused(error)
        logger.error("gpujobqueue: %s", error)
        return 0
    replacement.hold.say()
    if replacement.deferred_since is not None:
        logger.warning("gpujobqueue: submitted %d job(s) deferred since the batch system stopped answering", added)
        replacement.deferred_since = None
    elif was_held:
        logger.warning("gpujobqueue: submitted %d job(s) that were held or replace jobs that ended", added)
    else:
        replacement.replaced += added
        logger.warning("gpujobqueue: submitted %d job(s) to replace jobs that ended", added)
    return added
