"""Startup on a real SLURM and a real Grid Engine: gpujobqueue against dask-jobqueue, side by side.

For each batch system it starts the test fixture (tests/fixtures/slurm.py, tests/fixtures/sge.py;
Debian's slurm-wlm + munge and gridengine packages, as root), then, alternating the two tools,
times ``scale()`` to all workers connected for four workers in two 2-GPU jobs, with
dask-jobqueue's SLURMCluster / SGECluster configured by hand to ask for the same GPUs. It prints
the medians of ``--repeats`` rounds and their ratio, and the time to render one job script.
It also splits each startup at the moment the batch system shows both jobs running: the
scheduling delay before it is the same for both tools, the part after it is the job script
starting its workers.

    python3 benchmarks/startup.py [--repeats 9] [--batch slurm sge]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dask.distributed import Client
from dask_jobqueue import SGECluster, SLURMCluster

from gpujobqueue import SGEGPUCluster, SLURMGPUCluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fixtures.sge import SGETestCluster  # noqa: E402
from fixtures.slurm import SlurmTestCluster  # noqa: E402

WORKERS = 4
COMMON = dict(walltime="00:10:00", death_timeout=20)


class SlurmBench:
    """The test SLURM, and both tools asking it for two GPUs per job."""

    name = "SLURM"
    fixture_cls = SlurmTestCluster

    def __init__(self):
        self.fixture = self.fixture_cls()

    def gpujobqueue(self):
        return SLURMGPUCluster(
            gpus_per_node=2, worker_mode="per-device", memory_per_gpu="512MiB", cpus_per_gpu=1, queue="gpu", **COMMON
        )

    def dask_jobqueue(self):
        # The same two workers per job, the GPUs asked for by hand as users do today.
        return SLURMCluster(
            cores=2, processes=2, memory="1GiB", job_extra_directives=["--gpus-per-node=2"], queue="gpu", **COMMON
        )

    def jobs_running(self) -> int:
        out = self.fixture.run("squeue", "--noheader", "--format=%t").stdout
        return sum(1 for state in out.split() if state == "R")

    def queue_ids(self) -> list[str]:
        return self.fixture.job_ids()


class SGEBench(SlurmBench):
    """The test Grid Engine: two slots of the smp PE with one GPU each (its gpu consumable counts per slot)."""

    name = "Grid Engine"
    fixture_cls = SGETestCluster

    def gpujobqueue(self):
        return SGEGPUCluster(
            gpus_per_node=2,
            worker_mode="per-device",
            memory_per_gpu="512MiB",
            cpus_per_gpu=1,
            parallel_environment="smp",
            queue="gpu.q",
            **COMMON,
        )

    def dask_jobqueue(self):
        return SGECluster(
            cores=2,
            processes=2,
            memory="1GiB",
            resource_spec="gpu=1",
            job_extra_directives=["-pe smp 2"],
            queue="gpu.q",
            **COMMON,
        )

    def jobs_running(self) -> int:
        return sum(1 for state in self.fixture.job_states().values() if state == "r")


BENCHES = {"slurm": SlurmBench, "sge": SGEBench}


def time_startup(make_cluster, bench: SlurmBench) -> tuple[float, float]:
    """Seconds from ``scale(WORKERS)`` to all connected, and from both jobs running to all connected."""
    with make_cluster() as cluster, Client(cluster) as client:
        start = time.perf_counter()
        cluster.scale(WORKERS)
        while bench.jobs_running() < WORKERS // 2 and len(client.scheduler_info()["workers"]) < WORKERS:
            time.sleep(0.02)
        running = time.perf_counter()
        client.wait_for_workers(WORKERS, timeout=180)
        connected = time.perf_counter()
    deadline = time.monotonic() + 60
    while bench.queue_ids():
        if time.monotonic() > deadline:
            raise RuntimeError(f"jobs left in the queue: {bench.queue_ids()}")
        time.sleep(0.1)
    return connected - start, connected - running


def time_render(repeats: int = 2000) -> float:
    """Median seconds to render one job script."""
    with SLURMGPUCluster(
        gpus_per_node=2, worker_mode="per-device", memory_per_gpu="512MiB", cpus_per_gpu=1, queue="gpu", **COMMON
    ) as cluster:
        job = cluster._dummy_job
        job.job_script()  # the first call compiles the templates
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            job.job_script()
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def compare(bench: SlurmBench, repeats: int) -> float:
    """Alternate the two tools ``repeats`` times; print and return the ratio of medians."""
    times = {"gpujobqueue": [], "dask-jobqueue": []}
    in_job = {"gpujobqueue": [], "dask-jobqueue": []}
    makers = {"gpujobqueue": bench.gpujobqueue, "dask-jobqueue": bench.dask_jobqueue}
    for round_number in range(repeats):
        order = list(makers) if round_number % 2 == 0 else list(reversed(makers))
        for name in order:
            total, after_running = time_startup(makers[name], bench)
            times[name].append(total)
            in_job[name].append(after_running)
            print(
                f"round {round_number + 1} {name:14s} {total:.2f} s ({after_running:.2f} s after running)", flush=True
            )
    medians = {name: statistics.median(values) for name, values in times.items()}
    job_medians = {name: statistics.median(values) for name, values in in_job.items()}
    ratio = medians["gpujobqueue"] / medians["dask-jobqueue"]
    job_ratio = job_medians["gpujobqueue"] / job_medians["dask-jobqueue"]
    print(f"\nscale() to {WORKERS} workers connected on the test {bench.name}, median of {repeats}:")
    for name, value in medians.items():
        print(
            f"  {name:14s} {value:.2f} s, of which {job_medians[name]:.2f} s after running   "
            f"(all: {', '.join(f'{v:.2f}' for v in times[name])})"
        )
    print(f"  ratio gpujobqueue / dask-jobqueue: {ratio:.2f} (target <= 1.10: {'met' if ratio <= 1.10 else 'NOT met'})")
    print(f"  ratio after running (the job script's own startup): {job_ratio:.2f}\n", flush=True)
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--batch", nargs="+", choices=sorted(BENCHES), default=["slurm", "sge"])
    args = parser.parse_args()

    # Jobs write their output files where they were submitted (-cwd, slurm-<id>.out): not in the checkout.
    os.chdir(tempfile.mkdtemp(prefix="gpujobqueue-startup-"))
    ratios = {}
    for batch in args.batch:
        bench = BENCHES[batch]()
        bench.fixture.start()
        try:
            ratios[batch] = compare(bench, args.repeats)
        finally:
            bench.fixture.stop()
    print(f"render one job script: {time_render() * 1000:.2f} ms (median of 2000)")
    print("ratios: " + ", ".join(f"{batch} {ratio:.2f}" for batch, ratio in ratios.items()))
    return 0 if all(ratio <= 1.10 for ratio in ratios.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
