"""SLURM: GPUs by ``--gpus-per-node``, ``--gres=gpu[:type]:N``, ``--gpus=[type:]N`` or the partition alone."""

from __future__ import annotations

import dataclasses
import re
import shutil
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import ValidationError
from ..handwritten.directives import DirectiveForm, walltime_form
from ..handwritten.gpu_parsers import HandWrittenGPUs, own_line, written_count
from ..jobs.job_status import JobStatus, local_epoch, run_query, unlisted
from ..jobs.launchers import LAUNCHER_OBJECTS
from ..jobs.queue_listing import (
    ListedQueue,
    ListingError,
    checked_size,
    listed_count,
    listed_queues,
    listed_walltime,
    queue_name,
)
from ..jobs.request import JobRequest
from ..settings.declaration import read_declared
from ..settings.keywords import INT, TEXT, Keyword, count
from ..settings.limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_NODES
from ..settings.validation import parse_constraint, parse_slurm_memory_text, parse_word
from .base import BatchSystem, SiteFacts, binary_memory

# Bytes as SLURM memory (binary units), rounded up: ``60G`` or ``1536M``.
format_slurm_memory = binary_memory("G", "M")


@dataclass(frozen=True)
class SLURMOptions:
    """SLURM's own settings of a job, as its keywords read them, and ``--clusters`` (a site's ``clusters``)."""

    qos: str | None
    constraint: str | None
    job_mem: str | None
    clusters: str | None = None  # the site's, set after


def clusters_options(jobs: Sequence[Any]) -> list[str]:
    """``--clusters=NAME`` for jobs sent to another of SLURM's clusters (a site's ``clusters``), else nothing."""
    names = sorted({job.request.options.clusters for job in jobs if job.request.options.clusters})
    return [f"--clusters={','.join(names)}"] if names else []


_SLURM_OPTION = re.compile(r"(?<![\w-])(--gres|--gpus-per-node|--gpus-per-task|--gpus|-G)(?:=|\s+|(?<=-G)(?=\d))(\S+)")


def parse_hand_written_gpus(field_name: str, text: str, nodes: int) -> HandWrittenGPUs | None:
    """``--gres=gpu[:type][:N]``, ``--gpus=[type:]N`` or ``-G N`` (per job), ``--gpus-per-node`` or -task."""
    match = _SLURM_OPTION.search(text)
    if match is None:
        return None
    option, value = match.groups()
    if option == "--gres":
        entries = value.split(",")
        gpus = [entry for entry in entries if entry == "gpu" or entry.startswith("gpu:")]
        if not gpus:
            return None
        own_line(field_name, text, option, match)
        if len(gpus) > 1:
            raise ValidationError(field_name, f"{text!r} asks for GPUs twice; give one gpu entry")
        parts = gpus[0].split(":")[1:]
        if len(parts) > 2:
            raise ValidationError(field_name, f"{text!r}: gpujobqueue reads gpu, gpu:N and gpu:TYPE:N")
        numbered = parts and parts[-1].isdigit()
        count = written_count(field_name, text, parts[-1], "GPUs per node", MAX_GPUS_PER_NODE) if numbered else 1
        kind = parts[0] if parts and not parts[0].isdigit() else None
        others = [entry for entry in entries if entry is not gpus[0]]
        rest = f"--gres={','.join(others)}" if others else None
        # sbatch keeps the last --gres it reads: the user's line, with its other resources, is the request
        return HandWrittenGPUs(field_name, text, count, kind, "gres", rest=rest, keeps_line=rest is not None)
    own_line(field_name, text, option, match)
    kind, _, written = value.rpartition(":")  # [type:]count
    kind, count = kind or None, written_count(field_name, text, written)
    if option in ("--gpus", "-G"):  # GPUs of the whole job
        if count % nodes:
            raise ValidationError(
                field_name,
                f"{text!r} asks for {count} GPUs per job, which {nodes} nodes "
                "cannot share evenly; give --gpus-per-node or gpus_per_node",
            )
        count //= nodes
    return HandWrittenGPUs(field_name, text, count, kind, "gpus-per-node")


_GRES = re.compile(r"[A-Za-z0-9_.:,()/=+-]{0,512}")
_GRES_GPUS = re.compile(r"(?:^|,)gpu(?::[A-Za-z0-9_.-]+)?:([0-9]+)")


def _gres_gpus(where: str, gres: str) -> int:
    """The GPUs of a node's GRES as sinfo's %G writes it: ``gpu:h200:4``, ``gpu:4(S:0-1)``, ``(null)``."""
    if not _GRES.fullmatch(gres):
        raise ListingError(where, f"{gres[:80]!r} is not a node's GRES")
    return sum(listed_count(where, found, MAX_GPUS_PER_NODE) or 0 for found in _GRES_GPUS.findall(gres))


def _partition(name: str, rows: list[tuple[int | None, int | None, int | None, int]]) -> ListedQueue:
    """One partition from its sinfo lines: a job's nodes at most its size limit and its nodes together."""
    times, sizes, counts, gpus = zip(*rows)
    nodes = None if None in counts else sum(counts)
    known = [n for n in (nodes, None if None in sizes else max(sizes)) if n is not None]
    spread = f"{min(gpus)} to {max(gpus)}" if min(gpus) != max(gpus) else None
    walltime = None if None in times else max(times)
    return ListedQueue(name, min(known, default=None), nodes, walltime, max(gpus), spread)


class SLURM(BatchSystem):
    """SLURM: jobs submitted with ``sbatch``, watched with ``squeue``, cancelled with ``scancel``."""

    name = "slurm"
    cluster_doc = """A Dask cluster of GPU workers submitted to SLURM.

    Takes every keyword of :class:`dask_jobqueue.SLURMCluster` with the same meaning, and
    the GPU keywords of :class:`~gpujobqueue.cluster.GPUJobQueueCluster`.

    Parameters
    ----------
    partition : str
        A synonym of ``queue`` (``--partition``).

    Examples
    --------
    >>> cluster = SLURMGPUCluster(gpus_per_node=4, queue="gpu", account="m1234", walltime="01:00:00")
    >>> cluster.scale(gpus=8)  # two 4-GPU jobs, eight CUDA workers
    """
    directive_prefix = "#SBATCH"
    template_filters = {"slurm_memory": format_slurm_memory}  # used by slurm.sh.j2
    walltime_directives = ("#SBATCH --time", "#SBATCH -t")
    directive_forms = (
        walltime_form(("--time", "-t"), "#SBATCH --time=", 60),
        DirectiveForm(
            "nodes",
            ("--nodes", "-N"),
            lambda field_name, value: written_count(field_name, "", value, "nodes", MAX_NODES),
            "#SBATCH --nodes={}".format,
        ),
        DirectiveForm(
            "tasks_per_node",
            ("--ntasks-per-node", "--tasks-per-node"),
            lambda field_name, value: written_count(field_name, "", value, "tasks per node", MAX_CPUS_PER_NODE),
            "#SBATCH --ntasks-per-node={}".format,
        ),
    )
    queue_list_separator = ","  # sbatch --partition=gpu,gpu-preempt: the one that starts the job earliest
    submit_command = "sbatch"
    status_command = "squeue"
    cancel_command = "scancel"
    # slurmctld checks the job against its partition, QoS and association and says when it would start.
    test_submit_options = ("--test-only",)
    start_estimates = "SLURM backfill estimate"
    # squeue's %S and sbatch --test-only's start in the form the parsers read, whatever the user's own setting
    query_environment = {"SLURM_TIME_FORMAT": "standard"}
    # Every partition (hidden too), a line per group of alike nodes: %R name, %l MaxTime, %s job size, %D nodes, %G GRES
    queue_listing_command = ("sinfo", "--all", "--noheader", "--format=%R|%l|%s|%D|%G")
    optional_commands = ("sacct", "scontrol")  # exit codes of ended jobs
    job_id_variable = "SLURM_JOB_ID"
    job_id_regexp = r"Submitted batch job (?P<job_id>\d+)"
    # A QoS's MaxSubmitJobsPerUser, an association's MaxSubmitJobs; not the line after them, "Job violates
    # accounting/QOS policy", which sbatch says for size and time limits too.
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
    # More than the partition, QoS or association allows (sbatch takes such jobs unless EnforcePartLimits is set);
    # not ReqNodeNotAvail, which clears when a drained or reserved node returns.
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
    keywords = (
        Keyword("qos", TEXT, parse_word, None, "SLURM quality of service (``--qos``)."),
        Keyword("constraint", TEXT, parse_constraint, None, "SLURM node features (--constraint), such as gpu&hbm80g."),
        Keyword(
            "job_cpu",
            INT,
            count(MAX_CPUS_PER_NODE),
            None,
            "SLURM --cpus-per-task as written, as dask-jobqueue's job_cpu: the job's cores, instead of cores.",
            jobqueue_key="job-cpu",
        ),
        Keyword(
            "job_mem",
            TEXT,
            parse_slurm_memory_text,
            None,
            "SLURM --mem as written, in sbatch's units (``4000`` MB, ``10G``, ``120GB``), as dask-jobqueue's "
            "job_mem, instead of memory.",
            jobqueue_key="job-mem",
        ),
    )
    synonyms = {**BatchSystem.synonyms, "partition": "queue"}
    # gpus: --gpus=[TYPE:]N for a one-node job (Kestrel's documented form), --gpus-per-node for more nodes
    gpu_directive_parser = staticmethod(parse_hand_written_gpus)
    gpu_request_styles = ("gpus-per-node", "gres", "gpus", "none")
    rejectable_gpu_forms = ("gpus-per-task",)  # a form users write by hand (TACC's machines refuse it)
    account_flags = ("--account",)
    clusters_option = "--clusters"
    launchers = tuple(LAUNCHER_OBJECTS[name] for name in ("srun", "ibrun", "mpiexec-openmpi", "mpiexec-mpich"))
    native_launcher = "srun"

    @classmethod
    def parse_options(cls, settings: Mapping[str, Any], request: JobRequest) -> SLURMOptions:
        value = read_declared(cls.keywords, settings)
        return SLURMOptions(qos=value["qos"], constraint=value["constraint"], job_mem=value["job_mem"])

    @classmethod
    def site_settings(cls, *, entry: SiteFacts, gpu: SiteFacts, directives: SiteFacts) -> dict[str, Any]:
        return {"qos": entry.get("qos"), "constraint": entry.get("constraint") or directives.get("constraint")}

    @classmethod
    def with_site(cls, request: JobRequest, site_data: Mapping[str, Any]) -> JobRequest:
        return dataclasses.replace(
            request, options=dataclasses.replace(request.options, clusters=site_data.get("clusters"))
        )

    @classmethod
    def cpu_job_options(cls, options: SLURMOptions, *, qos: str | None, constraint: str | None) -> SLURMOptions:
        return dataclasses.replace(
            options, qos=qos or options.qos, constraint=constraint or options.constraint, job_mem=None
        )

    @classmethod
    def gpu_line(cls, style: str, count: int, settings: Mapping[str, Any]) -> str | None:
        return {
            "gpus-per-node": f"--gpus-per-node={count}",
            "gres": f"--gres=gpu:{count}",
            "gpus": f"--gpus={count}",
        }.get(style)

    @classmethod
    def trial_start(cls, said: str) -> float | None:
        # "sbatch: Job 1234 to start at 2026-12-06T14:32:00 using 4 processors on nodes n1 in partition gpu"
        found = re.search(r"\bJob \d+ to start at (\S{19}) ", said[:4000])
        return local_epoch(found.group(1), "%Y-%m-%dT%H:%M:%S") if found else None

    @classmethod
    def array_element_id(cls, array_id: str, index: int) -> str:
        return f"{array_id}_{index}"

    @classmethod
    def installed_version(cls, first_line: Callable[[list[str]], str | None]) -> str | None:
        if not shutil.which("sbatch"):
            return None
        line = first_line(["sbatch", "--version"]) or ""
        return line if re.match(r"slurm \S+$", line) else "slurm"

    @classmethod
    def queue_listing(cls, site_data: Mapping[str, Any]) -> list[str] | None:
        clusters = [f"--clusters={site_data['clusters']}"] if site_data.get("clusters") else []
        return ["sinfo", *clusters, *cls.queue_listing_command[1:]]

    @classmethod
    def parse_queue_listing(cls, text: str) -> dict[str, ListedQueue]:
        rows: dict[str, list[tuple[int | None, int | None, int | None, int]]] = {}
        for number, line in enumerate(checked_size("sinfo", text).splitlines(), 1):
            where, fields = f"sinfo line {number}", line.strip().split("|")
            if not line.strip() or line.startswith("CLUSTER: "):  # --clusters heads each cluster's lines so
                continue
            if len(fields) != 5:
                raise ListingError(where, f"{line.strip()[:80]!r} is not partition|time|size|nodes|gres")
            name, time, size, nodes, gres = fields
            rows.setdefault(queue_name(where, name), []).append(
                (
                    listed_walltime(where, time, 60),
                    listed_count(where, re.sub(r"^\d+-", "", size)),  # MIN-MAX job size: its most nodes
                    listed_count(where, nodes),
                    _gres_gpus(where, gres),
                )
            )
        return listed_queues("sinfo", {name: _partition(name, parts) for name, parts in rows.items()})

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: Sequence[Any]) -> list[str]:
        # --states=all: finished jobs too, while slurmctld keeps them (MinJobAge); --array: a line per element (A_7),
        # not per pending array (A_[7-9]). With --clusters, a "CLUSTER: name" line (no fields) heads each cluster's.
        return [
            "squeue",
            *clusters_options(jobs),
            "--noheader",
            "--array",
            "--states=all",
            f"--jobs={','.join(job_ids)}",
            "--format=%i|%T|%r|%N|%S",  # %S: a pending job's expected start, where backfill estimated one
        ]

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        if code != 0 and "Invalid job id" not in err:  # an unknown id alone is an answer: it ended long ago
            return None
        listed = {}
        for line in out.splitlines():
            fields = line.strip().split("|")
            if len(fields) in (4, 5):
                job_id, state, reason, nodes, start = [*fields, ""][:5]
                listed[job_id] = JobStatus(
                    job_id,
                    state,
                    ended=state in cls.ended_states,
                    reason=reason,
                    nodes=nodes or None,
                    expected_start=local_epoch(start, "%Y-%m-%dT%H:%M:%S") if state == "PENDING" else None,
                )
        return {job_id: listed.get(job_id) or unlisted(job_id) for job_id in job_ids}

    @classmethod
    def cancel_commands(cls, jobs: Sequence[Any]) -> list[list[str]]:
        # scancel finds jobs of another cluster (a site's clusters) only when told which
        commands = super().cancel_commands(jobs)
        return [[command[0], *clusters_options(jobs), *command[1:]] for command in commands]

    @classmethod
    async def query_exit_code(cls, job: Any) -> int | None:
        clusters = clusters_options([job])
        code, out, _ = await run_query(["scontrol", *clusters, "show", "job", "--oneliner", str(job.job_id)])
        if code != 0:  # purged from slurmctld: accounting may still know it
            accounting = ["sacct", *clusters, "--jobs", str(job.job_id), "--noheader", "--parsable2", "--allocations"]
            code, out, _ = await run_query([*accounting, "--format=ExitCode"])
            match = re.match(r"\s*(\d+):(\d+)", out) if code == 0 else None
        else:
            match = re.search(r"\bExitCode=(\d+):(\d+)", out)
        if match is None:
            return None
        status, signal = int(match.group(1)), int(match.group(2))
        return 128 + signal if signal else status

    @classmethod
    def log_paths(cls, job: Any) -> list[str]:
        if job.log_directory:
            return [
                job.log_file(f"{job.job_name}-{job.job_id}.out"),
                job.log_file(f"{job.job_name}-{job.job_id}.err"),
            ]
        return [job.log_file(f"slurm-{job.job_id}.out")]
