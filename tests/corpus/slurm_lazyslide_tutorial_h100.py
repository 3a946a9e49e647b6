"""LazySlide's multiple-slides tutorial: whole-slide-image feature extraction, one H100 per SLURM job.

Source: rendeirolab/LazySlide, docs/source/tutorial/03_multiple_slides.ipynb at commit
0409b6a6e7e24142cd3c28da77ecdc516af12038, the ``SLURMCluster`` cell of "Distributed processing with dask"
(https://github.com/rendeirolab/LazySlide/blob/0409b6a6e7e24142cd3c28da77ecdc516af12038/docs/source/tutorial/03_multiple_slides.ipynb).
Date: not shown (the notebook's Client output was made on 2025-04-02).
Batch system: SLURM (partition ``gpu``).
Meant: "run one task on one GPU every time": one H100 per job asked by a typed GRES (``--gres=gpu:h100pcie:1``)
beside a ``gpu`` QOS (``-q gpu``) and a ``--time`` directive in ``job_extra_directives``, one worker of 8
threads per job with a ``GPU=1`` resource (``worker_extra_args=["--resources GPU=1"]``, one item with a space),
the slides submitted with ``resources={"GPU": 1}``; ``cluster.scale(3)``. (ARGO-DeepMSI's guide,
slurm_argo_deepmsi_lazyslide, adapts this cell to its own cluster.)
"""

SOURCE = {
    "repo": "rendeirolab/LazySlide",
    "path": "docs/source/tutorial/03_multiple_slides.ipynb",
    "commit": "0409b6a6e7e24142cd3c28da77ecdc516af12038",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 1, "note": "-q gpu, --gres=gpu:h100pcie:1, --time in job_extra_directives, --resources GPU=1"}


def make(module):
    cluster = module.SLURMCluster(
        queue="gpu",
        cores=8,
        processes=1,
        memory="20 GB",
        job_extra_directives=["-q gpu", "--gres=gpu:h100pcie:1", "--time=02:00:00"],
        worker_extra_args=["--resources GPU=1"],
        log_directory="./dask-logs",
    )
    return cluster
