"""dask-jobqueue issue 352, "Use Expert Mode for LSFCluster?": Summit jobs in CSM expert mode.

Source: https://github.com/dask/dask-jobqueue/issues/352 (opened by lesteve).
Date: 2019-10-15.
Batch system: LSF with CSM (Summit).
Meant: submit in expert mode (``-csm y``) so that the ``-n``/``-R`` lines dask-jobqueue writes are
accepted; CPU workers on 128-core nodes.
"""

SOURCE = {"url": "https://github.com/dask/dask-jobqueue/issues/352", "date": "2019-10-15"}
BATCH = "lsf"
MEANT = {"gpus_per_job": 0, "note": "-csm y expert mode, CPU workers"}


def make(module):
    cluster = module.LSFCluster(cores=128, memory="600 GB", project="GEN119", walltime="00:30", job_extra=["-csm y"])
    return cluster
