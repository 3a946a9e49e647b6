"""dask-jobqueue issue 304: one GPU per SLURM job, each worker given a ``GPU=1`` resource to place the GPU tasks.

Source: https://github.com/dask/dask-jobqueue/issues/304 (opened by martiningram, "SLURM cluster running only one
worker when resources specified"), ``get_slurm_dask_client`` in its description, called there as
``get_slurm_dask_client(n_workers=4, n_cores=8, n_processes=1)``.
Date: 2019-07-30.
Batch system: SLURM (partition ``gpgpu``, account ``abc`` given through the old ``project`` keyword).
Meant: "each requires a GPU and should be placed on a separate worker": one GPU per job (``--gres=gpu:1`` through
the old ``job_extra``), one worker of 8 threads per job with a ``GPU=1`` resource (``--resources GPU=1`` as one
item of the old ``extra``), the GPU tasks submitted with ``resources={'GPU': 1}``; walltime in SLURM's
days-hours form ``1-0``. The issue's ``cluster.start_workers(n_workers)`` (dask-jobqueue before 0.7) is left out:
make() returns the cluster.
"""

SOURCE = {"url": "https://github.com/dask/dask-jobqueue/issues/304", "date": "2019-07-30"}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1 (job_extra), extra=['--resources GPU=1'], cores=8, walltime 1-0"}


def make(module):
    n_cores, n_processes = 8, 1  # get_slurm_dask_client(n_workers=4, n_cores=8, n_processes=1)

    cluster = module.SLURMCluster(
        cores=n_cores,
        processes=n_processes,
        memory="32GB",
        project="abc",
        walltime="1-0",
        extra=["--resources GPU=1"],
        queue="gpgpu",
        job_extra=["--gres=gpu:1"],
    )
    return cluster
