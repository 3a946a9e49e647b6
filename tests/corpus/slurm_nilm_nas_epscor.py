"""NILM_NAS: a genetic-algorithm search on GPU workers, ``--gpus-per-task`` written with a space.

Source: zhiruiluo/NILM_NAS, run/dask_launcher.py at commit 0104b9a3960269e92c64e27403ec756a08b81aa0, ``cli()``
(https://github.com/zhiruiluo/NILM_NAS/blob/0104b9a3960269e92c64e27403ec756a08b81aa0/run/dask_launcher.py).
Date: not shown.
Batch system: SLURM (partition ``epscor``).
Meant: one GPU per job through ``--gpus-per-task 1`` (the option and its value separated by a space), memory
asked per CPU (``--mem-per-cpu 2G``) with dask-jobqueue's ``--mem`` skipped (``job_directives_skip``), 8 cores
and one worker per job, logs in a folder stamped with the launch time (a ``pathlib.Path``).
"""

import time
from pathlib import Path

SOURCE = {
    "repo": "zhiruiluo/NILM_NAS",
    "path": "run/dask_launcher.py",
    "commit": "0104b9a3960269e92c64e27403ec756a08b81aa0",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gpus-per-task 1 with a space, --mem skipped for --mem-per-cpu"}


def make(module):
    exp_name = "DASK"
    log_root = Path("logging/")
    log_directory = log_root.joinpath(
        "{}_{}".format(exp_name, time.strftime("%m%d_%H%M", time.localtime())),
    )

    cluster = module.SLURMCluster(
        queue="epscor",
        # account='zluo_epscor',
        # n_workers=8,
        memory="8g",
        cores=8,
        # processes=8,
        walltime="24:00:00",
        log_directory=log_directory,
        job_directives_skip=["--mem"],
        job_extra_directives=["--gpus-per-task 1", "--mem-per-cpu 2G"],
        # worker_extra_args=["--resources GPU=1"]
    )
    return cluster
