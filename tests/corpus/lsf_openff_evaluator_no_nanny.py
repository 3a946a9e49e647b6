"""OpenFF Evaluator: the GPU worker its DaskLSFBackend asks of LSF with ``disable_nanny_process=True`` (``--no-nanny``).

Source: openforcefield/openff-evaluator, openff/evaluator/backends/dask.py at commit
03c0580bc7836dc40f522a06c1b814a14a358c2d: ``BaseDaskJobQueueBackend.start`` writes
``extra = None if not self._disable_nanny_process else ["--no-nanny"]`` and passes it as dask-jobqueue's
``extra``; ``disable_nanny_process`` is a documented keyword of ``DaskLSFBackend`` ("If true, dask workers will
be started in `--no-nanny` mode. This is required if using multiprocessing code within submitted tasks.")
(https://github.com/openforcefield/openff-evaluator/blob/03c0580bc7836dc40f522a06c1b814a14a358c2d/openff/evaluator/backends/dask.py).
The earlier propertyestimator ``DaskLSFBackend`` (openforcefield/propertyestimator) has the same line.
Date: not shown.
Batch system: LSF (queue ``gpuqueue``, hosts ``ls-gpu lt-gpu``; MSKCC lilac).
Meant: as lsf_openff_evaluator_gpu (the docstring example: one GPU per job through
``-gpu num=1:j_exclusive=yes:mode=shared:mps=no:``, one single-threaded worker, ``module load cuda/9.2``,
five hours as ``05:00``), with the backend's ``disable_nanny_process=True``: the worker started without a
nanny through the old ``extra`` keyword, ``extra=["--no-nanny"]`` (the idiom from before dask-jobqueue's
``nanny`` keyword). ``make`` writes out the keywords ``start()`` passes for that call; the memory is the default
``per_thread_memory_limit`` of 1 GB, written ``1000000000.0B`` and passed again as ``mem`` in bytes.
"""

SOURCE = {
    "repo": "openforcefield/openff-evaluator",
    "path": "openff/evaluator/backends/dask.py",
    "commit": "03c0580bc7836dc40f522a06c1b814a14a358c2d",
    "date": "date not shown",
}
BATCH = "lsf"
MEANT = {
    "gpus_per_job": 1,
    "note": "extra=['--no-nanny'] (disable_nanny_process=True), -gpu num=1:...:mps=no:, gpuqueue",
}


def make(module):
    job_extra = []  # dask.config.get("jobqueue.lsf.job-extra", default=[])
    job_extra.extend(['-m "ls-gpu lt-gpu"'])  # extra_script_options
    job_extra.append("-gpu num={}:j_exclusive=yes:mode=shared:mps=no:".format(1))  # DaskLSFBackend._get_job_extra
    env_extra = []  # dask.config.get("jobqueue.lsf.env-extra", default=[])
    env_extra.extend(["module load cuda/9.2"])  # setup_script_commands
    disable_nanny_process = True
    extra = None if not disable_nanny_process else ["--no-nanny"]
    return module.LSFCluster(
        queue="gpuqueue",
        cores=1,
        memory="1000000000.0B",
        walltime="05:00",
        job_extra=job_extra,
        env_extra=env_extra,
        extra=extra,
        local_directory="dask-worker-space",
        mem=1000000000.0,
    )
