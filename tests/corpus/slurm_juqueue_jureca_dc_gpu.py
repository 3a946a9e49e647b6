"""JuQueue (a sweep runner on Dask, JSC): the experiment's cluster on JURECA's ``dc-gpu`` partition, four GPUs per job.

Source: tran-khoa/JuQueue, experiments/simclr_1layer.py at commit 54438ff808614051b8c3287eccedcc0aed62b6f4,
``Experiment.clusters["jureca-gpu"]``
(https://github.com/tran-khoa/JuQueue/blob/54438ff808614051b8c3287eccedcc0aed62b6f4/experiments/simclr_1layer.py).
Date: not shown.
Batch system: SLURM (JSC JURECA-DC, partition ``dc-gpu``, project ``jinm60``).
Meant: four GPUs per job (``job_extra=['--gres=gpu:4']``) and four workers (``processes=4``), one per GPU as the
experiment's ``GPUExecutor(gpus_per_node=4)`` says; workers on ``ib2``, the scheduler on ``ib0``; ``extra`` with
``--lifetime 24h`` and ``--resources slots=1`` as separate items; the modules in ``env_extra``. ``self.name`` is
the experiment's name, ``simclr_1layer``; ``self.path / "slurm-logs"`` stands here as a relative directory.
"""

SOURCE = {
    "repo": "tran-khoa/JuQueue",
    "path": "experiments/simclr_1layer.py",
    "commit": "54438ff808614051b8c3287eccedcc0aed62b6f4",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {"gpus_per_job": 4, "note": "--gres=gpu:4, processes=4, extra --lifetime 24h --resources slots=1"}


def make(module):
    name = "simclr_1layer"  # self.name
    return module.SLURMCluster(
        name=name,
        job_name=name,
        queue="dc-gpu",
        project="jinm60",
        cores=64,
        memory="500G",
        interface="ib2",
        scheduler_options={"interface": "ib0"},
        local_directory="/p/scratch/jinm60/tran4/dask",
        log_directory="slurm-logs",  # (self.path / "slurm-logs").as_posix()
        processes=4,
        walltime="24:00:00",
        extra=["--lifetime", "24h", "--resources", "slots=1"],
        job_extra=["--gres=gpu:4"],
        env_extra=[
            "module load CUDA/11.5",
            "module load Python/3.9.6",
            "module load cuDNN/8.3.1.22-CUDA-11.5",
            "module load PyTorch/1.11-CUDA-11.5",
            "module load torchvision/0.12.0-CUDA-11.5",
            "module load Pillow-SIMD/9.0.1",
            "module load SciPy-bundle/2021.10",
            "module load matplotlib/3.4.3",
            "module load typing-extensions/3.10.0.0",
            'echo "$(date) | Starting worker on $(hostname)" >> /p/scratch/jinm60/tran4/dask/workers.log',
        ],
    )
