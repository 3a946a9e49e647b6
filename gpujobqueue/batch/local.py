"""local: the rendered script runs as a process on this machine, with devices handed out like a batch system would."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import getpass
import importlib.util
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from typing import Any, Iterator, Mapping, Sequence

from ..errors import SubmissionError, ValidationError
from ..jobs.job_status import JobStatus
from ..jobs.request import JobRequest
from ..machine.gpus import nvidia_gpu_ids, nvlink_between_gpus
from ..security.tls import memory_file, open_private_file, open_private_folder
from ..settings.keywords import LIST, Computed, Keyword, NoOption
from ..settings.limits import MAX_GPUS_PER_NODE
from .base import BatchSystem


def private_log_directory() -> str:
    """Where local jobs write their output when no ``log_directory`` is given (checked private by :func:`open_log`)."""
    return os.path.join(tempfile.gettempdir(), f"gpujobqueue-{getpass.getuser()}", "logs")


_LOG_ADVICE = "remove it (its owner or an administrator can), or give log_directory a folder of your own"


def open_log(log_directory: str | None, name: str) -> tuple[str, int]:
    """The path of a job's log ``name`` and a descriptor open for writing it (0600, never through a link), in
    ``log_directory`` or :func:`private_log_directory`, whose two folders are each opened and checked private."""
    if log_directory:
        path = os.path.join(log_directory, name)
        return path, open_private_file(path, "log_directory", _LOG_ADVICE)
    logs = private_log_directory()
    user_folder = open_private_folder(os.path.dirname(logs), "log_directory", _LOG_ADVICE)
    try:
        logs_folder = open_private_folder(logs, "log_directory", _LOG_ADVICE, parent=user_folder)
    finally:
        os.close(user_folder)
    try:
        path = os.path.join(logs, name)
        return path, open_private_file(path, "log_directory", _LOG_ADVICE, parent=logs_folder)
    finally:
        os.close(logs_folder)


class DevicePool:
    """The devices of this machine (ids, ``["0", "1"]``), given to local jobs so that no two jobs share one."""

    def __init__(self, devices: Sequence[str]):
        self.devices = [str(d) for d in devices]
        self._owner: dict[str, str] = {}
        self._lock = threading.Lock()

    def take(self, count: int, owner: str) -> list[str]:
        """Reserve ``count`` free devices for ``owner``."""
        with self._lock:
            free = [d for d in self.devices if d not in self._owner]
            if len(free) < count:
                raise SubmissionError(
                    f"local job {owner} needs {count} devices but only {len(free)} of {self.devices} are free"
                )
            for device in free[:count]:
                self._owner[device] = owner
            return free[:count]

    def give_back(self, owner: str) -> None:
        """Free the devices of ``owner``."""
        with self._lock:
            for device in [d for d, o in self._owner.items() if o == owner]:
                del self._owner[device]


@dataclasses.dataclass
class LocalProcess:
    """A local job's ``handle``: the script's process, its devices from the cluster's ``pool``, and its log."""

    owner: str
    pool: DevicePool | None
    log_path: str
    process: subprocess.Popen | None = None
    devices: list[str] | None = None
    orphans_told: bool = False

    def ask_to_stop(self) -> None:
        """SIGTERM to the script alone: its trap passes it to the worker commands, which close their workers
        gracefully (signalled, the whole group's worker processes would die under their nannies)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)

    def group_alive(self) -> bool:
        """Whether the script or anything it started still runs; what the script left behind gets SIGTERM once."""
        if self.process.poll() is None:
            return True
        try:
            os.killpg(self.process.pid, 0 if self.orphans_told else signal.SIGTERM)
        except ProcessLookupError:
            return False
        self.orphans_told = True
        return True

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def release_devices(self) -> None:
        if self.pool is not None:
            self.pool.give_back(self.owner)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def ucx_is_the_better_default() -> bool:
    """UCX by default here: the GPUs are joined by NVLink (docs/benchmarks.md) and distributed-ucxx is installed."""
    return (
        len(nvidia_gpu_ids()) >= 2
        and importlib.util.find_spec("distributed_ucxx") is not None
        and nvlink_between_gpus()
    )


class Local(BatchSystem):
    """The embedded batch system: jobs as process groups on this machine, cancelled by signalling the group."""

    name = "local"
    cluster_doc = """A GPU cluster whose jobs run as processes on this machine: the embedded default.

    Each job gets its own devices from this machine's pool (``devices``), as a batch system
    would allocate them, and runs the same rendered script a batch system would.

    Parameters
    ----------
    **kwargs
        As :class:`~gpujobqueue.cluster.GPUJobQueueCluster`. ``worker_mode`` defaults to
        ``dask-cuda`` where NVIDIA GPUs are present and ``per-device`` elsewhere;
        ``protocol`` defaults to ``"ucx"`` where two or more of this machine's GPUs are
        joined by NVLink and distributed-ucxx is installed, and to TCP elsewhere.
        ``walltime`` defaults to none: the workers live until the cluster stops them. Given
        one, the workers retire gracefully before it (``walltime_margin``) and ``scale()``
        replaces their job, as on a batch system.
    """
    runs_jobs_here = True  # no batch server: `gpujobqueue check` looks for no batch commands
    takes_sites = False
    submit_command = "bash"
    cancel_command = "kill"
    stop_grace_seconds = 12.0  # the worker commands give their nannies 10 s to close
    keywords = (
        Keyword(
            "devices",
            LIST,
            None,
            Computed(
                "this machine's NVIDIA GPUs (honouring CUDA_VISIBLE_DEVICES); on a machine without GPUs no pool, and "
                "each job's workers are numbered ``0..gpus_per_node-1`` (CPU workers)"
            ),
            "The device pool.",
            option=NoOption(
                "the devices of this machine that a running cluster hands to its jobs; a rendered local script uses "
                "the devices its allocation variable names where it runs"
            ),
            type_doc="list of str or int, optional",
        ),
    )
    default_walltime = None  # nothing here ends a job: workers retire before a walltime only where one is given

    @classmethod
    def apply_defaults(cls, settings: dict[str, Any]) -> None:
        devices = settings.get("devices")
        machine_gpus = nvidia_gpu_ids()
        if devices is None:
            devices = machine_gpus or None
        elif (
            isinstance(devices, (str, bytes))
            or not isinstance(devices, Sequence)
            or len(devices) > MAX_GPUS_PER_NODE
            or not all(isinstance(d, (int, str)) and str(d).isdigit() for d in devices)
        ):
            raise ValidationError("devices", f"expected a list of device ids such as [0, 1], got {devices!r}")
        settings["devices"] = devices
        if settings.get("worker_mode") is None:
            # worker_command="dask_cuda.cli" (dask-jobqueue's way) asks for dask-cuda; nanny=False for per-device
            wants_dask_cuda = (machine_gpus and settings.get("nanny") in (None, True)) or settings.get(
                "worker_command"
            ) == "dask_cuda.cli"
            settings["worker_mode"] = "dask-cuda" if wants_dask_cuda else "per-device"
        if (
            settings["worker_mode"] == "dask-cuda"
            and devices
            and all(settings.get(k) is None for k in ("cores", "cpus_per_gpu"))
        ):
            # No batch system shares out this machine's cores: each GPU gets its share.
            settings["cpus_per_gpu"] = max(1, (os.cpu_count() or 1) // len(devices))
        if settings.get("protocol") is None and settings["worker_mode"] == "dask-cuda" and ucx_is_the_better_default():
            settings["protocol"] = "ucx"

    @classmethod
    def cluster_state(cls, settings: Mapping[str, Any], request: JobRequest) -> DevicePool | None:
        devices = settings["devices"]
        if devices is None:
            return None
        if request.gpus_per_node > len(devices):
            raise ValidationError(
                "gpus_per_node",
                f"gpus_per_node={request.gpus_per_node} but this machine's pool has {len(devices)} devices "
                f"({', '.join(map(str, devices))})",
            )
        return DevicePool(devices)

    @classmethod
    def job_header(cls, script: str) -> str:
        return ""

    @classmethod
    def default_log_directory(cls) -> str:
        return private_log_directory()

    @classmethod
    async def submit(cls, job: Any) -> str:
        """Start the job's script in a process group of its own; its pid is the job id."""
        with contextlib.ExitStack() as opened:
            # This job's log alone (a failure report quotes its end), opened before any device is taken.
            log_path, log = open_log(job.log_directory, f"{job.job_name}-{job.name}.out")
            opened.callback(os.close, log)
            job.handle = handle = LocalProcess(str(job.name), job.batch_state, log_path)
            # bash reads the script (its environment values) from memory: not from /proc/<pid>/cmdline, nor a file
            script = memory_file(job.job_script(), f"gpujobqueue-{job.name}")
            opened.callback(os.close, script)
            env = dict(os.environ)
            try:
                if handle.pool is not None and not job.launch.cpu_workers:
                    handle.devices = handle.pool.take(job.launch.gpus_per_node, str(job.name))
                    env[job.launch.allocation_variable] = ",".join(handle.devices)
                handle.process = subprocess.Popen(
                    ["bash", f"/dev/fd/{script}"],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    pass_fds=(script,),
                )
            except OSError as error:
                handle.release_devices()
                raise SubmissionError(f"could not start local job {job.name}: {error}") from error
        return str(handle.process.pid)

    @classmethod
    async def probe(cls) -> str | None:
        return None  # the local batch system is this process: it always answers

    @classmethod
    async def query_answer(cls, jobs: Sequence[Any]) -> tuple[dict[str, JobStatus] | None, str]:
        statuses = {}
        for job in jobs:
            if job.handle is None or job.handle.process is None:
                continue
            returncode = job.handle.process.poll()
            if returncode is None:
                statuses[job.job_id] = JobStatus(job.job_id, "RUNNING", nodes=socket.gethostname())
            else:  # a negative return code is the signal that ended it
                exit_code = 128 - returncode if returncode < 0 else returncode
                statuses[job.job_id] = JobStatus(job.job_id, "EXITED", ended=True, exit_code=exit_code)
        return statuses, ""

    @classmethod
    def log_paths(cls, job: Any) -> list[str]:
        return [job.handle.log_path] if job.handle is not None else []

    @classmethod
    async def stop(cls, job: Any) -> None:
        for pause in cls._ending([job]):
            await asyncio.sleep(pause)

    @classmethod
    def cancel_now(cls, jobs: Sequence[Any]) -> None:
        for pause in cls._ending(jobs):
            time.sleep(pause)

    @classmethod
    def _ending(cls, jobs: Sequence[Any]) -> Iterator[float]:
        """End the jobs' groups (SIGTERM, then SIGKILL after the grace period), yielding the pauses to wait."""
        running = [job.handle for job in jobs if job.handle is not None and job.handle.running]
        for handle in running:
            handle.ask_to_stop()
        deadline = time.monotonic() + cls.stop_grace_seconds
        while time.monotonic() < deadline and any([handle.group_alive() for handle in running]):
            yield 0.1
        for handle in running:
            if handle.group_alive():
                handle.kill_group()
            handle.process.wait()
        for job in jobs:
            if job.handle is not None:
                job.handle.release_devices()
