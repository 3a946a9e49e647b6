"""HoloWizard (DESY, PETRA III): holopipe's SLURM GPU cluster on Maxwell, ``--no-nanny``, a module/mamba prologue.

Source: DESY-FS-PETRA/holowizard, holowizard/pipe/cluster/slurm_cluster.py at commit
0d5fb58d8361c3d799d17e72c42c9f5983d442bc, ``SlurmCluster.create_cluster``
(https://github.com/DESY-FS-PETRA/holowizard/blob/0d5fb58d8361c3d799d17e72c42c9f5983d442bc/holowizard/pipe/cluster/slurm_cluster.py),
with the values of its Hydra config holowizard/pipe/scripts/config/cluster.yaml at commit
07298eb2fb0b527589443380b786c73925de92b1 (``queue: allgpu``, ``memory: 256GB``, ``walltime: "0-06:00:00"``,
``partitions: [allgpu, psgpu]``)
(https://github.com/DESY-FS-PETRA/holowizard/blob/07298eb2fb0b527589443380b786c73925de92b1/holowizard/pipe/scripts/config/cluster.yaml).
Date: not shown.
Batch system: SLURM (DESY Maxwell, partitions ``allgpu,psgpu``).
Meant: whole GPU nodes (``--constraint="A100|V100|P100"`` on the GPU partitions, no GPU count: the node's GPUs
are left to the queue), one single-threaded worker per job started without a nanny (``--no-nanny`` in
``worker_extra_args``, not ``nanny=False``), 256GB, six hours. The ``job_script_prologue`` loads Maxwell's
modules and activates the submitting mamba environment (``module load maxwell mamba``, ``source activate
base``, ``. mamba-init``, ``mamba activate <sys.prefix>``), then, as one multi-line item, checks for
``nvidia-smi`` (``return 1`` outside a function when it is missing) and starts one extra worker per GPU in the
background, pinned with ``CUDA_VISIBLE_DEVICES``, against the separate scheduler that holopipe starts itself
(``start_scheduler()``: a ``distributed.Scheduler`` in a thread; the stand-in below gives an address).
``slurm_output_path`` is ``cfg.paths.get("slurm_dir", "./slurm")``; the published paths.yaml has no
``slurm_dir``, so ``./slurm``. The ``logging`` calls and the client/scaling thread are left out.
"""

import sys

SOURCE = {
    "repo": "DESY-FS-PETRA/holowizard",
    "path": "holowizard/pipe/cluster/slurm_cluster.py",
    "commit": "0d5fb58d8361c3d799d17e72c42c9f5983d442bc",
    "date": "date not shown",
}
BATCH = "slurm"
MEANT = {
    "gpus_per_job": None,
    "note": "whole GPU node by --constraint, worker_extra_args=['--no-nanny'], module/mamba/nvidia-smi prologue",
}


def start_scheduler():
    """Stands for ``holowizard.pipe.cluster.scheduler.start_scheduler``: (thread, the scheduler's address)."""
    return None, "tcp://10.0.0.1:8786"


def make(module):
    # holowizard/pipe/scripts/config/cluster.yaml (the cluster section of the Hydra config)
    dask_cfg = {
        "slurm_dir": "slurm",
        "num_slurm_workers": 120,
        "check_interval": 2,
        "queue": "allgpu",
        "memory": "256GB",
        "walltime": "0-06:00:00",
        "partitions": ["allgpu", "psgpu"],
    }
    env = sys.prefix
    slurm_output_path = "./slurm"  # cfg.paths.get("slurm_dir", "./slurm")
    scheduler, scheduler_address = start_scheduler()

    partitions = dask_cfg["partitions"]
    partition_string = ",".join(partitions)

    return module.SLURMCluster(
        queue=dask_cfg.get("queue", "allgpu"),
        cores=1,
        processes=1,
        death_timeout=5,
        memory=dask_cfg.get("memory", "256GB"),
        walltime=dask_cfg.get("walltime", "2-00:00:00"),
        job_script_prologue=[
            'export LD_PRELOAD=""',
            "source /etc/profile.d/modules.sh",
            "module load maxwell mamba",
            "source activate base",
            ". mamba-init",
            f"mamba activate {env}",
            f"""
                if ! command -v nvidia-smi &> /dev/null; then
                    echo "nvidia-smi not found. Exiting."
                    return 1
                fi
                gpu_count=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
                echo "Detected $gpu_count GPUs."
                for i in $(seq 1 $gpu_count); do
                gpu_index=$((i - 1))
                CUDA_VISIBLE_DEVICES=$gpu_index \
                    python -m distributed.cli.dask_worker {scheduler_address} --nthreads 1 --memory-limit 256GB --preload holowizard.pipe.cluster.unset &
                done
                """,
        ],
        job_extra_directives=[
            f"--partition={partition_string}",
            f"--output={slurm_output_path}/slurm-%j.out",
            "--ntasks=1",
            "--nodes=1",
            '--constraint="A100|V100|P100"',
        ],
        worker_extra_args=["--no-nanny"],
    )
