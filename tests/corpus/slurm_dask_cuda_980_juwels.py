"""dask-cuda issue 980: a SLURMCluster on JUWELS whose jobs each take a node's four GPUs.

Source: https://github.com/rapidsai/dask-cuda/issues/980 ("launching dask-cuda LocalCUDACluster
within SLURMCluster", opened by shambakey1).
Date: 2022-08-23.
Batch system: SLURM (JUWELS, Jülich).
Meant: four GPUs per job (``--gres gpu:4``, written with a space), two worker processes per job,
``nanny=False`` (the author starts a LocalCUDACluster inside a task), dashboard on port 56755,
``death_timeout`` as a duration string, a ``python=`` of the author's kernel environment.
``n_workers=2`` submits at construction.
"""

import os

SOURCE = {
    "url": "https://github.com/rapidsai/dask-cuda/issues/980",
    "date": "2022-08-23",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 4, "note": "--gres gpu:4, processes=2, nanny=False, n_workers=2"}


def make(module):
    queue = "gpus"  # batch, gpus, develgpus, etc.
    project = "deepacf"  # your project: zam, training19xx, etc.
    port = 56755

    cluster = module.SLURMCluster(
        n_workers=2,
        cores=1,
        processes=2,
        memory="5GB",
        shebang="#!/usr/bin/env bash",
        queue=queue,
        scheduler_options={"dashboard_address": ":" + str(port)},
        walltime="00:30:00",
        local_directory="/tmp",
        death_timeout="30m",
        log_directory=f"{os.environ['HOME']}/dask_jobqueue_logs",
        interface="ib0",
        project=project,
        python="/p/home/jusers/elshambakey1/juwels/jupyter/kernels/dg_rr_analytics/bin/python",
        nanny=False,
        job_extra=["--gres gpu:4"],
    )
    return cluster
