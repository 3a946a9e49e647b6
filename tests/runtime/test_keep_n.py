"""Keep n means keep n: ``scale(n)`` keeps its jobs until close, replacing those that end early,
with a bound on jobs that fail before their workers connect; an unreachable batch system is
shown as such, and a submission it refused is made once it answers.

The SLURM tests run on the real SLURM of tests/fixtures/slurm.py (run them under
``flock /tmp/gjq-batch.lock``); the walltime test runs on the local batch system.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time

import dask.config
import pytest
from conftest import wait_until
from dask.distributed import Client
from fixtures.processes import processes_running
from test_conformance import COMMON

from gpujobqueue import JobFailedError, LocalGPUCluster, SLURMGPUCluster

FAST = {"gpujobqueue.job-poll-interval": "1s"}


def _square(x):
    return x * x


@pytest.mark.slurm
def test_a_job_cancelled_from_outside_is_replaced_once(slurm, counted):
    with dask.config.set(FAST), SLURMGPUCluster(**COMMON, queue="gpu") as cluster, Client(cluster) as client:
        cluster.scale(jobs=2)
        client.wait_for_workers(4, timeout=120)
        victim_name, victim = next((name, str(job.job_id)) for name, job in cluster.workers.items())
        cancelled = time.monotonic()
        subprocess.run(["scancel", victim], check=True)
        wait_until(
            lambda: len(cluster.worker_spec) == 2 and victim_name not in cluster.worker_spec,
            30,
            what=lambda: f"a replacement for {victim_name}: {list(cluster.worker_spec)}",
        )
        client.wait_for_workers(4, timeout=120)
        wait_until(lambda: len(client.scheduler_info()["workers"]) == 4, 60, what="four workers")
        back = time.monotonic() - cancelled
        assert counted.count("sbatch") == 3, "two jobs, and one replacement"
        assert len(slurm.squeue_ids()) == 2
        assert client.submit(_square, 7).result() == 49
        print(f"back to 4 workers {back:.1f} s after scancel")
        time.sleep(3)  # a few more polls: nothing more is submitted
        assert counted.count("sbatch") == 3
    wait_until(lambda: not slurm.squeue_ids(), 60, what="the queue to empty")


@pytest.mark.slurm
def test_a_script_that_fails_at_once_is_submitted_max_failures_times_then_raised(slurm, counted):
    broken = {**COMMON, "job_script_prologue": ["exit 1"]}
    with dask.config.set(FAST), SLURMGPUCluster(**broken, queue="gpu") as cluster, Client(cluster) as client:
        cluster.scale(jobs=1)
        started = time.monotonic()
        with pytest.raises(JobFailedError) as raised:
            client.wait_for_workers(2, timeout=120)
        took = time.monotonic() - started
        failure = raised.value
        assert failure.exit_code == 1, str(failure)
        assert failure.log_path and failure.log_tail, str(failure)
        assert counted.count("sbatch") == 3, "the first job and two replacements: gpujobqueue.replace.max-failures is 3"
        assert len(cluster.job_failures) == 3 and cluster.job_failures[-1] is failure
        time.sleep(4)  # more polls: the replacing has stopped
        assert counted.count("sbatch") == 3
        assert not cluster.worker_spec
        assert "replacing stopped after 3 job(s) in a row failed" in repr(cluster.jobs)
        assert "replacing stopped" in repr(cluster) and "replacing stopped" in cluster._repr_html_()
        print(f"raised after {took:.1f} s and 3 submissions")
        with dask.config.set({"gpujobqueue.replace.max-failures": 1}):
            cluster._replacement.limit = 1
            cluster.scale(jobs=1)  # scale() again resumes, and counts afresh
            with pytest.raises(JobFailedError):
                client.wait_for_workers(2, timeout=120)
        assert counted.count("sbatch") == 4
    wait_until(lambda: not slurm.squeue_ids(), 60, what="the queue to empty")


def _stop_slurmctld(slurm) -> None:
    process = slurm._daemons.pop("slurmctld")
    process.terminate()
    process.wait(10)


def _start_slurmctld(slurm) -> None:
    slurm._start_daemon("slurmctld", ["-D", "-f", str(slurm.conf_path)])
    wait_until(lambda: "UP" in slurm.run("scontrol", "ping").stdout, 60, what="slurmctld to answer")


@pytest.mark.long
@pytest.mark.slurm
@pytest.mark.timeout(300)
def test_an_unreachable_batch_system_is_shown_and_a_scale_refused_then_is_made_when_it_answers(slurm, counted):
    with dask.config.set(FAST), SLURMGPUCluster(**COMMON, queue="gpu") as cluster, Client(cluster) as client:
        cluster.scale(jobs=1)
        client.wait_for_workers(2, timeout=120)
        assert "RUNNING" in repr(cluster.jobs)
        _stop_slurmctld(slurm)
        stopped = time.monotonic()
        try:
            wait_until(
                lambda: "batch system unreachable since" in repr(cluster.jobs),
                60,
                what="the watch to notice the outage",
            )
            noticed = time.monotonic() - stopped
            table = cluster.jobs
            assert table.notice.startswith("batch system unreachable since "), table.notice
            assert "Unable to contact slurm controller" in table.notice, table.notice
            assert [row.state for row in table] == ["unknown"] and table[0].reason == "last seen RUNNING", repr(table)
            assert repr(table).splitlines()[2].split()[2] == "unknown", repr(table)  # no stale RUNNING
            assert "batch system unreachable since" in repr(cluster)
            assert "batch system unreachable since" in cluster._repr_html_()
            refused_at = counted.count("sbatch")
            asked = time.monotonic()
            cluster.scale(jobs=2)  # sbatch fails: deferred, not raised
            scale_took = time.monotonic() - asked
            assert counted.count("sbatch") == refused_at + 1
            assert "1 job(s) to submit when it answers" in repr(cluster.jobs)
            time.sleep(5)
            assert counted.count("sbatch") == refused_at + 1, "no submission is tried while squeue fails"
        finally:
            _start_slurmctld(slurm)
        outage = time.monotonic() - stopped
        client.wait_for_workers(4, timeout=120)
        back = time.monotonic() - stopped - outage
        assert len(cluster.worker_spec) == 2 and len(slurm.squeue_ids()) == 2
        assert counted.count("sbatch") == refused_at + 2, "the refused job, submitted once the batch system answered"
        assert cluster.jobs.notice is None
        assert client.submit(_square, 3).result() == 9
        print(
            f"outage noticed after {noticed:.1f} s; scale() returned after {scale_took:.1f} s; "
            f"slurmctld down {outage:.1f} s; back to 4 workers {back:.1f} s after it answered"
        )
    wait_until(lambda: not slurm.squeue_ids(), 60, what="the queue to empty")


def test_a_job_that_reaches_its_walltime_is_replaced(tmp_path, monkeypatch):
    # Local jobs of 20 s: margin 5 s (a quarter of the walltime), so the workers retire at 15 s (+/- 1 s) and
    # the job ends; scale() submits its replacement ahead of the retirement (gpujobqueue/runtime/handover.py), and the
    # first job then leaves.
    monkeypatch.chdir(tmp_path)
    short = {**COMMON, "walltime": "00:20", "devices": ["0", "1", "2", "3"]}
    with dask.config.set(FAST), LocalGPUCluster(**short) as cluster, Client(cluster) as client:
        cluster.scale(jobs=1)
        client.wait_for_workers(2, timeout=60)
        first = set(cluster.worker_spec)
        started = time.monotonic()
        wait_until(lambda: set(cluster.worker_spec) - first, 60, what="a replacement job")
        replaced = time.monotonic() - started
        wait_until(lambda: not first & set(cluster.worker_spec), 60, what="the first job to leave")
        assert len(cluster.worker_spec) == 1
        wait_until(lambda: len(client.scheduler_info()["workers"]) == 2, 60, what="the replacement's two workers")
        assert client.submit(_square, 5).result() == 25
        assert not cluster.job_failures
        print(f"replaced {replaced:.1f} s after its workers connected")


@pytest.mark.parametrize("batch", ["pbs", "lsf", "local"])
def test_a_reachable_batch_system_answers_the_probe(batch, request):
    from gpujobqueue.runtime.factory import cluster_class

    if batch != "local":
        request.getfixturevalue(batch)  # the emulator's commands first on PATH
    assert asyncio.run(cluster_class(batch).job_cls.batch_system.probe()) is None


def test_an_unreachable_batch_system_answers_the_probe_with_its_error(tmp_path, monkeypatch):
    words = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    (tmp_path / "squeue").write_text(f"#!/bin/sh\necho '{words}' >&2\nexit 1\n")
    (tmp_path / "squeue").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    error = asyncio.run(SLURMGPUCluster.job_cls.batch_system.probe())
    assert error == words


def test_a_status_query_that_does_not_answer_is_stopped_and_counts_as_unreachable(tmp_path, monkeypatch):
    # LSF's bjobs retries for ever while mbatchd does not answer (LSB_NTRIES unset); any status command can hang on
    # a stuck daemon or file system. The query is stopped after gpujobqueue.query-timeout, and the batch system is
    # shown unreachable, instead of the job watch waiting on it for good.
    words = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    squeue = tmp_path / "squeue"
    squeue.write_text("#!/bin/sh\nexec sleep 3600\n")
    squeue.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with dask.config.set({"gpujobqueue.query-timeout": "1s"}):
        started = time.monotonic()
        error = asyncio.run(SLURMGPUCluster.job_cls.batch_system.probe())
        took = time.monotonic() - started
    assert error == "squeue did not answer within 1 s: stopped", error
    assert took < 5, f"the query was stopped after {took:.1f} s"
    assert not processes_running(str(squeue)) and not processes_running("sleep 3600"), "a query left running"
    squeue.write_text(f"#!/bin/sh\necho '{words}' >&2\nexit 1\n")
    assert asyncio.run(SLURMGPUCluster.job_cls.batch_system.probe()) == words


@pytest.mark.parametrize("value", ["0s", "-1s", "2h", "soon", True])
def test_a_bad_query_timeout_is_refused_naming_the_key(value):
    from gpujobqueue.errors import ValidationError
    from gpujobqueue.jobs.job_status import query_timeout

    with dask.config.set({"gpujobqueue.query-timeout": value}), pytest.raises(ValidationError) as raised:
        query_timeout()
    assert raised.value.field == "gpujobqueue.query-timeout"


@pytest.mark.parametrize("value", ["60s\n#SBATCH -A x", "$(reboot)", "1" * 30 + "s"])
def test_a_cluster_with_a_bad_query_timeout_is_refused_before_it_starts(value, tmp_path, monkeypatch):
    from gpujobqueue.errors import ValidationError

    monkeypatch.chdir(tmp_path)
    with dask.config.set({"gpujobqueue.query-timeout": value}), pytest.raises(ValidationError) as raised:
        LocalGPUCluster(**COMMON, devices=["0", "1"])
    assert raised.value.field == "gpujobqueue.query-timeout"
    assert not list(tmp_path.iterdir()), "nothing was written: the cluster never started"
