"""Startup on a real SLURM: gpujobqueue against dask-jobqueue's SLURMCluster, side by side.

Starts the test SLURM (tests/fixtures/slurm.py; needs Debian's slurm-wlm and munge, as root),
then, alternating the two, times ``scale()`` to all workers connected for four workers in two
2-GPU jobs; prints the medians of ``--repeats`` rounds and their ratio, and the time to render
one job script. It also splits each startup at the moment SLURM shows both jobs RUNNING:
SLURM's scheduling delay before it is the same for both tools (and steps by ~0.5 s with its
scheduling cycle), the part after it is the job script starting its workers.

    python3 benchmarks/startup.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from dask.distributed import Client
from dask_jobqueue import SLURMCluster

from gpujobqueue import SLURMGPUCluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fixtures.slurm import SlurmTestCluster  # noqa: E402

WORKERS = 4
COMMON = dict(queue="gpu", walltime="00:10:00", death_timeout=20)


def gpujobqueue_cluster():
    return SLURMGPUCluster(gpus_per_node=2, worker_mode="per-device", memory_per_gpu="512MiB", cpus_per_gpu=1, **COMMON)


def dask_jobqueue_cluster():
    # The same two workers per job, the GPUs asked for by hand as users do today.
    return SLURMCluster(cores=2, processes=2, memory="1GiB", job_extra_directives=["--gpus-per-node=2"], **COMMON)


def jobs_running(slurm: SlurmTestCluster) -> int:
    out = slurm.run("squeue", "--noheader", "--format=%t").stdout
    return sum(1 for state in out.split() if state == "R")


def time_startup(make_cluster, slurm: SlurmTestCluster) -> tuple[float, float]:
    """Seconds from ``scale(WORKERS)`` to all connected, and from both jobs RUNNING to all connected."""
    with make_cluster() as cluster, Client(cluster) as client:
        start = time.perf_counter()
        cluster.scale(WORKERS)
        while jobs_running(slurm) < WORKERS // 2 and len(client.scheduler_info()["workers"]) < WORKERS:
            time.sleep(0.02)
        running = time.perf_counter()
        client.wait_for_workers(WORKERS, timeout=180)
        connected = time.perf_counter()
    if not slurm.wait_queue_empty(60):
        raise RuntimeError(f"jobs left in the queue: {slurm.squeue_ids()}")
    return connected - start, connected - running


def time_render(repeats: int = 2000) -> float:
    """Median seconds to render one job script."""
    with gpujobqueue_cluster() as cluster:
        job = cluster._dummy_job
        job.job_script()  # the first call compiles the templates
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            job.job_script()
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()

    slurm = SlurmTestCluster()
    slurm.start()
    try:
        times = {"gpujobqueue": [], "dask-jobqueue": []}
        in_job = {"gpujobqueue": [], "dask-jobqueue": []}
        makers = {"gpujobqueue": gpujobqueue_cluster, "dask-jobqueue": dask_jobqueue_cluster}
        for round_number in range(args.repeats):
            order = list(makers) if round_number % 2 == 0 else list(reversed(makers))
            for name in order:
                total, after_running = time_startup(makers[name], slurm)
                times[name].append(total)
                in_job[name].append(after_running)
                print(f"round {round_number + 1} {name:14s} {total:.2f} s ({after_running:.2f} s after RUNNING)", flush=True)
        render_seconds = time_render()
    finally:
        slurm.stop()

    medians = {name: statistics.median(values) for name, values in times.items()}
    job_medians = {name: statistics.median(values) for name, values in in_job.items()}
    ratio = medians["gpujobqueue"] / medians["dask-jobqueue"]
    job_ratio = job_medians["gpujobqueue"] / job_medians["dask-jobqueue"]
    print(f"\nscale() to {WORKERS} workers connected on the test SLURM, median of {args.repeats}:")
    for name, value in medians.items():
        print(f"  {name:14s} {value:.2f} s, of which {job_medians[name]:.2f} s after RUNNING   (all: {', '.join(f'{v:.2f}' for v in times[name])})")
    print(f"  ratio gpujobqueue / dask-jobqueue: {ratio:.2f} (target <= 1.10: {'met' if ratio <= 1.10 else 'NOT met'})")
    print(f"  ratio after RUNNING (the job script's own startup): {job_ratio:.2f}")
    print(f"render one job script: {render_seconds * 1000:.2f} ms (median of 2000)")
    return 0 if ratio <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
