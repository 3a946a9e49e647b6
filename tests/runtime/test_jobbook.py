"""The job book (gpujobqueue/runtime/jobbook.py) without a cluster: what the job watch, the replacement,
the scaling and the usage watch read and change of the cluster's jobs, through its methods."""

from __future__ import annotations

import asyncio
import time

from fixtures.book_jobs import book_job

from gpujobqueue.jobs.job_status import JobStatus
from gpujobqueue.runtime.jobbook import JobBook
from gpujobqueue.runtime.scheduler_process import HostedWorkers
from gpujobqueue.settings.naming import WorkerJobKey


class Stand:
    """What a cluster hands a job book: new specs, the submit-and-cancel step, the scheduler's workers."""

    def __init__(self):
        self.numbers = {"gpu": 0, "cpu": 0}
        self.workers: list[dict] = []
        self.closing = False
        self.applied = 0

    def new_job(self, pool: str) -> dict:
        name = f"c-{pool}-{self.numbers[pool]}"
        self.numbers[pool] += 1
        return {name: {"cls": object, "pool": pool}}

    async def apply(self) -> None:
        self.applied += 1


def book_of(stand: Stand) -> JobBook:
    return JobBook(
        WorkerJobKey(["-0", "-1"]),
        new_job=stand.new_job,
        apply=stand.apply,
        scheduler_workers=lambda: stand.workers,
        closing=lambda: stand.closing,
        poll_interval=1.0,
    )


def test_jobs_are_wanted_per_pool_and_dropped_by_name():
    stand = Stand()
    book = book_of(stand)
    book.add("gpu", 3)
    book.add("cpu")
    assert book.names("gpu") == ["c-gpu-0", "c-gpu-1", "c-gpu-2"] and book.count("cpu") == 1
    assert book.pool_of("c-cpu-0") == "cpu" and book.wants("c-gpu-1")
    book.drop("c-gpu-1")
    book.drop("never-there")
    assert book.names("gpu") == ["c-gpu-0", "c-gpu-2"] and not book.wants("c-gpu-1")
    asyncio.run(book.apply())
    assert stand.applied == 1
    stand.closing = True
    assert book.closing


def test_only_jobs_given_to_the_batch_system_and_still_wanted_are_submitted_ones():
    book = book_of(Stand())
    book.add("gpu", 3)
    queued, refused = book_job("c-gpu-0", "11"), book_job("c-gpu-1", None)
    hosted = HostedWorkers(name="sched", job=book_job("sched", "10"))  # the scheduler job's entry holds its job
    book.jobs.update({"c-gpu-0": queued, "c-gpu-1": refused, "sched": hosted})
    assert book.submitted() == {"c-gpu-0": queued}, "the scheduler's entry is not wanted, the refused has no id"
    assert book.job("sched") is hosted.job and book.job("missing") is None
    assert book.forget_unsubmitted() == 1
    assert "c-gpu-1" not in book.jobs and not book.wants("c-gpu-1")


def test_a_job_s_first_worker_is_noted_once_and_measures_its_start_up():
    stand = Stand()
    book = book_of(stand)
    book.add("gpu")
    book.jobs["c-gpu-0"] = book_job("c-gpu-0", "11", submitted_at=time.time() - 30)
    assert book.note_worker("c-gpu-0-1") is True
    assert book.note_worker("c-gpu-0-0") is False
    assert book.connected == {"c-gpu-0"}
    assert 29 <= book.handover.startup <= 40, "the start-up, from submission to the first worker"
    stand.workers = [{"name": "c-gpu-0-0"}, {"name": "c-gpu-0-1"}, {"name": "other"}]
    assert book.connected_workers() == {"c-gpu-0": ["c-gpu-0-0", "c-gpu-0-1"], "other": ["other"]}


def test_what_was_said_of_a_job_is_forgotten_once_the_cluster_has_no_more_of_it():
    book = book_of(Stand())
    book.add("gpu", 2)
    book.jobs.update({name: book_job(name, name) for name in book.names("gpu")})
    book.statuses.update({name: JobStatus(name, "RUNNING") for name in book.names("gpu")})
    book.first_connected.update({name: 1.0 for name in book.names("gpu")})
    book.drop("c-gpu-0")  # being cancelled: still started, its status kept
    book.forget_gone()
    assert set(book.statuses) == {"c-gpu-0", "c-gpu-1"}
    del book.jobs["c-gpu-0"]
    book.forget_gone()
    assert set(book.statuses) == {"c-gpu-1"} and book.connected == {"c-gpu-1"}


def test_leaving_jobs_are_those_the_handover_retires_that_the_cluster_still_wants():
    book = book_of(Stand())
    book.add("gpu", 2)
    book.handover.retiring = {"c-gpu-1", "gone"}
    assert book.leaving() == {"c-gpu-1"}
    book.pin("c-gpu-0")
    assert book.pinned == {"c-gpu-0"}
