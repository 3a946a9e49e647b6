"""Jobs started or stopped together, in one batch command each way: consecutive jobs go to
the batch system as one job array, and the jobs cancelled in one round as one cancel command."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, ContextManager, Coroutine, Mapping, Protocol

from ..settings.naming import job_number, shell_array_job_name

logger = logging.getLogger(__name__)

# Ids per cancel command: far below any command line's limit.
CANCEL_CHUNK = 500
# Fewer jobs than this go as plain jobs: PBS Pro refuses a one-element array (-J needs X < Y),
# and a plain job is the simpler thing to watch and cancel everywhere.
SHORTEST_ARRAY = 2


@dataclass(frozen=True)
class ArrayElements:
    """Jobs of one cluster submitted as one job array: element ``i`` (``1 .. count``, told by ``task_variable``
    such as ``SLURM_ARRAY_TASK_ID``) is the cluster's job ``<prefix>-<offset + i>``."""

    prefix: str
    offset: int
    count: int
    task_variable: str

    @property
    def range_text(self) -> str:
        """``1-K``, as every batch system writes an array's indices."""
        return f"1-{self.count}"

    @property
    def number_expression(self) -> str:
        """Shell arithmetic for an element's job number: ``SLURM_ARRAY_TASK_ID - 1``."""
        if self.offset == 0:
            return self.task_variable
        return f"{self.task_variable} {'+' if self.offset > 0 else '-'} {abs(self.offset)}"

    @property
    def shell_job_name(self) -> str:
        """An element's job name as the job works it out (:func:`gpujobqueue.settings.naming.shell_array_job_name`)."""
        return shell_array_job_name(self.prefix, self.number_expression)


class CommandFailed(RuntimeError):
    """A batch command that exited with an error: a RuntimeError, as dask-jobqueue's command runner raises,
    whose message leaves out the command's arguments (a temporary script file, deleted by then)."""

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


@dataclass(frozen=True)
class TrialAnswer:
    """A batch system's answer about a job it was asked to check, not to run
    (:meth:`~gpujobqueue.batch.base.BatchSystem.test_submit`): whether it would take it (None where it could
    not be asked), and what it said, on either stream."""

    accepted: bool | None
    said: str


# How long a batch system may take to say whether it would take a job (sbatch retries an unreachable slurmctld).
TRIAL_TIMEOUT = 120.0


async def run_for_at_most(
    command: list[str], timeout: float, environment: Mapping[str, str] | None = None, *, most_bytes: int | None = None
) -> tuple[int, str, str] | None:
    """Run a command that changes nothing (a query, a check; never a submission, which may have gone through
    when stopped), with ``environment``'s variables besides this process's: its exit status, output and error
    output, or None where it was stopped after ``timeout`` seconds. With ``most_bytes``, each stream is kept up to
    one byte past it and the command stopped there (the caller refuses an output that long). OSError where it
    cannot start."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **environment} if environment else None,
    )
    reading = process.communicate() if most_bytes is None else _read_both(process, most_bytes)
    try:
        out, err = await asyncio.wait_for(reading, timeout)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):  # it may have ended meanwhile
            process.kill()
        await process.wait()
        return None
    return process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def _read_both(process: asyncio.subprocess.Process, most_bytes: int) -> tuple[bytes, bytes]:
    """``process``'s output and error output, each kept up to ``most_bytes`` + 1 bytes, once it has ended: past
    that it is stopped, and what its children still write is read and dropped (a wrapper script's command keeps
    the pipes open; unread, it would wait for ever)."""

    async def read(stream: asyncio.StreamReader) -> bytes:
        chunks, size = [], 0
        while chunk := await stream.read(1 << 16):
            if size <= most_bytes:
                chunks.append(chunk[: most_bytes + 1 - size])
                size += len(chunks[-1])
                if size > most_bytes:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
        return b"".join(chunks)

    out, err = await asyncio.gather(read(process.stdout), read(process.stderr))
    await process.wait()
    return out, err


def run_to_end(work: Coroutine[Any, Any, Any]) -> Any:
    """Run ``work`` to its end and return its result, also from inside a running event loop (an asynchronous
    cluster's), in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, work).result()


async def test_each(
    test_submit: Callable[[str], Awaitable[TrialAnswer]], scripts: list[str | None], unasked: str | None, stops: bool
) -> list[TrialAnswer | None]:
    """``test_submit`` of each script, in order, from a private temporary folder (None for a script not written);
    where ``stops``, once one gets no answer (or ``unasked`` says why none would come) the rest are not asked."""
    answers: list[TrialAnswer | None] = []
    with tempfile.TemporaryDirectory(prefix="gpujobqueue-test-submit-") as folder:
        for number, script in enumerate(scripts):
            if script is None or unasked is not None:
                answers.append(None if script is None else TrialAnswer(None, unasked))
                continue
            path = os.path.join(folder, f"job-{number}.sh")
            with open(path, "w", encoding="utf-8") as file:
                file.write(script)
            answers.append(await test_submit(path))
            if answers[-1].accepted is None and stops:
                unasked = answers[-1].said
    return answers


async def ask_without_submitting(command: list[str], environment: Mapping[str, str] | None = None) -> TrialAnswer:
    """Run a command that checks a job and submits nothing (``sbatch --test-only``, ``qsub -w v``):
    accepted where it exits 0, with all it printed (sbatch says when the job would start on its error stream)."""
    logger.debug("gpujobqueue: asking %s", " ".join(command))
    try:
        done = await run_for_at_most(command, TRIAL_TIMEOUT, environment)
    except FileNotFoundError:
        return TrialAnswer(None, f"{command[0]} is not on PATH")
    if done is None:
        return TrialAnswer(None, f"{os.path.basename(command[0])} did not answer in {TRIAL_TIMEOUT:.0f} s")
    code, out, err = done
    said = "\n".join(text.strip() for text in (out, err) if text.strip())
    return TrialAnswer(code == 0, said or "(it printed nothing)")


async def run_command(command: list[str], **kwargs: Any) -> str:
    """Run a batch command (as dask-jobqueue's ``Job._call``); its output, or :class:`CommandFailed`."""
    logger.debug("gpujobqueue: running %s", " ".join(command))
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, **kwargs
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise CommandFailed(
            list(command), process.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        )
    return out.decode()


class BatchJob(Protocol):
    """What the gatherer asks of a job (a :class:`~gpujobqueue.runtime.job.GPUJob`)."""

    name: str | None
    job_id: str | None
    batch_system: Any

    async def submit_alone(self) -> None: ...

    def job_file(self, array: ArrayElements | None = None) -> ContextManager[str]: ...


def consecutive_runs(jobs: list[BatchJob], longest: int) -> list[list[BatchJob]]:
    """Jobs in order of their numbers, cut into runs of consecutive numbers of at most
    ``longest`` jobs (an array's indices are one range)."""
    numbered = sorted(jobs, key=lambda job: job_number(str(job.name))[1])
    runs: list[list[BatchJob]] = []
    for job in numbered:
        number = job_number(str(job.name))[1]
        last = runs[-1] if runs else None
        if last and len(last) < longest and job_number(str(last[-1].name))[1] == number - 1:
            last.append(job)
        else:
            runs.append([job])
    return runs


class JobCommands:
    """Gathers the submissions and cancellations a cluster's jobs ask for in one round (SpecCluster starts and
    stops them concurrently) and runs one batch command for each; with ``arrays``, consecutive jobs go as one
    job array, else each job submits itself."""

    def __init__(self, arrays: bool = False):
        self.arrays = arrays
        # Each round's jobs waiting for its command, and the round that runs it (None: no round gathering).
        self._waiting: dict[str, list[tuple[BatchJob, asyncio.Future]]] = {"submit": [], "cancel": []}
        self._rounds: dict[str, asyncio.Task | None] = {"submit": None, "cancel": None}
        self.commands_run = 0  # submit and cancel commands, for benchmarks and tests

    async def submit(self, job: BatchJob) -> None:
        """Submit ``job`` with the others of this round, as an element of a job array; sets
        ``job.job_id`` to the element's id."""
        if job_number(str(job.name)) is None:  # not one of a cluster's numbered jobs
            await job.submit_alone()
            return
        await self._join("submit", job, self._submit_round)

    async def cancel(self, job: BatchJob) -> None:
        """Cancel ``job`` with the others of this round, in one cancel command."""
        await self._join("cancel", job, self._cancel_round)

    async def _join(self, kind: str, job: BatchJob, run: Callable[[list], Awaitable[None]]) -> None:
        """Wait for ``job``'s ``kind`` of command with the others of the round, which ``run`` runs."""
        future = asyncio.get_running_loop().create_future()
        self._waiting[kind].append((job, future))
        if self._rounds[kind] is None:
            self._rounds[kind] = asyncio.ensure_future(self._round(kind, run))
        await future

    async def _round(self, kind: str, run: Callable[[list], Awaitable[None]]) -> None:
        # Every job of the round registers before its first real wait; two turns of the
        # loop let all of them in before the command runs.
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        waiting, self._waiting[kind], self._rounds[kind] = self._waiting[kind], [], None
        await run(waiting)

    async def _submit_round(self, waiting: list[tuple[BatchJob, asyncio.Future]]) -> None:
        futures = {id(job): future for job, future in waiting}
        # Jobs of one kind (a cluster's GPU jobs, or its CPU jobs) share one script.
        kinds: dict[tuple[type, str], list[BatchJob]] = {}
        for job, _ in waiting:
            kinds.setdefault((type(job), job_number(str(job.name))[0]), []).append(job)
        for jobs in kinds.values():
            for run in consecutive_runs(jobs, jobs[0].batch_system.array_size_limit):
                error = None
                try:
                    await self._submit_run(run)
                except asyncio.CancelledError:
                    for job in run:
                        futures[id(job)].cancel()
                    raise
                except Exception as failed:
                    error = failed
                for job in run:
                    _settle(futures[id(job)], error)

    async def _submit_run(self, run: list[BatchJob]) -> None:
        first = run[0]
        if len(run) < SHORTEST_ARRAY:
            for job in run:
                await job.submit_alone()
                self.commands_run += 1
            return
        system = first.batch_system
        prefix, number = job_number(str(first.name))
        elements = ArrayElements(prefix, number - 1, len(run), system.array_task_variable)
        with first.job_file(array=elements) as path:
            self.commands_run += 1
            out = await system.submit_script(first, path)
        array_id = system.job_id_from_output(out)
        for index, job in enumerate(run, start=1):
            job.job_id = system.array_element_id(array_id, index)
        logger.info(
            "gpujobqueue: submitted jobs %s .. %s as %s array %s", first.name, run[-1].name, system.name, array_id
        )

    async def _cancel_round(self, waiting: list[tuple[BatchJob, asyncio.Future]]) -> None:
        by_system: dict[Any, list[tuple[BatchJob, asyncio.Future]]] = {}
        for job, future in waiting:
            by_system.setdefault(job.batch_system, []).append((job, future))
        for system, entries in by_system.items():
            for command in system.cancel_commands([job for job, _ in entries]):
                self.commands_run += 1
                try:
                    await run_command(command)
                except (RuntimeError, OSError) as error:
                    # A job that has already ended cannot be cancelled: that is not a failure,
                    # and the batch system cancels the others it was given.
                    logger.debug("gpujobqueue: %s: %s", " ".join(command), error)
            for _, future in entries:
                _settle(future, None)


def _settle(future: asyncio.Future, error: Any) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
