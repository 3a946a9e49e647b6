"""One conformance suite over every backend: SLURM and Grid Engine real, PBS Pro and LSF emulated, local.

Each backend is asked for GPUs in its own syntax; the suite checks what users rely on:
``scale(gpus=4)`` of 2-GPU jobs gives four workers, each pinned to one device its job was
allocated and none shared between jobs; a computation is right; ``adapt`` goes up and
down; a refusal by the batch system is raised with its message; and ``close()`` leaves the
queue empty, as the backend's own status command reports it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable

import dask
import dask.array as da
import numpy as np
import pytest
from conftest import wait_until
from dask.distributed import Client, get_worker

from gpujobqueue import (
    JobFailedError,
    LocalGPUCluster,
    LSFGPUCluster,
    PBSGPUCluster,
    SGEGPUCluster,
    SLURMGPUCluster,
    SubmissionError,
)
from gpujobqueue.machine.gpus import nvidia_gpu_ids
from gpujobqueue.runtime.cluster import WorkerJobKey

# Workers of every backend import this module's functions from the tests folder.
COMMON = dict(
    gpus_per_node=2,
    worker_mode="per-device",
    memory_per_gpu="512MiB",
    cpus_per_gpu=1,
    walltime="00:10:00",
    death_timeout=20,
    environment={"PYTHONPATH": os.environ["PYTHONPATH"]},
)


@dataclass
class Backend:
    """How the suite drives one batch system and reads its state with its own commands."""

    name: str
    cluster_cls: type
    keywords: dict[str, Any]
    queue_ids: Callable[[], list[str]]  # unfinished jobs, by the backend's status command
    allocated: Callable[[Any], set[str]]  # devices the batch system gave a job
    job_id_variable: str | None  # how a worker's environment names its job
    refusal: tuple[dict[str, Any], str] | None = None  # keywords the batch system refuses, and its words
    commands: Any = None  # a fixtures.commands.CommandLog counting submit and cancel calls, where there is one

    def cluster(self, **keywords):
        return self.cluster_cls(**{**COMMON, **self.keywords, **keywords})


def _slurm_allocated(job) -> set[str]:
    out = subprocess.run(
        ["scontrol", "show", "job", "-d", job.job_id], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"GRES=\S*?gpu\S*?\(IDX:([0-9,\-]+)\)", out)
    assert match, f"no GPU allocation in scontrol output for job {job.job_id}:\n{out}"
    devices = set()
    for part in match.group(1).split(","):
        low, _, high = part.partition("-")
        devices.update(str(i) for i in range(int(low), int(high or low) + 1))
    return devices


def _local_backend(request) -> Backend:
    if 0 < len(nvidia_gpu_ids()) < 4:
        pytest.skip(f"the local backend hands out four devices; this host has {len(nvidia_gpu_ids())} GPU(s)")
    live: list[LocalGPUCluster] = []

    class Tracked(LocalGPUCluster):
        def _make_scheduler_job(self, start):
            live.append(self)  # before it starts: a failed start must be tracked too
            return super()._make_scheduler_job(start)

        def __init__(self, **keywords):
            super().__init__(**keywords)
            if self not in live:
                live.append(self)

    def jobs_of(cluster):
        jobs = [
            getattr(worker, "job", worker) for worker in cluster.workers.values()
        ]  # the scheduler's job's entry holds its job
        return {id(job): job for job in jobs + [cluster.scheduler_job] if job is not None}.values()

    def running_local_jobs() -> list[str]:
        return [
            job.job_id for cluster in live for job in jobs_of(cluster) if job.handle is not None and job.handle.running
        ]

    return Backend(
        "local",
        Tracked,
        {"devices": ["0", "1", "2", "3"]},
        running_local_jobs,
        lambda job: set(job.handle.devices or ()) if job.handle is not None else set(),
        None,
    )


def _backend(request, name: str) -> Backend:
    if name == "local":
        return _local_backend(request)
    if name == "slurm":
        slurm = request.getfixturevalue("slurm")
        counted = request.getfixturevalue("counted")  # also chdir to tmp_path: SLURM writes slurm-<id>.out there
        return Backend(
            "slurm",
            SLURMGPUCluster,
            {"queue": "gpu"},
            slurm.squeue_ids,
            _slurm_allocated,
            "SLURM_JOB_ID",
            refusal=({"queue": "nosuchpartition"}, "invalid partition"),
            commands=counted,
        )
    if name == "sge":
        sge = request.getfixturevalue("sge")
        request.getfixturevalue("tmp_path_cwd")
        return Backend(
            "sge",
            SGEGPUCluster,
            {"queue": "gpu.q", "parallel_environment": "smp"},
            sge.job_ids,
            lambda job: set(sge.allocated_devices(job.job_id)),
            "JOB_ID",
            refusal=({"queue": "nosuch.q"}, "nosuch.q"),
        )
    if name == "pbs":
        pbs = request.getfixturevalue("pbs")
        request.getfixturevalue("tmp_path_cwd")  # PBS copies job output back to the submit directory
        return Backend(
            "pbs",
            PBSGPUCluster,
            {"queue": "workq"},
            pbs.job_ids,
            lambda job: set(map(str, pbs.allocated_devices(job.job_id))),
            "PBS_JOBID",
            refusal=({"queue": "nosuchqueue"}, "unknown queue"),
        )
    if name == "lsf":
        lsf = request.getfixturevalue("lsf")
        request.getfixturevalue("tmp_path_cwd")
        return Backend(
            "lsf",
            LSFGPUCluster,
            {"queue": "normal", "lsf_units": "mb"},
            lsf.job_ids,
            lambda job: set(map(str, lsf.allocated_devices(job.job_id))),
            "LSB_JOBID",
            refusal=({"queue": "nosuchqueue"}, "no such queue"),
        )
    raise AssertionError(name)


@pytest.fixture
def tmp_path_cwd(tmp_path, monkeypatch):
    """Jobs that write their output where they were submitted write it under tmp_path."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


ALL = ["local", "slurm", "sge", "pbs", "lsf"]
BATCH = ["slurm", "sge", "pbs", "lsf"]


@pytest.fixture(params=ALL)
def backend(request) -> Backend:
    return _backend(request, request.param)


@pytest.fixture(params=BATCH)
def batch_backend(request) -> Backend:
    return _backend(request, request.param)


def worker_facts(dask_worker, job_id_variable):
    return {
        "name": dask_worker.name,
        "devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "job": os.environ.get(job_id_variable) if job_id_variable else None,
    }


def _same_job(worker_job_id: str, job_id: str) -> bool:
    # PBS_JOBID is the full `1234.server`; the cluster may hold the same id.
    return worker_job_id == job_id or worker_job_id.split(".")[0] == job_id.split(".")[0]


def test_scale_gpus_pins_each_worker_to_its_jobs_devices(backend):
    with backend.cluster() as cluster, Client(cluster) as client:
        cluster.scale(gpus=4)
        assert len(cluster.workers) == 2, "4 GPUs of 2-GPU jobs are two jobs"
        client.wait_for_workers(4, timeout=120)

        jobs = dict(cluster.workers)
        facts = list(client.run(worker_facts, job_id_variable=backend.job_id_variable).values())
        assert sorted(f["name"] for f in facts) == sorted(f"{name}-{i}" for name in jobs for i in (0, 1))
        key = WorkerJobKey(["-0", "-1"])
        for name, job in jobs.items():
            mine = [f for f in facts if key.job_of(f["name"]) == name]
            assert all(f["devices"] is not None and re.fullmatch(r"\d+", f["devices"]) for f in mine), (
                f"each worker must see exactly one device: {mine}"
            )
            allocated = backend.allocated(job)
            assert {f["devices"] for f in mine} == allocated, (
                f"job {job.job_id}: workers on {[f['devices'] for f in mine]}, {backend.name} allocated "
                f"{sorted(allocated)}"
            )
            if backend.job_id_variable:
                assert all(f["job"] and _same_job(f["job"], str(job.job_id)) for f in mine), (
                    f"workers {mine} do not run in job {job.job_id}"
                )
        assert len({f["devices"] for f in facts}) == 4, f"jobs running together must not share devices: {facts}"

        x = da.arange(1_000_000, chunks=100_000)
        assert client.compute((x * 2).sum(), resources={"GPU": 1}).result() == 2 * sum(range(1_000_000))
    assert wait_until(
        lambda: not backend.queue_ids(),
        60,
        what=lambda: f"{backend.name} queue to empty after close(): {backend.queue_ids()}",
    )


def _sleep_and_name(seconds):
    time.sleep(seconds)
    return get_worker().name


def test_adapt_goes_up_to_four_gpus_and_back_to_none(backend):
    with backend.cluster() as cluster, Client(cluster) as client:
        adaptive = cluster.adapt(minimum_gpus=0, maximum_gpus=4, interval="500ms", wait_count=4)
        futures = client.map(_sleep_and_name, [1.0] * 40, pure=False, resources={"GPU": 1})
        names = set(client.gather(futures))
        del futures  # results held on a worker would rightly keep its job alive
        assert len(names) == 4, f"adapt should reach 4 GPU workers, saw {sorted(names)}"
        wait_until(
            lambda: not client.scheduler_info()["workers"] and not backend.queue_ids(),
            90,
            what=lambda: (
                f"adapt back to 0: queue {backend.queue_ids()}, spec {list(cluster.worker_spec)}, log "
                f"{list(adaptive.log)[-3:]}"
            ),
        )
        if backend.commands:
            assert backend.commands.count("sbatch") == 2, "one submission per job, no churn"
            # the two jobs go in one scancel when the need settles at 0 at once, in two when it
            # settles at one job first (test_adapt.py pins the exact count on a crisp ramp)
            assert 1 <= backend.commands.count("scancel") <= 2
    assert not backend.queue_ids()


FAULTS = {
    # the node lacks the network interface asked for: the job says so and exits 3
    "interface": (
        {"interface": "nosuchif0", "scheduler_options": {"interface": "lo"}},
        3,
        "network interface nosuchif0 does not exist",
    ),
    # a bad module load in a prologue that stops on errors: `module` is not there, so 127, and the line is named
    "prologue": (
        {"job_script_prologue": ["echo preparing", "module load cuda/99"], "prologue_errors": "stop"},
        127,
        "prologue command failed with status 127: module load cuda/99",
    ),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_job_that_fails_before_its_workers_connect_is_reported_with_exit_code_and_log(backend, fault):
    keywords, exit_code, words = FAULTS[fault]
    # max-failures 1: the first failure is raised, and not replaced (tests/runtime/test_keep_n.py tests the replacing)
    fast_once = {"gpujobqueue.job-poll-interval": "2s", "gpujobqueue.replace.max-failures": 1}
    with dask.config.set(fast_once), backend.cluster(**keywords) as cluster, Client(cluster) as client:
        cluster.scale(gpus=2)
        job = next(iter(cluster.workers.values()))
        started = time.monotonic()
        with pytest.raises(JobFailedError) as info:
            client.wait_for_workers(2, timeout=120)
        took = time.monotonic() - started
        failure = info.value
        assert took < 30, f"reported after {took:.1f} s"
        assert failure.job_id == job.job_id and failure.name == job.name
        assert failure.exit_code == exit_code, str(failure)
        assert words in failure.log_tail and words in str(failure), str(failure)
        assert failure.log_path and os.path.isfile(failure.log_path)
        assert cluster.job_failures == [failure]
        assert not cluster.worker_spec and not cluster.workers, "an ended job is forgotten, so scale() counts it gone"
        assert not backend.queue_ids()
    assert wait_until(
        lambda: not backend.queue_ids(), 60, what=lambda: f"{backend.name} queue to empty: {backend.queue_ids()}"
    )


def test_jobs_view_lists_each_job_with_its_state_gpus_and_workers(backend):
    with backend.cluster() as cluster, Client(cluster) as client:
        cluster.scale(gpus=4)
        client.wait_for_workers(4, timeout=120)
        rows = cluster.jobs
        assert sorted(row.name for row in rows) == sorted(cluster.workers)
        for row in rows:
            assert row.job_id == cluster.workers[row.name].job_id
            assert row.state in {"RUNNING", "R", "r", "RUN"}, row
            assert (row.gpus, row.workers) == (2, 2), row
            assert row.nodes, row
        table = repr(rows)
        assert table.splitlines()[0].split() == [
            "name",
            "job_id",
            "state",
            "reason",
            "expected",
            "nodes",
            "gpus",
            "workers",
        ]
        assert all(str(row.job_id) in table for row in rows)
        assert "<table>" in rows._repr_html_()


def test_pending_job_shows_slurms_reason(slurm, counted):
    # The node has 4 GPUs: two 2-GPU jobs run and the third waits for resources.
    with SLURMGPUCluster(**COMMON, queue="gpu") as cluster, Client(cluster) as client:
        cluster.scale(gpus=6)
        client.wait_for_workers(4, timeout=120)
        pending = wait_until(
            lambda: [row for row in cluster.jobs if row.state == "PENDING"], 30, what=lambda: repr(cluster.jobs)
        )
        assert len(pending) == 1 and pending[0].workers == 0 and pending[0].reason == "Resources", repr(cluster.jobs)
        assert "PENDING  Resources" in repr(cluster.jobs)
    assert wait_until(
        lambda: not slurm.squeue_ids(), 60, what=lambda: f"queue to empty after close(): {slurm.squeue_ids()}"
    )


def test_refusal_is_raised_with_the_batch_systems_message(batch_backend):
    keywords, words = batch_backend.refusal
    with batch_backend.cluster(**keywords) as cluster:
        with pytest.raises(SubmissionError) as info:
            cluster.scale(jobs=1)
        assert words in str(info.value).lower(), str(info.value)
        assert not cluster.worker_spec and not cluster.workers
    assert not batch_backend.queue_ids()


def test_close_cancels_queued_and_running_jobs(batch_backend):
    # More jobs than the four devices hold: two run, the rest wait in the queue.
    with batch_backend.cluster() as cluster:
        cluster.scale(jobs=4)
        assert wait_until(
            lambda: len(batch_backend.queue_ids()) == 4,
            30,
            what=lambda: f"4 jobs in the {batch_backend.name} queue: {batch_backend.queue_ids()}",
        )
    assert wait_until(
        lambda: not batch_backend.queue_ids(),
        60,
        what=lambda: f"{batch_backend.name} queue to empty after close(): {batch_backend.queue_ids()}",
    )


STYLES = {
    # Torque's nodes=1:ppn=C:gpus=G
    "torque": ("torque", PBSGPUCluster, {"gpu_request": "torque", "queue": "batch"}, "PBS_JOBID"),
    # Summit-like CSM: whole node by -nnodes, the workers reach its GPUs through jsrun
    "lsf-csm": (
        "lsf",
        LSFGPUCluster,
        {"gpu_request": "csm", "queue": "batch", "account": "ABC123", "cores": 4, "cpus_per_gpu": None},
        "LSB_JOBID",
    ),
    # ABCI-like resource type: rt_F=1 is a whole node with its four GPUs
    "sge-resource-type": (
        "sge",
        SGEGPUCluster,
        {"gpu_request": "resource-type", "resource_type": "rt_F", "queue": "gpu.q"},
        "JOB_ID",
    ),
}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_whole_node_gpu_styles_run_one_worker_per_gpu(request, style):
    fixture, cluster_cls, keywords, job_id_variable = STYLES[style]
    system = request.getfixturevalue(fixture)
    request.getfixturevalue("tmp_path_cwd")
    queue_ids = system.job_ids
    with cluster_cls(**{**COMMON, "gpus_per_node": 4, **keywords}) as cluster, Client(cluster) as client:
        cluster.scale(gpus=4)
        client.wait_for_workers(4, timeout=120)
        (job,) = cluster.workers.values()
        facts = list(client.run(worker_facts, job_id_variable=job_id_variable).values())
        assert sorted(f["devices"] for f in facts) == ["0", "1", "2", "3"], facts
        assert {str(d) for d in system.allocated_devices(job.job_id)} == {"0", "1", "2", "3"}
        assert all(f["job"] and _same_job(f["job"], str(job.job_id)) for f in facts), facts
        assert client.submit(sum, range(100), resources={"GPU": 1}).result() == 4950
    assert wait_until(lambda: not queue_ids(), 60, what=lambda: f"queue to empty: {queue_ids()}")


def test_grid_engine_refusal_says_why(sge, tmp_path_cwd):
    # `qsub -w e` says only "no suitable queues"; the cluster adds `qsub -w v`'s reasons.
    with SGEGPUCluster(**{**COMMON, "gpus_per_node": 5, "cpus_per_gpu": None, "cores": 1}) as cluster:
        with pytest.raises(SubmissionError) as info:
            cluster.scale(jobs=1)
    assert "no suitable queues" in str(info.value) and "offers only hc:gpu=4" in str(info.value), str(info.value)
    assert not sge.job_ids()


def scheduler_facts(dask_scheduler, job_id_variable):
    return {
        "pid": os.getpid(),
        "process_group": os.getpgid(0),
        "job": os.environ.get(job_id_variable) if job_id_variable else None,
    }


def test_scheduler_job_runs_the_scheduler_in_the_first_job_and_ends_it_last(backend, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    with backend.cluster(scheduler="job", shared_temp_directory=str(shared)) as cluster, Client(cluster) as client:
        job = cluster.scheduler_job
        folder = os.path.dirname(job.scheduler_file)
        assert os.path.dirname(folder) == str(shared) and os.stat(folder).st_mode & 0o777 == 0o700
        assert cluster.scheduler_address == json.load(open(job.scheduler_file))["address"]
        facts = client.run_on_scheduler(scheduler_facts, job_id_variable=backend.job_id_variable)
        assert facts["pid"] != os.getpid()
        if backend.job_id_variable:
            assert facts["job"] and _same_job(facts["job"], str(job.job_id)), (
                f"the scheduler runs in {facts['job']}, not in job {job.job_id}"
            )
        else:
            assert facts["process_group"] == int(job.job_id), "the scheduler is not a process of the local job"
        # The scheduler's job runs two GPU workers of its own; scale(gpus=4) adds one job.
        client.wait_for_workers(2, timeout=120)
        cluster.scale(gpus=4)
        assert len(cluster.workers) == 2 and job.name in cluster.workers
        client.wait_for_workers(4, timeout=120)
        workers = list(client.run(worker_facts, job_id_variable=backend.job_id_variable).values())
        assert sorted(f["name"] for f in workers) == sorted(f"{name}-{i}" for name in cluster.workers for i in (0, 1))
        assert len({f["devices"] for f in workers}) == 4, workers
        # The other jobs' workers read the scheduler file from their copy of the cluster's (checked) folder.
        script = cluster.job_script()
        assert '--scheduler-file "$private_dir/' + os.path.basename(job.scheduler_file) + '"' in script
        assert f"cluster_dir={folder}" in script or f"cluster_dir={shlex.quote(folder)}" in script
        x = da.arange(1_000_000, chunks=100_000)
        assert client.compute((x * 2).sum(), resources={"GPU": 1}).result() == 2 * sum(range(1_000_000))
        # Scaling to nothing keeps the scheduler's job: the cluster lives in it.
        cluster.scale(0)
        assert list(cluster.workers) == [job.name]
        assert wait_until(
            lambda: len(backend.queue_ids()) == 1,
            60,
            what=lambda: f"only the scheduler's job left: {backend.queue_ids()}",
        )
        assert client.submit(sum, range(10), resources={"GPU": 1}).result() == 45
    assert wait_until(
        lambda: not backend.queue_ids(),
        60,
        what=lambda: f"{backend.name} queue to empty after close(): {backend.queue_ids()}",
    )
    assert not os.path.exists(folder), "the scheduler file's folder outlived the cluster"


def test_scheduler_job_that_fails_is_reported_and_cancelled(backend, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    with pytest.raises(JobFailedError, match="ended before its scheduler wrote") as info:
        backend.cluster(scheduler="job", shared_temp_directory=str(shared), job_script_prologue=["exit 4"])
    assert info.value.exit_code == 4, str(info.value)
    assert wait_until(
        lambda: not backend.queue_ids(), 60, what=lambda: f"{backend.name} queue to empty: {backend.queue_ids()}"
    )
    assert not os.listdir(shared), "the scheduler file's folder outlived the failed cluster"


def test_adapt_with_a_scheduler_job_never_retires_the_schedulers_workers(slurm, counted, tmp_path):
    with (
        SLURMGPUCluster(**COMMON, queue="gpu", scheduler="job", shared_temp_directory=str(tmp_path)) as cluster,
        Client(cluster) as client,
    ):
        hosted = cluster.scheduler_job.name
        adaptive = cluster.adapt(minimum_gpus=0, maximum_gpus=4, interval="500ms", wait_count=4)
        futures = client.map(_sleep_and_name, [1.0] * 40, pure=False, resources={"GPU": 1})
        names = set(client.gather(futures))
        del futures
        assert len(names) == 4, f"adapt should reach 4 GPU workers, saw {sorted(names)}"
        wait_until(
            lambda: len(client.scheduler_info()["workers"]) == 2 and len(slurm.squeue_ids()) == 1,
            90,
            what=lambda: (
                f"adapt back to the scheduler's job: queue {slurm.squeue_ids()}, spec "
                f"{list(cluster.worker_spec)}, log {list(adaptive.log)[-3:]}"
            ),
        )
        assert {WorkerJobKey(["-0", "-1"]).job_of(w["name"]) for w in client.scheduler_info()["workers"].values()} == {
            hosted
        }
        assert counted.count("sbatch") == 2 and counted.count("scancel") == 1
    assert wait_until(lambda: not slurm.squeue_ids(), 60, what=lambda: f"queue to empty: {slurm.squeue_ids()}")


def _gpu_task(x):
    return get_worker().name


def _worker_resources(dask_scheduler) -> dict:
    return {worker.name: dict(worker.resources) for worker in dask_scheduler.workers.values()}


def test_mixed_pool_sends_annotated_tasks_only_to_gpu_workers(backend):
    cpu_pool = {"processes": 2, "cores": 2, "memory": "1GiB"}
    with backend.cluster(cpu_pool=cpu_pool) as cluster, Client(cluster) as client:
        cluster.scale(gpus=2, cpu_workers=4)
        pools = {name: spec.get("pool", "gpu") for name, spec in cluster.worker_spec.items()}
        assert sorted(pools.values()) == ["cpu", "cpu", "gpu"], pools
        client.wait_for_workers(6, timeout=120)
        facts = {f["name"]: f for f in client.run(worker_facts, job_id_variable=backend.job_id_variable).values()}
        # From the scheduler itself: the client's scheduler_info() is a copy it refreshes every few seconds, which
        # missed a worker registered just before (LSF, the CI run at 00a00a7).
        resources = client.run_on_scheduler(_worker_resources)
        key = WorkerJobKey(cluster.launch.name_suffixes, cluster.cpu_launch.name_suffixes)
        gpu_workers = {name for name in facts if pools[key.job_of(name)] == "gpu"}
        cpu_workers = set(facts) - gpu_workers
        assert len(gpu_workers) == 2 and len(cpu_workers) == 4, facts
        assert all(resources[name] == {"GPU": 1} for name in gpu_workers), resources
        assert all(not resources[name] for name in cpu_workers), resources
        assert all(facts[name]["devices"] == "" for name in cpu_workers), "CPU workers must see no GPU"
        assert len({facts[name]["devices"] for name in gpu_workers}) == 2
        for name, job in cluster.workers.items():
            if pools[name] == "cpu":
                allocated = backend.allocated(job) if backend.name != "slurm" else _slurm_gpu_tres(job)
                assert not allocated, f"CPU job {job.job_id} was given GPUs: {allocated}"
        # The seeds' pattern: annotated work runs on GPU workers only, the rest anywhere.
        x = da.ones(64, chunks=1)
        with dask.annotate(resources={"GPU": 1}):
            on_gpu = x.map_blocks(lambda b: np.array([_gpu_task(b)], dtype=object), dtype=object)
        ran_on = set(client.compute(on_gpu, optimize_graph=False).result())
        assert ran_on and ran_on <= gpu_workers, f"annotated tasks ran on {ran_on - gpu_workers}"
        assert client.compute((x + 1).sum()).result() == 128
        # Scaled separately: the CPU pool goes, the GPU pool stays, and back.
        cluster.scale(cpu_workers=0)
        assert wait_until(
            lambda: set(w["name"] for w in client.scheduler_info()["workers"].values()) == gpu_workers,
            60,
            what=lambda: f"only GPU workers left: {[w['name'] for w in client.scheduler_info()['workers'].values()]}",
        )
        assert wait_until(
            lambda: len(backend.queue_ids()) == 1,
            60,
            what=lambda: f"the GPU job alone in the queue: {backend.queue_ids()}",
        )
    assert wait_until(
        lambda: not backend.queue_ids(),
        60,
        what=lambda: f"{backend.name} queue to empty after close(): {backend.queue_ids()}",
    )


def _slurm_gpu_tres(job) -> str:
    out = subprocess.run(
        ["scontrol", "show", "job", "-d", job.job_id], capture_output=True, text=True, check=True
    ).stdout
    return "" if "gres/gpu" not in out and "GRES=gpu" not in out else out
