"""dask-jobqueue pull request 606, "Make cli worker parameter flexible": dask-cuda's worker through worker_command.

Source: https://github.com/dask/dask-jobqueue/pull/606 (opened by hmacdope; fixes dask-jobqueue issue 229).
Date: 2023-05-26.
Batch system: none (dask-jobqueue's ``LocalCluster``, the jobs run as local processes).
Meant: dask-cuda's worker (``python -m dask_cuda.cli``, one worker per GPU) in the place of
``distributed.cli.dask_worker``, the form the PR was written for.
"""

SOURCE = {"url": "https://github.com/dask/dask-jobqueue/pull/606", "date": "2023-05-26"}
BATCH = "local"
MEANT = {"gpus_per_job": None, "note": "worker_command='dask_cuda.cli' (one worker per visible GPU)"}


def make(module):
    lc_gpu = module.LocalCluster(worker_command="dask_cuda.cli", cores=2, memory="2GB")
    return lc_gpu
