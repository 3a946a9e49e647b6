"""SLURM: GPUs by ``--gpus-per-node``, ``--gres=gpu[:type]:N``, ``--gpus=[type:]N`` or the partition alone."""

from __future__ import annotations

import math
import re
import shutil
from typing import Any, Callable, Mapping

from ..cluster import GPUJobQueueCluster
from ..job import GPUJob
from ..job_status import JobStatus, run_query, unlisted
from ..keywords import INT, TEXT, Keyword
from . import register


def format_slurm_memory(nbytes: int) -> str:
    """Bytes as SLURM memory (binary units), rounded up: ``60G`` or ``1536M``."""
    mebibytes = math.ceil(nbytes / 2**20)
    return f"{mebibytes // 1024}G" if mebibytes % 1024 == 0 else f"{mebibytes}M"


def clusters_options(jobs: list[GPUJob]) -> list[str]:
    """``--clusters=NAME`` for jobs sent to another of SLURM's clusters (a site's ``clusters``), else nothing."""
    names = sorted({job.request.clusters for job in jobs if getattr(job, "request", None) and job.request.clusters})
    return [f"--clusters={','.join(names)}"] if names else []


class SLURMGPUJob(GPUJob):
    """A SLURM job of GPU workers, submitted with ``sbatch`` and cancelled with ``scancel``."""

    batch = "slurm"
    directive_prefix = "#SBATCH"
    # The header lines that set the walltime, which job_directives_skip must leave (or an extra directive give).
    walltime_directives = ("#SBATCH --time", "#SBATCH -t")
    submit_command = "sbatch"
    status_command = "squeue"
    cancel_command = "scancel"
    optional_commands = ("sacct", "scontrol")  # exit codes of ended jobs
    job_id_variable = "SLURM_JOB_ID"  # set inside a job
    config_name = "slurm"
    job_id_regexp = r"Submitted batch job (?P<job_id>\d+)"
    # sbatch's refusals for a per-user job limit (a QoS's MaxSubmitJobsPerUser, an association's
    # MaxSubmitJobs): the cluster holds the jobs and submits them as its jobs end (user_limits.py).
    # Not the line after them, "Job violates accounting/QOS policy": sbatch says it for size and time limits too.
    user_limit_refusals = (r"QOSMaxSubmitJobPerUserLimit", r"AssocMaxSubmitJobLimit")
    ended_states = frozenset(
        {
            "COMPLETED",
            "FAILED",
            "CANCELLED",
            "TIMEOUT",
            "NODE_FAIL",
            "PREEMPTED",
            "BOOT_FAIL",
            "DEADLINE",
            "OUT_OF_MEMORY",
            "SPECIAL_EXIT",
            "REVOKED",
        }
    )
    # Pending reasons that waiting does not clear: the job asks for more than the partition,
    # QoS or association allows (sbatch takes such jobs unless EnforcePartLimits is set).
    # ReqNodeNotAvail is not among them: it clears when a drained or reserved node returns.
    hopeless_reasons = frozenset(
        {
            "PartitionConfig",
            "PartitionNodeLimit",
            "PartitionTimeLimit",
            "BadConstraints",
            "InvalidQOS",
            "InvalidAccount",
            "QOSMaxWallDurationPerJobLimit",
            "QOSMaxCpuPerJobLimit",
            "QOSMaxGRESPerJob",
            "QOSMaxNodePerJobLimit",
            "QOSMaxMemoryPerJob",
            "AssocMaxWallDurationPerJobLimit",
            "AssocMaxCpuPerJobLimit",
            "AssocMaxNodesPerJobLimit",
            "AssocMaxGRESPerJob",
        }
    )
    array_task_variable = "SLURM_ARRAY_TASK_ID"
    array_size_limit = 1000  # MaxArraySize's default, 1001, allows indices up to 1000

    @classmethod
    def array_element_id(cls, array_id: str, index: int) -> str:
        return f"{array_id}_{index}"

    @classmethod
    def installed_version(cls, first_line: Callable[[list[str]], str | None]) -> str | None:
        """This machine's SLURM as ``gpujobqueue check`` reports it, or None where its commands are
        missing or are another batch system's; ``first_line`` runs a command and gives its first line."""
        if not shutil.which("sbatch"):
            return None
        line = first_line(["sbatch", "--version"]) or ""
        return line if re.match(r"slurm \S+$", line) else "slurm"

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: list[GPUJob]) -> list[str]:
        # --states=all: finished jobs too, for as long as slurmctld keeps them (MinJobAge);
        # --array: one line per array element (A_7), not one per pending array (A_[7-9]).
        # With --clusters squeue heads each cluster's lines with "CLUSTER: name", which has no fields.
        return [
            "squeue",
            *clusters_options(jobs),
            "--noheader",
            "--array",
            "--states=all",
            f"--jobs={','.join(job_ids)}",
            "--format=%i|%T|%r|%N",
        ]

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        if code != 0 and "Invalid job id" not in err:  # an unknown id alone is an answer: it ended long ago
            return None
        listed = {}
        for line in out.splitlines():
            fields = line.strip().split("|")
            if len(fields) == 4:
                job_id, state, reason, nodes = fields
                listed[job_id] = JobStatus(
                    job_id, state, ended=state in cls.ended_states, reason=reason, nodes=nodes or None
                )
        return {job_id: listed.get(job_id) or unlisted(job_id) for job_id in job_ids}

    @classmethod
    def cancel_commands(cls, jobs: list[GPUJob]) -> list[list[str]]:
        # scancel finds jobs of another cluster (a site's clusters) only when told which
        commands = super().cancel_commands(jobs)
        return [[command[0], *clusters_options(jobs), *command[1:]] for command in commands]

    async def query_exit_code(self) -> int | None:
        clusters = clusters_options([self])
        code, out, _ = await run_query(["scontrol", *clusters, "show", "job", "--oneliner", str(self.job_id)])
        if code != 0:  # purged from slurmctld: accounting may still know it
            accounting = ["sacct", *clusters, "--jobs", str(self.job_id), "--noheader", "--parsable2", "--allocations"]
            code, out, _ = await run_query([*accounting, "--format=ExitCode"])
            match = re.match(r"\s*(\d+):(\d+)", out) if code == 0 else None
        else:
            match = re.search(r"\bExitCode=(\d+):(\d+)", out)
        if match is None:
            return None
        status, signal = int(match.group(1)), int(match.group(2))
        return 128 + signal if signal else status

    def log_paths(self) -> list[str]:
        if self.log_directory:
            return [
                self._log_file(f"{self.job_name}-{self.job_id}.out"),
                self._log_file(f"{self.job_name}-{self.job_id}.err"),
            ]
        return [self._log_file(f"slurm-{self.job_id}.out")]


@register
class SLURMGPUCluster(GPUJobQueueCluster):
    __doc__ = """A Dask cluster of GPU workers submitted to SLURM.

    Takes every keyword of :class:`dask_jobqueue.SLURMCluster` with the same meaning, and
    the GPU keywords of :class:`~gpujobqueue.cluster.GPUJobQueueCluster`.

    Parameters
    ----------
    qos : str
        ``--qos``.
    constraint : str
        ``--constraint``, e.g. ``gpu`` or ``a100&hbm80g``.
    partition : str
        A synonym of ``queue`` (``--partition``).
    job_cpu : int
        dask-jobqueue's ``--cpus-per-task``: the job's cores, instead of ``cores``.
    job_mem : str
        dask-jobqueue's raw ``--mem`` value (``10G``, ``4000``), instead of ``memory``.

    Examples
    --------
    >>> cluster = SLURMGPUCluster(gpus_per_node=4, queue="gpu", account="m1234", walltime="01:00:00")
    >>> cluster.scale(gpus=8)  # two 4-GPU jobs, eight CUDA workers
    """
    job_cls = SLURMGPUJob
    batch_keywords = (
        Keyword("qos", TEXT, "SLURM quality of service."),
        Keyword("constraint", TEXT, "SLURM node features (--constraint), e.g. gpu&hbm80g."),
        Keyword("job_cpu", INT, "SLURM --cpus-per-task as written, as dask-jobqueue's job_cpu."),
        Keyword("job_mem", TEXT, "SLURM --mem as written, as dask-jobqueue's job_mem."),
    )
    batch_synonyms = {"partition": "queue"}
    # gpus: --gpus=[TYPE:]N for a one-node job (Kestrel's documented form), --gpus-per-node for more nodes
    gpu_request_styles = ("gpus-per-node", "gres", "gpus", "none")
    account_flags = ("--account",)
    clusters_option = "--clusters"
    # The launchers that start one task per node of its jobs (the site schema and keywords accept these).
    launchers = ("srun", "ibrun", "mpiexec-openmpi", "mpiexec-mpich")
    # A job of several nodes that names no launcher: srun, one task per node of the allocation.
    native_launcher = "srun"
    template_filters = {"slurm_memory": format_slurm_memory}  # used by slurm.sh.j2

    @classmethod
    def site_settings(
        cls, *, entry: Mapping[str, Any], gpu: Mapping[str, Any], directives: Mapping[str, Any]
    ) -> dict[str, Any]:
        """This batch system's keywords from a site's queue ``entry``, its ``gpu_request`` and ``directives``
        (the queue's over the site's); None values are dropped by the caller."""
        return {"qos": entry.get("qos"), "constraint": entry.get("constraint") or directives.get("constraint")}
