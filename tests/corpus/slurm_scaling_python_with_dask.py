"""The book "Scaling Python with Dask" (Holden Karau, Mika Kimmins): a SLURM cluster of one-GPU jobs.

Source: scalingpythonml/scaling-python-with-dask, examples/dask/Dask-Ch14-Tuning.py at commit
0cbd4ea23a429d0468d00ebc2f8e902305583167, tag ``ex_deploy_SLURM_by_hand``
(https://github.com/scalingpythonml/scaling-python-with-dask/blob/0cbd4ea23a429d0468d00ebc2f8e902305583167/examples/dask/Dask-Ch14-Tuning.py).
Date: not shown.
Batch system: SLURM.
Meant: one GPU per job (``--gres=gpu:1``), one worker per job with a ``GPU=1`` resource, the worker
started through ``srun -n 1 -c 1 python`` (``python=`` launcher prefix), ``--mem`` removed from the
header (``job_directives_skip``). Published call: ``create_slurm_clusters(cores=4, processes=1, workers=4)``;
the function then calls ``cluster.start_workers(workers)``, which is not part of building the cluster.
"""

SOURCE = {
    "repo": "scalingpythonml/scaling-python-with-dask",
    "path": "examples/dask/Dask-Ch14-Tuning.py",
    "commit": "0cbd4ea23a429d0468d00ebc2f8e902305583167",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1, one worker with GPU=1, srun launcher"}


def make(module):
    def create_slurm_clusters(
        cores, processes, workers, memory="16GB", queue="regular", account="slurm_account", username="mkimmins"
    ):
        cluster = module.SLURMCluster(
            # ensure walltime request is reasonable within your specific cluster
            walltime="04:00:00",
            queue=queue,
            account=account,
            cores=cores,
            processes=processes,
            memory=memory,
            worker_extra_args=["--resources GPU=1"],
            job_extra=["--gres=gpu:1"],
            job_directives_skip=["--mem", "another-string"],
            job_script_prologue=["/your_path/pre_run_script.sh", "source venv/bin/activate"],
            interface="ib0",
            log_directory="dask_slurm_logs",
            python=f"srun -n 1 -c {processes} python",
            local_directory=f"/dev/{username}",
            death_timeout=300,
        )
        return cluster

    return create_slurm_clusters(cores=4, processes=1, workers=4)
