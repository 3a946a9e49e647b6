"""Submission cost on a real SLURM: ``scale(gpus=1024)`` (256 four-GPU nodes) with the jobs held.

Starts the test fixture SLURM (tests/fixtures/slurm.py: Debian's slurm-wlm + munge, as root)
and, in one run, asks it for 1024 GPUs in four ways:

- ``one-node``: gpujobqueue, 256 one-node jobs of 4 GPUs (one ``sbatch`` each, concurrent);
- ``array``: gpujobqueue with ``job_array=True``, the same 256 jobs as one job array;
- ``multi-node``: gpujobqueue with ``nodes=256, launcher="srun"``, one job of 256 nodes;
- ``dask-jobqueue``: ``SLURMCluster(processes=4, ...).scale(1024)``, 256 jobs, the GPUs asked
  for by hand with ``--gpus-per-node=4``.

Every job carries ``#SBATCH --hold``: it queues and never runs. For each way it times
``scale()`` until every job has its id from sbatch (dask-jobqueue's ``scale()`` returns
before submitting, so both are timed to the same point), counts the ``sbatch`` calls, checks
that SLURM lists every job (array elements one by one), then times ``close()`` and counts its
``scancel`` calls, and checks the queue is empty. Medians over ``--repeats`` rounds, the
ways alternated within each round.

The one slurmd of the fixture is one node with 2 CPUs: every job asks for one CPU (``job_cpu``
/ ``cores``) and a little memory, and the 256-node job is submitted with sbatch's
``--nodes=1`` in place of its ``--nodes=256`` (which that slurmd refuses); the rest of its
script is the 256-node script.

    python3 benchmarks/submit.py [--repeats 3] [--gpus 1024]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from dask_jobqueue import SLURMCluster

from gpujobqueue import SLURMGPUCluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fixtures.commands import CommandLog  # noqa: E402
from fixtures.slurm import SlurmTestCluster  # noqa: E402

GPUS_PER_NODE = 4
HELD = dict(walltime="00:10:00", queue="gpu", death_timeout=20)


def one_node_jobs(gpus: int) -> tuple[Any, Callable]:
    cluster = SLURMGPUCluster(
        gpus_per_node=GPUS_PER_NODE, job_cpu=1, memory_per_gpu="64MiB", job_extra_directives=["--hold"], **HELD
    )
    return cluster, lambda: cluster.scale(gpus=gpus)


def array_jobs(gpus: int) -> tuple[Any, Callable]:
    cluster = SLURMGPUCluster(
        gpus_per_node=GPUS_PER_NODE,
        job_cpu=1,
        memory_per_gpu="64MiB",
        job_extra_directives=["--hold"],
        job_array=True,
        **HELD,
    )
    return cluster, lambda: cluster.scale(gpus=gpus)


def multi_node_job(gpus: int) -> tuple[Any, Callable]:
    nodes = gpus // GPUS_PER_NODE
    cluster = SLURMGPUCluster(
        nodes=nodes,
        launcher="srun",
        gpus_per_node=GPUS_PER_NODE,
        job_cpu=1,
        memory_per_gpu="64MiB",
        # the one-node stand-in: sbatch gets --nodes=1 in place of --nodes=<nodes>
        job_directives_skip=["--nodes="],
        job_extra_directives=["--nodes=1", "--hold"],
        **HELD,
    )
    return cluster, lambda: cluster.scale(gpus=gpus)


def dask_jobqueue_jobs(gpus: int) -> tuple[Any, Callable]:
    cluster = SLURMCluster(
        cores=1, processes=GPUS_PER_NODE, memory="256MiB", job_extra_directives=["--gpus-per-node=4", "--hold"], **HELD
    )
    return cluster, lambda: cluster.scale(gpus)


WAYS = {
    "one-node": one_node_jobs,
    "array": array_jobs,
    "multi-node": multi_node_job,
    "dask-jobqueue": dask_jobqueue_jobs,
}


def listed_jobs(fixture: SlurmTestCluster) -> int:
    """Jobs and array elements SLURM lists as not finished."""
    out = fixture.run("squeue", "--array", "--noheader", "--format=%i").stdout
    return len(out.split())


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)


def one_round(way: str, gpus: int, fixture: SlurmTestCluster, commands: CommandLog) -> dict[str, float]:
    commands.reset()
    cluster, scale = WAYS[way](gpus)
    try:
        jobs_expected = 1 if way == "multi-node" else gpus // GPUS_PER_NODE
        started = time.perf_counter()
        scale()
        wait_for(
            lambda: (
                len(cluster.workers) == jobs_expected
                and all(getattr(job, "job_id", None) for job in cluster.workers.values())
            ),
            600,
            f"{way}: {jobs_expected} jobs submitted",
        )
        submit_seconds = time.perf_counter() - started
        listed = listed_jobs(fixture)
        if listed != jobs_expected:
            raise RuntimeError(f"{way}: SLURM lists {listed} jobs, expected {jobs_expected}")
        submitted_with = commands.count("sbatch")
    finally:
        started = time.perf_counter()
        cluster.close()
        close_seconds = time.perf_counter() - started
    wait_for(lambda: listed_jobs(fixture) == 0, 120, f"{way}: the queue to empty")
    return {
        "submit_s": submit_seconds,
        "sbatch": submitted_with,
        "close_s": close_seconds,
        "scancel": commands.count("scancel"),
        "jobs": jobs_expected,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3, help="rounds, each trying every way once (default 3)")
    parser.add_argument("--gpus", type=int, default=1024, help="GPUs asked for (default 1024: 256 four-GPU nodes)")
    parser.add_argument("--ways", nargs="+", choices=list(WAYS), default=list(WAYS))
    args = parser.parse_args(argv)
    if args.gpus % GPUS_PER_NODE:
        parser.error(f"--gpus must be a multiple of {GPUS_PER_NODE}")

    fixture = SlurmTestCluster()
    fixture.start()
    workdir = Path(tempfile.mkdtemp(prefix="gpujobqueue-submit-"))
    os.chdir(workdir)
    commands = CommandLog(workdir, ["sbatch", "scancel"])
    os.environ["PATH"] = f"{workdir}{os.pathsep}{os.environ['PATH']}"
    # slurmctld lists up to MaxJobCount jobs; a held array counts as one job until it runs.
    print(
        f"SLURM fixture {fixture.conf_path}; scale(gpus={args.gpus}) with {GPUS_PER_NODE}-GPU nodes, jobs held; "
        f"{args.repeats} rounds",
        flush=True,
    )
    results: dict[str, list[dict[str, float]]] = {way: [] for way in args.ways}
    try:
        for round_number in range(args.repeats):
            for way in args.ways:
                result = one_round(way, args.gpus, fixture, commands)
                results[way].append(result)
                print(
                    f"round {round_number + 1} {way:13s} {result['jobs']:4d} jobs: scale {result['submit_s']:7.3f} s, "
                    f"{result['sbatch']:3d} sbatch; "
                    f"close {result['close_s']:7.3f} s, {result['scancel']:3d} scancel",
                    flush=True,
                )
    finally:
        fixture.stop()
        os.chdir("/")
        shutil.rmtree(workdir, ignore_errors=True)

    reference = (
        statistics.median(r["submit_s"] for r in results["dask-jobqueue"]) if results.get("dask-jobqueue") else None
    )
    print()
    print(
        f"{'way':13s} {'jobs':>5s} {'scale (median)':>15s} {'sbatch':>7s} {'close (median)':>15s} {'scancel':>8s} "
        f"{'scale vs dask-jobqueue':>23s}"
    )
    for way, rounds in results.items():
        submit = statistics.median(r["submit_s"] for r in rounds)
        close = statistics.median(r["close_s"] for r in rounds)
        ratio = f"{submit / reference:.3f}" if reference else "-"
        print(
            f"{way:13s} {rounds[0]['jobs']:5d} {submit:13.3f} s {statistics.median(r['sbatch'] for r in rounds):7.0f} "
            f"{close:13.3f} s {statistics.median(r['scancel'] for r in rounds):8.0f} {ratio:>23s}"
        )


if __name__ == "__main__":
    main()
