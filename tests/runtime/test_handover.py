"""The retirement plan (gpujobqueue/runtime/handover.py) and the replacements ``scale()`` submits ahead of it,
without a batch system: test_walltime_handover.py runs them on the real SLURM and Grid Engine."""

from __future__ import annotations

import asyncio

import pytest

from gpujobqueue.naming import WorkerJobKey
from gpujobqueue.runtime.handover import Handover, Tenure, retirement_plan, retirement_spacing
from gpujobqueue.runtime.jobbook import JobBook
from gpujobqueue.runtime.replacement import Replacement
from gpujobqueue.user_limits import UserJobLimit


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
    assert handover.plan == {"job-1": 42.0, "job-0": 37.0, "cpu-0": 42.0}
    assert handover.lead["job-0"] == 6.0  # the median start-up and one look
    assert handover.leaving(now=30.0) == set() and handover.leaving(now=31.0) == {"job-0"}
    assert handover.due(now=36.0) == []
    assert handover.due(now=37.0) == ["job-0"]


def test_a_retirement_that_retired_no_worker_is_tried_again():
    async def run():
        handover = Handover(poll_interval=1.0)
        handover.replan(_tenures([0.0]))

        async def retired_none():
            return {}

        handover.retire("job-0", retired_none())
        assert "job-0" in handover.retiring
        await asyncio.sleep(0.01)
        return handover

    handover = asyncio.run(run())
    assert "job-0" not in handover.retiring and handover.due(now=100.0) == ["job-0"]


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
