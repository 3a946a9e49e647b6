"""ARGO-DeepMSI's LazySlide guide: GPU feature extraction of whole-slide images, one GPU per SLURM job.

Source: mat10d/ARGO-DeepMSI, docs/lazyslide_reference_guide.md at commit
4512c32839f6763dcdf71eac4ef167629fc65461, the ``SLURMCluster`` of the Dask section ("ADAPT THESE TO YOUR
CLUSTER") (https://github.com/mat10d/ARGO-DeepMSI/blob/4512c32839f6763dcdf71eac4ef167629fc65461/docs/lazyslide_reference_guide.md).
Date: not shown.
Batch system: SLURM (partition ``nvidia-2080ti-20``).
Meant: one GPU per job (``--gres=gpu:1`` in ``job_extra_directives``, next to a ``--time`` directive), one
worker per job with a ``GPU=1`` resource (``worker_extra_args=["--resources GPU=1"]``, one item with a
space), the tasks submitted with ``resources={"GPU": 1}``; conda activated in ``job_script_prologue``.
"""

SOURCE = {
    "repo": "mat10d/ARGO-DeepMSI",
    "path": "docs/lazyslide_reference_guide.md",
    "commit": "4512c32839f6763dcdf71eac4ef167629fc65461",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "--gres=gpu:1 and --time in job_extra_directives, --resources GPU=1 as one item"}


def make(module):
    cluster = module.SLURMCluster(
        queue="nvidia-2080ti-20",
        cores=8,
        processes=1,
        memory="64 GB",
        job_extra_directives=["--gres=gpu:1", "--time=12:00:00"],
        worker_extra_args=["--resources GPU=1"],
        log_directory="./dask-logs",
        job_script_prologue=[
            "source /lab/barcheese01/mdiberna/miniconda3/etc/profile.d/conda.sh",
            "conda activate argo",
            "export HF_HOME=/lab/barcheese01/mdiberna/ARGO-DeepMSI/.huggingface_cache",
        ],
    )
    return cluster
