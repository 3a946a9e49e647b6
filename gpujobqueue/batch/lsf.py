"""LSF: GPUs by ``-gpu "num=G:mode=..."``, or whole CSM nodes (``-nnodes N``) reached through jsrun."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import re
import shutil
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import ValidationError
from ..handwritten.directives import DirectiveForm
from ..handwritten.gpu_parsers import HandWrittenGPUs, own_line, written_count
from ..jobs.job_commands import CommandFailed
from ..jobs.job_status import JobStatus, local_epoch, unlisted
from ..jobs.launchers import LAUNCHER_OBJECTS
from ..jobs.queue_listing import ListedQueue, ListingError, blocks, listed_queues, listed_walltime
from ..jobs.request import JobRequest
from ..jobs.workers import WorkerLaunch
from ..settings.declaration import read_declared
from ..settings.keywords import INT, SWITCH, TEXT, Computed, Keyword, NoOption, count, default_of, parse_keyword
from ..settings.limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_NODES
from ..settings.validation import given_or, parse_bool, parse_size, per_node
from ..settings.walltimes import parse_walltime
from .base import BatchSystem, SiteFacts

GPU_MODES = ("exclusive_process", "shared")
LSF_UNITS = ("kb", "mb", "gb", "tb", "pb", "eb")


def format_lsf_walltime(seconds: int) -> str:
    """Seconds as LSF's ``-W HH:MM``, rounded up to the minute."""
    hours, minutes = divmod(math.ceil(seconds / 60), 60)
    return f"{hours:02d}:{minutes:02d}"


def lsf_walltime(walltime: Any) -> Any:
    """A walltime as dask-jobqueue's ``LSFCluster`` means it: ``HH:MM`` is ``bsub -W``'s (``HH:MM:00``)."""
    if isinstance(walltime, str) and re.fullmatch(r"\s*[0-9]+:[0-9]+\s*", walltime):
        return walltime.strip() + ":00"
    return walltime


def read_run_limit(field_name: str, value: str) -> int:
    """Seconds of ``bsub -W [hours:]minutes`` written by hand (minutes past 59 as bsub takes them)."""
    match = re.fullmatch(r"([0-9]{1,9})(?::([0-9]{1,9}))?", value)
    if match is None:
        raise ValidationError(
            field_name,
            f"-W {value}: gpujobqueue plans its workers from -W [hours:]minutes; a run limit scaled to a host's "
            "speed (/host) is not one: give walltime instead",
        )
    hours, minutes = (match.group(1), match.group(2)) if match.group(2) else ("0", match.group(1))
    return parse_walltime(field_name, str(int(hours) * 60 + int(minutes)), 60)


# bsub's line past the user's pending-job threshold (MAX_PEND_JOBS): "User <name>: Pending job threshold reached.
# Retrying in 60 seconds..."; it retries every SUB_TRY_INTERVAL as long as LSB_NTRIES allows: by default for ever.
PENDING_THRESHOLD = r"Pending job threshold reached"


def lsf_time(text: str) -> float | None:
    """An LSF time of bjobs -o (``Dec  6 14:32``, a year after it where LSB_DISPLAY_YEAR is set, and ``E`` or
    ``L`` where estimated) as seconds since the epoch: the next such moment within half a year; None for ``-``."""
    match = re.fullmatch(r"([A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2})(?::\d{2})?(?: (\d{4}))?(?: [A-Z])?", text.strip()[:40])
    if match is None:
        return None
    now = datetime.datetime.now()
    year = int(match.group(2)) if match.group(2) else now.year
    for candidate in (year, year + 1) if not match.group(2) else (year,):
        epoch = local_epoch(f"{match.group(1)} {candidate}", "%b %d %H:%M %Y")
        if epoch is not None and (match.group(2) or epoch > now.timestamp() - 183 * 86400):
            return epoch
    return None


@dataclass(frozen=True)
class LSFOptions:
    """LSF's own settings of a job; ``memory`` is ``-M`` per node in ``lsf_units``, as dask-jobqueue writes it."""

    gpu_mode: str
    lsf_units: str
    memory: str | None
    use_stdin: bool


def parse_lsf_units(field_name: str, value: Any) -> str:
    """LSF_UNIT_FOR_LIMITS as ``lsf.conf`` or a user writes it (``MB``, ``m``), in lower case with its ``b``."""
    units = str(value).lower()
    units = units + "b" if len(units) == 1 else units
    if units not in LSF_UNITS:
        raise ValidationError(field_name, f"{value!r} is not an LSF_UNIT_FOR_LIMITS; use one of {', '.join(LSF_UNITS)}")
    return units


def parse_gpu_mode(field_name: str, value: Any) -> str:
    """LSF's ``-gpu`` mode."""
    if value not in GPU_MODES:
        raise ValidationError(field_name, f"{value!r} is not an LSF GPU mode; use one of {', '.join(GPU_MODES)}")
    return value


async def bsub_once(command: list[str], stdin: Any = None) -> str:
    """Run bsub; its output, or CommandFailed, also where it says the pending-job threshold is reached: then it is
    stopped, with nothing submitted, and the cluster holds the job (``user_limit_refusals``)."""
    process = await asyncio.create_subprocess_exec(
        *command, stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    output = asyncio.ensure_future(process.stdout.read())
    said: list[str] = []
    async for raw in process.stderr:
        said.append(raw.decode(errors="replace"))
        if re.search(PENDING_THRESHOLD, said[-1]):
            with contextlib.suppress(ProcessLookupError):  # it may have ended by itself meanwhile
                process.terminate()
            said.append("(gpujobqueue stopped bsub's retries: the job was not submitted)\n")
            break
    await process.wait()
    out = (await output).decode(errors="replace")
    if process.returncode != 0:
        raise CommandFailed(command, process.returncode, out, "".join(said))
    return out


_LSF_GPU = re.compile(r"(?<![\w-])-gpu\s+(?:\"([^\"]*)\"|'([^']*)'|(\S+))")
LSF_GPU_KEYS = ("num", "mode", "gmodel")  # what the generated -gpu request carries


def parse_hand_written_gpus(field_name: str, text: str, nodes: int) -> HandWrittenGPUs | None:
    """``-gpu "num=G[:mode=M][:gmodel=T]"`` or ``-gpu -`` (one GPU); one with other options (``mps``) keeps its line."""
    match = _LSF_GPU.search(text)
    if match is None:
        return None
    own_line(field_name, text, "-gpu", match)
    value = next(group for group in match.groups() if group is not None)
    values = {} if value.strip() == "-" else dict(pair.partition("=")[::2] for pair in value.split(":"))
    mode = values.get("mode")
    if mode is not None and mode not in GPU_MODES:
        raise ValidationError(field_name, f"{text!r}: mode={mode} is not exclusive_process or shared")
    count = written_count(field_name, text, values["num"], "GPUs per host", MAX_GPUS_PER_NODE) if "num" in values else 1
    settings = {"gpu_mode": mode} if mode else {}
    keeps_line = any(key not in LSF_GPU_KEYS for key in values)
    return HandWrittenGPUs(
        field_name, text, count, values.get("gmodel"), "gpu", settings=settings, keeps_line=keeps_line
    )


NCPUS = Keyword(
    "ncpus",
    INT,
    count(MAX_CPUS_PER_NODE * MAX_NODES),
    None,
    "LSF slots per job (-n), as dask-jobqueue's ncpus: the job's cores, instead of cores (given beside "
    "ncpus, cores is the threads of the job's workers).",
    jobqueue_key="ncpus",
)


_QUEUE_LINE = re.compile(r"QUEUE: (.*)$")
_MINUTES = re.compile(r" *([0-9]{1,9}(?:\.[0-9]{1,3})?) min\b")
_HOST = re.compile(r"(?!(?:all|others|none)$)[A-Za-z0-9][A-Za-z0-9_.-]{0,254}")  # not a group (group/), nor all


def _limit_header(line: str) -> bool:
    """A line of limit names holding RUNLIMIT (" CPULIMIT    RUNLIMIT"), not a description that names it."""
    words = line.split()
    return "RUNLIMIT" in words and all(word.endswith("LIMIT") and word.isupper() for word in words)


def _lsf_queue(name: str, first: int, lines: list[str]) -> ListedQueue:
    """A queue of ``bqueues -l``: its RUNLIMIT under MAXIMUM LIMITS (a 25-character column), and its named HOSTS."""
    run_limit, hosts, section = None, None, ""
    for index, line in enumerate(lines):
        if line.strip() in ("DEFAULT LIMITS:", "MAXIMUM LIMITS:"):
            section = line.strip()
        elif _limit_header(line) and section != "DEFAULT LIMITS:" and run_limit is None:
            column, where = line.index("RUNLIMIT") - 1, f"bqueues -l line {first + index + 2}"
            found = _MINUTES.match(lines[index + 1][column : column + 25] if index + 1 < len(lines) else "")
            if found is None:
                raise ListingError(where, f"no run limit in minutes under RUNLIMIT (queue {name})")
            run_limit = listed_walltime(where, str(round(float(found.group(1)) * 60)))
        elif line.startswith("HOSTS:"):
            names = line[6:].split()
            hosts = len(names) if names and all(_HOST.fullmatch(host) for host in names) else None
    return ListedQueue(name, nodes=hosts, max_walltime=run_limit)


class LSF(BatchSystem):
    """IBM Spectrum LSF: jobs submitted with ``bsub < script``, watched with ``bjobs``, cancelled with ``bkill``."""

    name = "lsf"
    cluster_doc = """A Dask cluster of GPU workers submitted to IBM Spectrum LSF.

    Takes every keyword of :class:`dask_jobqueue.LSFCluster` with the same meaning
    (``ncpus`` is ``-n``, ``mem`` the bytes of ``-M``, ``project`` is ``-P``, ``lsf_units``,
    ``use_stdin``), and the GPU keywords of :class:`~gpujobqueue.cluster.GPUJobQueueCluster`.

    Parameters
    ----------
    gpu_request : {"gpu", "csm", "none"}
        ``gpu``: ``#BSUB -gpu "num=G:mode=exclusive_process"`` with ``-n`` cores on one
        host (the default); ``csm``: ``#BSUB -nnodes N`` whole nodes (Summit-like CSM
        machines), the workers started on the node through ``jsrun``; ``none``: the queue
        implies GPUs.
    gpu_type : str
        Adds ``gmodel=<type>`` to the ``-gpu`` request. Default: not set.
    project : str
        ``-P``; a synonym of ``account``.
    walltime : str
        As elsewhere, except that two fields are LSF's and dask-jobqueue's ``HH:MM``
        (``"01:30"`` is an hour and a half, as ``bsub -W 01:30`` reads it), not ``MM:SS``. Default
        ``00:30:00``, as dask-jobqueue's.

    Examples
    --------
    >>> cluster = LSFGPUCluster(gpus_per_node=4, queue="gpu", project="ABC123", walltime="01:00")
    >>> cluster.scale(gpus=8)  # two 4-GPU jobs
    """
    directive_prefix = "#BSUB"
    template_filters = {"lsf_walltime": format_lsf_walltime}  # used by lsf.sh.j2
    walltime_directives = ("#BSUB -W",)
    directive_forms = (
        DirectiveForm("walltime", ("-W",), read_run_limit, lambda s: f"#BSUB -W {format_lsf_walltime(s)}"),
    )
    queue_list_separator = " "  # bsub -q "short long": one of the queues, the list in quotes
    submit_command = "bsub"
    status_command = "bjobs"
    cancel_command = "bkill"
    # Each queue's long form: "QUEUE: NAME", its limits (MAXIMUM LIMITS: RUNLIMIT) and HOSTS (bqueues(1) -l).
    queue_listing_command = ("bqueues", "-l")
    job_id_variable = "LSB_JOBID"
    job_id_regexp = r"Job <(?P<job_id>\d+)>"
    ended_states = frozenset({"DONE", "EXIT"})
    # bjobs -o esstart_time (LSB_ENABLE_ESTIMATION=Y); a bjobs without the field is asked without it from then on
    start_estimates = "LSF estimate"
    estimates_field = True
    array_task_variable = "LSB_JOBINDEX"
    array_size_limit = 1000  # MAX_JOB_ARRAY_SIZE's default
    user_limit_refusals = (PENDING_THRESHOLD,)
    keywords = (
        NCPUS,
        Keyword(
            "mem",
            INT,
            parse_size,
            None,
            "Memory per job in bytes, as dask-jobqueue's LSF mem (or --memory): the bytes of -M.",
            type_doc="int or str",
            jobqueue_key="mem",
        ),
        Keyword(
            "lsf_units",
            TEXT,
            parse_lsf_units,
            Computed("read from ``$LSF_ENVDIR/lsf.conf``"),
            "The unit of LSF's memory limits (LSF_UNIT_FOR_LIMITS: kb, mb, gb).",
            jobqueue_key="lsf-units",
        ),
        Keyword(
            "use_stdin",
            SWITCH,
            parse_bool,
            True,
            "Submit as ``bsub < script`` or ``bsub script``.",
            option=NoOption(
                "how a cluster hands its script to bsub; a rendered script is submitted as `bsub < script` by "
                "whoever runs it"
            ),
            jobqueue_key="use-stdin",
        ),
        Keyword(
            "gpu_mode",
            TEXT,
            parse_gpu_mode,
            "exclusive_process",
            "LSF -gpu mode: exclusive_process or shared (``mode=`` of the ``-gpu`` request).",
            type_doc='{"exclusive_process", "shared"}',
        ),
    )
    synonyms = {**BatchSystem.synonyms, "project": "account"}
    account_flags = ("-P",)
    gpu_directive_parser = staticmethod(parse_hand_written_gpus)
    gpu_request_styles = ("gpu", "csm", "none")
    whole_node_styles = ("csm",)
    site_enums = {"gpu_request.gpu_mode": GPU_MODES}
    launchers = tuple(LAUNCHER_OBJECTS[name] for name in ("jsrun", "mpiexec-openmpi", "mpiexec-mpich", "blaunch"))
    native_launcher = "blaunch"

    @classmethod
    def site_settings(cls, *, entry: SiteFacts, gpu: SiteFacts, directives: SiteFacts) -> dict[str, Any]:
        return {"gpu_mode": gpu.get("gpu_mode")}

    @classmethod
    def apply_defaults(cls, settings: dict[str, Any]) -> None:
        if settings.get("walltime") is not None:
            settings["walltime"] = lsf_walltime(settings["walltime"])  # bsub -W [hour:]minute
        if settings.get("ncpus") is not None:  # dask-jobqueue's -n: the job's cores
            slots = NCPUS.parse(NCPUS, settings["ncpus"])
            if settings.get("cpus_per_gpu") is not None:
                raise ValidationError("ncpus", "give ncpus (LSF's -n) or cpus_per_gpu, not both")
            if settings.get("cores") is None:
                settings["cores"] = slots
            else:  # as dask-jobqueue (and SLURM's job_cpu): -n is ncpus, cores the threads of the job's workers
                nodes = parse_keyword("nodes", given_or(settings.get("nodes"), default_of("nodes")))
                settings["job_cpu"] = per_node("ncpus", slots, nodes)
        if settings.get("gpu_request") == "csm" and settings.get("launcher") is None:
            settings["launcher"] = "jsrun"

    @classmethod
    def walltime_seconds(cls, value: Any) -> int:
        return super().walltime_seconds(lsf_walltime(value))

    @classmethod
    def parse_options(cls, settings: Mapping[str, Any], request: JobRequest) -> LSFOptions:
        # dask-jobqueue (and distributed with it) imported only where an LSF plan is made
        from ..jobs.jobqueue_base import lsf_detect_units, lsf_format_bytes_ceil

        value = read_declared(cls.keywords, settings)
        units = value["lsf_units"] or parse_lsf_units("LSF_UNIT_FOR_LIMITS", lsf_detect_units())  # lsf.conf's
        memory = request.memory_per_node if value["mem"] is None else value["mem"]
        # -M in LSF_UNIT_FOR_LIMITS as dask-jobqueue writes it: powers of 1000, rounded up (LSF reads binary units)
        memory_text = None if memory is None else lsf_format_bytes_ceil(memory, lsf_units=units)
        return LSFOptions(gpu_mode=value["gpu_mode"], lsf_units=units, memory=memory_text, use_stdin=value["use_stdin"])

    @classmethod
    def check_launch(cls, request: JobRequest, launch: WorkerLaunch) -> None:
        csm = request.gpu_request == "csm"
        if csm and launch.launcher != "jsrun":
            raise ValidationError(
                "launcher",
                "a CSM job (gpu_request='csm', -nnodes) runs its script on a launch node without GPUs; its "
                "workers need launcher='jsrun'",
            )
        if not csm and launch.launcher == "jsrun":
            raise ValidationError(
                "launcher",
                "launcher='jsrun' needs whole CSM nodes (gpu_request='csm'); a -gpu job's script runs on its "
                "first host: it starts the workers directly, or those of several hosts through mpiexec-openmpi or "
                "mpiexec-mpich",
            )
        super().check_launch(request, launch)

    @classmethod
    def gpu_line(cls, style: str, count: int, settings: Mapping[str, Any]) -> str | None:
        return f'-gpu "num={count}' if style == "gpu" else None

    @classmethod
    def installed_version(cls, first_line: Callable[[list[str]], str | None]) -> str | None:
        if not shutil.which("bsub"):
            return None
        return (first_line(["lsid"]) if shutil.which("lsid") else None) or "LSF"

    @classmethod
    def parse_queue_listing(cls, text: str) -> dict[str, ListedQueue]:
        found = {name: _lsf_queue(name, first, lines) for name, first, lines in blocks("bqueues -l", text, _QUEUE_LINE)}
        return listed_queues("bqueues -l", found)

    @classmethod
    def array_element_id(cls, array_id: str, index: int) -> str:
        return f"{array_id}[{index}]"

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: Sequence[Any]) -> list[str]:
        # jobid is an array's id on each of its elements' lines; jobindex tells them apart (0 outside arrays)
        return [
            "bjobs",
            "-noheader",
            "-o",
            f"jobid jobindex stat exit_code exec_host {'esstart_time ' if cls.estimates_field else ''}pend_reason "
            "delimiter='|'",
            *job_ids,
        ]

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        if code != 0 and "is not found" not in err:
            return None
        listed = {}
        first = 6 if cls.estimates_field else 5
        for line in out.splitlines():
            fields = [field.strip() for field in line.split("|")]
            if len(fields) >= first + 1:
                job_id, index, state, exit_code, hosts = fields[:5]
                if index not in ("0", "-", ""):
                    job_id = f"{job_id}[{index}]"
                reason = "|".join(fields[first:])  # a pending reason may hold the delimiter
                listed[job_id] = JobStatus(
                    job_id,
                    state,
                    ended=state in cls.ended_states,
                    reason=reason if reason not in ("-", "") else None,
                    nodes=hosts if hosts not in ("-", "") else None,
                    # bjobs shows "-" for a DONE job's exit code: it is 0
                    exit_code=int(exit_code) if exit_code.isdigit() else (0 if state == "DONE" else None),
                    expected_start=lsf_time(fields[5]) if first == 6 and state == "PEND" else None,
                )
        return {job_id: listed.get(job_id) or unlisted(job_id) for job_id in job_ids}

    @classmethod
    async def _ask(cls, ids: list[str], jobs: Sequence[Any]) -> tuple[dict[str, JobStatus] | None, str]:
        statuses, error = await super()._ask(ids, jobs)
        if statuses is None and cls.estimates_field and ("esstart_time" in error or "Illegal field" in error):
            cls.estimates_field = False  # this LSF has no estimator's field: asked again without it
            return await super()._ask(ids, jobs)
        return statuses, error

    @classmethod
    def log_paths(cls, job: Any) -> list[str]:
        # templates/lsf.sh.j2's -o (and -e): <job name>-<id>.out, array element 1234[k]'s <job name>-1234_k.out
        file_id = str(job.job_id).replace("[", "_").rstrip("]")
        paths = [job.log_file(f"{job.job_name}-{file_id}.out")]
        return paths + [job.log_file(f"{job.job_name}-{file_id}.err")] if job.log_directory else paths

    @classmethod
    async def run_submit_command(cls, job: Any, path: str) -> str:
        use_stdin = job.request.options.use_stdin
        command = [cls.submit_command] if use_stdin else [cls.submit_command, path]
        with open(path) if use_stdin else contextlib.nullcontext() as script:
            return await bsub_once(command, stdin=script)
