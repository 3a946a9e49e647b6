"""NIAID's image portal workflows (electron microscopy, Prefect): the GPU cluster that runs IMOD's batchruntomo.

Source: niaid/image_portal_workflows, em_workflows/config.py at commit
026a12fd48875ac1ac789caad8f1611a4bbce2a4, ``SLURM_exec()`` (the ``cluster_class`` of the flows'
``DaskTaskRunner``)
(https://github.com/niaid/image_portal_workflows/blob/026a12fd48875ac1ac789caad8f1611a4bbce2a4/em_workflows/config.py).
Date: not shown.
Batch system: SLURM (Rocky Mountain Laboratories HPC, partition ``gpu``, as the file's paths say).
Meant: one GPU per job (``--gres=gpu:1``), one worker of 60 threads per job ("For some reason processes > 1
crash BRT"), 4 hours, one job.
"""

SOURCE = {
    "repo": "niaid/image_portal_workflows",
    "path": "em_workflows/config.py",
    "commit": "026a12fd48875ac1ac789caad8f1611a4bbce2a4",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1, cores=60, processes=1"}


def make(module):
    cluster = module.SLURMCluster(
        name="dask-worker",
        cores=60,
        memory="32G",
        processes=1,
        death_timeout=121,
        local_directory="/gs1/home/macmenaminpe/tmp/",
        queue="gpu",
        walltime="4:00:00",
        job_extra_directives=["--gres=gpu:1"],
    )
    return cluster
