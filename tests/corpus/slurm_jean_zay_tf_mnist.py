"""The Jean Zay users' documentation: TensorFlow MNIST training on GPUs through dask-jobqueue.

Source: jean-zay-users/jean-zay-doc, examples/tf/dask_script.py at commit
45fde29909042efa5a0a71204b797ae40a563497, ``launch_dask_tasks`` with its default ``n_gpus=1``
(https://github.com/jean-zay-users/jean-zay-doc/blob/45fde29909042efa5a0a71204b797ae40a563497/examples/tf/dask_script.py).
Date: not shown.
Batch system: SLURM (Jean Zay, IDRIS).
Meant: one GPU per job (``--gres=gpu:1`` with the ``qos_gpu-dev`` QoS), 10 CPUs booked
(``job_cpu``) for one core's worker, a ``GPU=1`` resource, modules loaded in ``env_extra``.
``n_workers=n_gpus`` submits at construction.
"""

SOURCE = {
    "repo": "jean-zay-users/jean-zay-doc",
    "path": "examples/tf/dask_script.py",
    "commit": "45fde29909042efa5a0a71204b797ae40a563497",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1, job_cpu=10, GPU=1 resource, n_workers=1"}


def make(module):
    n_gpus = 1
    job_name = "dask_mnist_tf_example"
    if n_gpus > 1:
        job_name += "_multi_gpus"

    cluster = module.SLURMCluster(
        n_workers=n_gpus,
        cores=n_gpus,
        job_cpu=10,
        memory="10GB",
        job_name=job_name,
        walltime="1:00:00",
        interface="ib0",
        job_extra=[
            f"--gres=gpu:{n_gpus}",
            "--qos=qos_gpu-dev",
            "--distribution=block:block",
            "--hint=nomultithread",
            "--output=%x_%j.out",
        ],
        env_extra=[
            "module purge",
            "module load tensorflow-gpu/py3/2.1.0",
        ],
        extra=[f"--resources GPU={n_gpus}"],
    )
    return cluster
