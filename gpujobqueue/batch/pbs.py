"""PBS Pro (and Torque): GPUs by ``-l select=N:ncpus=C:ngpus=G`` chunks or ``-l nodes=N:ppn=C:gpus=G``."""

from __future__ import annotations

import dataclasses
import re
import shutil
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import ValidationError
from ..handwritten.directives import walltime_form
from ..handwritten.gpu_parsers import HandWrittenGPUs, written_count
from ..handwritten.gpus import drop_line
from ..jobs.job_status import JobStatus, local_epoch, unlisted
from ..jobs.launchers import LAUNCHER_OBJECTS
from ..jobs.queue_listing import ListedQueue, checked_size, listed_count, listed_queues, listed_walltime, queue_name
from ..jobs.request import JobRequest
from ..settings.declaration import read_declared
from ..settings.keywords import PAIRS, TEXT, Keyword, matching_parser
from ..settings.limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_NODES
from ..settings.validation import matching, one_line, parse_lines, scalar_text
from .base import BatchSystem, SiteFacts, binary_memory

# PBS resource names and values: no spaces, : , + or shell characters, which would open another chunk or resource.
_RESOURCE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_RESOURCE_VALUE = re.compile(r"[A-Za-z0-9_.@/-]{1,256}")
_PLACE = re.compile(
    r"(?:free|pack|scatter|vscatter|excl|shared|exclhost|group=[A-Za-z0-9_]+)(?::(?:free|pack|scatter|vscatter|excl|shared|exclhost|group=[A-Za-z0-9_]+))*"
)
_FILESYSTEMS = re.compile(r"[A-Za-z0-9_]+(?::[A-Za-z0-9_]+)*")
# dask-jobqueue's resource_spec: one `-l` value, resources joined by , : + =
_RESOURCE_SPEC = re.compile(r"(?!-)[A-Za-z0-9_.@/=:,+-]{1,1024}")
# What gpujobqueue writes into the select chunk itself; chunk_resources may not repeat them.
_OWN_CHUNK_RESOURCES = ("ncpus", "ngpus", "mem", "gpu_type")


def parse_chunk_resources(field_name: str, value: Any) -> tuple[tuple[str, str], ...]:
    """Extra select-chunk resources: ``{"system": "polaris", "mpiprocs": 4}`` or ``["system=polaris"]``."""
    if isinstance(value, Mapping):
        items = [(one_line(field_name, k), scalar_text(f"{field_name}[{k}]", v)) for k, v in value.items()]
    elif value is None or isinstance(value, Sequence):  # parse_lines reads None as none, a string as one line
        items = []
        for entry in parse_lines(field_name, value):
            name, sep, resource_value = entry.partition("=")
            if not sep:
                raise ValidationError(field_name, f"{entry!r} is not name=value")
            items.append((name, resource_value))
    else:
        raise ValidationError(field_name, f"expected a mapping of resource to value, got {value!r}")
    for name, resource_value in items:
        matching(f"{field_name}[{name}]", name, _RESOURCE_NAME, "a PBS resource name (letters, digits, _)")
        if name in _OWN_CHUNK_RESOURCES:
            raise ValidationError(
                field_name,
                f"{name} is set from gpujobqueue's own keywords (cores/cpus_per_gpu, gpus_per_node, memory, "
                "gpu_type); do not repeat it here",
            )
        matching(
            f"{field_name}[{name}]",
            resource_value,
            _RESOURCE_VALUE,
            "a PBS resource value (letters, digits, _ . @ / -)",
        )
    return tuple(items)


# Bytes as a PBS size (binary units), rounded up: ``60gb`` or ``1536mb``.
format_pbs_memory = binary_memory("gb", "mb")


@dataclass(frozen=True)
class PBSOptions:
    """PBS's own settings of a job, as :attr:`PBS.keywords` read them (``place``: :func:`exclusive_place`)."""

    chunk_resources: tuple[tuple[str, str], ...]
    place: str | None
    filesystems: str | None
    resource_spec: str | None


def exclusive_place(place: str | None, request: JobRequest) -> str | None:
    """The job's ``-l place``: the one given, else ``excl`` for an ``exclusive`` job."""
    return "excl" if place is None and request.exclusive else place


def check_torque_options(request: JobRequest, chunk: tuple[tuple[str, str], ...], place: str | None) -> None:
    """Refuse chunk resources or a placement for Torque, whose request has neither."""
    if request.gpu_request == "torque" and (chunk or place):
        raise ValidationError(
            "chunk_resources" if chunk else "place",
            "Torque's nodes=N:ppn=C:gpus=G request has no select chunks or placement; use "
            "gpu_request='select' for PBS Pro",
        )


def parse_full_status(text: str, header: str = "Job Id:") -> dict[str, dict[str, str]]:
    """Each ``header`` block's attributes in ``qstat -f`` (or, ``Queue:``, ``qstat -Qf``) output, unfolded."""
    jobs: dict[str, dict[str, str]] = {}
    attributes: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line.startswith(header):
            attributes = jobs.setdefault(line.split(":", 1)[1].strip(), {})
            key = None
        elif line.startswith("\t") and key is not None:
            attributes[key] += line.strip()
        elif " = " in line:
            key, _, value = line.strip().partition(" = ")
            attributes[key] = value
    return jobs


_PBS_UNITS = {"b": 0, "kb": 1, "mb": 2, "gb": 3, "tb": 4, "pb": 5}


def _listed_queue(name: str, attributes: Mapping[str, str]) -> ListedQueue:
    """A queue of ``qstat -Qf``: its ``resources_max`` walltime, nodes (``nodect``, Torque's ``nodes``) and ngpus."""
    where = f"qstat -Qf queue {name}"
    limit = {k[14:]: v for k, v in attributes.items() if k.startswith("resources_max.")}
    nodes = limit.get("nodect", limit.get("nodes") if limit.get("nodes", "").isdigit() else None)
    return ListedQueue(
        queue_name(where, name),
        max_nodes=listed_count(where, nodes) if nodes is not None else None,
        max_walltime=listed_walltime(where, limit["walltime"]) if "walltime" in limit else None,
        job_gpus=listed_count(where, limit["ngpus"], MAX_NODES * MAX_GPUS_PER_NODE) if "ngpus" in limit else None,
    )


def _pbs_size(field_name: str, text: str, value: str) -> int:
    """A PBS size: its units are binary (``1gb`` is 1024**3 bytes), bytes without one."""
    match = re.fullmatch(r"([0-9]{1,12})([kmgtp]?b)?", value.lower())
    if match is None:
        raise ValidationError(field_name, f"{text!r}: mem={value!r} is not a PBS size such as 480gb")
    return int(match.group(1)) * 1024 ** _PBS_UNITS[match.group(2) or "b"]


def pbs_chunk_gpus(field_name: str, text: str, value: str) -> HandWrittenGPUs | None:
    """The GPUs of a PBS ``-l`` value ``select=N:ncpus=C:ngpus=G[:mem=M]`` (Torque's ``nodes=N:ppn=C:gpus=G``)."""
    for resource in value.split(","):
        name, _, chunk = resource.partition("=")
        if name not in ("select", "nodes"):
            continue
        gpu_key, cpu_key, style = ("ngpus", "ncpus", "select") if name == "select" else ("gpus", "ppn", "torque")
        if not re.search(rf"(?:^|[:+]){gpu_key}=", chunk):
            return None
        if "+" in chunk:
            raise ValidationError(
                field_name, f"{text!r} holds several kinds of chunk; gpujobqueue starts one kind: give one chunk"
            )
        count, *pairs = chunk.split(":")
        values = dict(pair.partition("=")[::2] for pair in pairs)
        chunks = written_count(field_name, text, count, "chunks (nodes)", MAX_NODES) if count.isdigit() else 1
        settings: dict[str, Any] = {"nodes": chunks}
        if values.get(cpu_key):
            settings["cores"] = chunks * written_count(
                field_name, text, values[cpu_key], "cores per chunk", MAX_CPUS_PER_NODE
            )
        if values.get("mem"):
            settings["memory"] = chunks * _pbs_size(field_name, text, values["mem"])
        gpus = written_count(field_name, text, values[gpu_key], "GPUs per chunk", MAX_GPUS_PER_NODE)
        kind = values.get("gpu_type")
        return HandWrittenGPUs(field_name, text, gpus, kind, style, settings=settings, keeps_line=True)
    return None


def parse_hand_written_gpus(field_name: str, text: str, nodes: int) -> HandWrittenGPUs | None:
    """``-l select=...:ngpus=G`` (Torque's ``-l nodes=...:gpus=G``), kept as the select line, or ``-l ngpus=G``."""
    match = re.fullmatch(r"\s*-l\s+(\S+)\s*", text)
    found = pbs_chunk_gpus(field_name, text, match.group(1)) if match else None
    job_wide = re.fullmatch(r"\s*-l\s+ngpus=(\S+)\s*", text)
    if job_wide:  # PBS Pro refuses it beside a select line: it becomes the chunk's ngpus
        return HandWrittenGPUs(field_name, text, written_count(field_name, text, job_wide.group(1)), None, "select")
    if found is None and re.search(r"(?:^|[:+,\s])n?gpus=", text):
        raise ValidationError(
            field_name,
            f"{text!r}: gpujobqueue reads GPUs from '-l select=N:ncpus=C:ngpus=G' "
            "(or Torque's '-l nodes=N:ppn=C:gpus=G') on a line of its own",
        )
    return found


class PBS(BatchSystem):
    """PBS Pro (and Torque): jobs submitted with ``qsub``, watched with ``qstat``, cancelled with ``qdel``."""

    name = "pbs"
    cluster_doc = """A Dask cluster of GPU workers submitted to PBS Pro (or Torque).

    Takes every keyword of :class:`dask_jobqueue.PBSCluster` with the same meaning
    (``resource_spec`` replaces the generated ``-l select`` line; ``project`` is the old
    name of ``account``), and the GPU keywords of
    :class:`~gpujobqueue.cluster.GPUJobQueueCluster`.

    Parameters
    ----------
    gpu_request : {"select", "torque", "none"}
        ``select``: ``#PBS -l select=1:ncpus=C:ngpus=G:mem=M`` (PBS Pro, the default);
        ``torque``: ``#PBS -l nodes=1:ppn=C:gpus=G``; ``none``: the queue implies GPUs.
    gpu_type : str
        Adds ``gpu_type=<type>`` to the chunk (NCAR's Casper). Default: not set.

    Examples
    --------
    >>> cluster = PBSGPUCluster(gpus_per_node=4, queue="debug", account="MyProject", walltime="01:00:00",
    ...                         chunk_resources={"system": "polaris"}, filesystems="home:eagle")
    >>> cluster.scale(gpus=8)  # two 4-GPU jobs
    """
    directive_prefix = "#PBS"
    template_filters = {"pbs_memory": format_pbs_memory}  # used by pbs.sh.j2
    walltime_directives = ("#PBS -l walltime",)
    directive_forms = (walltime_form(("-l",), "#PBS -l walltime=", 1, resource="walltime"),)  # also by hand
    walltime_number_unit = 1  # qsub -l walltime=[[hours:]minutes:]seconds
    node_file_variable = "PBS_NODEFILE"
    submit_command = "qsub"
    status_command = "qstat"
    cancel_command = "qdel"
    # Every queue's attributes, "Queue: NAME" and "    resources_max.walltime = 24:00:00" lines (qstat(1B) -Q -f).
    queue_listing_command = ("qstat", "-Qf")
    job_id_variable = "PBS_JOBID"
    # `1234.server`: the whole id, which qdel and qstat take on every PBS.
    job_id_regexp = r"(?P<job_id>\d+(?:\[\d*\])?(?:\.[A-Za-z0-9_.-]+)?)"
    # PBS Pro's max_queued / queued_jobs_threshold ("qsub: would exceed queue generic's per-user limit of jobs in
    # 'Q' state", as ALCF's queues say it), and the older max_user_queuable (PBSE_MAXUSERQUED).
    user_limit_refusals = (
        r"would exceed .*per-user limit",
        r"Maximum number of jobs already in queue for user",
        r"Maximum number of jobs for user",
    )
    ended_states = frozenset({"F", "X", "C"})  # finished, subjob finished, Torque's completed
    # qstat -f's estimated.start_time (ctime form), set by the scheduler for the jobs it calendars (top jobs)
    start_estimates = "PBS estimated.start_time"
    array_task_variable = "PBS_ARRAY_INDEX"
    array_size_limit = 10000  # the server's max_array_size default
    keywords = (
        Keyword(
            "chunk_resources",
            PAIRS,
            parse_chunk_resources,
            None,
            'PBS select-chunk resource (system=polaris). A mapping (``{"system": "polaris"}``) or '
            'a list (``["mpiprocs=4"]``).',
            option="--chunk-resource",
            type_doc="dict or list of str",
        ),
        Keyword(
            "place",
            TEXT,
            matching_parser(_PLACE, "PBS placement such as scatter, pack, excl, scatter:excl or group=switch"),
            None,
            "PBS -l place (scatter, excl, ...), such as ``scatter:excl``.",
        ),
        Keyword(
            "filesystems",
            TEXT,
            matching_parser(_FILESYSTEMS, "file systems joined by ':' such as home:eagle"),
            None,
            "PBS -l filesystems (home:eagle), as ALCF asks.",
        ),
        Keyword(
            "resource_spec",
            TEXT,
            matching_parser(
                _RESOURCE_SPEC, "one PBS -l value such as select=1:ncpus=8:ngpus=4 (no spaces or shell characters)"
            ),
            None,
            "PBS -l resources as written, as dask-jobqueue's resource_spec, instead of the generated request.",
            jobqueue_key="resource-spec",
        ),
    )
    gpu_directive_parser = staticmethod(parse_hand_written_gpus)
    gpu_job_options = ("resource_spec",)  # the GPU jobs' whole resource line
    gpu_request_styles = ("select", "torque", "none")
    account_flags = ("-A", "-P")  # -P: ABCI's group ("mandatory"), PBS Pro's project
    launchers = tuple(LAUNCHER_OBJECTS[name] for name in ("mpiexec-pals", "mpiexec-openmpi", "mpiexec-mpich", "pbsdsh"))
    native_launcher = "pbsdsh"

    @classmethod
    def parse_options(cls, settings: Mapping[str, Any], request: JobRequest) -> PBSOptions:
        value = read_declared(cls.keywords, settings)
        check_torque_options(request, value["chunk_resources"], value["place"])
        return PBSOptions(**{**value, "place": exclusive_place(value["place"], request)})

    @classmethod
    def site_settings(cls, *, entry: SiteFacts, gpu: SiteFacts, directives: SiteFacts) -> dict[str, Any]:
        chunk = {**directives.get("chunk_resources", {}), **entry.get("chunk_resources", {})}
        return {
            "chunk_resources": {k: str(v) for k, v in chunk.items()} or None,
            "filesystems": directives.get("filesystems"),
            "place": directives.get("place"),
        }

    @classmethod
    def check_job_array(cls, request: JobRequest) -> None:
        super().check_job_array(request)
        if request.gpu_request == "torque":
            raise ValidationError(
                "job_array",
                "gpujobqueue writes PBS Pro's job arrays (-J 1-K, PBS_ARRAY_INDEX); Torque's (-t, PBS_ARRAYID) "
                "are not supported: use job_array=False",
            )

    @classmethod
    def parse_gpu_resource_spec(cls, text: str, settings: Mapping[str, Any]) -> HandWrittenGPUs | None:
        return pbs_chunk_gpus("resource_spec", text, text)

    @classmethod
    def gpu_line(cls, style: str, count: int, settings: Mapping[str, Any]) -> str | None:
        return {"select": "-l select=", "torque": "-l nodes="}.get(style)

    @classmethod
    def keep_hand_written(
        cls, found: HandWrittenGPUs, settings: dict[str, Any], style: str | None, skipped: bool
    ) -> bool:
        # A select (or Torque nodes=) line is kept whole as the job's -l line, in resource_spec.
        if not found.keeps_line:
            return False
        if found.field != "resource_spec":
            if settings.get("resource_spec") is not None:
                raise ValidationError(
                    found.field,
                    f"{found.describe()} and resource_spec={settings['resource_spec']!r} both give "
                    "the job's -l select line; give one",
                )
            settings["resource_spec"] = re.fullmatch(r"\s*-l\s+(\S+)\s*", found.text).group(1)
            drop_line(settings, found)
        if style is None and found.style == "torque":
            settings["gpu_request"] = "torque"
        return True

    @classmethod
    def installed_version(cls, first_line: Callable[[list[str]], str | None]) -> str | None:
        if not shutil.which("qstat"):
            return None
        # PBS Pro answers --version with "pbs_version = X", Torque with "Version: X" (Grid Engine prints its usage).
        line = first_line(["qstat", "--version"]) or ""
        if "pbs_version" in line:
            return "PBS " + line.split("=")[-1].strip()
        return f"Torque {line.split(':', 1)[1].strip()}" if line.startswith("Version:") else None

    @classmethod
    def parse_queue_listing(cls, text: str) -> dict[str, ListedQueue]:
        queues = parse_full_status(checked_size("qstat -Qf", text), "Queue:")
        return listed_queues("qstat -Qf", {name: _listed_queue(name, values) for name, values in queues.items()})

    @classmethod
    def array_element_id(cls, array_id: str, index: int) -> str:
        # qsub prints the array as 1234[].server; its subjobs are 1234[k].server
        return array_id.replace("[]", f"[{index}]", 1)

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: Sequence[Any]) -> list[str]:
        # PBS Pro shows finished jobs only with -x; Torque shows them without, and its -x means XML.
        torque = any(job.request.gpu_request == "torque" for job in jobs)
        return ["qstat", "-f", *([] if torque else ["-x"]), *job_ids]

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        if code != 0 and "Unknown Job Id" not in err and "Job has finished" not in err:
            return None
        listed = {}
        for job_id, attributes in parse_full_status(out).items():
            state = attributes.get("job_state", "")
            exit_status = attributes.get("Exit_status", attributes.get("exit_status"))
            listed[job_id] = JobStatus(
                job_id,
                state,
                ended=state in cls.ended_states,
                reason=attributes.get("comment") if state in ("Q", "H", "W", "T") else None,  # why it waits
                nodes=attributes.get("exec_host"),
                exit_code=int(exit_status) if exit_status and exit_status.lstrip("-").isdigit() else None,
                expected_start=local_epoch(attributes.get("estimated.start_time", ""), "%a %b %d %H:%M:%S %Y")
                if state == "Q"
                else None,
            )
        statuses = {}
        for job_id in job_ids:
            # qstat prints `1234.server` for `1234` and the reverse: match on the sequence number
            same = [status for listed_id, status in listed.items() if listed_id.split(".")[0] == job_id.split(".")[0]]
            statuses[job_id] = dataclasses.replace(same[0], job_id=job_id) if same else unlisted(job_id)
        return statuses

    @classmethod
    def log_paths(cls, job: Any) -> list[str]:
        # `-j oe`: both streams in <job name>.o<sequence number> (in -o's directory); a subjob 1234[k]'s .o1234.k
        sequence = str(job.job_id).split(".")[0]
        subjob = re.fullmatch(r"(\d+)\[(\d+)\]", sequence)
        return [
            job.log_file(
                f"{job.job_name}.o{subjob.group(1)}.{subjob.group(2)}" if subjob else f"{job.job_name}.o{sequence}"
            )
        ]
