"""NeSI's Dask demos (New Zealand eScience Infrastructure): the GPU cluster of the NZRSE hyper-parameter demo.

Source: nesi/dask_demos, src/hyperparameters_search_nzrse.py at commit
42415a5cf11e7c9748617b0baef859e84598bed6, the second ``SLURMCluster`` ("TODO GPU cluster"), built after the
CPU cluster is closed
(https://github.com/nesi/dask_demos/blob/42415a5cf11e7c9748617b0baef859e84598bed6/src/hyperparameters_search_nzrse.py).
Date: not shown.
Batch system: SLURM (NeSI Mahuika, partition ``gpu``).
Meant: one GPU per job (``--gres gpu:1``, with a space, through the old ``job_extra``) for a skorch/PyTorch
model, one worker of 4 threads per job, a walltime written ``0-00:30`` (days-hours:minutes). The script set
the two ``distributed.worker.memory`` options below with ``dask.config.set`` before its first cluster; they
are in effect for this one.
"""

SOURCE = {
    "repo": "nesi/dask_demos",
    "path": "src/hyperparameters_search_nzrse.py",
    "commit": "42415a5cf11e7c9748617b0baef859e84598bed6",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres gpu:1 with a space through job_extra, walltime 0-00:30"}
CONFIG_YAML = """
distributed:
  worker:
    memory:
      target: False  # avoid spilling to disk
      spill: False  # avoid spilling to disk
"""


def make(module):
    cluster = module.SLURMCluster(
        cores=4,
        processes=1,
        memory="4GiB",
        walltime="0-00:30",
        log_directory="../dask/logs",  # folder for SLURM logs for each worker
        local_directory="../dask",  # folder for workers data
        job_extra=["--gres gpu:1"],
        queue="gpu",
    )
    return cluster
