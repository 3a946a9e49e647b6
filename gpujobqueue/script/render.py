"""The Jinja environment that turns a plan into a job script: a batch system's header template
(``templates/<name>.sh.j2``, or its own text) over the shared body (``templates/job.sh.j2``)."""

from __future__ import annotations

import dataclasses
import functools
import shlex
from typing import TYPE_CHECKING, Any, Protocol, Sequence, Union

import jinja2

from ..errors import ValidationError
from ..jobs.job_commands import ArrayElements
from ..jobs.launchers import launch_context
from ..jobs.request import JobRequest
from ..jobs.scheduler_job import SchedulerStart, check_scheduler_can_run_in_job
from ..jobs.workers import WorkerLaunch
from ..machine.install import python_version
from ..machine.package_data import package_data_dir
from ..preloads import PRELOADS, SAFE_PATH, module_name, standalone_file_name
from ..preloads import source as preload_source
from ..security.dashboard import CLOSED_HTTP_ADDRESS
from ..security.tls import ScriptTLS
from ..settings import config, naming
from ..settings.validation import CONTROL_CHARACTERS, parse_job_path
from ..settings.walltimes import format_hours_walltime
from .run import ClientRun

if TYPE_CHECKING:
    from ..security.owned_folders import ClusterFolder


class Plan(Protocol):
    """What rendering reads of a :class:`~gpujobqueue.plan.Plan` (which sits above the templates): its batch system
    (a :class:`~gpujobqueue.batch.base.BatchSystem`) and the request and launch of each of its pools."""

    system: Any

    def pool(self, pool: str = "gpu") -> tuple[JobRequest, WorkerLaunch]: ...


def _skip_lines(text: str, needles: Sequence[str]) -> str:
    """Drop the lines of ``text`` that contain any of ``needles`` (dask-jobqueue's job_directives_skip)."""
    if not needles:
        return text
    return "\n".join(line for line in text.split("\n") if not any(n in line for n in needles))


def _option_lines(words: Sequence[str]) -> list[str]:
    """Shell words of ``--option value`` pairs, one pair a line."""
    return [f"{option} {value}" for option, value in zip(words[::2], words[1::2])]


def check_walltime_kept(directives: Sequence[str], script: str, request: JobRequest) -> None:
    """Refuse (naming ``job_directives_skip``) a script whose header lost all the batch system's walltime
    ``directives``, unless an extra directive gives one: the job would run unlimited."""
    directives = tuple(directives)
    if not directives or not request.job_directives_skip:
        return
    if not any(line.startswith(directives) for line in script.split("\n")):
        raise ValidationError(
            "job_directives_skip",
            f"{list(request.job_directives_skip)!r} removes the walltime directive, and the job would "
            "run without a time limit; keep it, or give your own in job_extra_directives",
        )


class _MacroLines(str):
    """The output of a template macro: template text whose own ``{{ }}`` values were checked
    when the macro ran, so its line breaks are the template's."""


def _refuse_line_breaks(value: object) -> object:
    """Jinja's ``finalize``: every ``{{ }}`` value must stay on its line; a ValidationError for one with a line
    break or another control character, which could write lines of its own (a command, a directive)."""
    if isinstance(value, str) and not isinstance(value, _MacroLines) and CONTROL_CHARACTERS.search(value):
        raise ValidationError(
            "script",
            f"the value {value!r} holds a line break or control character and cannot be written "
            "into a job script; give printable text on one line",
        )
    return value


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja environment: strict about undefined names, with a shell-quoting filter."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(package_data_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        autoescape=False,
        # Jinja's default `{#` would swallow bash's `${#array[@]}`.
        comment_start_string="{##",
        comment_end_string="##}",
        finalize=_refuse_line_breaks,
    )
    env.filters["shquote"] = lambda value: shlex.quote(str(value))
    env.filters["hours_walltime"] = format_hours_walltime
    env.filters["skip_lines"] = _skip_lines
    env.filters["macro_lines"] = _MacroLines
    env.globals["closed_http_address"] = CLOSED_HTTP_ADDRESS
    return env


@functools.lru_cache(maxsize=None)
def batch_template(system: Any) -> jinja2.Template:
    """A batch system's template (a :class:`~gpujobqueue.batch.base.BatchSystem`): its header over the shared
    body, in an overlay of :func:`environment` that adds its ``template_filters``."""
    env = environment().overlay()
    env.filters.update(system.template_filters)
    if system.template_source is not None:
        return env.from_string(system.template_source)
    return env.get_template(system.template_name or f"{system.name}.sh.j2")


def launcher_exports(
    request: JobRequest, launch: WorkerLaunch, run: bool, script_tls: ScriptTLS | None = None
) -> list[str]:
    """The variables set in the script that every node's workers need: the node part's file sets
    them (their values in no launcher's arguments), whatever the launcher passes on."""
    names = ["PATH", "LD_LIBRARY_PATH", "PYTHONPATH"]
    names += [name for name, _ in request.environment]
    names += [name for name, _ in launch.ucx_environment]
    if request.worker_lifetime:
        names += [f"DASK_DISTRIBUTED__WORKER__LIFETIME__{part}" for part in ("DURATION", "STAGGER", "RESTART")]
    if run:
        names.append("DASK_SCHEDULER_ADDRESS")
    if script_tls is not None:
        names.append(script_tls.variable)
    return list(dict.fromkeys(names))


def preload_words(standalone: bool) -> dict[str, str]:
    """How a script names each of :mod:`gpujobqueue.preloads` to distributed, as a shell word: by module
    name, or (``standalone``) by the path of the file it writes into its private folder."""
    return {
        preload: f'"$private_dir/{standalone_file_name(preload)}"' if standalone else module_name(preload)
        for preload in PRELOADS
    }


@dataclasses.dataclass(frozen=True)
class PrivateFolder:
    """The job's private folder (``$private_dir``, templates/private_dir.sh.j2): where it is made, and why."""

    parent: str
    where: str
    holds: str


def private_folder(
    launch: WorkerLaunch, run: bool, standalone_preloads: Sequence[str], cluster: bool = False
) -> PrivateFolder | None:
    """The job's private folder where its script needs one (templates/private_dir.sh.j2), saying what it holds;
    else None."""
    holds = [
        *(["its scheduler's TLS credentials and address"] if run else []),
        *(["the preloads"] if set(standalone_preloads) - {SAFE_PATH} else []),
        *(["the start of Python 3.10 without -P"] if SAFE_PATH in standalone_preloads else []),
        *(["its copy of the files of the cluster's folder"] if cluster else []),
        *(["the node part, in a second folder of the submit directory"] if launch.launcher != "direct" else []),
    ]
    if not holds:
        return None
    return PrivateFolder("${TMPDIR:-/tmp}", "on this node", ", ".join(holds))


# The scheduler's address in a script rendered without one: the script refuses to run until it is filled in.
PLACEHOLDER_SCHEDULER = "tcp://<insert-scheduler-address-here>:8786"
_PLACEHOLDER_HOST = "<insert-scheduler-address-here>"


@dataclasses.dataclass(frozen=True)
class SchedulerAddress:
    """The workers connect to the scheduler at ``address`` (``tls://10.0.0.1:8786``); a script with the
    :data:`PLACEHOLDER_SCHEDULER` ends with status 2 before starting anything, until it is replaced."""

    address: str = PLACEHOLDER_SCHEDULER


@dataclasses.dataclass(frozen=True)
class SchedulerFile:
    """The workers find the scheduler through the scheduler file at ``path`` (``dask scheduler
    --scheduler-file``; a cluster whose scheduler runs in a job)."""

    path: str

    def __post_init__(self) -> None:
        # A path the job's shell reads ($HOME/scheduler.json too); never a word starting with '-'.
        object.__setattr__(self, "path", parse_job_path("scheduler_file", self.path))


@dataclasses.dataclass(frozen=True)
class SchedulerInJob:
    """The scheduler is started in this job, before its workers: the cluster's (``start``, ``scheduler='job'``), or
    the job's own for its client script (``run``, ``render --run``); exactly one is given."""

    start: SchedulerStart | None = None
    run: ClientRun | None = None

    def __post_init__(self) -> None:
        if (self.start is None) == (self.run is None):
            raise TypeError("SchedulerInJob takes start or run, one of them")


#: How a job's workers reach their scheduler: one of the three.
Connection = Union[SchedulerAddress, SchedulerFile, SchedulerInJob]


def _word(path: str, folder: ClusterFolder | None) -> str:
    """``path`` as a shell word: a file of the cluster's ``folder`` is read from the job's copy in ``$private_dir``."""
    name = folder.file_name(path) if folder else None
    return f'"$private_dir/{name}"' if name else shlex.quote(path)


def _scheduler_word(
    scheduler: str, run: ClientRun | None, scheduler_file: str | None, folder: ClusterFolder | None
) -> str:
    """How the workers' command line names their scheduler, as shell words."""
    if run is not None:
        return '"$DASK_SCHEDULER_ADDRESS"'  # known only in the job, once its scheduler has started
    if scheduler_file is not None:
        return "--scheduler-file " + _word(scheduler_file, folder)
    return shlex.quote(scheduler)


def _tls_lines(
    script_tls: ScriptTLS | None, tls_args: Sequence[str], start: SchedulerStart | None, folder: ClusterFolder | None
) -> tuple[list[str], list[str]]:
    """The workers' and the started scheduler's ``--tls-*`` option lines: the cluster's credential files
    quoted (those of its folder read from the job's copy), a script's as ``"$GPUJOBQUEUE_TLS_DIR/<file>"``."""
    if script_tls is not None:
        return _option_lines(script_tls.args()), _option_lines(script_tls.args())
    workers, scheduler = ([_word(a, folder) for a in args] for args in (tls_args, start.tls_args if start else ()))
    return _option_lines(workers), _option_lines(scheduler)


def _cluster_files(
    folder: ClusterFolder | None, tls_args: Sequence[str], scheduler_file: str | None, start: SchedulerStart | None
) -> tuple[list[str], str | None]:
    """The names of the files of the cluster's ``folder`` that the job copies from it as it starts, and the
    name under which it writes its scheduler's file (``start``) there."""
    if folder is None:
        return [], None
    paths = [*tls_args, *(start.tls_args if start else ()), *([scheduler_file] if scheduler_file and not start else [])]
    names = [name for path in paths if (name := folder.file_name(path))]
    return list(dict.fromkeys(names)), folder.file_name(scheduler_file) if start and scheduler_file else None


def _launch_values(
    system: Any,
    request: JobRequest,
    launch: WorkerLaunch,
    run: bool,
    standalone: bool,
    script_tls: ScriptTLS | None,
    cluster: bool,
) -> dict[str, Any]:
    """The template's values of the job's request and launch."""
    # Python 3.11+ takes -P (so do the Pythons multiprocessing starts from it); 3.10 runs a file of the
    # private folder that does the same. A python this machine cannot run is taken for 3.11+.
    version = python_version(launch.python)
    python310 = version is not None and version < (3, 11)
    standalone_preloads = (*(launch.preloads if standalone else ()), *((SAFE_PATH,) if python310 else ()))
    return {
        "safe_path": f'"$private_dir/{standalone_file_name(SAFE_PATH)}"' if python310 else "-P",
        "request": request,
        "launch": launch,
        "launch_lines": (
            []
            if launch.launcher == "direct"
            else launch.task_launcher.start_lines(launch_context(request, launch, system.node_file_variable))
        ),
        "node_exports": launcher_exports(request, launch, run, script_tls),
        "preload": preload_words(standalone),
        "private_dir": private_folder(launch, run, standalone_preloads, cluster),
        # The package's own text, not a value: its line breaks are meant.
        "standalone_sources": [
            (standalone_file_name(preload), _MacroLines(preload_source(preload).rstrip("\n")))
            for preload in standalone_preloads
        ],
    }


def _connection_parts(connection: Connection) -> tuple[str, str | None, SchedulerStart | None, ClientRun | None]:
    """The scheduler's address (or the placeholder), its file, the scheduler the job starts (the cluster's, or a
    ``--run`` job's own) and the ``--run`` client, as ``connection`` gives them."""
    if isinstance(connection, SchedulerAddress):
        return connection.address, None, None, None
    if isinstance(connection, SchedulerFile):
        return PLACEHOLDER_SCHEDULER, connection.path, None, None
    if isinstance(connection, SchedulerInJob):
        if connection.run is not None:
            # The job's own scheduler serves the job alone: on a single node it listens on the loopback; no dashboard.
            saturation = config.worker_saturation_text(config.worker_saturation())
            start = SchedulerStart(None, worker_saturation=saturation)
            return PLACEHOLDER_SCHEDULER, None, start, connection.run
        return PLACEHOLDER_SCHEDULER, connection.start.scheduler_file, connection.start, None
    raise TypeError(f"a connection is a SchedulerAddress, SchedulerFile or SchedulerInJob, not {connection!r}")


def render(
    plan: Plan,
    connection: Connection,
    *,
    name: str,
    pool: str = "gpu",
    tls_args: Sequence[str] = (),
    script_tls: ScriptTLS | None = None,
    plain_tcp: bool = False,
    array: ArrayElements | None = None,
    standalone: bool = False,
    cluster_folder: ClusterFolder | None = None,
) -> str:
    """The job script of the jobs of ``pool`` (``"gpu"``, ``"cpu"``) of a :class:`~gpujobqueue.plan.Plan` (nothing is
    parsed again), whose workers, named after ``name``, reach their scheduler by ``connection``.

    ``tls_args``: a cluster's ``--tls-*`` worker options, or ``script_tls``: the credentials a rendered script makes
    (``--run``) or reads; ``plain_tcp``: say in a comment that the script has no TLS; ``array``: the script of a job
    array (element ``i`` is the job ``<array.prefix>-<array.offset + i>``); ``standalone``: write
    :mod:`gpujobqueue.preloads` into the job's private folder, preloaded by path; ``cluster_folder``: the cluster's
    private folder, whose files the job reads only from inside it once checked, from a copy. A ValidationError for a
    scheduler in a job whose script runs on a launch node, an array of multi-node jobs, or a header without its
    walltime (``job_directives_skip``).
    """
    request, launch = plan.pool(pool)
    scheduler, scheduler_file, start_scheduler, run = _connection_parts(connection)
    if start_scheduler is not None:
        check_scheduler_can_run_in_job(launch, *(("launcher", "--run") if run else ("scheduler", "scheduler='job'")))
    if script_tls is not None and tls_args:
        raise ValueError("give tls_args (a cluster's credential files) or script_tls, not both")
    scheduler_arg = _scheduler_word(scheduler, run, scheduler_file, cluster_folder)
    cluster_files, publish = _cluster_files(cluster_folder, tls_args, scheduler_file, start_scheduler)
    cluster_folder = cluster_folder if cluster_files or publish else None
    # Workers are <name>-<i>, and on several nodes <name>-<node>-<i>, the node numbered by the launcher's rank.
    worker_name = naming.shell_worker_name(name, launch.nodes)
    if array is not None:
        if launch.nodes > 1 or start_scheduler is not None:
            raise ValidationError("job_array", "a job array's elements are one-node worker jobs")
        name = naming.array_job_name_text(array.prefix)
        worker_name = naming.SHELL_ARRAY_JOB_NAME  # element i's job name, worked out in the job
    worker_tls, scheduler_tls = _tls_lines(script_tls, tls_args, start_scheduler, cluster_folder)
    text = batch_template(plan.system).render(
        **_launch_values(plan.system, request, launch, run is not None, standalone, script_tls, bool(cluster_folder)),
        plan=plan,
        cluster_folder=cluster_folder,
        cluster_files=cluster_files,
        scheduler_publish=publish,
        name=name,
        worker_name=worker_name,
        device_worker_name=naming.shell_device_worker_name(worker_name, launch.workers_per_node),
        scheduler_arg=scheduler_arg,
        scheduler_unset=scheduler_arg == shlex.quote(scheduler) and _PLACEHOLDER_HOST in scheduler,
        run=run,
        start_scheduler=start_scheduler,
        directive_prefix=plan.system.directive_prefix,
        tls_args=worker_tls,
        scheduler_tls_args=scheduler_tls,
        script_tls=script_tls,
        plain_tcp=plain_tcp,
        array=array,
    )
    check_walltime_kept(plan.system.walltime_directives, text, request)
    return text + "\n"
