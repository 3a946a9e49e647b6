"""Keep n means keep n: the jobs ``scale()`` asked for are replaced until the cluster closes or failures stop it."""

from __future__ import annotations

import logging
import time
from typing import Any, Awaitable, Callable, Iterable, Sequence

from ..errors import BatchCommandNotFoundError, GPUJobQueueError, SubmissionError
from ..jobs.job_status import JobCannotStartError
from ..plan.user_limits import refusal_line
from ..settings.intervals import max_failures
from .jobbook import JobBook

logger = logging.getLogger(__name__)


class Replacement:
    """What the cluster keeps of its ``book``'s jobs: a number per pool, replaced until ``limit`` failures in a row
    (default :func:`~gpujobqueue.settings.intervals.max_failures`); a refusal in the batch system's
    ``user_limit_refusals`` words holds the jobs (``book.hold``) rather than failing them."""

    def __init__(self, book: JobBook, limit: int | None = None, user_limit_refusals: Sequence[str] = ()):
        self.book = book
        self.limit = max_failures() if limit is None else limit
        self.user_limit_refusals = tuple(user_limit_refusals)
        self.targets: dict[str, int] = {}  # jobs to keep per pool, as the last scale() set them
        self.failures_in_a_row = 0  # jobs that ended before their workers connected, since a job's last did
        # What stopped the replacing: a JobFailedError, or a retried submission's refusal by a reachable batch system.
        self.stopped: GPUJobQueueError | None = None
        self._stop_raised = False
        self.deferred_since: float | None = None  # time.time() since a submission refused in an outage waits
        self.adaptive: Any = None  # what adapt() started, which then sizes the cluster
        # scale() calls changing the jobs now: the watch submits nothing meanwhile.
        self.scaling_now = 0

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

    @property
    def adapting(self) -> bool:
        """Whether ``adapt()`` sizes the cluster now (it then replaces ended jobs itself)."""
        callback = getattr(self.adaptive, "periodic_callback", None)
        return bool(callback is not None and callback.is_running())

    def missing(self, pool: str) -> int:
        """Jobs the pool lacks to reach its target."""
        return max(0, self.targets.get(pool, 0) - self.book.count(pool))

    def to_submit(self, pool: str) -> int:
        """Jobs the pool lacks that a per-user limit lets it submit now, and replacements of its leaving jobs."""
        book = self.book
        present = {counted: book.count(counted) for counted in {pool, *book.hold.limits}}
        target = self.targets.get(pool, 0)
        lacking = book.hold.room(pool, present, target)
        if self.adapting:
            return lacking
        leaving = sum(1 for job in book.leaving() if book.pool_of(job) == pool)
        after = {**present, pool: present[pool] + lacking}
        ahead = max(0, target + leaving - after[pool])
        cap = book.hold.cap(pool, after)
        return lacking + (ahead if cap is None else min(ahead, max(0, cap - after[pool])))

    async def submit(
        self, pools: Iterable[str], reachable: Callable[[], Awaitable[bool]], *, closing: bool = False
    ) -> bool:
        """Submit and cancel to match the book; False where jobs are held or deferred, else raise the refusal."""
        before = {pool: self.book.count(pool) for pool in pools}
        try:
            await self.book.apply()
        except SubmissionError as error:
            self.book.forget_unsubmitted()
            if not closing and self._held_for_user_limit(error, before):
                return False
            if closing or isinstance(error, BatchCommandNotFoundError) or await reachable():
                raise
            if self.deferred_since is None:
                self.deferred_since = time.time()
            logger.warning(
                "gpujobqueue: the batch system cannot be reached; jobs will be submitted when it answers: %s", error
            )
            return False
        self.deferred_since = None
        self.book.hold.say()
        return True

    def _held_for_user_limit(self, error: SubmissionError, before: dict[str, int]) -> bool:
        """Whether the submission was refused for a per-user job limit; if so its jobs are held."""
        words = refusal_line(str(error), self.user_limit_refusals)
        if words is None:
            return False
        hold = self.book.hold
        for pool, count in before.items():
            now = self.book.count(pool)
            if now < count:
                hold.refusal(pool, now, words, count - now)
        hold.say()
        return True

    async def top_up(self, reachable: Callable[[], Awaitable[bool]]) -> int:
        """Submit the jobs each pool lacks, unless adapt() sizes the cluster, scale() runs or replacing stopped."""
        book = self.book
        if not self.may_replace or self.adapting or book.closing or self.scaling_now:
            return 0
        added, was_held = 0, sum(book.hold.held.values())
        for pool in sorted(self.targets, key=lambda pool: pool != "gpu"):  # the GPU pool first, as scale() does
            count = self.to_submit(pool)
            book.add(pool, count)
            added += count
        if not added:
            book.hold.say()
            return 0
        was_deferred = self.deferred_since is not None
        try:
            if not await self.submit(self.targets, reachable):
                return 0
        except SubmissionError as error:  # a refusal by a batch system that answers stops the replacing
            self.submission_refused(error)
            logger.error("gpujobqueue: %s", error)
            return 0
        if was_deferred:
            logger.warning("gpujobqueue: submitted %d job(s) deferred since the batch system stopped answering", added)
        elif was_held:
            logger.warning("gpujobqueue: submitted %d job(s) that were held or replace jobs that ended", added)
        else:
            logger.warning("gpujobqueue: submitted %d job(s) to replace jobs that ended", added)
        return added
