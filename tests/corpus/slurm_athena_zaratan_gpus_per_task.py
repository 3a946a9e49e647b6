"""ATHENA (halo particle classification with XGBoost): A100 workers on UMD's Zaratan, a typed ``--gpus-per-task``.

Source: ZevVladimir/ATHENA, zaratan_train_xgboost_dask.py at commit 1a46b98e8ffa56675f62cfdb68863337a1514115,
``get_cluster``
(https://github.com/ZevVladimir/ATHENA/blob/1a46b98e8ffa56675f62cfdb68863337a1514115/zaratan_train_xgboost_dask.py).
In this version the script starts its workers with dask-mpi instead: ``from dask_jobqueue import SLURMCluster``
is commented out and ``get_cluster`` is not called; the function is taken as written.
Date: not shown.
Batch system: SLURM (UMD Zaratan, partition ``gpu``; the login node is named in the file).
Meant: one A100 per job asked per task with a typed count, ``--gpus-per-task=a100:1``, beside ``--nodes=1``;
``cores=4`` with dask-jobqueue's default split (two workers of two threads per job, both on the job's one GPU);
interface ``ib0``; eight jobs (``cluster.scale(jobs = num_jobs)``), ``num_gpu_per_job = 4`` left unused.
"""

SOURCE = {
    "repo": "ZevVladimir/ATHENA",
    "path": "zaratan_train_xgboost_dask.py",
    "commit": "1a46b98e8ffa56675f62cfdb68863337a1514115",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gpus-per-task=a100:1 and --nodes=1, cores=4 split by default, ib0"}


def make(module):
    num_gpu_per_job = 4  # noqa: F841 (unused in the source too)
    cluster = module.SLURMCluster(
        queue="gpu",
        cores=4,
        memory="300GB",
        walltime="01:00:00",
        interface="ib0",
        local_directory="/home/zvladimi/scratch/MLOIS/",
        log_directory="/home/zvladimi/scratch/MLOIS/dask_logs/",
        job_extra_directives=["--gpus-per-task=a100:1", "--nodes=1"],
    )
    return cluster
