"""A Dask-on-SLURM tutorial (Cellpose segmentation): the cluster of "D-Dask-GPU-Cluster", one GPU per job.

Source: jouyun/dask-slurm-tutorial, D-Dask-GPU-Cluster.ipynb at commit b00b588fcb383889d40c67c6ed90865e21df8a22,
"Setup SLURM cluster for Dask"
(https://github.com/jouyun/dask-slurm-tutorial/blob/b00b588fcb383889d40c67c6ed90865e21df8a22/D-Dask-GPU-Cluster.ipynb).
Date: not shown.
Batch system: SLURM (partition ``gpu``, account ``smc``).
Meant: one GPU per job (``--gres=gpu:1``; a ``--gpus=1`` alternative is commented out), one worker of 2
threads and 128GB per job, four jobs, each running Cellpose with ``gpu=True``.
"""

SOURCE = {
    "repo": "jouyun/dask-slurm-tutorial",
    "path": "D-Dask-GPU-Cluster.ipynb",
    "commit": "b00b588fcb383889d40c67c6ed90865e21df8a22",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1 on the gpu partition, account smc"}


def make(module):
    cluster = module.SLURMCluster(
        cores=2,  # Number of cores per job
        memory="128GB",  # Memory per job
        account="smc",  # Project/account name
        queue="gpu",  # Queue/partition name
        job_extra_directives=[
            # '--gpus=1',  # Number of GPUs per job
            "--gres=gpu:1",  # Number of GPUs per job
        ],
        walltime="02:00:00",  # Job time limit
        local_directory="$TMPDIR",  # Temporary directory (optional)
        log_directory="logs",  # Directory for log files (optional)
    )
    return cluster
