"""A refused scale() and the job watch's replacing, at the same time: the watch must not submit the
job that scale() is about to report refused (seen as a flaky conformance test once the job poll ran
every second: the cluster's worker_spec was not empty after scale() raised the batch system's refusal)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from fixtures.book_jobs import book_job

from gpujobqueue.errors import SubmissionError
from gpujobqueue.runtime.jobbook import JobBook
from gpujobqueue.runtime.replacement import Replacement
from gpujobqueue.runtime.scaling import Scaling
from gpujobqueue.settings.naming import WorkerJobKey


class RefusingBatchSystem:
    """Takes no job: every submission is refused, while the batch system answers."""

    def __init__(self):
        self.numbers = 0
        self.submissions = 0
        self.book: JobBook | None = None

    def new_job(self, pool: str) -> dict:
        self.numbers += 1
        return {f"c-{pool}-{self.numbers}": {"cls": object, "pool": pool}}

    async def apply(self) -> None:
        book = self.book
        for name in book.specs:
            if name not in book.jobs:
                book.jobs[name] = book_job(name, None)  # refused: no job id
                self.submissions += 1
        await asyncio.sleep(0)
        raise SubmissionError("sbatch: error: Batch job submission failed: Invalid account")


def test_the_watch_submits_nothing_while_scale_reports_a_refusal():
    async def run() -> tuple[int, dict, int]:
        batch = RefusingBatchSystem()
        book = JobBook(
            WorkerJobKey(["-0"]),
            new_job=batch.new_job,
            apply=batch.apply,
            scheduler_workers=lambda: [],
            closing=lambda: False,
            poll_interval=1.0,
        )
        batch.book = book
        kept = Replacement(book)
        asking = asyncio.Event()
        answered = asyncio.Event()
        topped_up: list[int] = []

        async def reachable() -> bool:
            # While scale() asks whether the batch system answers, the job watch's poll comes round.
            asking.set()
            await answered.wait()
            return True

        async def watch_poll() -> None:
            await asking.wait()
            topped_up.append(await kept.top_up(reachable=lambda: asyncio.sleep(0, True)))
            answered.set()

        watch = SimpleNamespace(reachable=reachable, unreachable="")
        scaling = Scaling(
            book, kept, watch, workers_per_job=1, memory_per_worker=None, nthreads=1, cpu_workers_per_job=None
        )
        poll = asyncio.ensure_future(watch_poll())
        with pytest.raises(SubmissionError, match="Invalid account"):
            await scaling.scale_jobs(1)
        await poll
        return batch.submissions, dict(book.specs), topped_up[0]

    submissions, specs, topped_up = asyncio.run(run())
    assert topped_up == 0 and submissions == 1, "only scale()'s own submission, refused once"
    assert specs == {}, "no job left wanted after the refusal"
