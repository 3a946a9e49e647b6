"""SoftSense and SteinSense (Stanford statistics): AMP experiments on Stanford Sherlock's GPUs through Dask.

Source: apd1995/SoftSense-and-SteinSense, run_steinsense_gaussian_nonzero_jaxcuda.py at commit
0f95d4e3094bac1b9b7f254f71e9b56291f829b7, ``do_sherlock_experiment``
(https://github.com/apd1995/SoftSense-and-SteinSense/blob/0f95d4e3094bac1b9b7f254f71e9b56291f829b7/run_steinsense_gaussian_nonzero_jaxcuda.py).
Date: 2025-07-16 (the file's "Created on" line).
Batch system: SLURM (Stanford Sherlock; six partitions in one ``queue``).
Meant: one GPU per job (``--gres=gpu:1``), restricted by a quoted feature constraint to A100 or H100 nodes
(``--constraint="GPU_SKU:A100_SXM4|GPU_SKU:H100_SXM5"``), one single-threaded worker per job, JAX's 64-bit mode in
the prologue; the job goes to whichever of ``donoho,gpu,stat,hns,owners,normal`` starts it first.
"""

SOURCE = {
    "repo": "apd1995/SoftSense-and-SteinSense",
    "path": "run_steinsense_gaussian_nonzero_jaxcuda.py",
    "commit": "0f95d4e3094bac1b9b7f254f71e9b56291f829b7",
    "date": "2025-07-16",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1 with a quoted GPU_SKU constraint, six partitions"}


def make(module):
    return module.SLURMCluster(
        queue="donoho,gpu,stat,hns,owners,normal",
        cores=1,
        memory="10GiB",
        processes=1,
        walltime="24:00:00",
        job_extra_directives=["--gres=gpu:1", '--constraint="GPU_SKU:A100_SXM4|GPU_SKU:H100_SXM5"'],
        job_script_prologue=["module load cuda/12.6.1", "export JAX_ENABLE_X64=true"],
        death_timeout="60s",
    )
