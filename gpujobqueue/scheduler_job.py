"""``scheduler="job"``: the cluster's scheduler runs in the cluster's first batch job, on a
compute node, and everyone finds it through a scheduler file in a shared directory."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable

from distributed.deploy.spec import ProcessInterface

from . import gpus
from .errors import ValidationError
from .files import read_bounded_text

# Where a cluster's scheduler runs: the scheduler keyword's values (declared in the keyword registry).
from .keywords import SCHEDULER_HERE, SCHEDULER_IN_JOB, SCHEDULER_PLACEMENTS
from .limits import MAX_SCHEDULER_FILE_BYTES

logger = logging.getLogger(__name__)

SCHEDULER_FILE_NAME = "scheduler.json"


@dataclass(frozen=True)
class SchedulerStart:
    """How a job starts the cluster's scheduler before its workers.

    Parameters
    ----------
    scheduler_file : str or None
        Where the scheduler writes its address; None for a private temporary file in the
        job (``--run``, where nobody outside the job needs it).
    dashboard_address : str, optional
        The scheduler's ``--dashboard-address``, where its dashboard was opened on purpose;
        None for none: no dashboard, and no route on its HTTP server, on the loopback
        (:mod:`gpujobqueue.dashboard`).
    tls_args : tuple of str
        The scheduler's ``--tls-*`` options.
    worker_saturation : str, optional
        distributed's ``worker-saturation`` for the scheduler (``inf``, ``2.0``;
        ``gpujobqueue.worker-saturation``); None for distributed's own.
    """

    scheduler_file: str | None
    dashboard_address: str | None = None
    tls_args: tuple[str, ...] = ()
    worker_saturation: str | None = None


def parse_scheduler_placement(value: Any, runs_jobs_here: bool = True, protocol: str | None = None) -> str:
    """``"local"`` (the scheduler runs in this process, dask-jobqueue's way) or ``"job"``.

    Unset, it is ``"job"`` for UCX on a batch system whose jobs do not run here
    (``runs_jobs_here``: the local batch system's do): UCX has no TLS, so the scheduler runs
    in the job, on the compute nodes' own network, rather than open on a shared login node;
    otherwise ``"local"``.
    """
    if value is None:
        return SCHEDULER_IN_JOB if protocol == "ucx" and not runs_jobs_here else SCHEDULER_HERE
    if value not in SCHEDULER_PLACEMENTS:
        raise ValidationError(
            "scheduler",
            f"expected 'local' (in this process) or 'job' (in the cluster's first batch job), got {value!r}",
        )
    return value


def read_scheduler_address(path: str) -> str | None:
    """The address in a scheduler file, or None while the file is missing or half written."""
    try:
        data = json.loads(read_bounded_text(path, MAX_SCHEDULER_FILE_BYTES, "a scheduler file"))
    except ValueError:  # missing, half written, or not a regular file (a FileRefusedError)
        return None
    return (data.get("address") or None) if isinstance(data, dict) else None


class JobScheduler(ProcessInterface):
    """The cluster's scheduler, running in the cluster's first batch job.

    :class:`~distributed.deploy.SpecCluster` starts it as it would start a scheduler in
    this process: :meth:`start` submits the job and returns once the job's scheduler has
    written its address to the scheduler file; :meth:`close` (the cluster's last step)
    cancels the job.

    Parameters
    ----------
    make_job : callable
        Returns the scheduler's job, given its :class:`SchedulerStart`.
    scheduler_file : str
        Where the job's scheduler writes its address.
    tls_args : tuple of str
        The scheduler's ``--tls-*`` options.
    dashboard, dashboard_address : bool, str
        From ``scheduler_options`` (:func:`gpujobqueue.dashboard.dashboard_options`): the
        dashboard's address where it is open, else none at all.
    **scheduler_options
        The rest of dask-jobqueue's scheduler options (protocol, interface, security),
        which the job's scheduler takes from the cluster's worker settings.
    """

    poll_interval = 0.2
    state_interval = 5.0

    def __init__(
        self,
        *,
        make_job: Callable[[SchedulerStart], Any],
        scheduler_file: str,
        tls_args: tuple[str, ...] = (),
        worker_saturation: str | None = None,
        dashboard: bool = False,
        dashboard_address: str | None = None,
        **scheduler_options: Any,
    ):
        super().__init__()
        self.scheduler_file = scheduler_file
        start = SchedulerStart(
            scheduler_file=scheduler_file,
            dashboard_address=dashboard_address if dashboard else None,
            tls_args=tuple(tls_args),
            worker_saturation=worker_saturation,
        )
        self.job = make_job(start)

    async def start(self) -> None:
        await self.job.start()
        logger.info(
            "scheduler job %s submitted; waiting for its scheduler file %s", self.job.job_id, self.scheduler_file
        )
        self.address = await self._wait_for_address()
        self.external_address = self.address
        logger.info("scheduler of job %s at %s", self.job.job_id, self.address)
        await super().start()

    async def _wait_for_address(self) -> str:
        # No time limit: a job may queue for hours; it fails only once the batch system has ended it.
        next_state_check = time.monotonic() + self.state_interval
        shown = None
        while True:
            address = read_scheduler_address(self.scheduler_file)
            if address:
                return address
            now = time.monotonic()
            if now >= next_state_check:
                next_state_check = now + self.state_interval
                status = await self.job.batch_status()
                if status is not None and status.ended and not read_scheduler_address(self.scheduler_file):
                    raise await self.job.failure(status, before=f"its scheduler wrote {self.scheduler_file}")
                if status is not None and status.describe() != shown:
                    shown = status.describe()
                    logger.info("scheduler job %s (%s): %s", self.job.name, self.job.job_id, shown)
            await asyncio.sleep(self.poll_interval)

    async def close(self) -> None:
        await self.job.close()
        await super().close()


class HostedWorkers(ProcessInterface):
    """The scheduler job's own GPU workers, as one entry of the cluster's worker specs.

    They start and end with the scheduler's job: closing this entry cancels nothing.

    Parameters
    ----------
    scheduler : str
        The scheduler's address (given by SpecCluster; the workers read the file).
    name : str
        The scheduler job's name in the cluster.
    job : GPUJob
        The scheduler's job.
    """

    def __init__(self, scheduler: str | None = None, name: str | None = None, *, job: Any):
        super().__init__()
        self.name = name
        self.job = job
        self.job_id = job.job_id


def check_ucx_scheduler_host(scheduler_here: bool = True) -> None:
    """Refuse UCX where it cannot run: without distributed-ucxx, or, when the scheduler runs
    in this process, without a GPU here.

    Raises
    ------
    ValidationError
    """
    if importlib.util.find_spec("distributed_ucxx") is None:
        raise ValidationError(
            "protocol",
            "protocol='ucx' needs distributed-ucxx here and on the workers: "
            "pip install distributed-ucxx-cu12 (CUDA 12) or distributed-ucxx-cu13 (CUDA 13)",
        )
    if scheduler_here and not gpus.nvidia_gpu_ids():
        raise ValidationError(
            "protocol",
            "protocol='ucx' needs a GPU where the scheduler runs, for its CUDA context, and "
            f"{socket.gethostname()} has none (a login node?); use scheduler='job' (the scheduler then runs in "
            "the first job, on a GPU node), protocol='tcp' or 'tls', or start the cluster on a GPU node",
        )
