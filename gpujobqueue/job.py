"""One batch job of GPU workers: dask-jobqueue's Job, with the script rendered from templates."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import subprocess
import tempfile
import time
from typing import Any, ClassVar, Iterator

from dask_jobqueue.core import Job
from distributed.core import Status
from distributed.deploy.spec import ProcessInterface
from distributed.security import Security

from . import config
from .batch import cluster_class
from .errors import SubmissionError, ValidationError
from .job_commands import CANCEL_CHUNK, ArrayElements, JobCommands
from .job_status import JobFailedError, JobStatus, read_log_tail, run_query, script_exit_code
from .render import PLACEHOLDER_SCHEDULER, render_job_script
from .request import JobRequest
from .scheduler_job import SchedulerStart
from .security import worker_tls_args
from .workers import WorkerLaunch

logger = logging.getLogger(__name__)


class CommandFailed(RuntimeError):
    """A batch command that exited with an error: its exit status and what it printed.

    A RuntimeError, as dask-jobqueue's own command runner raises, but whose message is what the
    command said, once, without the command line (which names a temporary script file that is
    deleted by the time anyone reads it).
    """

    def __init__(self, command: list[str], code: int | None, out: str, err: str):
        self.command, self.code, self.out, self.err = command, code, out, err
        name = os.path.basename(command[0]) if command else "the command"
        # dask-jobqueue's layout, which its users match on, less the command's arguments.
        super().__init__(
            f"Command exited with non-zero exit code.\nExit code: {code}\nCommand: {name}\n"
            f"stdout:\n{out}\nstderr:\n{err}\n"
        )

    @property
    def said(self) -> str:
        """What the command printed: its error output, else its output."""
        return self.err.strip() or self.out.strip() or "(it printed nothing)"


def check_log_directory(path: str | None) -> None:
    """Refuse a ``log_directory`` that is not a directory and cannot be made one here: a file
    (``../../etc/passwd``), or below a file, or in a directory this user cannot write.

    Raises
    ------
    ValidationError
        Naming ``log_directory``.
    """
    if path is None:
        return
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ValidationError("log_directory", f"{path!r} exists and is not a directory")
        return
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
    if parent and not os.path.isdir(parent):
        raise ValidationError("log_directory", f"{path!r} cannot be made: {parent!r} is not a directory")
    if parent and not os.access(parent, os.W_OK | os.X_OK):
        raise ValidationError("log_directory", f"{path!r} cannot be made: {parent!r} is not writable by this user")


def make_log_directory(path: str | None) -> None:
    """Make ``log_directory`` (and its parents) if it is not there yet.

    Raises
    ------
    ValidationError
        Naming ``log_directory``, when it cannot be made.
    """
    if not path:
        return
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise ValidationError("log_directory", f"{path!r} cannot be made a directory: {error.strerror}") from None


class GPUJob(Job):
    """A batch job that runs one Dask worker per GPU.

    Submission, cancellation and the job-id parsing come from
    :class:`dask_jobqueue.core.Job`; the script comes from ``templates/<batch>.sh.j2``.
    Its settings arrive already resolved and validated, so it reads no config of its own.

    It does not call ``Job.__init__`` (dask-jobqueue 0.9), which cannot serve: (1) whatever it
    is given, it reads the deprecated ``jobqueue.<config_name>.extra``, ``env-extra``,
    ``job-extra`` and ``header-skip`` (passing None reads the config, passing any other value,
    even ``[]``, raises a FutureWarning), and warns when a user's config sets them, so settings
    would still come from ``jobqueue.*`` config (``tests/test_job_config.py`` holds that none
    does); (2) it assigns ``self.job_header = None``, which the read-only :attr:`job_header`
    (the directives rendered from the request) refuses; (3) it makes the log directory with a
    bare ``os.makedirs`` and builds a ``dask-worker`` command line that the templates replace.
    So the job calls ``ProcessInterface.__init__`` itself and sets the attributes dask-jobqueue's
    cluster and :class:`~dask_jobqueue.core.Job`'s methods read (``scheduler``, ``name``,
    ``job_id``, ``config_name``, ``job_name``, ``log_directory``, ``shebang``,
    ``worker_processes``, ``worker_cores``, ``worker_memory``).

    Parameters
    ----------
    scheduler : str
        Address of the Dask scheduler.
    name : str
        The job's name in the cluster; its workers are ``<name>-<i>``.
    request : JobRequest
        What the job asks of the batch system.
    launch : WorkerLaunch
        How it starts its workers.
    security : Security, optional
        TLS credentials for the workers.
    scheduler_file : str, optional
        The workers find the scheduler through this file (``scheduler="job"``).
    start_scheduler : SchedulerStart, optional
        This job starts the cluster's scheduler, then its workers (``scheduler="job"``).
    commands : JobCommands, optional
        The cluster's gatherer of batch commands: the job is cancelled together with the
        others cancelled at the same time, and, with ``commands.arrays``, submitted as an
        element of one job array with the others started at the same time.
    config_name : str, optional
        dask-jobqueue's cluster passes it to every job; the job keeps it (default: its class's).
    interface, protocol : str, optional
        :class:`dask_jobqueue.JobQueueCluster` passes them to every job, so the job takes them;
        with ``request`` and ``launch`` they are not read (``launch`` holds the workers'
        interface and protocol); without, they are cluster keywords like the others.
    **cluster_keywords
        Without ``request`` and ``launch``, the job is made as dask-jobqueue's jobs are, from
        the keywords of its batch system's cluster class (``cores=``, ``memory=``,
        ``job_extra_directives=``, ...), resolved and validated as the cluster does.
    """

    batch: ClassVar[str]
    directive_prefix: ClassVar[str] = "#"
    # Batch states that mean the job is over, though the batch system still lists it.
    ended_states: ClassVar[frozenset[str]] = frozenset()
    # Job arrays: the variable holding an element's index, and how many elements one array
    # may have (the batch system's default limit).
    array_task_variable: ClassVar[str | None] = None
    array_size_limit: ClassVar[int] = 1000
    # Reasons the batch system gives for a pending job that will never start (see SLURMGPUJob).
    hopeless_reasons: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def default_log_directory(cls) -> str:
        """Where the batch system writes a job's output when no ``log_directory`` is given:
        the directory it was submitted from."""
        return os.getcwd()

    def __init__(
        self,
        scheduler: str | None = None,
        name: str | None = None,
        *,
        request: JobRequest | None = None,
        launch: WorkerLaunch | None = None,
        security: Security | None = None,
        config_name: str | None = None,
        interface: str | None = None,
        protocol: str | None = None,
        scheduler_file: str | None = None,
        start_scheduler: SchedulerStart | None = None,
        commands: JobCommands | None = None,
        **cluster_keywords: Any,
    ):
        if request is None or launch is None:
            keywords = dict(cluster_keywords, interface=interface, protocol=protocol)
            request, launch = self._from_cluster_keywords(keywords, request, launch)
        elif cluster_keywords:
            config.check_keywords(cluster_keywords, (), type(self).__name__)
        make_log_directory(request.log_directory)  # where dask-jobqueue's Job makes it
        ProcessInterface.__init__(self)  # not Job.__init__: the class docstring says why
        self.scheduler = scheduler
        self.name = name
        self.job_id: str | None = None
        self.submitted_at: float | None = None  # time.time() once the batch system took it
        self.closed_at: float | None = None  # ... and once this cluster cancelled it
        self.config_name = config_name or type(self).config_name
        self.request = request
        self.launch = launch
        self.job_name = request.job_name
        self.log_directory = request.log_directory
        self.shebang = request.shebang
        self.worker_processes = launch.gpus * request.nodes
        self.worker_cores = launch.nthreads * self.worker_processes
        self.worker_memory = launch.memory_limit * self.worker_processes if launch.memory_limit else None
        self._tls_args = worker_tls_args(security)
        self.scheduler_file = scheduler_file
        self.start_scheduler = start_scheduler
        self.commands = commands
        # Where batch systems write logs by default; set again when the job is submitted.
        self.submit_directory = os.getcwd()

    @classmethod
    def _from_cluster_keywords(
        cls, keywords: dict[str, Any], request: JobRequest | None, launch: WorkerLaunch | None
    ) -> tuple[JobRequest, WorkerLaunch]:
        """The request and launch that the batch system's cluster class makes of ``keywords``."""
        if request is not None or launch is not None:
            raise TypeError(f"{cls.__name__} takes request and launch together, or neither")
        _, request, launch = cluster_class(cls.batch).parse_keywords(keywords, owner=cls.__name__)
        check_log_directory(request.log_directory)
        return request, launch

    def job_script(self, array: ArrayElements | None = None) -> str:
        """The script this job submits; with ``array``, the script of that job array."""
        return render_job_script(
            self.batch,
            self.request,
            self.launch,
            name=str(self.name),
            scheduler=self.scheduler or PLACEHOLDER_SCHEDULER,
            directive_prefix=self.directive_prefix,
            tls_args=self._tls_args,
            scheduler_file=self.scheduler_file,
            start_scheduler=self.start_scheduler,
            array=array,
            plain_tcp=not self._tls_args and self.launch.protocol in (None, "tcp"),
        )

    @contextlib.contextmanager
    def job_file(self, array: ArrayElements | None = None) -> Iterator[str]:
        """The job's script (with ``array``, that array's) in a temporary file, rendered
        once (dask-jobqueue's renders it twice)."""
        descriptor, path = tempfile.mkstemp(suffix=".sh", prefix="gpujobqueue-job-")
        try:
            with os.fdopen(descriptor, "w") as f:
                f.write(self.job_script(array=array))
            yield path
        finally:
            os.unlink(path)

    @property
    def job_header(self) -> str:
        """The directive lines of the script (dask-jobqueue's ``job_header``)."""
        lines = self.job_script().split("\n")[1:]
        return "\n".join(
            line
            for line in lines
            if line.startswith(self.directive_prefix + " ") or line.startswith(self.directive_prefix + "\t")
        )

    async def start(self) -> None:
        try:
            make_log_directory(self.log_directory)
            self.submit_directory = os.getcwd()
            await self._start_job()
            self.submitted_at = time.time()
        except BaseException:
            self.status = Status.failed  # the cluster must not wait for a job that never was
            raise

    async def _start_job(self) -> None:
        if self.commands is not None and self.commands.arrays and self.start_scheduler is None:
            await self.commands.submit(self)
        else:
            await self.submit_alone()
        await ProcessInterface.start(self)

    async def submit_alone(self) -> None:
        """Submit this job's own script; set its job id."""
        with self.job_file() as path:
            out = await self._submit_job(path)
        self.job_id = self._job_id_from_submit_output(out)

    @classmethod
    def array_element_id(cls, array_id: str, index: int) -> str:
        """The id of element ``index`` of the job array ``array_id``, as the batch
        system's cancel and query commands take it."""
        raise NotImplementedError(f"{cls.batch} has no job arrays")

    @classmethod
    def cancel_commands(cls, jobs: list["GPUJob"]) -> list[list[str]]:
        """The batch system's cancel commands for ``jobs``, many ids to a command."""
        ids = [str(job.job_id) for job in jobs if job.job_id]
        return [
            cls.cancel_command.split() + ids[start : start + CANCEL_CHUNK] for start in range(0, len(ids), CANCEL_CHUNK)
        ]

    @classmethod
    def cancel_now(cls, jobs: list["GPUJob"]) -> None:
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

    async def close(self) -> None:
        if self.commands is not None:
            await self.commands.cancel(self)  # with the others cancelled in this round
        else:
            await super().close()  # the batch system's cancel command
        self.closed_at = time.time()
        # dask-jobqueue's Job.close leaves the status `running`; SpecCluster.close asserts
        # that every job it still references is closed.
        await ProcessInterface.close(self)

    async def batch_status(self) -> JobStatus | None:
        """What the batch system says of this job now; None before it is submitted or when
        the batch system does not answer."""
        if self.job_id is None:
            return None
        return (await type(self).query_statuses([self])).get(self.job_id)

    @classmethod
    async def query_statuses(cls, jobs: list["GPUJob"]) -> dict[str, JobStatus]:
        """The statuses of several jobs of this batch system, asked in one command.

        Returns
        -------
        dict
            Job id to :class:`JobStatus`; empty when the batch system did not answer (a job
            is never taken for ended because its batch system was unreachable).
        """
        statuses, _ = await cls.query_answer(jobs)
        return statuses or {}

    # A job id no batch system has given: asked about it, a reachable batch system answers
    # that it does not know it, an unreachable one fails.
    PROBE_ID: ClassVar[str] = "999999999"

    @classmethod
    async def query_answer(cls, jobs: list["GPUJob"]) -> tuple[dict[str, JobStatus] | None, str]:
        """The statuses of several jobs, or why the batch system gave none.

        Returns
        -------
        statuses : dict or None
            Job id to :class:`JobStatus`; None when the batch system could not be reached
            (its query failed with an error rather than a listing).
        error : str
            The query's error output when ``statuses`` is None, else ``""``.
        """
        ids = [job.job_id for job in jobs if job.job_id]
        if not ids:
            return {}, ""
        return await cls._ask(ids, jobs)

    @classmethod
    async def _ask(cls, ids: list[str], jobs: list["GPUJob"]) -> tuple[dict[str, JobStatus] | None, str]:
        command = cls.query_command(ids, jobs)
        code, out, err = await run_query(command)
        statuses = cls.interpret_statuses(ids, code, out, err)
        if statuses is None:
            lines = [line.strip() for line in (err or out).splitlines() if line.strip()]
            return None, lines[-1] if lines else f"{command[0]} exited with status {code}"
        return statuses, ""

    @classmethod
    async def probe(cls) -> str | None:
        """Ask the batch system about a job id it never gave: None when it answers, else its error."""
        statuses, error = await cls._ask([cls.PROBE_ID], [])
        return None if statuses is not None else error

    @classmethod
    def query_command(cls, job_ids: list[str], jobs: list["GPUJob"]) -> list[str]:
        """The batch system's command that shows these jobs."""
        raise NotImplementedError(f"{cls.__name__} cannot ask {cls.batch} for a job's state")

    @classmethod
    def interpret_statuses(cls, job_ids: list[str], code: int, out: str, err: str) -> dict[str, JobStatus] | None:
        """Every job's status from :meth:`query_command`'s answer (jobs it does not list
        have ended), or None when the answer is an error rather than a listing."""
        raise NotImplementedError

    async def query_exit_code(self) -> int | None:
        """The exit status of this ended job, where the batch system keeps it elsewhere."""
        return None

    def log_paths(self) -> list[str]:
        """Where the batch system writes this job's output (stdout first)."""
        return []

    def _log_file(self, name: str) -> str:
        """A log file's path: in ``log_directory`` if set, else in the submit directory."""
        return os.path.join(self.submit_directory, self.log_directory or "", name)

    async def failure(self, status: JobStatus, before: str = "its workers connected") -> JobFailedError:
        """The report of this job having ended too soon (``before`` what): its state, exit
        code and the end of its log."""
        exit_code = status.exit_code
        if exit_code is None:
            exit_code = await self.query_exit_code()
        path, tail = read_log_tail(self.log_paths())
        if exit_code is None:
            exit_code = script_exit_code(tail)
        return JobFailedError(
            str(self.name), self.batch, dataclasses.replace(status, exit_code=exit_code), path, tail, before
        )

    @staticmethod
    async def _call(cmd: list[str], *, shell: bool = False, **kwargs: Any) -> str:
        """Run a batch command (as dask-jobqueue's ``Job._call``); its output, or :class:`CommandFailed`."""
        logger.debug("gpujobqueue: running %s", " ".join(cmd))
        create = asyncio.create_subprocess_shell if shell else asyncio.create_subprocess_exec
        process = await create(*cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, **kwargs)
        out, err = await process.communicate()
        if process.returncode != 0:
            raise CommandFailed(
                list(cmd), process.returncode, out.decode(errors="replace"), err.decode(errors="replace")
            )
        return out.decode()

    async def _submit_job(self, script_filename: str) -> str:
        try:
            return await self._run_submit_command(script_filename)
        except FileNotFoundError:
            raise SubmissionError(
                f"{self.submit_command} is not on PATH: cannot submit job {self.name} to {self.batch}"
            ) from None
        except CommandFailed as error:
            # What the batch system said, once: not chained to the command's own error, which says it again.
            raise SubmissionError(
                f"{self.submit_command} refused job {self.name} (exit status {error.code}):\n{error.said}"
            ) from None
        except RuntimeError as error:
            raise SubmissionError(f"{self.submit_command} refused job {self.name}: {error}") from None

    async def _run_submit_command(self, script_filename: str) -> str:
        """Run the batch system's submit command on the script; return its output."""
        return await super()._submit_job(script_filename)
