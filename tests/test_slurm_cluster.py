"""SLURMGPUCluster on the real SLURM the fixture starts: pinning, naming, counting, no leaks."""

from __future__ import annotations

import os
import re
import subprocess
import time

import dask.array as da
import pytest
from dask.distributed import Client, get_worker

from conftest import wait_until
from gpujobqueue import SLURMGPUCluster, SubmissionError, UnknownKeywordError, ValidationError

pytestmark = pytest.mark.slurm

SMALL = dict(queue="gpu", walltime="00:10:00", memory_per_gpu="512MiB", cpus_per_gpu=1, death_timeout=20)


def slurm_allocated_devices(job_id: str) -> set[str]:
    """The GPU indices SLURM gave a job, from ``scontrol show job -d`` (``IDX:0-1`` or ``IDX:0,2``)."""
    out = subprocess.run(["scontrol", "show", "job", "-d", job_id], capture_output=True, text=True, check=True).stdout
    match = re.search(r"GRES=\S*?gpu\S*?\(IDX:([0-9,\-]+)\)", out)
    assert match, f"no GPU allocation in scontrol output for job {job_id}:\n{out}"
    devices = set()
    for part in match.group(1).split(","):
        low, _, high = part.partition("-")
        devices.update(str(i) for i in range(int(low), int(high or low) + 1))
    return devices


def worker_facts(dask_worker):
    return {"name": dask_worker.name, "devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "job": os.environ.get("SLURM_JOB_ID")}


def test_per_device_workers_are_pinned_to_the_slurm_allocation(slurm, counted):
    with SLURMGPUCluster(gpus_per_node=2, worker_mode="per-device", **SMALL) as cluster, Client(cluster) as client:
        cluster.scale(gpus=4)
        assert counted.count("sbatch") == 2
        client.wait_for_workers(4, timeout=120)

        jobs = {name: job.job_id for name, job in cluster.workers.items()}
        assert len(jobs) == 2 and all(jobs.values())
        facts = list(client.run(worker_facts).values())
        assert sorted(f["name"] for f in facts) == sorted(f"{name}-{i}" for name in jobs for i in (0, 1))

        for name, job_id in jobs.items():
            mine = [f for f in facts if f["name"].startswith(name + "-")]
            assert {f["job"] for f in mine} == {job_id}
            assert all(re.fullmatch(r"\d+", f["devices"]) for f in mine), "each worker must see exactly one device"
            assert {f["devices"] for f in mine} == slurm_allocated_devices(job_id)
        assert len({f["devices"] for f in facts}) == 4, "jobs running together must get different devices"

        x = da.arange(1_000_000, chunks=100_000)
        with_gpu = client.compute((x * 2).sum(), resources={"GPU": 1})
        assert with_gpu.result() == 2 * sum(range(1_000_000))

        cluster.scale(0)
        assert wait_until(lambda: not slurm.squeue_ids(), 60, what="squeue to empty after scale(0)")
        assert counted.count("scancel") == 2
    assert not slurm.squeue_ids()
    assert counted.count("sbatch") == 2


def test_dask_cuda_mode_submits_and_cancels(slurm, counted):
    # No GPU here to run dask-cuda on: the job is submitted, queued or running, then cancelled.
    with SLURMGPUCluster(gpus_per_node=2, **SMALL) as cluster:
        cluster.scale(jobs=1)
        assert len(slurm.squeue_ids()) == 1
        assert "--gpus-per-node=2" in cluster.job_script() and "-m dask_cuda.cli " in cluster.job_script()
    assert wait_until(lambda: not slurm.squeue_ids(), 30, what="squeue to empty after close()")
    assert counted.count("sbatch") == 1 and counted.count("scancel") == 1


def _sleep_and_name(seconds):
    time.sleep(seconds)
    return get_worker().name


def test_adapt_scales_to_four_gpus_and_back_without_churn(slurm, counted):
    with SLURMGPUCluster(gpus_per_node=2, worker_mode="per-device", **SMALL) as cluster, Client(cluster) as client:
        adaptive = cluster.adapt(minimum=0, maximum=4, interval="500ms", wait_count=4)
        futures = client.map(_sleep_and_name, [1.0] * 48, pure=False, resources={"GPU": 1})
        names = set(client.gather(futures))
        del futures  # results held on a worker would rightly keep one job alive
        assert len(names) == 4, f"adapt should reach 4 GPU workers, saw {sorted(names)}"
        wait_until(
            lambda: not client.scheduler_info()["workers"] and not slurm.squeue_ids(), 90,
            what=lambda: f"adapt to scale back to 0: jobs {({k: v.job_id for k, v in cluster.workers.items()})}, spec {list(cluster.worker_spec)}, queue {slurm.squeue_ids()}, adapt log {list(adaptive.log)[-3:]}",
        )
        assert counted.count("sbatch") == 2, "one submission per job, no churn"
        assert counted.count("scancel") == 2
    assert not slurm.squeue_ids()


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"walltime": "25:99"}, "walltime"),
        ({"gpus_per_node": 0}, "gpus_per_node"),
        ({"job_name": "dask\nworker"}, "job_name"),
        ({"job_name": "dask;reboot"}, "job_name"),
        ({"memory_per_gpu": "a lot"}, "memory_per_gpu"),
    ],
)
def test_bad_input_names_the_field_and_submits_nothing(slurm, counted, keywords, field):
    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster(n_workers=2, **{**SMALL, **keywords})
    assert info.value.field == field
    assert counted.count("sbatch") == 0
    assert not slurm.squeue_ids()


def test_unknown_keyword_submits_nothing(slurm, counted):
    with pytest.raises(UnknownKeywordError, match="gpu_per_node"):
        SLURMGPUCluster(n_workers=2, gpu_per_node=2, **SMALL)
    assert counted.count("sbatch") == 0


@pytest.mark.parametrize(
    "keywords, stderr",
    [
        ({"queue": "nosuchpartition"}, "invalid partition"),
        ({"gpus_per_node": 8, "worker_mode": "per-device", "cpus_per_gpu": None, "cores": 1}, "node configuration is not available"),
    ],
)
def test_sbatch_refusal_is_raised_with_its_message(slurm, counted, keywords, stderr):
    with SLURMGPUCluster(**{**SMALL, **keywords}) as cluster:
        with pytest.raises(SubmissionError) as info:
            cluster.scale(jobs=1)
        assert stderr in str(info.value).lower()
        assert "sbatch" in str(info.value)
        assert not cluster.worker_spec and not cluster.workers
    assert not slurm.squeue_ids()
