"""One Plan, the only input (issue 30, point 5): making a plan starts no process (the workers'
python is probed when a cluster starts, or a script is rendered, not when a plan is made);
``render(plan, connection)`` writes the script the cluster's job writes; a rendered script without a
scheduler address refuses to run, saying how to give one (issue 32, point 4)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fixtures.sizes import with_job_size

from gpujobqueue import LocalGPUCluster, SLURMGPUCluster
from gpujobqueue.machine.install import probe_imports

CLI = [sys.executable, "-m", "gpujobqueue.cli"]
KEYWORDS = {"gpus_per_node": 2, "cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": "00:10:00"}


@pytest.fixture
def python_that_counts(tmp_path):
    """A python that runs (isolated: no site-packages, so no dask_cuda) and counts its runs."""
    fake = tmp_path / "env" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(f'#!/bin/sh\necho run >> {tmp_path}/runs\nexec {sys.executable} -I -S "$@"\n')
    fake.chmod(0o755)
    probe_imports.cache_clear()
    yield str(fake)
    probe_imports.cache_clear()


def _runs(tmp_path) -> int:
    path = tmp_path / "runs"
    return len(path.read_text().split()) if path.exists() else 0


@pytest.fixture
def no_process(monkeypatch):
    """Any process started from here fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)


@pytest.mark.parametrize("batch", ["slurm", "pbs", "lsf", "sge", "local"])
def test_making_a_plan_starts_no_process(batch, python_that_counts, no_process, tmp_path):
    from gpujobqueue.plan import make_plan
    from gpujobqueue.runtime.factory import cluster_class

    plan = make_plan(cluster_class(batch), with_job_size({**KEYWORDS, "python": python_that_counts}))
    assert plan.launch.python == python_that_counts and plan.request.gpus_per_node == 2
    assert _runs(tmp_path) == 0


@pytest.mark.parametrize("worker_mode, lacks", [("dask-cuda", "dask_cuda"), ("per-device", "gpujobqueue's preloads")])
def test_a_cluster_start_still_says_at_once_what_the_workers_python_lacks(
    worker_mode, lacks, python_that_counts, tmp_path
):
    with pytest.warns(UserWarning, match=f"the workers' python {python_that_counts} cannot import {lacks}"):
        cluster = LocalGPUCluster(
            **KEYWORDS, worker_mode=worker_mode, python=python_that_counts, shared_temp_directory=str(tmp_path)
        )
    try:
        assert not cluster.workers  # said before any job is submitted
    finally:
        cluster.close()
    assert _runs(tmp_path) == 1  # probed once, at the start


def render_cli(*args, **kwargs):
    return subprocess.run([*CLI, "render", *args], capture_output=True, text=True, timeout=120, **kwargs)


LOCAL_WORKER = [
    "--worker-mode",
    "per-device",
    "--gpus-per-node",
    "1",
    "--memory-per-gpu",
    "512MiB",
    "--cpus-per-gpu",
    "1",
]


def test_a_rendered_script_without_a_scheduler_address_refuses_to_run_naming_the_options(tmp_path):
    result = render_cli("local", *LOCAL_WORKER, "--python", sys.executable, "--no-tls")
    assert result.returncode == 0, result.stderr
    # Said when it is rendered ...
    assert "no --scheduler-address or --scheduler-file" in result.stderr
    script = tmp_path / "workers.sh"
    script.write_text(result.stdout)
    # ... and by the job, at once, before any worker starts and tries the placeholder.
    job = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert job.returncode == 2, job.stderr
    assert "this script has no scheduler address" in job.stderr and "--scheduler-address" in job.stderr
    assert "dask" not in job.stderr.replace("gpujobqueue", "")  # no worker ran


def test_a_filled_in_placeholder_runs_past_the_check(tmp_path):
    result = render_cli("local", *LOCAL_WORKER, "--python", "false", "--no-tls")
    script = tmp_path / "workers.sh"
    script.write_text(result.stdout.replace("<insert-scheduler-address-here>", "127.0.0.1"))
    job = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "this script has no scheduler address" not in job.stderr


def test_render_takes_a_scheduler_file(tmp_path):
    result = render_cli("slurm", *LOCAL_WORKER, "--scheduler-file", "/shared/me/scheduler.json")
    assert result.returncode == 0, result.stderr
    assert "--scheduler-file /shared/me/scheduler.json" in result.stdout
    assert "insert-scheduler-address" not in result.stdout and "scheduler address" not in result.stderr
    both = render_cli(
        "slurm", *LOCAL_WORKER, "--scheduler-file", "/s.json", "--scheduler-address", "tls://10.0.0.1:8786"
    )
    assert both.returncode == 2 and "--scheduler-file" in both.stderr and "--scheduler-address" in both.stderr


def test_render_of_a_plan_is_the_clusters_job_script(tmp_path):
    from gpujobqueue.script.render import SchedulerAddress

    keywords = with_job_size({"gpus_per_node": 2, "python": "python3"})
    with SLURMGPUCluster(**keywords, shared_temp_directory=str(tmp_path)) as cluster:
        expected = cluster.job_script()
        assert cluster.cluster_plan.request == cluster.request and cluster.cluster_plan.launch == cluster.launch
        job = cluster._dummy_job
        text = cluster.cluster_plan.system.job_script(
            cluster.cluster_plan,
            SchedulerAddress(cluster.scheduler_address),
            name=str(job.name),
            tls_args=job.tls_args,
            cluster_folder=job.cluster_folder(),  # the folder of its credentials, which the job checks
        )
    assert text == expected


def test_the_job_takes_the_plan_and_parses_no_keyword(monkeypatch, tmp_path):
    from gpujobqueue import plan as plan_package

    with SLURMGPUCluster(**with_job_size({"gpus_per_node": 2}), shared_temp_directory=str(tmp_path)) as cluster:

        def refuse(*args, **kwargs):
            raise AssertionError("a keyword was parsed again after the plan was made")

        monkeypatch.setattr(plan_package, "make_plan", refuse)
        job = cluster.job_cls(cluster.scheduler_address, name="w", **cluster._job_kwargs)
        assert job.plan is cluster.cluster_plan and job.request is cluster.cluster_plan.request
        assert "#SBATCH --gpus-per-node=2" in job.job_script()


def test_parse_keywords_is_the_plan_and_a_job_is_made_of_a_plan_alone():
    from gpujobqueue.errors import UnknownKeywordError
    from gpujobqueue.plan import Plan

    plan = SLURMGPUCluster.parse_keywords(with_job_size({"gpus_per_node": 2}))
    assert isinstance(plan, Plan) and plan.request.gpus_per_node == 2  # not a (settings, request, launch) tuple
    with pytest.raises(UnknownKeywordError, match="request"):
        SLURMGPUCluster.job_cls("tcp://10.0.0.1:8786", name="w", request=plan.request, launch=plan.launch)
