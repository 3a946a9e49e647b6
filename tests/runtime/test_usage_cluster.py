"""GPU-hours of a real cluster: the local batch system's jobs held, charged and busy, the summary
at close, the JSON report and ``gpujobqueue usage``."""

from __future__ import annotations

import json
import logging
import os
import time

import dask.config
import pytest
from click.testing import CliRunner
from conftest import wait_until
from dask.distributed import Client

from gpujobqueue import LocalGPUCluster
from gpujobqueue.cli import main
from gpujobqueue.jobs.usage import read_usage

SMALL = dict(worker_mode="per-device", memory_per_gpu="512MiB", death_timeout=20)


def busy_for(seconds: float) -> float:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return seconds


@pytest.fixture
def quick_sampling():
    with dask.config.set({"gpujobqueue.usage.sample-interval": "200ms", "gpujobqueue.job-poll-interval": "1s"}):
        yield


def test_a_cluster_counts_its_jobs_gpu_hours_and_how_busy_they_were(tmp_path, quick_sampling, caplog):
    caplog.set_level(logging.INFO, logger="gpujobqueue.usage")
    with LocalGPUCluster(gpus_per_node=2, devices=[0, 1], log_directory=str(tmp_path), **SMALL) as cluster:
        with Client(cluster) as client:
            cluster.scale(jobs=1)
            client.wait_for_workers(2, timeout=60)
            started = time.time()
            # Both workers busy for 3 s, then idle for 3 s.
            client.gather(
                [client.submit(busy_for, 3, pure=False, workers=[w]) for w in client.scheduler_info()["workers"]]
            )
            time.sleep(3)
            during = cluster.usage()
            held = time.time() - started
            assert "<summary>Usage</summary>" in cluster._repr_html_()
        assert len(during.jobs) == 1
        job = during.jobs[0]
        assert job.gpus == 2 and job.job_id and job.measured_by == "tasks" and job.ended is None
        # Held at least as long as the work was watched; busy close to 2 GPUs x 3 s, not the whole time.
        assert job.held_seconds(during.at) >= held - 0.5
        assert 4.0 <= job.busy_gpu_seconds <= 7.5, job
        assert during.busy_fraction is not None and 0.15 < during.busy_fraction < 0.8
    final = cluster.usage()
    assert final.jobs[0].ended is not None  # closed with the cluster
    written = sorted(tmp_path.glob("*-usage-*.json"))
    assert len(written) == 1
    assert os.stat(written[0]).st_mode & 0o777 == 0o600
    report = read_usage(written[0])
    assert report.jobs[0].job_id == job.job_id and report.gpu_hours > 0
    summary = [r.getMessage() for r in caplog.records if r.name == "gpujobqueue.usage"]
    assert len(summary) == 1 and "1 job, 2 GPUs" in summary[0] and "busy" in summary[0]
    assert str(written[0]) in summary[0]
    printed = CliRunner().invoke(main, ["usage", str(written[0])])
    assert printed.exit_code == 0, printed.output
    assert job.job_id in printed.output and "GPU-h charged" in printed.output
    as_json = CliRunner().invoke(main, ["usage", "--json", str(written[0])])
    assert json.loads(as_json.output)["totals"]["gpus"] == 2


def test_without_sampling_the_hours_are_counted_and_busy_is_not_measured(tmp_path):
    with dask.config.set({"gpujobqueue.usage.sample-interval": False, "gpujobqueue.job-poll-interval": "1s"}):
        with LocalGPUCluster(gpus_per_node=1, devices=[0], log_directory=str(tmp_path), **SMALL) as cluster:
            cluster.scale(jobs=1)
            cluster.wait_for_workers(1, timeout=60)
            time.sleep(1)
            report = cluster.usage()
    assert report.jobs[0].started is not None and report.jobs[0].measured_by is None
    assert "busy not measured" in report.summary()


def test_a_job_that_started_and_ended_between_two_looks_is_counted_at_close(tmp_path):
    # Before: the watch looked at the jobs every hour here (its first look before any job), and at close
    # only after the cluster had closed and forgotten its jobs: the summary said "0 jobs".
    with dask.config.set({"gpujobqueue.usage.sample-interval": "1h", "gpujobqueue.job-poll-interval": "1h"}):
        with LocalGPUCluster(gpus_per_node=1, devices=[0], log_directory=str(tmp_path), **SMALL) as cluster:
            cluster.scale(jobs=1)
            cluster.wait_for_workers(1, timeout=60)
    (path,) = tmp_path.glob("*-usage-*.json")
    report = read_usage(str(path))
    assert len(report.jobs) == 1 and report.jobs[0].started is not None and report.jobs[0].ended is not None
    assert report.summary().startswith("1 job, 1 GPU"), report.summary()


def test_a_cluster_that_submitted_nothing_writes_no_report(tmp_path):
    with LocalGPUCluster(gpus_per_node=1, devices=[0], log_directory=str(tmp_path), **SMALL) as cluster:
        assert cluster.usage().jobs == ()
    assert not list(tmp_path.glob("*-usage-*.json"))


@pytest.mark.parametrize("content", ["", "hello", '{"schema": "other"}'])
def test_usage_of_a_file_that_is_not_a_report_says_so(tmp_path, content):
    path = tmp_path / "not-a-report.json"
    path.write_text(content)
    result = CliRunner().invoke(main, ["usage", str(path)])
    assert result.exit_code != 0
    assert "not JSON" in result.output or "not a gpujobqueue usage report" in result.output, result.output


def test_usage_of_a_device_says_it_is_not_a_regular_file():
    result = CliRunner().invoke(main, ["usage", os.devnull])
    assert result.exit_code != 0 and "not a regular file" in result.output, result.output


@pytest.mark.slurm
def test_on_slurm_the_job_sbatch_ran_is_counted_and_the_report_lands_beside_its_log(slurm, counted, quick_sampling):
    from gpujobqueue import SLURMGPUCluster

    keywords = dict(
        queue="gpu",
        gpus_per_node=2,
        worker_mode="per-device",
        memory_per_gpu="512MiB",
        cpus_per_gpu=1,
        walltime="00:10:00",
        death_timeout=20,
        environment={"PYTHONPATH": os.environ["PYTHONPATH"]},
    )
    with SLURMGPUCluster(**keywords) as cluster, Client(cluster) as client:
        cluster.scale(jobs=1)
        client.wait_for_workers(2, timeout=120)
        (job_id,) = slurm.squeue_ids()
        client.gather([client.submit(busy_for, 2, pure=False, workers=[w]) for w in client.scheduler_info()["workers"]])
        time.sleep(1)
        report = cluster.usage()
    (job,) = report.jobs
    assert job.job_id == job_id and job.gpus == 2 and job.started is not None
    assert job.busy_gpu_seconds >= 2.0 and job.measured_by == "tasks"
    assert wait_until(lambda: not slurm.squeue_ids(), 30, what="squeue to empty after close()")
    (written,) = sorted(name for name in os.listdir() if "-usage-" in name and name.endswith(".json"))
    final = read_usage(written)
    assert final.jobs[0].job_id == job_id and final.jobs[0].ended is not None
    assert os.path.exists(f"slurm-{job_id}.out")  # beside the job's own log


def test_a_program_that_configured_no_logging_sees_the_summary_and_nothing_else(tmp_path):
    import subprocess
    import sys

    program = f"""
import dask.config
from gpujobqueue import LocalGPUCluster
dask.config.set({{"gpujobqueue.job-poll-interval": "1s", "gpujobqueue.usage.sample-interval": "300ms"}})
with LocalGPUCluster(gpus_per_node=1, devices=[0], log_directory={str(tmp_path)!r}, **{SMALL!r}) as cluster:
    cluster.scale(jobs=1)
    cluster.wait_for_workers(1, timeout=60)
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("gpujobqueue:")]
    assert len(lines) == 1 and "1 job, 1 GPU" in lines[0] and "gpujobqueue usage " in lines[0], result.stderr
