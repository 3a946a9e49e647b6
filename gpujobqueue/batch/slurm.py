"""SLURM: GPUs by ``--gpus-per-node``, ``--gres=gpu[:type]:N`` or the partition alone."""

from __future__ import annotations

from ..cluster import GPUJobQueueCluster
from ..job import GPUJob


class SLURMGPUJob(GPUJob):
    """A SLURM job of GPU workers, submitted with ``sbatch`` and cancelled with ``scancel``."""

    batch = "slurm"
    directive_prefix = "#SBATCH"
    submit_command = "sbatch"
    cancel_command = "scancel"
    config_name = "slurm"
    job_id_regexp = r"Submitted batch job (?P<job_id>\d+)"
    ended_states = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                              "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"})

    @classmethod
    def state_command(cls, job_id: str) -> list[str]:
        return ["squeue", "--noheader", "--jobs", job_id, "--format", "%T"]


class SLURMGPUCluster(GPUJobQueueCluster):
    __doc__ = """A Dask cluster of GPU workers submitted to SLURM.

    Takes every keyword of :class:`dask_jobqueue.SLURMCluster` with the same meaning, and
    the GPU keywords of :class:`~gpujobqueue.cluster.GPUJobQueueCluster`.

    Examples
    --------
    >>> cluster = SLURMGPUCluster(gpus_per_node=4, queue="gpu", account="m1234", walltime="01:00:00")
    >>> cluster.scale(gpus=8)  # two 4-GPU jobs, eight CUDA workers
    """
    job_cls = SLURMGPUJob
    batch_keywords = ("qos", "constraint", "job_cpu", "job_mem")
    batch_synonyms = {"partition": "queue"}
    gpu_request_styles = ("gpus-per-node", "gres", "none")
