"""``BatchSystem``: everything gpujobqueue knows of one batch system, declared in one class: a subclass per module
of ``gpujobqueue/batch/`` (or of another package, through the entry-point group ``gpujobqueue.batch_systems``).
Every method is a class method; each attribute's default is here, so nothing asks ``getattr`` of one."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import subprocess
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ..errors import BatchCommandNotFoundError, SubmissionError, ValidationError
from ..handwritten.hooks import HandWrittenDirectives
from ..jobs import job_commands
from ..jobs.job_commands import CANCEL_CHUNK, CommandFailed, TrialAnswer, ask_without_submitting, run_command
from ..jobs.job_status import JobStatus, run_query
from ..jobs.launchers import Launcher
from ..jobs.queue_listing import ListedQueue
from ..jobs.request import DEFAULT_WALLTIME, JobRequest
from ..jobs.workers import WorkerLaunch
from ..script.render import Connection, Plan, render
from ..settings.cluster_parameters import parameters_section, with_shared_parameters
from ..settings.keywords import Keyword, setting_keywords

logger = logging.getLogger("gpujobqueue.job")
# A job id no batch system has given: a reachable batch system answers that it does not know it.
PROBE_ID = "999999999"
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
SiteFacts = Mapping[str, Any]  # a section of a site file: a queue's entry, its gpu_request or directives


def binary_memory(gigabytes: str, megabytes: str) -> Callable[[int], str]:
    """A template filter writing bytes in binary units, rounded up: whole ``gigabytes`` (``60G``), else ``1536M``."""

    def written(nbytes: int) -> str:
        mebibytes = math.ceil(nbytes / 2**20)
        return f"{mebibytes // 1024}{gigabytes}" if mebibytes % 1024 == 0 else f"{mebibytes}{megabytes}"

    return written


class BatchSystem(HandWrittenDirectives):
    """One batch system; subclasses declare it (``SLURM``, ``PBS``, ``LSF``, ``SGE``, ``Local``). Its cluster and
    job classes are the generic ones bound to it (:func:`gpujobqueue.runtime.factory.bound_cluster`)."""

    # --- Who it is
    #: Its name: the registry's key, the dask config section ``gpujobqueue.<name>``, a site's ``scheduler``.
    name: ClassVar[str] = ""
    #: The docstring of its cluster class (its own keywords; the shared ones are added).
    cluster_doc: ClassVar[str] = ""

    # --- The script
    #: The prefix of its directive lines (``#SBATCH``); ``job_extra_directives`` are written after it.
    directive_prefix: ClassVar[str] = "#"
    #: Its header template in gpujobqueue's ``templates`` folder (default ``<name>.sh.j2``) ...
    template_name: ClassVar[str | None] = None
    #: ... or its text, for a batch system outside the package: Jinja extending ``job.sh.j2`` (``directives``).
    template_source: ClassVar[str | None] = None
    #: The Jinja filters its header template uses (``slurm_memory``).
    template_filters: ClassVar[Mapping[str, Callable[..., str]]] = {}
    #: The header lines that set the walltime, which ``job_directives_skip`` may not all drop.
    walltime_directives: ClassVar[tuple[str, ...]] = ()
    #: The seconds of a bare-number walltime, as those lines read it (dask-jobqueue writes it as given).
    walltime_number_unit: ClassVar[int] = 60
    #: How its queue option reads a list of queues (``","``: sbatch's; ``" "``: LSF's ``-q "short long"``); None: one.
    queue_list_separator: ClassVar[str | None] = None
    #: The variable naming the file of a job's hosts, for launchers that need it (``PBS_NODEFILE``).
    node_file_variable: ClassVar[str | None] = None

    # --- Its commands
    submit_command: ClassVar[str] = ""
    status_command: ClassVar[str | None] = None
    cancel_command: ClassVar[str] = ""
    #: The submit command's options that check a job without submitting it (``check --submit-test``); None: none.
    test_submit_options: ClassVar[tuple[str, ...] | None] = None
    #: The command listing its queues' limits, for ``check --submit-test`` (:meth:`parse_queue_listing`); None: none.
    queue_listing_command: ClassVar[tuple[str, ...] | None] = None
    #: Commands it uses where present (a finished job's exit code); ``gpujobqueue check`` looks for them.
    optional_commands: ClassVar[tuple[str, ...]] = ()
    #: The job id in the submit command's output.
    job_id_regexp: ClassVar[str] = r"(?P<job_id>\d+)"
    #: The variable it sets inside a job (``SLURM_JOB_ID``), and those that must be set with it.
    job_id_variable: ClassVar[str | None] = None
    job_also_sets: ClassVar[tuple[str, ...]] = ()
    #: No batch server: jobs run on this machine.
    runs_jobs_here: ClassVar[bool] = False
    #: Its submit command's refusals for a per-user job limit: the cluster holds the jobs (user_limits.py).
    user_limit_refusals: ClassVar[tuple[str, ...]] = ()
    #: States that mean the job is over, though the batch system still lists it.
    ended_states: ClassVar[frozenset[str]] = frozenset()
    #: Pending reasons that waiting does not clear (the job asks for more than its queue allows).
    hopeless_reasons: ClassVar[frozenset[str]] = frozenset()
    #: Job arrays: the variable of an element's index (None: no arrays), and the most elements (its default limit).
    array_task_variable: ClassVar[str | None] = None
    array_size_limit: ClassVar[int] = 1000
    #: Where its start estimates of waiting jobs come from, in words (None: none), and what a wait says without.
    start_estimates: ClassVar[str | None] = None
    no_start_estimates: ClassVar[str] = "the batch system gives no start estimate"
    #: Variables set for its queries and test submissions (a time format the parsers read).
    query_environment: ClassVar[Mapping[str, str]] = {}

    # --- Its keywords
    #: Its own keywords, beside those every batch system takes.
    keywords: ClassVar[tuple[Keyword, ...]] = ()
    #: Other names of keywords, in its (or dask's) vocabulary: ``{"partition": "queue"}``; all take distributed's env.
    synonyms: ClassVar[Mapping[str, str]] = {"env": "environment"}
    #: Its options (fields of its options object) that are the GPU jobs' alone: the CPU pool's jobs go without them.
    gpu_job_options: ClassVar[tuple[str, ...]] = ()
    #: How it can ask for GPUs; the first is the default.
    gpu_request_styles: ClassVar[tuple[str, ...]] = ("none",)
    #: Its styles that ask for whole nodes, whose GPUs come with the node: no count to write by hand.
    whole_node_styles: ClassVar[tuple[str, ...]] = ()
    #: Forms of GPU request a site may refuse (``gpu_request.rejects``) besides the styles (SLURM's ``gpus-per-task``).
    rejectable_gpu_forms: ClassVar[tuple[str, ...]] = ()
    #: The walltime of jobs given none; None where nothing ends jobs.
    default_walltime: ClassVar[str | None] = DEFAULT_WALLTIME
    #: The launchers that start one task per node of its jobs of several nodes.
    launchers: ClassVar[tuple[Launcher, ...]] = ()
    #: The one of them a job of several nodes uses when neither the user nor a site names one; None: refused.
    native_launcher: ClassVar[str | None] = None
    #: The options that can name a job's account (a site's ``account.flag`` picks one); the first is the default.
    account_flags: ClassVar[tuple[str, ...]] = ()
    #: The option that sends jobs to another of its clusters (a site's ``clusters``); None: no such thing.
    clusters_option: ClassVar[str | None] = None
    #: Site files may name it as their ``scheduler``.
    takes_sites: ClassVar[bool] = True
    #: The values of its own site-file keys, by the key's path in the site schema (``gpu_request.gpu_mode``).
    site_enums: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "keywords" in cls.__dict__ and cls.keywords:  # its own keywords documented from their declarations
            cls.cluster_doc = with_shared_parameters(
                cls.cluster_doc or f"A Dask cluster of GPU workers submitted to {cls.name}.\n    ",
                parameters_section(cls.keywords),
            )

    @classmethod
    def check_declaration(cls) -> None:
        """Raise TypeError naming what a subclass lacks for the rest of the package to use it."""
        problems = []
        if not (isinstance(cls.name, str) and _NAME.fullmatch(cls.name)):
            problems.append(f"name {cls.name!r} (lower-case letters, digits, _ and -)")
        if not (cls.submit_command and cls.cancel_command):
            problems.append("submit_command and cancel_command")
        if "job_id" not in re.compile(cls.job_id_regexp).groupindex:
            problems.append(f"job_id_regexp with a (?P<job_id>...) group, not {cls.job_id_regexp!r}")
        if not cls.gpu_request_styles:
            problems.append("gpu_request_styles (at least one)")
        if not all(isinstance(keyword, Keyword) for keyword in cls.keywords):
            problems.append("keywords (gpujobqueue.settings.keywords.Keyword objects)")
        if not all(isinstance(launcher, Launcher) for launcher in cls.launchers):
            problems.append("launchers (gpujobqueue.jobs.launchers.Launcher objects)")
        if cls.native_launcher is not None and cls.native_launcher not in cls.launcher_names():
            problems.append(f"native_launcher {cls.native_launcher!r} (one of its launchers)")
        if not cls.runs_jobs_here and not (cls.status_command and cls.job_id_variable):
            problems.append("status_command and job_id_variable (a batch system with a server)")
        if problems:
            raise TypeError(f"batch system {cls.__qualname__} must declare: {'; '.join(problems)}")

    @classmethod
    def class_name(cls, kind: str) -> str:
        """The name of its bound classes: ``SLURMGPUCluster``, ``SLURMGPUJob`` (``kind`` ``GPUCluster``, ``GPUJob``)."""
        return f"{cls.__name__}{kind}"

    @classmethod
    def setting_names(cls) -> tuple[str, ...]:
        """The settings its clusters resolve keyword > ``gpujobqueue.<name>.*`` > site > default."""
        return (*setting_keywords(), *cls.keywords)

    @classmethod
    def launcher_names(cls) -> tuple[str, ...]:
        """The names of :attr:`launchers` (the ``launcher`` keyword's values for its jobs, beside ``direct``)."""
        return tuple(launcher.name for launcher in cls.launchers)

    # --- The plan: its keywords made into its request, as plan.make_plan asks

    @classmethod
    def apply_defaults(cls, settings: dict[str, Any]) -> None:
        """Fill in defaults of its own, or translate its keywords into the shared ones (in place)."""

    @classmethod
    def parse_options(cls, settings: Mapping[str, Any], request: JobRequest) -> Any:
        """Its own keywords parsed into its options object (``request.options``); None for none."""
        return None

    @classmethod
    def check_job_array(cls, request: JobRequest) -> None:
        """Refuse job arrays where it has none, or for this request."""
        if cls.array_task_variable is None:
            raise ValidationError("job_array", f"{cls.name} jobs cannot be submitted as job arrays")
        if request.nodes > 1:
            raise ValidationError(
                "job_array",
                f"job arrays are for many one-node jobs; jobs of {request.nodes} nodes go as they are "
                "(job_array=False)",
            )

    @classmethod
    def check_launch(cls, request: JobRequest, launch: WorkerLaunch) -> None:
        """Refuse a launcher that does not start tasks on its nodes."""
        if launch.launcher != "direct" and launch.launcher not in cls.launcher_names():
            accepted = ", ".join(cls.launcher_names()) or "none: its jobs have one node, whose workers start directly"
            raise ValidationError(
                "launcher",
                f"{launch.launcher!r} does not start tasks on the nodes of a {cls.name} job; launchers "
                f"for {cls.name}: {accepted}",
            )

    @classmethod
    def site_settings(cls, *, entry: SiteFacts, gpu: SiteFacts, directives: SiteFacts) -> dict[str, Any]:
        """Its own keywords from a site's queue ``entry``, ``gpu_request`` and ``directives`` (None: dropped)."""
        return {}

    @classmethod
    def with_site(cls, request: JobRequest, site_data: Mapping[str, Any]) -> JobRequest:
        """The request as the site's facts make it (SLURM: the cluster its jobs go to)."""
        return request

    @classmethod
    def cpu_job_options(cls, options: Any, *, qos: str | None, constraint: str | None) -> Any:
        """The CPU pool's jobs' options from the GPU jobs': a pool's own ``qos`` and ``constraint`` where it
        gives them (SLURM's); nothing that asks for the GPU jobs' resources alone (:attr:`gpu_job_options`)."""
        return dataclasses.replace(options, **dict.fromkeys(cls.gpu_job_options)) if cls.gpu_job_options else options

    @classmethod
    def cluster_state(cls, settings: Mapping[str, Any], request: JobRequest) -> Any:
        """What it keeps for all the jobs of one cluster (``batch_state``: the local device pool); None for nothing."""
        return None

    # --- The script

    @classmethod
    def job_script(cls, plan: Plan, connection: Connection, *, name: str, pool: str = "gpu", **options: Any) -> str:
        """The script the jobs of ``pool`` of ``plan`` submit."""
        return cls.submission(render(plan, connection, name=name, pool=pool, **options), plan.pool(pool)[0])

    @classmethod
    def submission(cls, script: str, request: JobRequest) -> str:
        """What its submit command takes for ``script``: itself, or a text holding it (HTCondor's submit file)."""
        return script

    @classmethod
    def job_header(cls, script: str) -> str:
        """The directive lines of ``script`` (dask-jobqueue's ``job_header``)."""
        prefixes = (cls.directive_prefix + " ", cls.directive_prefix + "\t")
        return "\n".join(line for line in script.split("\n")[1:] if line.startswith(prefixes))

    # --- Submitting

    @classmethod
    async def submit(cls, job: Any) -> str:
        """Submit ``job`` (a :class:`~gpujobqueue.job.GPUJob`) alone; its job id."""
        with job.job_file() as path:
            out = await cls.submit_script(job, path)
        return cls.job_id_from_output(out)

    @classmethod
    async def submit_script(cls, job: Any, path: str) -> str:
        """Submit the script at ``path`` for ``job``; the submit command's output, or a SubmissionError."""
        try:
            return await cls.run_submit_command(job, path)
        except FileNotFoundError:
            raise BatchCommandNotFoundError(cls.submit_command.split()[0], cls.name) from None
        except CommandFailed as error:
            # What the batch system said, once: not chained to the command's own error, which says it again.
            raise SubmissionError(
                f"{cls.submit_command} refused job {job.name} (exit status {error.code}):\n{error.said}"
            ) from None
        except RuntimeError as error:
            raise SubmissionError(f"{cls.submit_command} refused job {job.name}: {error}") from None

    @classmethod
    async def run_submit_command(cls, job: Any, path: str) -> str:
        """Run its submit command on the script at ``path``; its output, or :class:`CommandFailed`."""
        return await run_command([*cls.submit_command.split(), path])

    @classmethod
    async def test_submit(cls, path: str) -> TrialAnswer:
        """Ask the batch system whether it would take the job script at ``path``, submitting nothing; a refusal
        followed by no answer to :meth:`probe` is "could not be asked" (accepted None)."""
        if cls.test_submit_options is None:
            return TrialAnswer(None, f"{cls.name} has no mode that checks a job without submitting it")
        answer = await ask_without_submitting(
            [cls.submit_command, *cls.test_submit_options, path], environment=cls.query_environment
        )
        try:
            silent = answer.accepted is False and await cls.probe() is not None
        except BatchCommandNotFoundError:  # no status command to tell: the refusal stands
            silent = False
        if silent:
            last = [line.strip() for line in answer.said.splitlines() if line.strip()][-1]
            return TrialAnswer(None, f"{cls.name} does not answer: {last}")
        return answer

    @classmethod
    def test_scripts(cls, scripts: Sequence[str | None], unasked: str | None = None) -> list[TrialAnswer | None]:
        """:meth:`test_submit` of each script in order (:func:`~gpujobqueue.jobs.job_commands.test_each`)."""
        return job_commands.run_to_end(
            job_commands.test_each(cls.test_submit, list(scripts), unasked, cls.test_submit_options is not None)
        )

    @classmethod
    def trial_start(cls, said: str) -> float | None:
        """When :meth:`test_submit`'s answer says the job would start (seconds since the epoch), where it says."""
        return None

    @classmethod
    def queue_listing(cls, site_data: Mapping[str, Any]) -> list[str] | None:
        """:attr:`queue_listing_command` as a site's queues are listed (SLURM's names the site's clusters)."""
        return list(cls.queue_listing_command) if cls.queue_listing_command else None

    @classmethod
    def parse_queue_listing(cls, text: str) -> dict[str, ListedQueue]:
        """Each queue's limits in :meth:`queue_listing`'s output, by name; a ListingError for what it cannot read."""
        raise NotImplementedError(f"{cls.__name__} cannot read {cls.name}'s queue listing")

    @classmethod
    def job_id_from_output(cls, out: str) -> str:
        """The job id in the submit command's output; a ValueError in dask-jobqueue's words where it holds none."""
        match = re.search(cls.job_id_regexp, out)  # its job_id group is checked by check_declaration
        if match is None or match.group("job_id") is None:
            raise ValueError(
                "Could not parse job id from submission command output.\n"
                f"Job id regexp is {cls.job_id_regexp!r}\nSubmission command output is:\n{out}"
            )
        return match.group("job_id")

    @classmethod
    def array_element_id(cls, array_id: str, index: int) -> str:
        """The id of element ``index`` of the job array ``array_id``, as its cancel and query commands take it."""
        raise NotImplementedError(f"{cls.name} has no job arrays")

    # --- Cancelling

    @classmethod
    def cancel_commands(cls, jobs: Sequence[Any]) -> list[list[str]]:
        """Its cancel commands for ``jobs``, many ids to a command."""
        ids = [str(job.job_id) for job in jobs if job.job_id]
        return [
            cls.cancel_command.split() + ids[start : start + CANCEL_CHUNK] for start in range(0, len(ids), CANCEL_CHUNK)
        ]

    @classmethod
    async def stop(cls, job: Any) -> None:
        """End ``job``: cancelled with the others of the cluster's round (``job.commands``), else alone."""
        if job.commands is not None:
            await job.commands.cancel(job)
            return
        for command in cls.cancel_commands([job]):
            try:
                await run_command(command)
            except RuntimeError:  # a job that has already ended cannot be cancelled (dask-jobqueue's way)
                pass

    @classmethod
    def cancel_now(cls, jobs: Sequence[Any]) -> None:
        """Cancel ``jobs`` at once, blocking, without the event loop (at exit and on signals)."""
        for command in cls.cancel_commands(jobs):
            try:
                subprocess.run(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=60,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError) as error:
                logger.error("gpujobqueue: could not run %s: %s", " ".join(command), error)

    # --- Asking how jobs are

    @classmethod
    async def query_answer(cls, jobs: Sequence[Any]) -> tuple[dict[str, JobStatus] | None, str]:
        """The statuses of several jobs by job id, in one command, and ``""``; or None and the query's error."""
        ids = [job.job_id for job in jobs if job.job_id]
        if not ids:
            return {}, ""
        return await cls._ask(ids, jobs)

    @classmethod
    async def _ask(cls, ids: list[str], jobs: Sequence[Any]) -> tuple[dict[str, JobStatus] | None, str]:
        command = cls.query_command(ids, jobs)
        try:
            code, out, err = await run_query(command, required=True, environment=cls.query_environment)
        except FileNotFoundError:
            raise BatchCommandNotFoundError(command[0], cls.name) from None
        statuses = cls.interpret_statuses(ids, code, out, err)
        if statuses is None:
            lines = [line.strip() for line in (err or out).splitlines() if line.strip()]
            return None, lines[-1] if lines else f"{command[0]} exited with status {code}"
        return statuses, ""

    @classmethod
    async def probe(cls) -> str | None:
        """Ask about a job id it never gave: None when it answers, else its error."""
        statuses, error = await cls._ask([PROBE_ID], [])
        return None if statuses is not None else error

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: Sequence[Any]) -> list[str]:
        """Its command that shows these jobs."""
        raise NotImplementedError(f"{cls.__name__} cannot ask {cls.name} for a job's state")

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        """Every job's status from :meth:`query_command`'s answer (unlisted: ended), or None for an error."""
        raise NotImplementedError(f"{cls.__name__} cannot read {cls.name}'s answer")

    @classmethod
    async def query_exit_code(cls, job: Any) -> int | None:
        """The exit status of an ended job, where it keeps it elsewhere."""
        return None

    @classmethod
    def log_paths(cls, job: Any) -> list[str]:
        """Where it writes ``job``'s output (stdout first)."""
        return []

    @classmethod
    def default_log_directory(cls) -> str:
        """Where it writes a job's output when no ``log_directory`` is given: the submit directory."""
        return os.getcwd()

    @classmethod
    def installed_version(cls, first_line: Callable[[list[str]], str | None]) -> str | None:
        """This machine's installation (None: its commands missing, or another's); ``first_line`` runs a command."""
        return None
