"""Pawsey's vQPU hybrid workflow: the GPU cluster of Ella (Pawsey's Grace Hopper system).

Source: PawseySC/vqpu-hybrid-workflow, workflow/clusters/ella_clusters.py at commit
03b58d02404f8cc868c8ea184c0ef302135c9709, ``gpu_kwargs`` of ``GetEllaClusters()``
(https://github.com/PawseySC/vqpu-hybrid-workflow/blob/03b58d02404f8cc868c8ea184c0ef302135c9709/workflow/clusters/ella_clusters.py).
Date: not shown.
Batch system: SLURM (Pawsey Ella).
Meant: one GPU per job (``--gres=gpu:1``) on the ``gpu`` partition, all of the node's memory
(``job_mem="0"``), ``source ~/.bashrc`` before the worker.
"""

SOURCE = {
    "repo": "PawseySC/vqpu-hybrid-workflow",
    "path": "workflow/clusters/ella_clusters.py",
    "commit": "03b58d02404f8cc868c8ea184c0ef302135c9709",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1, whole-node memory (job_mem 0)"}


def make(module):
    gpu_kwargs = {
        "queue": "gpu",
        "cores": 70,
        "memory": "480 GB",
        "shebang": "#!/bin/bash",
        "account": "pawsey0001-gpu",
        "walltime": "24:00:00",
        "job_mem": "0",
        "job_script_prologue": ["source ~/.bashrc"],
        "job_directives_skip": [],
        "job_extra_directives": ["--gres=gpu:1"],
    }
    return module.SLURMCluster(**gpu_kwargs)
