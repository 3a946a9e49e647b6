"""Grid Engine: GPUs as a consumable complex (``-l gpu=G``) or a resource type (``-l rt_F=1``)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import SubmissionError, ValidationError
from ..handwritten.directives import walltime_form
from ..handwritten.gpu_parsers import HandWrittenGPUs, own_line, written_count
from ..jobs.job_status import JobStatus, run_query, unlisted
from ..jobs.launchers import LAUNCHER_OBJECTS
from ..jobs.queue_listing import ListedQueue, blocks, listed_queues, listed_walltime
from ..jobs.request import JobRequest
from ..jobs.workers import WorkerLaunch
from ..settings.declaration import read_declared
from ..settings.keywords import TEXT, Keyword, matching_parser
from ..settings.limits import MAX_GPUS_PER_NODE
from .base import BatchSystem, SiteFacts

GPU_CONSUMABLES = ("slot", "job")
_COMPLEX = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# dask-jobqueue's resource_spec: one `-l` value, resources joined by , and =
_RESOURCE_SPEC = re.compile(r"(?!-)[A-Za-z0-9_.@/=:,*-]{1,1024}")
# A parallel environment's allocation_rule as `qconf -sp` shows it; a whole number is the slots it puts on each host.
ALLOCATION_RULES = ("$pe_slots", "$fill_up", "$round_robin")
_MAX_SLOTS_PER_HOST = 100_000


@dataclass(frozen=True)
class SGEOptions:
    """Grid Engine's own settings of a job, as :attr:`SGE.keywords` read them, and :func:`gpu_request_value`."""

    gpu_complex: str
    gpu_consumable: str
    resource_type: str | None
    parallel_environment: str | None
    allocation_rule: str | int | None
    resource_spec: str | None
    gpu_request_value: int


def parse_gpu_consumable(field_name: str, value: Any) -> str:
    """How the GPU complex counts: one of :data:`GPU_CONSUMABLES`."""
    if value not in GPU_CONSUMABLES:
        raise ValidationError(
            field_name,
            f"{value!r}: use slot (the complex is a YES consumable, counted per slot) or job (a JOB consumable)",
        )
    return value


def parse_allocation_rule(field_name: str, value: Any) -> str | int:
    """A parallel environment's allocation rule: one of :data:`ALLOCATION_RULES` or a whole number of slots."""
    if isinstance(value, str) and value in ALLOCATION_RULES:
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,6}", value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= _MAX_SLOTS_PER_HOST:
        return value
    raise ValidationError(
        field_name,
        f"{value!r}: give the parallel environment's allocation_rule as qconf -sp shows it: "
        f"{', '.join(ALLOCATION_RULES)} or the slots it puts on each host (1 to {_MAX_SLOTS_PER_HOST})",
    )


def check_resource_type(request: JobRequest, resource_type: str | None) -> None:
    """Refuse ``gpu_request='resource-type'`` without the resource type that brings the GPUs."""
    if request.gpu_request == "resource-type" and resource_type is None:
        raise ValidationError(
            "resource_type",
            "gpu_request='resource-type' needs the resource type that brings the GPUs, e.g. resource_type='rt_F'",
        )


def gpu_request_value(request: JobRequest, value: Mapping[str, Any]) -> int:
    """The ``-l <gpu_complex>=`` value of the job's GPUs: per slot for a ``slot`` complex, else the job's GPUs."""
    gpus = request.gpus_per_node * request.nodes
    if value["gpu_consumable"] != "slot" or request.gpu_request != "complex":
        return gpus
    slots = request.cpus_per_node * request.nodes if value["parallel_environment"] else 1
    if gpus % slots:
        raise ValidationError(
            "cores",
            f"Grid Engine counts a YES consumable per slot, so -pe {value['parallel_environment']} {slots} -l "
            f"{value['gpu_complex']}=N asks for {slots}N GPUs and {gpus} GPUs cannot be "
            f"spread over {slots} slots; ask for a number of cores that divides {gpus} "
            "(cores=gpus_per_node gives one GPU per slot), or set gpu_consumable='job' if the site's "
            "complex is a JOB consumable",
        )
    return gpus // slots


def check_hosts(
    request: JobRequest, parallel_environment: str | None, allocation_rule: str | int | None, consumable: str
) -> None:
    """Refuse a job whose parallel environment cannot put the same slots, and GPUs, on each of its hosts."""
    per_host = request.cpus_per_node
    if isinstance(allocation_rule, int) and parallel_environment and allocation_rule != per_host:
        raise ValidationError(
            "cores",
            f"parallel environment {parallel_environment} puts {allocation_rule} slots on each host "
            f"(allocation_rule {allocation_rule}) but the job asks for {per_host} cores on each of its "
            f"{request.nodes} node(s); ask for cores={allocation_rule} per node",
        )
    if request.nodes == 1:
        return
    if allocation_rule == "$pe_slots" and parallel_environment:
        raise ValidationError(
            "nodes",
            f"parallel environment {parallel_environment} ($pe_slots) keeps a job on one host; a job of "
            f"{request.nodes} nodes needs one that spans hosts (give parallel_environment and its allocation_rule)",
        )
    if request.gpu_request != "complex":
        return
    if consumable == "slot" and isinstance(allocation_rule, int) and parallel_environment:
        return  # the same slots, and so the same GPUs, on each host
    raise ValidationError(
        "nodes",
        f"a Grid Engine GPU complex counts GPUs per slot, not per host, so a job of {request.nodes} nodes gets "
        f"{request.gpus_per_node} GPUs on each only from a parallel environment that puts the same slots on each "
        f"host: give parallel_environment and allocation_rule={per_host} (one whose qconf -sp says allocation_rule "
        f"{per_host}), or use gpu_request='resource-type' (whole nodes, such as rt_F) or 'none'",
    )


def expand_task_ranges(text: str) -> list[int]:
    """Grid Engine's task list (``1-7:2,9``) as task numbers."""
    tasks = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
        if match:
            first, last, step = int(match.group(1)), int(match.group(2) or match.group(1)), int(match.group(3) or 1)
            tasks += range(first, last + 1, step)
    return tasks


def _complex_gpus(
    field_name: str, text: str, value: str, names: tuple[str, ...], option: str = ""
) -> HandWrittenGPUs | None:
    """The GPU complex among the resources of a ``-l`` value (``gpu=2,h_vmem=8G``); the others stay after ``option``."""
    resources = value.split(",")
    gpus = [r for r in resources if r.partition("=")[0] in names]
    if not gpus:
        return None
    if len(gpus) > 1:
        raise ValidationError(field_name, f"{text!r} asks for GPUs twice; give one")
    name, _, written = gpus[0].partition("=")
    others = ",".join(r for r in resources if r is not gpus[0])
    count = written_count(field_name, text, written, "GPUs", MAX_GPUS_PER_NODE)
    rest = f"{option}{others}" if others else None
    return HandWrittenGPUs(field_name, text, count, None, "complex", rest=rest, defaults={"gpu_complex": name})


def parse_hand_written_gpus(
    field_name: str, text: str, nodes: int, *, names: tuple[str, ...] = ("gpu", "gpus")
) -> HandWrittenGPUs | None:
    """``-l gpu=G`` (or the site's GPU complex, or ``gpus``), alone or among other resources."""
    match = re.search(r"(?<![\w-])-l\s+(\S+)", text)
    found = _complex_gpus(field_name, text, match.group(1), names, "-l ") if match else None
    if found is not None:
        own_line(field_name, text, "-l", match)
    return found


CLUSTER_DOC = """A Dask cluster of GPU workers submitted to Grid Engine (SGE, Son of Grid Engine, Altair/Univa).

    Takes every keyword of :class:`dask_jobqueue.SGECluster` with the same meaning
    (``project`` is ``-P``, ``resource_spec`` an extra ``-l``), and the GPU keywords of
    :class:`~gpujobqueue.cluster.GPUJobQueueCluster`.

    Grid Engine itself does not tell a job which GPUs it holds. The workers take their
    devices from the variable ``allocation_variable`` names: ``SGE_HGR_<gpu_complex>`` by
    default, which Altair Grid Engine's RSMAP sets and which sites without RSMAP set in a
    starter method or prolog (``resource-type`` requests read ``CUDA_VISIBLE_DEVICES``,
    which such sites set). Where the variable is unset in the job, the workers take
    devices ``0 .. G-1`` of the node in order: right only when the job has the node's
    GPUs to itself.

    Parameters
    ----------
    gpu_request : {"complex", "resource-type", "none"}
        ``complex``: ``#$ -l gpu=G`` (the default; the complex is ``gpu_complex``);
        ``resource-type``: ``#$ -l <resource_type>=<nodes>``, a node type that brings
        ``gpus_per_node`` GPUs; ``none``: the queue implies GPUs.
    project : str
        ``-P``; a synonym of ``account``.

    Examples
    --------
    >>> cluster = SGEGPUCluster(gpus_per_node=2, queue="gpu.q", parallel_environment="smp", walltime="01:00:00")
    >>> cluster.scale(gpus=4)  # two 2-GPU jobs
    """


_RESOURCE_SPEC_TEXT = matching_parser(
    _RESOURCE_SPEC, "one Grid Engine -l value such as h_vmem=8G,mem_free=8G (no spaces or shell characters)"
)
_COMPLEX_NAME = matching_parser(_COMPLEX, "a Grid Engine complex name (letters, digits, _)")
# fmt: off
GPU_COMPLEX = Keyword("gpu_complex", TEXT, _COMPLEX_NAME, "gpu", "Grid Engine's GPU complex (gpu): the name of the GPU "
                      "consumable.")
GPU_CONSUMABLE = Keyword("gpu_consumable", TEXT, parse_gpu_consumable, "slot", "How the GPU complex is counted: "
                         "slot or job. ``slot`` (Grid Engine's ``YES`` consumables): with a parallel environment the "
                         "request is divided by the slots, so ``gpus_per_node=4, cores=2`` is ``-pe smp 2 -l gpu=2``. "
                         "``job``: the complex is a ``JOB`` consumable and the request is the job's GPUs.",
                         type_doc='{"slot", "job"}')
# fmt: on


def _gpu_complex(settings: Mapping[str, Any]) -> str:
    """The GPU complex of settings not yet parsed: the one given, else its declared default."""
    return str(settings.get("gpu_complex") or GPU_COMPLEX.default)


def _gpu_complex_names(settings: Mapping[str, Any]) -> tuple[str, ...]:
    """The complexes a hand-written line may count GPUs in: the site's (or given) one, ``gpu``, ``gpus``."""
    return tuple(dict.fromkeys([_gpu_complex(settings), "gpu", "gpus"]))


_QNAME = re.compile(r"qname\s+(\S+)\s*$")
_HOST_VALUE = re.compile(r",\[[^=\]]+=([^\]]*)\]")  # ",[@hostgroup=value]": a value for those hosts


def _sge_queue(name: str, first: int, lines: list[str]) -> ListedQueue:
    """A cluster queue of ``qconf -sq``: its longest ``h_rt`` (``default,[host=value]``) and its named hosts."""
    values, logical = {}, ""
    for line in lines:  # a line ending in a backslash goes on on the next
        logical += line.strip()
        if logical.endswith("\\"):
            logical = logical[:-1] + " "
            continue
        key, _, values[key] = logical.partition(" ")
        logical = ""
    where, h_rt = f"qconf -sq queue {name} (line {first})", values.get("h_rt", "INFINITY").strip()
    times = [listed_walltime(where, text) for text in [h_rt.split(",[")[0], *_HOST_VALUE.findall(h_rt)]]
    hosts = [host for host in re.split(r"[\s,]+", values.get("hostlist", "").strip()) if host]
    listed = hosts and "NONE" not in hosts and not any(host.startswith("@") for host in hosts)
    return ListedQueue(name, nodes=len(hosts) if listed else None, max_walltime=None if None in times else max(times))


class SGE(BatchSystem):
    """Grid Engine: jobs submitted with ``qsub``, watched with ``qstat``, cancelled with ``qdel``."""

    name = "sge"
    cluster_doc = CLUSTER_DOC
    directive_prefix = "#$"
    walltime_directives = ("#$ -l h_rt",)
    directive_forms = (walltime_form(("-l",), "#$ -l h_rt=", 1, resource="h_rt"),)  # also by hand
    queue_list_separator = ","  # qsub -q wc_queue_list: gpu.q,all.q
    walltime_number_unit = 1  # qsub -l h_rt: a number alone is seconds (sge_types, time_specifier)
    submit_command = "qsub"
    status_command = "qstat"
    cancel_command = "qdel"
    # -w v: qmaster verifies the job against its queues, limits and complexes as though the cluster were empty.
    test_submit_options = ("-w", "v")
    # neither qstat nor qsub -w gives a time; only resource reservations write one, to the scheduler's own log
    no_start_estimates = "Grid Engine gives no start estimate"
    # Every cluster queue's configuration ('*' matches each), a "qname NAME" line opening each (queue_conf(5)).
    queue_listing_command = ("qconf", "-sq", "*")
    optional_commands = ("qacct",)
    job_id_variable = "JOB_ID"  # a name common enough that SGE_ROOT must be set too
    job_also_sets = ("SGE_ROOT",)
    job_id_regexp = r"Your job(?:-array)? (?P<job_id>\d+)"
    # max_u_jobs (SGE 8.1.9: "job rejected: only 1 jobs are allowed per user"; other releases capitalise it).
    user_limit_refusals = (r"(?i)\bonly \d+ jobs are allowed per user",)
    array_task_variable = "SGE_TASK_ID"
    array_size_limit = 75000  # max_aj_tasks' default
    # fmt: off
    keywords = (
        GPU_COMPLEX,
        GPU_CONSUMABLE,
        Keyword("resource_type", TEXT, _COMPLEX_NAME, None, "Grid Engine resource type of whole nodes (ABCI rt_F): "
                'the node type of ``gpu_request="resource-type"``.'),
        Keyword("parallel_environment", TEXT, _COMPLEX_NAME, None, "Grid Engine parallel environment (-pe) for the "
                "job's slots: ``#$ -pe NAME SLOTS``, SLOTS the cores; without it no cores are asked for, as with "
                "dask-jobqueue's SGECluster."),
        Keyword("allocation_rule", TEXT, parse_allocation_rule, None, "The parallel environment's allocation_rule "
                "($pe_slots, $fill_up, $round_robin or slots per host), as ``qconf -sp NAME`` shows it; not written "
                "to the script. A job of several nodes with a GPU complex counted per slot needs a fixed rule equal to "
                "its cores per node, so that every host gets its GPUs.", type_doc="str or int"),
        Keyword("resource_spec", TEXT, _RESOURCE_SPEC_TEXT, None, "Grid Engine -l resources as written, as "
                "dask-jobqueue's resource_spec (more ``-l`` resources, such as ``h_vmem=8G``).",
                jobqueue_key="resource-spec"),
    )
    # fmt: on
    synonyms = {**BatchSystem.synonyms, "project": "account"}
    gpu_job_options = ("resource_spec",)  # the GPU jobs' whole resource line
    gpu_request_styles = ("complex", "resource-type", "none")
    whole_node_styles = ("resource-type",)
    site_enums = {"gpu_request.consumable": GPU_CONSUMABLES}
    # -P: the project (dask-jobqueue's); -A: the account string; -g: TSUBAME's group, which it charges
    account_flags = ("-P", "-A", "-g")
    launchers = tuple(LAUNCHER_OBJECTS[name] for name in ("mpiexec-openmpi", "mpiexec-mpich", "qrsh-inherit"))
    # qrsh -inherit: tasks of the job's parallel environment (which needs control_slaves TRUE).
    native_launcher = "qrsh-inherit"

    @classmethod
    def site_settings(cls, *, entry: SiteFacts, gpu: SiteFacts, directives: SiteFacts) -> dict[str, Any]:
        return {
            "gpu_complex": gpu.get("complex"),
            "gpu_consumable": gpu.get("consumable"),
            "resource_type": gpu.get("resource_type"),
            "parallel_environment": entry.get("parallel_environment", directives.get("parallel_environment")),
            "allocation_rule": entry.get("allocation_rule", directives.get("allocation_rule")),
        }

    @classmethod
    def apply_defaults(cls, settings: dict[str, Any]) -> None:
        if settings.get("allocation_variable") is None and (settings.get("gpu_request") or "complex") == "complex":
            settings["allocation_variable"] = f"SGE_HGR_{_gpu_complex(settings)}"

    @classmethod
    def parse_options(cls, settings: Mapping[str, Any], request: JobRequest) -> SGEOptions:
        value = read_declared(cls.keywords, settings)
        check_resource_type(request, value["resource_type"])
        check_hosts(request, value["parallel_environment"], value["allocation_rule"], value["gpu_consumable"])
        return SGEOptions(**value, gpu_request_value=gpu_request_value(request, value))

    @classmethod
    def check_launch(cls, request: JobRequest, launch: WorkerLaunch) -> None:
        super().check_launch(request, launch)
        if launch.launcher == "qrsh-inherit" and request.options.parallel_environment is None:
            raise ValidationError(
                "parallel_environment",
                f"a job of {request.nodes} nodes started by qrsh -inherit is a parallel job: give the "
                "parallel environment (parallel_environment='mpi'; one whose control_slaves is TRUE), "
                "or a launcher such as mpiexec-openmpi",
            )

    @classmethod
    def parse_gpu_directive(
        cls, field_name: str, text: str, nodes: int, settings: Mapping[str, Any]
    ) -> HandWrittenGPUs | None:
        return parse_hand_written_gpus(field_name, text, nodes, names=_gpu_complex_names(settings))

    @classmethod
    def parse_gpu_resource_spec(cls, text: str, settings: Mapping[str, Any]) -> HandWrittenGPUs | None:
        return _complex_gpus("resource_spec", text, text, _gpu_complex_names(settings))

    @classmethod
    def gpu_line(cls, style: str, count: int, settings: Mapping[str, Any]) -> str | None:
        return f"-l {_gpu_complex(settings)}={count}" if style == "complex" else None

    @classmethod
    def check_hand_written(cls, found: HandWrittenGPUs, settings: Mapping[str, Any]) -> None:
        if (
            settings.get("parallel_environment")
            and (settings.get("gpu_consumable") or GPU_CONSUMABLE.default) == "slot"
        ):
            raise ValidationError(
                found.field,
                f"{found.describe()}: with parallel_environment={settings['parallel_environment']!r} "
                "Grid Engine counts the GPU complex per slot; give gpus_per_node (the job's "
                "GPUs) instead of the directive",
            )

    @classmethod
    def installed_version(cls, first_line: Callable[[list[str]], str | None]) -> str | None:
        if not shutil.which("qstat"):
            return None
        # Grid Engine has no --version and prints its usage, headed "SGE 8.1.9" (PBS answers with its version).
        line = first_line(["qstat", "--version"]) or ""
        return line if re.match(r"(SGE|GE|OGS|UGE|AGE|Univa|Son of Grid Engine)\b", line) else None

    @classmethod
    def parse_queue_listing(cls, text: str) -> dict[str, ListedQueue]:
        found = {name: _sge_queue(name, first, lines) for name, first, lines in blocks("qconf -sq", text, _QNAME)}
        return listed_queues("qconf -sq", found)

    @classmethod
    def array_element_id(cls, array_id: str, index: int) -> str:
        return f"{array_id}.{index}"  # as qdel and qacct -t take it, and as the log is named

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: Sequence[Any]) -> list[str]:
        return ["qstat", "-u", "*"]  # pending and running jobs; `qstat -j` has no state

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        if code != 0:
            return None
        listed = {}
        # job-ID prior name user state submit/start-at [queue] slots [ja-task-ID]: a finished job is not listed; an
        # array's running tasks have a line each, its pending ones share one with their ranges (1-4:1).
        for fields in (line.split() for line in out.splitlines()):
            if len(fields) > 4 and fields[0].isdigit():
                state = fields[4]
                queue = fields[7] if len(fields) > 8 and "@" in fields[7] else None
                tasks_column = 9 if queue else 8
                # An error state (Eqw) never runs: the job is as good as ended, though listed.
                status = JobStatus(
                    fields[0],
                    state,
                    ended="E" in state,
                    reason="error state: qstat -j shows why" if "E" in state else None,
                    nodes=queue.split("@", 1)[1] if queue else None,
                )
                if len(fields) > tasks_column:
                    for task in expand_task_ranges(fields[tasks_column]):
                        listed[f"{fields[0]}.{task}"] = dataclasses.replace(status, job_id=f"{fields[0]}.{task}")
                else:
                    listed[fields[0]] = status
        return {job_id: listed.get(job_id) or unlisted(job_id) for job_id in job_ids}

    @classmethod
    async def query_exit_code(cls, job: Any) -> int | None:
        # Accounting has it once qmaster has flushed it (reporting_params flush_time, 15 s by default).
        job_id, _, task = str(job.job_id).partition(".")
        code, out, _ = await run_query(["qacct", "-j", job_id, *(["-t", task] if task else [])])
        match = re.search(r"^exit_status\s+(\d+)", out, re.MULTILINE) if code == 0 else None
        return int(match.group(1)) if match else None

    @classmethod
    def log_paths(cls, job: Any) -> list[str]:
        # -cwd -j y: <job name>.o<id> in -o's directory or the submit directory
        return [job.log_file(f"{job.job_name}.o{job.job_id}")]

    @classmethod
    async def submit_script(cls, job: Any, path: str) -> str:
        try:
            return await super().submit_script(job, path)
        except SubmissionError as error:
            if "no suitable queues" not in str(error):
                raise
            # `-w e` says only "no suitable queues"; `-w v` submits nothing and says why.
            raise SubmissionError(f"{error}\nqsub -w v explains:\n{(await cls.test_submit(path)).said}") from None
