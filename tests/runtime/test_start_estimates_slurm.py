"""Issue 45 on the real SLURM (tests/fixtures/slurm.py: sched/backfill, a pass a second, bf_resolution=1): a job
of known walltime holds the GPUs, and the next job's estimated start, as ``cluster.jobs`` shows it, falls within a
few seconds of that job's end; with two partitions of their own nodes, ``queue="soonest"`` picks the free one."""

from __future__ import annotations

import datetime

import pytest
from conftest import wait_until
from test_conformance import COMMON

from gpujobqueue import SLURMGPUCluster
from gpujobqueue.plan import make_plan

pytestmark = pytest.mark.slurm
BLOCKER_MINUTES = 2


def started_at(cluster, job_id: str) -> float:
    said = cluster.run("squeue", "--noheader", f"--jobs={job_id}", "--format=%T|%S")  # the standard time form
    state, start = said.stdout.strip().split("|")
    assert state == "RUNNING", said.stdout
    return datetime.datetime.strptime(start, "%Y-%m-%dT%H:%M:%S").timestamp()


def blocker(cluster, gpus: int, *options: str) -> str:
    """A job of ``gpus`` GPUs and a walltime of BLOCKER_MINUTES that sleeps past it, running before it returns."""
    job_id = cluster.sbatch(
        f"--gres=gpu:{gpus}",
        f"--time={BLOCKER_MINUTES}",
        "--cpus-per-task=1",
        "--mem=100",
        *options,
        "--wrap",
        "sleep 600",
    )
    wait_until(
        lambda: "RUNNING" in cluster.run("squeue", "--noheader", f"--jobs={job_id}", "--format=%T").stdout,
        30,
        what="the blocking job running",
    )
    return job_id


def test_a_waiting_jobs_estimate_is_the_end_of_the_job_that_holds_its_gpus(slurm, counted):
    held = blocker(slurm, 3, "--partition=gpu")
    try:
        end = started_at(slurm, held) + BLOCKER_MINUTES * 60
        with SLURMGPUCluster(**COMMON, queue="gpu") as cluster:  # 2 GPUs a job: waits for the blocker's 3
            cluster.scale(jobs=1)
            row = wait_until(
                lambda: next((row for row in cluster.jobs if row.expected), None), 30, what=lambda: repr(cluster.jobs)
            )
            status = cluster._job_watch.book.statuses[row.name]
            assert row.state == "PENDING" and abs(status.expected_start - end) <= 5, (repr(cluster.jobs), end)
            assert "expected" in repr(cluster.jobs) and cluster._job_watch.estimates_note(cluster.jobs) == (
                "SLURM backfill estimate"
            )
    finally:
        slurm.run("scancel", held)
    assert wait_until(lambda: not slurm.squeue_ids(), 60, what=lambda: f"an empty queue: {slurm.squeue_ids()}")


@pytest.fixture(scope="module")
def slurm_two_partitions():
    """The two-node SLURM with its partitions split: ``gpu`` on the first node, ``debug`` on the second."""
    from fixtures.daemons import running_on_a_free_shard
    from fixtures.slurm import TwoNodeSlurmTestCluster

    with running_on_a_free_shard("TwoNodeSlurmTestCluster", lambda shard: TwoNodeSlurmTestCluster(shard=shard)) as c:
        for partition, node in (("gpu", c.node_name), ("debug", c.second_node)):
            done = c.run("scontrol", "update", f"PartitionName={partition}", f"Nodes={node}")
            assert done.returncode == 0, done.stderr
        yield c


SITE = """\
schema: 1
name: two-partitions
description: the test SLURM's two partitions, each of its own node
centre: none
documentation: https://slurm.schedmd.com/sbatch.html
status: generic
scheduler: slurm
node: {gpus: 4, gpu_vendor: nvidia, gpu_model: unspecified, cpus: 2, memory: 7GB}
gpu_request: {style: gres}
account: {required: false}
queues:
  gpu: {description: the first node, max_walltime: "01:00:00"}
  spare: {description: the second node, partition: debug, routing: true, max_walltime: "00:30:00"}
default_queue: gpu
launcher: {name: srun}
worker: {mode: dask-cuda, visibility_variable: CUDA_VISIBLE_DEVICES}
network: {protocol: tcp}
unconfirmed:
  - "node, gpu_request, account, default_queue, launcher, worker, network, queues: a test site, not a machine"
"""


def test_soonest_picks_the_partition_whose_node_is_free(slurm_two_partitions, tmp_path, monkeypatch):
    cluster = slurm_two_partitions
    for name, value in cluster.env.items():
        monkeypatch.setenv(name, value)
    site = tmp_path / "two-partitions.yaml"
    site.write_text(SITE)
    keywords = {
        "site": str(site),
        "queue": "soonest",
        "walltime": "00:10:00",
        "gpus_per_node": 1,
        "memory_per_gpu": "100MB",
    }
    held = blocker(cluster, 4, "--partition=gpu")
    try:
        plan = make_plan(SLURMGPUCluster, keywords)
        assert plan.request.queue == "debug" and "soonest start: queue spare, expected now" in plan.request.queue_choice
        assert "gpu expected" in plan.request.queue_choice  # the other queue's later start, said beside
    finally:
        cluster.run("scancel", held)
    wait_until(lambda: not cluster.squeue_ids(), 30, what="the blocking job gone")
    free = make_plan(SLURMGPUCluster, keywords)  # both free: the site's routing order decides between equals
    assert free.request.queue == "gpu"
