"""MLIP Arena's MD stability benchmark on NERSC Perlmutter: four GPUs per job in the preempt QOS.

Source: atomind-ai/mlip-arena, benchmarks/stability/run.py at commit 508add80b653f3be8f149feadc54c33cfec73235,
``cluster_kwargs`` under ``__main__``
(https://github.com/atomind-ai/mlip-arena/blob/508add80b653f3be8f149feadc54c33cfec73235/benchmarks/stability/run.py).
Date: not shown.
Batch system: SLURM (NERSC Perlmutter, account ``matgen``).
Meant: a whole GPU node per job written in SLURM's short options: ``-C gpu``, ``-G 4`` (four GPUs per job),
``-N 1``, ``-q preempt`` with ``--time-min=00:30:00`` and ``--comment=12:00:00`` (Perlmutter's preemptible,
requeued jobs) and ``-J arena-stability``; the generated ``-n``, ``--cpus-per-task`` and ``-J`` skipped
(``job_directives_skip``), ``job_mem="0"`` (all of the node's memory); one single-threaded worker per job whose
tasks (Prefect MD runs) find the GPUs themselves; ``cluster.adapt(minimum_jobs=10, maximum_jobs=50)``.
"""

SOURCE = {
    "repo": "atomind-ai/mlip-arena",
    "path": "benchmarks/stability/run.py",
    "commit": "508add80b653f3be8f149feadc54c33cfec73235",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 4, "note": "-C gpu -G 4 -N 1 -q preempt --time-min --comment, one worker, job_mem 0"}


def make(module):
    nodes_per_alloc = 1
    gpus_per_alloc = 4

    cluster_kwargs = dict(
        cores=1,
        memory="64 GB",
        processes=1,
        shebang="#!/bin/bash",
        account="matgen",
        walltime="04:00:00",
        job_mem="0",
        job_script_prologue=[
            "source ~/.bashrc",
            "module load python",
            "source activate /pscratch/sd/c/cyrusyc/.conda/mlip-arena",
        ],
        job_directives_skip=["-n", "--cpus-per-task", "-J"],
        job_extra_directives=[
            "-J arena-stability",
            "-q preempt",
            "--time-min=00:30:00",
            "--comment=12:00:00",
            f"-N {nodes_per_alloc}",
            "-C gpu",
            f"-G {gpus_per_alloc}",
        ],
    )

    cluster = module.SLURMCluster(**cluster_kwargs)
    return cluster
