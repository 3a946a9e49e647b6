"""Jobs of several nodes: a launcher starts one worker group per node, and every worker is counted."""

from __future__ import annotations

import os

import dask.array as da
from conftest import wait_until
from dask.distributed import Client

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.runtime.cluster import WorkerJobKey

# One slurmd cannot host two nodes, so a job of one node and two tasks stands in for two
# nodes: gpujobqueue is told nodes=2 and renders its srun for two nodes, and the stand-in
# swaps the node count for two tasks on the one node, each task holding two of its GPUs
# and one of its two cores.
STAND_IN = dict(
    gpus_per_node=2,
    nodes=2,
    launcher="srun",
    worker_mode="per-device",
    job_cpu=1,
    memory_per_gpu="512MiB",
    walltime="00:10:00",
    death_timeout=20,
    queue="gpu",
    environment={"PYTHONPATH": os.environ["PYTHONPATH"]},
    job_directives_skip=["--nodes=", "--ntasks-per-node", "--gpus-per-node"],
    job_extra_directives=["--nodes=1", "--ntasks=2", "--gpus-per-task=2"],
    launcher_args=["--ntasks-per-node=2", "--gpus-per-task=2"],
)


def group_facts(dask_worker):
    return {
        "name": dask_worker.name,
        "task": os.environ.get("SLURM_PROCID"),
        "step": os.environ.get("SLURM_STEP_ID"),
        "job": os.environ.get("SLURM_JOB_ID"),
        "device": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def test_a_two_task_job_starts_a_worker_group_per_task_through_srun(slurm, counted):
    with SLURMGPUCluster(**STAND_IN) as cluster, Client(cluster) as client:
        script = cluster.job_script()
        assert "srun --ntasks=2 --ntasks-per-node=1 --cpus-per-task=1 --ntasks-per-node=2 --gpus-per-task=2" in script
        assert cluster.workers_per_job == 4
        cluster.scale(gpus=4)
        assert len(cluster.workers) == 1, "four GPUs of two-node jobs of two GPUs are one job"
        client.wait_for_workers(4, timeout=120)
        (job,) = cluster.workers.values()
        facts = list(client.run(group_facts).values())
        assert sorted(f["name"] for f in facts) == sorted(
            f"{job.name}-{node}-{gpu}" for node in (0, 1) for gpu in (0, 1)
        )
        assert {f["job"] for f in facts} == {job.job_id}
        assert all(f["step"] not in (None, "batch") for f in facts), f"workers must run in an srun step: {facts}"
        for node in ("0", "1"):
            group = [f for f in facts if f["name"].startswith(f"{job.name}-{node}-")]
            assert {f["task"] for f in group} == {node}, f"node {node}'s workers belong to task {node}: {group}"
        assert len({f["device"] for f in facts}) == 4, f"each worker on its own device: {facts}"
        key = WorkerJobKey(cluster.launch.name_suffixes)
        assert {key.job_of(f["name"]) for f in facts} == {job.name}

        x = da.arange(1_000_000, chunks=100_000)
        assert client.compute((x * 2).sum(), resources={"GPU": 1}).result() == 2 * sum(range(1_000_000))
        cluster.scale(gpus=0)
        assert wait_until(
            lambda: not slurm.squeue_ids(), 60, what=lambda: f"queue to empty after scale(0): {slurm.squeue_ids()}"
        )
        assert counted.count("sbatch") == 1 and counted.count("scancel") == 1
    assert not slurm.squeue_ids()


def test_without_a_launcher_a_job_of_two_nodes_starts_its_groups_through_srun(slurm, counted):
    # issue 19: no launcher given, SLURM's own starts one task per node
    keywords = {key: value for key, value in STAND_IN.items() if key != "launcher"}
    with SLURMGPUCluster(**keywords) as cluster, Client(cluster) as client:
        assert cluster.launch.launcher == "srun"
        srun = "srun --ntasks=2 --ntasks-per-node=1 --cpus-per-task=1 --ntasks-per-node=2 --gpus-per-task=2"
        assert srun in cluster.job_script()
        cluster.scale(gpus=4)
        client.wait_for_workers(4, timeout=120)
        (job,) = cluster.workers.values()
        facts = list(client.run(group_facts).values())
        names = sorted(f"{job.name}-{node}-{gpu}" for node in (0, 1) for gpu in (0, 1))
        assert sorted(f["name"] for f in facts) == names
        assert all(f["step"] not in (None, "batch") for f in facts), f"workers must run in an srun step: {facts}"
        assert {f["task"] for f in facts if f["name"].startswith(f"{job.name}-1-")} == {"1"}
        cluster.scale(gpus=0)
        assert wait_until(lambda: not slurm.squeue_ids(), 60, what=lambda: f"queue to empty: {slurm.squeue_ids()}")
        assert counted.count("sbatch") == 1 and counted.count("scancel") == 1
    assert not slurm.squeue_ids()
