"""OpenFF Evaluator: the GPU worker its DaskLSFBackend asks of LSF (MSKCC lilac), one GPU per job.

Source: openforcefield/openff-evaluator, openff/evaluator/backends/dask.py at commit
03c0580bc7836dc40f522a06c1b814a14a358c2d, the example in ``DaskLSFBackend.__init__``'s docstring ("To create an
LSF queueing compute backend which will attempt to spin up workers which have access to a single GPU")
and the ``LSFCluster`` call that ``BaseDaskJobQueueBackend.start`` makes from it
(https://github.com/openforcefield/openff-evaluator/blob/03c0580bc7836dc40f522a06c1b814a14a358c2d/openff/evaluator/backends/dask.py).
Date: not shown.
Batch system: LSF (queue ``gpuqueue``, hosts ``ls-gpu lt-gpu``).
Meant: one GPU per job, written as the backend writes it, ``-gpu num=1:j_exclusive=yes:mode=shared:mps=no:``
(the trailing colon included), one single-threaded worker per job. The keywords are those ``start()`` passes
for the docstring's ``QueueWorkerResources(number_of_threads=1, number_of_gpus=1, wallclock_time_limit='05:00')``
(the default ``per_thread_memory_limit`` of 1 GB, which ``start()`` writes ``f"{...to(unit.byte):~}"`` without
the space, ``1000000000.0B``, and passes as ``mem`` in bytes), the docstring's ``setup_script_commands`` and
``extra_script_options``, and the configuration's ``job-extra``/``env-extra`` lists as they were then (empty;
dask-jobqueue 0.9 has them ``null``, which the backend's ``.extend`` would not take).
"""

SOURCE = {
    "repo": "openforcefield/openff-evaluator",
    "path": "openff/evaluator/backends/dask.py",
    "commit": "03c0580bc7836dc40f522a06c1b814a14a358c2d",
    "date": "date not shown",
}
BATCH = "lsf"
MEANT = {"gpus_per_job": 1, "note": "-gpu num=1:j_exclusive=yes:mode=shared:mps=no: (trailing colon), gpuqueue"}


def make(module):
    job_extra = []  # dask.config.get("jobqueue.lsf.job-extra", default=[])
    job_extra.extend(['-m "ls-gpu lt-gpu"'])  # extra_script_options
    job_extra.append("-gpu num={}:j_exclusive=yes:mode=shared:mps=no:".format(1))  # DaskLSFBackend._get_job_extra
    env_extra = []  # dask.config.get("jobqueue.lsf.env-extra", default=[])
    env_extra.extend(["module load cuda/9.2"])  # setup_script_commands
    return module.LSFCluster(
        queue="gpuqueue",
        cores=1,
        memory="1000000000.0B",
        walltime="05:00",
        job_extra=job_extra,
        env_extra=env_extra,
        extra=None,
        local_directory="dask-worker-space",
        mem=1000000000.0,
    )
