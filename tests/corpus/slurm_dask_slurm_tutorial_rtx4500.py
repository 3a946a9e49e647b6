"""A Dask-on-SLURM tutorial (Cellpose segmentation): the GPU cluster of "G-GPUCluster", one RTX 4500 per job.

Source: jouyun/dask-slurm-tutorial, G-GPUCluster.ipynb at commit b8f3a38be3866934ee40bcdd57b30306199a0f31,
the ``SLURMCluster`` cell
(https://github.com/jouyun/dask-slurm-tutorial/blob/b8f3a38be3866934ee40bcdd57b30306199a0f31/G-GPUCluster.ipynb).
Date: not shown.
Batch system: SLURM (partition ``gpu``).
Meant: one RTX 4500 per job (``--gres=gpu:rtx4500:1``, a typed GRES) under the matching QOS
(``--qos=rtx4500``), one single-threaded worker of 64GB per job, six jobs.
"""

SOURCE = {
    "repo": "jouyun/dask-slurm-tutorial",
    "path": "G-GPUCluster.ipynb",
    "commit": "b8f3a38be3866934ee40bcdd57b30306199a0f31",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:rtx4500:1 and --qos=rtx4500"}


def make(module):
    cluster = module.SLURMCluster(
        cores=1,  # Number of cores per job
        memory="64GB",  # Memory per job
        queue="gpu",  # Queue/partition name
        walltime="22:00:00",  # Job time limit
        local_directory="$TMPDIR",  # Temporary directory (optional)
        log_directory="logs",  # Directory for log files (optional)
        job_extra_directives=[
            "--gres=gpu:rtx4500:1",  # Number of GPUs per job
            "--qos=rtx4500",  # Quality of Service for GPU jobs
        ],
    )
    return cluster
