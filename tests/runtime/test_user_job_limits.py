"""Per-user job limits of a queue (issue 20): ``scale()`` and ``adapt()`` never submit past a
queue's limit on one user's jobs, hold the rest and say so, and submit them as the cluster's
jobs end; a batch system's refusal for such a limit is a hold, not a failure.

The SLURM test runs on the real SLURM of tests/fixtures/slurm.py (run it under
``flock /tmp/gjq-batch.lock``); the refusal tests on the PBS Pro emulator, which refuses past
a queue's ``max_queued = [u:PBS_GENERIC=N]`` as PBS Pro does, on the real Grid Engine
(``max_u_jobs``), and on the LSF emulator, whose bsub waits and retries past ``MAX_PEND_JOBS``
as LSF's does.
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

import dask.config
import pytest
from conftest import wait_until
from fixtures.processes import processes_running
from fixtures.sge import _edit_conf
from test_conformance import COMMON

from gpujobqueue import LSFGPUCluster, PBSGPUCluster, SGEGPUCluster, SLURMGPUCluster
from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.user_limits import UserJobLimit
from gpujobqueue.sites import SiteConfigError, load_site

FAST = {"gpujobqueue.job-poll-interval": "1s"}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # PBS copies job output back to the submit directory
    return tmp_path


def _limit_queue(pbs, queue: str, jobs: int) -> None:
    """Give the emulator's queue PBS Pro's per-user limit of jobs queued and running."""
    pbs.config.queues[queue]["max_queued"] = f"[u:PBS_GENERIC={jobs}]"
    pbs.config.write(pbs.home)


# -- the limit's values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, field",
    [
        (0, "x.submitted"),
        ({"submitted": -1}, "x.submitted"),
        ({"running": True}, "x.running"),
        ({"submitted": 10_001}, "x.submitted"),
        ({"submitted": 1, "running": 2}, "x"),
        ({"queued": 1}, "x"),
        ({}, "x"),
        ("two", "x.submitted"),
    ],
)
def test_a_bad_limit_is_refused_naming_its_field(value, field):
    with pytest.raises(ValidationError) as raised:
        UserJobLimit.parse("x", value, queue="q", source="s")
    assert raised.value.field == field


def test_a_site_file_with_a_bad_limit_is_refused_naming_the_key(tmp_path):
    good = (Path(__file__).parents[1] / "sites" / "good" / "minimal.yaml").read_text()
    bad = good.replace("    max_nodes: 1\n", "    max_nodes: 1\n    max_jobs_per_user: {submitted: 0}\n")
    assert bad != good
    path = tmp_path / "minimal.yaml"
    path.write_text(bad)
    with pytest.raises(SiteConfigError) as raised:
        load_site(path)
    assert "max_jobs_per_user.submitted" in str(raised.value) and "minimum of 1" in str(raised.value)
    path.write_text(bad.replace("{submitted: 0}", "{submitted: 2, running: 1}"))
    assert load_site(path).queue("debug")["max_jobs_per_user"] == {"submitted": 2, "running": 1}


@pytest.mark.parametrize(
    "site, queue, submitted, running, why",
    [
        ("polaris", "debug-scaling", 1, None, "takes 1 job per user"),
        ("polaris", "capacity", 2, 1, "runs 1 job per user at once"),
        ("aurora", "debug", 1, None, "takes 1 job per user"),
        # ALCF (user-guides 11dbfa65): capacity "Max 5 jobs queued or running, 2 jobs running per user"
        ("aurora", "capacity", 5, 2, "runs 2 jobs per user at once"),
    ],
)
def test_a_sites_queue_carries_its_limit_into_the_plan(site, queue, submitted, running, why):
    plan = make_plan(PBSGPUCluster, {"site": site, "queue": queue, "account": "p"})
    limit = plan.jobs_per_user
    assert (limit.submitted, limit.running) == (submitted, running)
    assert limit.why() == f"queue {queue} {why} (site {site})"


# -- the real SLURM: a stated limit -------------------------------------------------------------


@pytest.mark.slurm
def test_scale_past_a_stated_limit_holds_the_rest_and_submits_them_as_jobs_end(slurm, counted, caplog):
    limit = {**FAST, "gpujobqueue.slurm.max-jobs-per-user": 2}
    caplog.set_level(logging.WARNING, logger="gpujobqueue.cluster")
    with dask.config.set(limit), SLURMGPUCluster(**COMMON, queue="gpu") as cluster:
        cluster.scale(jobs=3)
        wait_until(lambda: len(slurm.squeue_ids()) == 2, 20, what="two jobs in the queue")
        time.sleep(2.5)  # more polls: the third is held, not submitted
        assert len(slurm.squeue_ids()) == 2 and counted.count("sbatch") == 2
        said = "held 1 job(s): queue gpu takes 2 jobs per user (gpujobqueue.slurm.max-jobs-per-user)"
        assert said in repr(cluster.jobs) and said in repr(cluster)
        assert sum("held 1 job(s)" in r.getMessage() for r in caplog.records) == 1, "said once"
        victim = slurm.squeue_ids()[0]
        cancelled = time.monotonic()
        subprocess.run(["scancel", victim], check=True)
        wait_until(lambda: counted.count("sbatch") == 3, 15, what="the held job submitted")
        print(f"the held job was submitted {time.monotonic() - cancelled:.1f} s after the scancel")
        wait_until(lambda: len(slurm.squeue_ids()) == 2 and victim not in slurm.squeue_ids(), 15, what="two jobs")
        assert said in repr(cluster), "three asked, two at a time: one is still held"
        time.sleep(2.5)
        assert counted.count("sbatch") == 3
    wait_until(lambda: not slurm.squeue_ids(), 30, what="the queue to empty")


# -- the PBS Pro emulator: the batch system's refusal ------------------------------------------


def test_the_pbs_emulator_refuses_past_a_queues_per_user_limit(pbs, in_tmp):
    _limit_queue(pbs, "workq", 1)
    pbs.qsub("#!/bin/sh\nsleep 30\n", "-q", "workq", cwd=in_tmp)
    refused = pbs.run("qsub", "-q", "workq", "--", "/bin/sleep", "30", cwd=in_tmp)
    assert refused.returncode == 38
    assert refused.stderr.strip() == "qsub: would exceed queue generic's per-user limit"
    pbs.qsub("#!/bin/sh\nsleep 30\n", "-q", "debug", cwd=in_tmp)  # another queue has its own count


def test_a_refusal_for_a_per_user_limit_is_a_hold_and_the_held_job_goes_when_one_ends(pbs, in_tmp):
    _limit_queue(pbs, "workq", 1)
    with dask.config.set(FAST), PBSGPUCluster(**COMMON, queue="workq") as cluster:
        cluster.scale(jobs=3)  # not raised
        assert len(pbs.job_ids()) == 1
        said = "held 2 job(s): the batch system refused more: qsub: would exceed queue generic's per-user limit"
        assert said in repr(cluster.jobs) and said in repr(cluster)
        assert cluster._replacement.may_replace
        first = pbs.job_ids()[0]
        pbs.run("qdel", first)
        wait_until(lambda: pbs.job_ids() and pbs.job_ids() != [first], 15, what="a held job submitted")
        time.sleep(2.5)
        assert len(pbs.job_ids()) == 1, "still within the limit"
    pbs.wait_queue_empty(30)


@pytest.fixture
def sge_one_job_per_user(sge):
    """The real Grid Engine's global max_u_jobs set to 1 for the test: qsub refuses a user's second job."""

    before = sge.run("qconf", "-sconf", "global").stdout
    sge.run("qconf", "-Mconf", sge._write_conf("global", _edit_conf(before, {"max_u_jobs": "1"})))
    try:
        yield sge
    finally:
        sge.run("qconf", "-Mconf", sge._write_conf("global", _edit_conf(before, {})), check=False)


@pytest.mark.sge
def test_grid_engines_own_per_user_refusal_is_a_hold(sge_one_job_per_user, in_tmp):
    sge = sge_one_job_per_user
    with dask.config.set(FAST):
        with SGEGPUCluster(**COMMON, queue="gpu.q", parallel_environment="smp") as cluster:
            cluster.scale(jobs=2)  # not raised
            assert len(sge.job_ids()) == 1
            said = repr(cluster)
            assert "held 1 job(s): the batch system refused more: " in said and "jobs are allowed per user" in said
            first = sge.job_ids()[0]
            sge.run("qdel", first)
            # Grid Engine takes its time to end a deleted job (execd kills it, the job leaves qstat): that, and then
            # the held job within a few of the cluster's polls, well before the 60 s retry of a refusal.
            wait_until(lambda: first not in sge.job_ids(), 60, what=f"Grid Engine to end job {first}")
            wait_until(lambda: sge.job_ids(), 15, what="the held job submitted")
    wait_until(lambda: not sge.job_ids(), 60, what="the queue to empty")


@pytest.mark.timeout(120)
def test_lsfs_pending_job_threshold_is_a_hold_not_a_wait(lsf, in_tmp):
    # Past MAX_PEND_JOBS LSF's bsub does not refuse: it says so and tries again every SUB_TRY_INTERVAL (60 s), by
    # default for ever, so a scale() waiting on it would not return until one of the user's jobs left pending.
    lsf.config.extra.update(max_pend_jobs=1, sub_try_interval_s=60)
    lsf.config.write(lsf.home)
    with dask.config.set(FAST), LSFGPUCluster(**COMMON, queue="normal", lsf_units="mb") as cluster:
        asked = time.monotonic()
        cluster.scale(jobs=4)  # two run on the emulator's four GPUs, one pends, the fourth meets the threshold
        took = time.monotonic() - asked
        assert took < 20, f"scale() waited {took:.0f} s on bsub"
        assert len(lsf.job_ids()) == 3
        assert not processes_running(str(lsf.bin_dir / "bsub")), "a bsub left trying would submit the job later"
        said = "held 1 job(s): the batch system refused more: User <"
        assert said in repr(cluster) and "Pending job threshold reached" in repr(cluster)
        assert cluster._replacement.may_replace
        running = [job for job in lsf.job_ids() if lsf.state(job) == "RUN"]
        lsf.run("bkill", running[0])  # the pending job starts, and the held one can go
        wait_until(lambda: len(lsf.job_ids()) == 3 and running[0] not in lsf.job_ids(), 20, what="the held job")
        assert said in repr(cluster), "four asked, three at a time (the limit learnt): one is still held"
    assert lsf.wait_queue_empty(30)


def test_a_stated_limit_holds_under_adapt_and_scaling_down_drops_held_jobs_first(pbs, in_tmp, caplog):
    caplog.set_level(logging.INFO, logger="gpujobqueue.cluster")
    with dask.config.set({**FAST, "gpujobqueue.pbs.max-jobs-per-user": {"submitted": 1}}):
        with PBSGPUCluster(**COMMON, queue="workq") as cluster:
            cluster.scale(jobs=3)
            assert len(pbs.job_ids()) == 1
            kept = pbs.job_ids()
            assert "held 2 job(s): queue workq takes 1 job per user" in repr(cluster)
            cluster.scale(jobs=1)  # the held ones go first: the job submitted stays
            assert pbs.job_ids() == kept and "held" not in repr(cluster)
            cluster.adapt(minimum_jobs=3, maximum_jobs=3, interval="200ms")
            wait_until(lambda: "held 2 job(s)" in repr(cluster), 10, what="adapt's jobs held")
            time.sleep(1)
            assert pbs.job_ids() == kept
        pbs.wait_queue_empty(30)


@pytest.mark.parametrize(
    "limit, expected_jobs, words",
    [
        ({"running": 1}, 1, "queue workq runs 1 job per user at once"),
        ({"submitted": 3, "running": 2}, 2, "queue workq runs 2 jobs per user at once"),
        ({"submitted": 1, "running": 1}, 1, "queue workq takes 1 job per user"),
    ],
)
def test_a_running_limit_holds_the_jobs_that_could_not_run(pbs, in_tmp, limit, expected_jobs, words):
    # Jobs past a queue's running limit would only wait in the queue for the cluster's own jobs to end: the cluster
    # holds them itself, as it holds jobs past the submitted limit, and says which limit binds.
    with dask.config.set({**FAST, "gpujobqueue.pbs.max-jobs-per-user": limit}):
        with PBSGPUCluster(**COMMON, queue="workq") as cluster:
            cluster.scale(jobs=4)
            assert len(pbs.job_ids()) == expected_jobs
            assert f"held {4 - expected_jobs} job(s): {words}" in repr(cluster)
        pbs.wait_queue_empty(30)


# -- the CPU pool: its queue's limit, shared with the GPU jobs where they share the queue -------


@pytest.mark.parametrize(
    "gpu_queue, cpu_queue, cpu_limit, shared",
    [
        ("debug-scaling", None, (1, None), True),  # no queue of its own: the GPU jobs' queue, and its count
        ("debug-scaling", "debug-scaling", (1, None), True),
        ("debug", "debug-scaling", (1, None), False),
        ("debug-scaling", "capacity", (2, 1), False),
        ("debug-scaling", "debug", None, False),  # a queue that states no limit
        ("debug-scaling", "not-a-site-queue", None, False),  # the batch system's own queue: nothing known
    ],
)
def test_the_cpu_pools_queue_carries_its_limit_into_the_plan(gpu_queue, cpu_queue, cpu_limit, shared):
    pool = {"processes": 2} if cpu_queue is None else {"processes": 2, "queue": cpu_queue}
    plan = make_plan(PBSGPUCluster, {"site": "polaris", "queue": gpu_queue, "account": "p"}, cpu_pool=pool)
    limit = plan.cpu_jobs_per_user
    if cpu_limit is None:
        assert limit is None
        return
    assert (limit.submitted, limit.running) == cpu_limit and limit.source == "site polaris"
    assert (limit is plan.jobs_per_user) == shared, "one limit, counted over both pools, where they share the queue"


def test_cpu_jobs_in_the_gpu_jobs_queue_count_towards_its_limit(pbs, in_tmp):
    # The PBS emulator itself states no limit here: only the cluster's own count keeps it to two jobs.
    with dask.config.set({**FAST, "gpujobqueue.pbs.max-jobs-per-user": 2}):
        with PBSGPUCluster(**COMMON, queue="workq", cpu_pool={"processes": 1}) as cluster:
            cluster.scale(jobs=1, cpu_workers=3)
            assert len(pbs.job_ids()) == 2, "one GPU job and one CPU job: the queue takes two of the user's jobs"
            assert sum(spec.get("pool") == "cpu" for spec in cluster.worker_spec.values()) == 1
            said = "held 2 cpu job(s): queue workq takes 2 jobs per user (gpujobqueue.pbs.max-jobs-per-user), "
            assert said + "the cluster's GPU jobs among them" in repr(cluster)
            cluster.scale(cpu_workers=0)
            wait_until(lambda: len(pbs.job_ids()) == 1, 15, what="the CPU job cancelled")
            assert "held" not in repr(cluster)
            cluster.scale(jobs=3)  # the GPU pool's two more: one fits
            assert len(pbs.job_ids()) == 2 and "held 1 job(s): queue workq takes 2 jobs per user" in repr(cluster)
        pbs.wait_queue_empty(30)


def test_cpu_jobs_in_another_queue_are_not_held_by_the_gpu_jobs_queues_limit(pbs, in_tmp):
    with dask.config.set({**FAST, "gpujobqueue.pbs.max-jobs-per-user": 1}):
        with PBSGPUCluster(**COMMON, queue="workq", cpu_pool={"processes": 1, "queue": "debug"}) as cluster:
            cluster.scale(jobs=1, cpu_workers=2)
            # The limit stated is the GPU jobs' queue's (workq); the CPU jobs' queue, debug, states none.
            assert sorted(pbs.attribute(job, "queue") for job in pbs.job_ids()) == ["debug", "debug", "workq"]
            assert "held" not in repr(cluster)
        pbs.wait_queue_empty(30)
