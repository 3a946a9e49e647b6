"""adapt() counted in GPUs and whole jobs, with hysteresis: on the real SLURM, a load that
ramps 0 -> 8 GPUs -> 0 -> 8 -> 0 costs the fewest sbatch and scancel calls there can be, and
two idle minutes at a minimum between two job sizes cost none."""

from __future__ import annotations

import asyncio
import math
import time

import dask
import pytest
from conftest import wait_until
from dask.distributed import Client, Event

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.runtime.adaptive import GPUAdaptive

# Eight "GPUs" on the one-node SLURM (which has four): jobs of two workers that ask for no
# GPU (the partition implies them), one core and 1 GiB each, so four fit beside each other.
RAMP = dict(
    gpus_per_node=2,
    gpu_request="none",
    worker_mode="per-device",
    cores=1,
    memory="1GiB",
    queue="gpu",
    walltime="00:20:00",
    death_timeout=20,
)
TASK_SECONDS = 8


def busy(i, go):
    # Held until all eight run: jobs that start seconds apart would otherwise finish seconds
    # apart, and adapt rightly cancels the jobs idle first on their own.
    assert Event(go).wait(timeout=150), "the eight tasks were not all started"
    time.sleep(TASK_SECONDS)  # the length the scheduler plans the next ramp with
    return i * i


def executing(dask_worker):
    return len(dask_worker.state.executing)


def ramp_to_eight_gpus(client, cluster, counted, expected_sbatch, expected_scancel):
    """Eight tasks, one per GPU worker: adapt submits four jobs at once (one array), then
    cancels all four at once when the work is done."""
    go = Event(f"ramp-{expected_sbatch}", client=client)
    futures = client.map(busy, range(8), go=go.name, pure=False, resources={"GPU": 1})
    wait_until(
        lambda: list(client.run(executing).values()) == [1] * 8,
        120,
        what=lambda: f"eight workers running a task each: {client.run(executing)}",
    )
    go.set()
    assert client.gather(futures) == [i * i for i in range(8)]
    assert counted.count("sbatch") == expected_sbatch, "the ramp up is one array submission"
    assert len(cluster.worker_spec) == 4
    del futures
    wait_until(
        lambda: not cluster.worker_spec and not client.scheduler_info()["workers"],
        90,
        what=lambda: f"adapt back to 0: spec {list(cluster.worker_spec)}",
    )
    # The jobs are cancelled as their spec entries close, the command a moment after the spec is empty.
    wait_until(lambda: counted.count("scancel") >= expected_scancel, 30, what=lambda: "the ramp down's cancel")
    assert counted.count("scancel") == expected_scancel, "the ramp down is one cancel command"


@pytest.mark.long
@pytest.mark.slurm
def test_a_ramp_0_8_0_8_0_costs_one_submission_and_one_cancel_each_way(slurm, counted):
    # The scheduler knows the tasks' length from the start, so its target is 8 GPUs at once
    # (without it, it guesses 0.5 s a task and asks for fewer).
    with (
        dask.config.set({"distributed.scheduler.default-task-durations": {"busy": f"{TASK_SECONDS}s"}}),
        SLURMGPUCluster(**RAMP, job_array=True) as cluster,
        Client(cluster) as client,
    ):
        cluster.adapt(minimum_gpus=0, maximum_gpus=8, interval="500ms", wait_count=6)
        ramp_to_eight_gpus(client, cluster, counted, expected_sbatch=1, expected_scancel=1)
        ramp_to_eight_gpus(client, cluster, counted, expected_sbatch=2, expected_scancel=2)
        wait_until(lambda: not slurm.squeue_ids(), 60, what=lambda: f"the queue to empty: {slurm.squeue_ids()}")
    assert counted.count("sbatch") == 2 and counted.count("scancel") == 2, "close had nothing left to cancel"


@pytest.mark.long
@pytest.mark.slurm
def test_idle_at_a_minimum_between_job_sizes_costs_no_batch_command(slurm, counted):
    # minimum_gpus=3 with two-GPU jobs is two jobs: a target of 3 workers must not submit a
    # job, find a worker too many, cancel it and submit it again (dask-jobqueue #498).
    # 40 idle seconds are 80 of adapt's looks, 20 times the 4 looks it takes to scale down.
    with SLURMGPUCluster(**RAMP, job_array=True) as cluster, Client(cluster) as client:
        cluster.adapt(minimum_gpus=3, maximum_gpus=7, interval="500ms", wait_count=4)
        client.wait_for_workers(4, timeout=120)
        assert counted.count("sbatch") == 1 and len(cluster.worker_spec) == 2
        started = time.monotonic()
        while time.monotonic() - started < 40:
            assert len(client.scheduler_info()["workers"]) == 4
            assert counted.count("sbatch") == 1 and counted.count("scancel") == 0, "idle, yet batch commands ran"
            time.sleep(5)
        assert len(slurm.squeue_ids()) == 2
    assert counted.count("scancel") == 1, "close cancels both jobs in one command"
    wait_until(lambda: not slurm.squeue_ids(), 60, what="the queue to empty")


class FakeCluster:
    """What GPUAdaptive reads of a cluster: its planned and connected workers, two per job."""

    def __init__(self, jobs, connected=()):
        self.plan = {f"c-{job}-{i}" for job in jobs for i in range(2)}
        self.observed = {f"c-{job}-{i}" for job in connected for i in range(2)}


class FakeBook:
    """What GPUAdaptive reads of the cluster's job book: the jobs leaving, none pinned."""

    pinned: set = set()

    def __init__(self, leaving=()):
        self.leaving = lambda: set(leaving)


class FakeScaling:
    """What GPUAdaptive reads of the cluster's scaling: two workers per job, and the job book."""

    workers_per_job = 2

    def __init__(self, leaving=()):
        self.book = FakeBook(leaving)


class FakeKey:
    def job_of(self, name):
        return name.rpartition("-")[0]


def adaptive_over(cluster, leaving=(), **kwargs):
    # No cluster yet: no periodic looks.
    adaptive = GPUAdaptive(None, interval=0, worker_key=FakeKey(), scaling=FakeScaling(leaving), **kwargs)
    adaptive.cluster = cluster
    return adaptive


@pytest.mark.parametrize(
    "minimum, maximum, target, expected",
    [
        (0, 8, 3, 4),  # up to whole jobs
        (3, 8, 0, 4),  # the minimum up to whole jobs
        (0, 7, 8, 6),  # the maximum down to whole jobs
        (5, 5, 0, 6),  # never below the minimum
        (0, math.inf, 11, 12),
    ],
)
def test_targets_are_whole_jobs(minimum, maximum, target, expected):
    adaptive = adaptive_over(FakeCluster([]), minimum=minimum, maximum=maximum)

    async def scheduler_target():
        return target

    adaptive.target = scheduler_target
    assert asyncio.run(adaptive.safe_target()) == expected


def test_a_brief_dip_cancels_nothing_and_a_settled_one_cancels_queued_jobs_first():
    adaptive = adaptive_over(FakeCluster(jobs=[0, 1, 2, 3], connected=[0, 1]), minimum=0, maximum=8, wait_count=3)
    look = lambda target: asyncio.run(adaptive.recommendations(target))  # noqa: E731
    assert [look(target) for target in (4, 2, 8)] == [{"status": "same"}] * 3, (
        "a dip, then the load comes back: nothing to do"
    )
    assert look(10) == {"status": "up", "n": 10}, "queued jobs count: scale() adds only the difference"
    assert [look(4) for _ in range(2)] == [{"status": "same"}] * 2
    down = look(4)  # settled at two jobs for three looks
    assert down["status"] == "down"
    assert sorted(down["workers"]) == ["c-2-0", "c-2-1", "c-3-0", "c-3-1"], (
        "the two queued jobs go, not the running ones"
    )


def test_a_need_that_keeps_varying_below_the_jobs_held_goes_down_to_its_recent_peak():
    adaptive = adaptive_over(FakeCluster(jobs=[0, 1, 2, 3]), minimum=0, maximum=8, wait_count=2)
    look = lambda target: asyncio.run(adaptive.recommendations(target))  # noqa: E731
    assert [look(target) for target in (2, 4, 2, 4, 2)] == [{"status": "same"}] * 5
    down = look(4)  # below the jobs held for 3 x wait_count looks, never settled
    assert down["status"] == "down" and len(down["workers"]) == 4, "down to two jobs, the peak of the last two looks"


def test_a_walltime_handover_stays_within_the_maximum():
    # Two 2-GPU jobs under adapt(maximum=4): both jobs' workers are retiring. Replacing them
    # before they end would hold four jobs, twice the maximum.
    cluster = FakeCluster(jobs=[0, 1], connected=[0, 1])
    at_most_two_jobs = adaptive_over(cluster, leaving={"c-0", "c-1"}, minimum=4, maximum=4)
    assert asyncio.run(at_most_two_jobs.recommendations(4)) == {"status": "same"}, "replaced once they have ended"
    at_most_three_jobs = adaptive_over(cluster, leaving={"c-0"}, minimum=4, maximum=6)
    assert asyncio.run(at_most_three_jobs.recommendations(4)) == {"status": "up", "n": 6}, (
        "one leaving job replaced early, within the maximum"
    )
    unbounded = adaptive_over(FakeCluster(jobs=[0, 1], connected=[0, 1]), leaving={"c-0", "c-1"}, minimum=4)
    assert asyncio.run(unbounded.recommendations(4)) == {"status": "up", "n": 8}, (
        "no maximum: both replaced before they go"
    )
