"""The retirement plan (gpujobqueue/runtime/handover.py) and the replacements ``scale()`` submits ahead of it,
without a batch system: test_walltime_handover.py runs them on the real SLURM and Grid Engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest
from distributed import Scheduler, Worker

from gpujobqueue.plan.user_limits import UserJobLimit
from gpujobqueue.runtime.handover import (
    Handover,
    Tenure,
    quiet_cancellations,
    retirement_plan,
    retirement_spacing,
)
from gpujobqueue.runtime.jobbook import JobBook
from gpujobqueue.runtime.replacement import Replacement
from gpujobqueue.settings.naming import WorkerJobKey


def _tenures(connected: list[float], lifetime: int = 45, stagger: int = 3, pool: str = "gpu") -> list[Tenure]:
    return [Tenure(f"job-{i}", pool, at, lifetime, stagger) for i, at in enumerate(connected)]


def test_jobs_started_together_retire_one_spacing_apart_never_later_than_their_lifetime():
    plan = retirement_plan(_tenures([0.0, 0.0, 0.0, 0.0]), spacing=7.5)
    assert sorted(plan.values()) == [19.5, 27.0, 34.5, 42.0]  # 45 - 3 is the latest


def test_jobs_already_apart_keep_their_own_ends():
    plan = retirement_plan(_tenures([0.0, 10.0, 20.0]), spacing=5.0)
    assert plan == {"job-0": 42.0, "job-1": 52.0, "job-2": 62.0}


def test_the_plan_is_the_same_at_every_look():
    tenures = _tenures([0.0, 0.0, 1.0, 30.0])
    assert retirement_plan(tenures, 6.0) == retirement_plan(list(reversed(tenures)), 6.0)


@pytest.mark.parametrize(
    "startup, lifetime, jobs, spacing",
    [(8.0, 45, 4, 7.5), (5.0, 3420, 4, 5.0), (600.0, 3420, 64, 3420 / 2 / 63), (9.0, 45, 1, 0.0)],
)
def test_the_spacing_is_a_start_up_but_the_first_keeps_half_its_lifetime(startup, lifetime, jobs, spacing):
    assert retirement_spacing(startup, lifetime, jobs) == pytest.approx(spacing)
    planned = retirement_plan(_tenures([0.0] * jobs, lifetime=lifetime, stagger=0), spacing)
    assert min(planned.values()) >= lifetime / 2 - 1e-9


def test_pools_are_spread_apart_each_on_its_own():
    handover = Handover(poll_interval=1.0)
    handover.startups.extend([4.0, 6.0, 5.0])
    handover.replan(_tenures([0.0, 0.0]) + [Tenure("cpu-0", "cpu", 0.0, 45, 3)])
    assert handover.plan == {"job-1": 37.0, "job-0": 32.0, "cpu-0": 37.0}  # 45 - 3, less a guard of 5
    assert handover.lead["job-0"] == 6.0  # the median start-up and one look
    assert handover.leaving(now=25.0) == set() and handover.leaving(now=26.0) == {"job-0"}
    assert handover.due(now=31.0) == []
    assert handover.due(now=32.0) == ["job-0"]


@pytest.mark.parametrize("poll_interval", [1.0, 5.0, 30.0])
@pytest.mark.parametrize("lifetime, stagger", [(45, 3), (3420, 45), (86400 - 600, 150)])
def test_a_retirement_is_planned_ahead_of_the_workers_own_lifetime(poll_interval, lifetime, stagger):
    # A worker's lifetime (+/- its stagger) starts before it connects, and the watch acts only at its looks:
    # the cluster's retirement comes first, its workers' own lifetime is only the backstop.
    handover = Handover(poll_interval)
    handover.startups.append(8.0)
    for connected in ([0.0], [0.0] * 4, [0.0, 0.5, 0.5, 30.0]):
        tenures = _tenures(connected, lifetime=lifetime, stagger=stagger)
        handover.replan(tenures)
        window = lifetime - stagger  # from its connection to the earliest its own lifetime may end
        guard = min(2 * poll_interval + 3, window / 4)
        for tenure in tenures:
            assert handover.plan[tenure.name] <= tenure.connected + window - guard
            assert handover.plan[tenure.name] >= tenure.connected + (window - guard) / 2 - 1e-9


def _retire_two_due_together(handover: Handover, outcome=("job-0",)) -> list[tuple[str, list[str]]]:
    """Two jobs due at the same instant: what the watch's looks retire, one look after another."""
    seen: list[tuple[str, list[str]]] = []

    async def run():
        tenures = _tenures([0.0, 0.0])
        handover.replan(tenures)
        now = max(tenure.latest_end for tenure in tenures)  # both past their plan and their latest

        async def retirement():
            await asyncio.sleep(0.05)
            return outcome

        for when in ("first look", "while the first retires"):
            due = handover.due(now=now)
            seen.append((when, due))
            for name in due:
                handover.retire(name, retirement())
        await asyncio.gather(*handover._tasks)
        seen.append(("once it has gone", handover.due(now=now)))

    asyncio.run(run())
    return seen


def test_two_jobs_due_at_the_same_instant_retire_one_after_the_other():
    seen = _retire_two_due_together(Handover(poll_interval=1.0))
    assert seen == [("first look", ["job-0"]), ("while the first retires", []), ("once it has gone", ["job-1"])]


def test_the_next_retirement_waits_for_a_replacement_or_the_spacing_until_its_latest_time():
    handover = Handover(poll_interval=1.0)
    handover.startups.append(8.0)
    handover.replan(_tenures([0.0, 30.0]))  # far apart: job-1's plan is its own latest, 8 s spacing
    handover.plan["job-1"] = 2.0  # say its plan moved to right after job-0's retirement
    handover.began, handover.ended, handover.unreplaced = 0.0, 1.0, 1
    assert handover.due(now=7.9) == []  # job-0's replacement has not connected, and less than the spacing since
    assert handover.due(now=8.0) == ["job-1"]
    handover.job_started(submitted_at=None)  # job-0's replacement
    assert handover.unreplaced == 0 and handover.due(now=5.0) == ["job-1"]
    handover.unreplaced, handover.began = 1, 60.0
    assert handover.due(now=66.0) == [] and handover.due(now=67.0) == ["job-1"]  # at its latest it goes all the same


def test_a_replacement_queued_behind_a_retirement_counts_its_start_up_from_the_retirements_end():
    handover = Handover(poll_interval=1.0)
    handover.ended = time.monotonic() - 6.0
    handover.job_started(submitted_at=time.time() - 20.0)  # submitted ahead, waited for the retirement
    handover.job_started(submitted_at=time.time() - 4.0)  # submitted into room
    assert list(handover.startups) == pytest.approx([6.0, 4.0], abs=0.5)


async def _close_during_a_retirement(seconds: float, **stop) -> list[str]:
    """The jobs retired when the handover stops (the cluster closes) during a retirement of ``seconds``."""
    handover, ended = Handover(poll_interval=1.0), []

    async def retirement():
        await asyncio.sleep(seconds)
        ended.append("job-0")
        return ["job-0"]

    handover.retire("job-0", retirement())
    await handover.stop(**stop)
    return ended


def test_close_lets_the_retirement_under_way_end():
    # Cancelled at close, a retirement's part in the scheduler runs on until the scheduler closes, which logs
    # the CancelledError with its traceback (distributed's log_errors on Scheduler.retire_workers).
    assert asyncio.run(_close_during_a_retirement(0.2)) == ["job-0"]


def test_close_stops_a_retirement_that_does_not_end():
    started = time.monotonic()
    assert asyncio.run(_close_during_a_retirement(60.0, timeout=0.5)) == []
    assert time.monotonic() - started < 5


async def _close_right_after_a_retirement(quiet: bool) -> list[logging.LogRecord]:
    """What the scheduler logs with a traceback when it closes right after retiring (and removing) a worker."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            if record.exc_info:
                records.append(record)

    keep, distributed_log = Keep(logging.WARNING), logging.getLogger("distributed")
    distributed_log.addHandler(keep)
    try:
        async with Scheduler(dashboard_address=":0") as scheduler:
            worker = await Worker(scheduler.address)
            await scheduler.retire_workers(names=[worker.name], remove=True, close_workers=True)
            with quiet_cancellations() if quiet else contextlib.nullcontext():
                await scheduler.close()
        await worker.finished()
    finally:
        distributed_log.removeHandler(keep)
    return records


def test_a_close_right_after_a_retirement_logs_no_traceback():
    # The retired worker's connection is still open: the scheduler's close cancels the task reading it, and
    # distributed's log_errors on Scheduler.add_worker logs that CancelledError with its traceback. Should
    # distributed stop doing so, the first assertion fails: quiet_cancellations can then go.
    assert [type(record.exc_info[1]) for record in asyncio.run(_close_right_after_a_retirement(False))] == [
        asyncio.CancelledError
    ]
    assert asyncio.run(_close_right_after_a_retirement(True)) == []


def _book(user_limits: dict | None = None) -> JobBook:
    """A cluster's job book with no cluster behind it: ``_have`` sets its jobs."""

    def nothing_to_do(*_):
        raise AssertionError("Replacement.to_submit only counts")

    return JobBook(
        WorkerJobKey([]),
        new_job=nothing_to_do,
        apply=nothing_to_do,
        scheduler_workers=tuple,
        closing=lambda: False,
        user_limits=user_limits,
        poll_interval=1.0,
    )


def _have(book: JobBook, jobs: int, leaving: set[str]) -> None:
    """The book holds ``jobs`` GPU jobs, of which ``leaving`` are retiring."""
    book.specs = {f"job-{i}": {"pool": "gpu"} for i in range(jobs)}
    book.handover.retiring = set(leaving)


def test_scale_submits_a_replacement_ahead_for_each_leaving_job():
    book = _book()
    kept = Replacement(book, limit=3)
    kept.set_target("gpu", 4)
    _have(book, 4, set())
    assert kept.to_submit("gpu") == 0
    _have(book, 4, {"job-0"})
    assert kept.to_submit("gpu") == 1
    _have(book, 5, {"job-0"})
    assert kept.to_submit("gpu") == 0  # its replacement is in
    _have(book, 3, {"job-0"})
    assert kept.to_submit("gpu") == 2  # one ended, one leaving


def test_a_replacement_ahead_stays_within_the_queues_limit_and_is_not_called_held():
    limit = UserJobLimit(queue="gpu", submitted=5, running=None, source="test")
    book = _book(user_limits={"gpu": limit})
    kept = Replacement(book, limit=3)
    kept.set_target("gpu", 4)
    _have(book, 4, {"job-0", "job-1"})
    assert kept.to_submit("gpu") == 1
    assert book.hold.notice() is None
    _have(book, 5, {"job-0", "job-1"})
    assert kept.to_submit("gpu") == 0
