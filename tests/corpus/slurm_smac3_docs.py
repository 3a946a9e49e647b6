"""SMAC3's documentation: a SLURM cluster of SMAC workers with fixed ports and no nanny.

Source: automl/SMAC3, docs/advanced_usage/9_parallelism.md at commit 397dc146b259739756a2e979c168fd2bbe12b36c,
"Parallelizing on SLURM"
(https://github.com/automl/SMAC3/blob/397dc146b259739756a2e979c168fd2bbe12b36c/docs/advanced_usage/9_parallelism.md).
Date: not shown.
Batch system: SLURM.
Meant: one CPU worker per job (no GPU), ``nanny=False``, workers on ports 60010-60100
(``worker_extra_args`` as two words), scheduler on port 60001.
"""

SOURCE = {
    "repo": "automl/SMAC3",
    "path": "docs/advanced_usage/9_parallelism.md",
    "commit": "397dc146b259739756a2e979c168fd2bbe12b36c",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 0, "note": "CPU workers, nanny=False, --worker-port range"}


def make(module):
    cluster = module.SLURMCluster(
        queue="partition_name",  # Name of the partition
        cores=4,  # CPU cores requested
        memory="4 GB",  # RAM requested
        walltime="00:10:00",  # Walltime limit for a runner job.
        processes=1,  # Number of processes per worker
        log_directory="tmp/smac_dask_slurm",  # Logging directory
        nanny=False,  # Whether dask restarts crashed workers
        worker_extra_args=[
            "--worker-port",  # Worker port range
            "60010:60100",
        ],  # Worker port range
        scheduler_options={
            "port": 60001,  # Main Job Port
        },
    )
    return cluster
