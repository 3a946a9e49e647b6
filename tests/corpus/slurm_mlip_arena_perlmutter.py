"""MLIP Arena's bulk equation-of-state benchmark on NERSC Perlmutter's GPU nodes, one GPU per job.

Source: atomind-ai/mlip-arena, benchmarks/eos_bulk/run.py at commit 168ca910c670e713077d4b222b4eca7113c1310e,
``cluster_kwargs`` under ``__main__``
(https://github.com/atomind-ai/mlip-arena/blob/168ca910c670e713077d4b222b4eca7113c1310e/benchmarks/eos_bulk/run.py).
Date: not shown.
Batch system: SLURM (NERSC Perlmutter, account ``matgen``).
Meant: one GPU node's share per job written in SLURM's short options: ``-C gpu`` (the GPU nodes), ``-G 1`` (one GPU
per job), ``-N 1``, ``-q regular`` and ``-J eos_bulk``, with the generated ``-n``, ``--cpus-per-task`` and ``-J``
skipped (``job_directives_skip``) and ``job_mem="0"`` (all of the node's memory); one single-threaded worker.
"""

SOURCE = {
    "repo": "atomind-ai/mlip-arena",
    "path": "benchmarks/eos_bulk/run.py",
    "commit": "168ca910c670e713077d4b222b4eca7113c1310e",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "-C gpu -G 1 -N 1 by hand, -n/--cpus-per-task/-J skipped, job_mem 0"}


def make(module):
    nodes_per_alloc = 1
    gpus_per_alloc = 1

    cluster_kwargs = dict(
        cores=1,
        memory="64 GB",
        shebang="#!/bin/bash",
        account="matgen",
        walltime="00:30:00",
        job_mem="0",
        job_script_prologue=[
            "source ~/.bashrc",
            "module load python",
            "module load cudatoolkit/12.4",
            "source activate /pscratch/sd/c/cyrusyc/.conda/mlip-arena",
        ],
        job_directives_skip=["-n", "--cpus-per-task", "-J"],
        job_extra_directives=[
            "-J eos_bulk",
            "-q regular",
            f"-N {nodes_per_alloc}",
            "-C gpu",
            f"-G {gpus_per_alloc}",
            # "--exclusive",
        ],
    )

    cluster = module.SLURMCluster(**cluster_kwargs)
    return cluster
