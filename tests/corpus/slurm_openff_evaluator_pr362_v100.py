"""OpenFF Evaluator's SLURM backend as its author tried it (pull request 362): GPU workers on ``free-gpu``.

Source: https://github.com/openforcefield/openff-evaluator/pull/362 (opened by pavankum), the code in its
description that builds a ``DaskSLURMBackend`` and prints its job script, with the ``SLURMCluster`` call that
``BaseDaskJobQueueBackend.start`` makes from it in openff/evaluator/backends/dask.py at commit
03c0580bc7836dc40f522a06c1b814a14a358c2d
(https://github.com/openforcefield/openff-evaluator/blob/03c0580bc7836dc40f522a06c1b814a14a358c2d/openff/evaluator/backends/dask.py).
Date: 2021-08-17.
Batch system: SLURM (UC Irvine HPC3, partition ``free-gpu``).
Meant: GPU workers, each asking 1 thread and ``number_of_gpus=1``; the job asks the GPUs by hand with a typed
GRES, ``--gres=gpu:V100:4``, beside ``--account=account-name`` (``extra_script_options``). ``start()`` writes the
1 GB per thread as ``f"{...to(unit.byte):~}"`` without the space, ``1000000000.0B``; the configuration's
``job-extra``/``env-extra`` lists are taken as they were then (empty).
"""

SOURCE = {"url": "https://github.com/openforcefield/openff-evaluator/pull/362", "date": "2021-08-17"}
BATCH = "slurm"
MEANT = {"gpus_per_job": 4, "note": "--gres=gpu:V100:4 by hand, one single-threaded worker per job"}


def make(module):
    setup_script_commands = [
        "conda activate evaluator",
        "module load cuda/10.1.234",
    ]
    extra_script_options = ["--account=account-name", "--gres=gpu:V100:4"]

    job_extra = []  # dask.config.get("jobqueue.slurm.job-extra", default=[])
    job_extra.extend(extra_script_options)
    env_extra = []  # dask.config.get("jobqueue.slurm.env-extra", default=[])
    env_extra.extend(setup_script_commands)
    return module.SLURMCluster(
        queue="free-gpu",
        cores=1,
        memory="1000000000.0B",
        walltime="05:59",
        job_extra=job_extra,
        env_extra=env_extra,
        extra=None,
        local_directory="dask-worker-space",
    )
