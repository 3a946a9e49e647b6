"""NCAR's GPU workshop notebook: "Using Dask with GPUs via CuPy", one A100 per PBS job on Casper.

Source: NCAR/GPU_workshop, 13_DaskGPU/13_DaskGPU.ipynb at commit 43cea62140ad8b0d44b64c3de5faef81ac75341c,
section "Scheduling GPUs with dask-jobqueue"
(https://github.com/NCAR/GPU_workshop/blob/43cea62140ad8b0d44b64c3de5faef81ac75341c/13_DaskGPU/13_DaskGPU.ipynb).
Date: August 11th 2022 (the workshop session the notebook names).
Batch system: PBS Pro (NCAR Casper).
Meant: one GPU per job (``ngpus=1`` in the select line of ``resource_spec``, ``-l gpu_type=a100`` in
``job_extra``), one single-threaded worker per job, GPU pinning "done implicitly through job GPU
assignment".
"""

SOURCE = {
    "repo": "NCAR/GPU_workshop",
    "path": "13_DaskGPU/13_DaskGPU.ipynb",
    "commit": "43cea62140ad8b0d44b64c3de5faef81ac75341c",
    "date": "2022-08-11",
}
BATCH = "pbs"
MEANT = {"gpus_per_job": 1, "note": "select ... ngpus=1 and -l gpu_type=a100"}


def make(module):
    cluster = module.PBSCluster(
        cores=1,
        memory="35GiB",
        processes=1,
        resource_spec="select=1:ncpus=1:mem=35GB:ngpus=1",
        job_extra=["-l gpu_type=a100"],
        queue="preview",
        walltime="10:00",
        interface="ib0",
    )
    return cluster
