"""``scheduler="job"``: the cluster's scheduler runs in the cluster's first batch job, on a
compute node, and everyone finds it through a scheduler file in a shared directory. Where it runs and
how a job starts it; the cluster's side of it, which distributed drives, is
:mod:`gpujobqueue.runtime.scheduler_process` (so that a plan or a rendered script imports no distributed)."""

from __future__ import annotations

import importlib.util
import json
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..machine import gpus
from ..security.files import read_bounded_text

# Where a cluster's scheduler runs: the scheduler keyword's values (declared in the keyword registry).
from ..settings.keywords import SCHEDULER_HERE, SCHEDULER_IN_JOB, SCHEDULER_PLACEMENTS
from ..settings.limits import MAX_SCHEDULER_FILE_BYTES

if TYPE_CHECKING:
    from ..security.owned_folders import ClusterFolder
    from .workers import WorkerLaunch

logger = logging.getLogger(__name__)

SCHEDULER_FILE_NAME = "scheduler.json"


@dataclass(frozen=True)
class SchedulerStart:
    """How a job starts the cluster's scheduler before its workers: where it writes its address (None: a
    private temporary file, ``--run``), its ``--dashboard-address`` where the dashboard was opened on purpose,
    its ``--tls-*`` options and distributed's ``worker-saturation`` (None: distributed's own)."""

    scheduler_file: str | None
    dashboard_address: str | None = None
    tls_args: tuple[str, ...] = ()
    worker_saturation: str | None = None


def parse_scheduler_placement(value: Any, runs_jobs_here: bool = True, protocol: str | None = None) -> str:
    """``"local"`` (the scheduler runs in this process, dask-jobqueue's way) or ``"job"``. Unset, it is ``"job"``
    for UCX on a batch system whose jobs do not run here (``runs_jobs_here``): UCX has no TLS, so the scheduler
    runs on the compute nodes' own network rather than open on a shared login node; otherwise ``"local"``."""

    if value is None:
        return SCHEDULER_IN_JOB if protocol == "ucx" and not runs_jobs_here else SCHEDULER_HERE
    if value not in SCHEDULER_PLACEMENTS:
        raise ValidationError(
            "scheduler",
            f"expected 'local' (in this process) or 'job' (in the cluster's first batch job), got {value!r}",
        )
    return value


def read_scheduler_address(path: str, folder: ClusterFolder | None = None) -> str | None:
    """The address in a scheduler file, or None while the file is missing or half written; with ``folder``, the
    file ``path`` of the cluster's folder, read through the folder made (:meth:`ClusterFolder.read`: another
    folder at its name raises :class:`~gpujobqueue.errors.GPUJobQueueError`)."""
    try:
        if folder is None:
            text = read_bounded_text(path, MAX_SCHEDULER_FILE_BYTES, "a scheduler file")
        else:
            text = folder.read(path, MAX_SCHEDULER_FILE_BYTES, "a scheduler file")
        data = json.loads(text)
    except ValueError:  # missing, half written, or not a regular file (a FileRefusedError)
        return None
    return (data.get("address") or None) if isinstance(data, dict) else None


def check_ucx_scheduler_host(scheduler_here: bool = True) -> None:
    """Refuse UCX (:class:`ValidationError`) without distributed-ucxx, or, for a scheduler here, a GPU here."""
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


def check_scheduler_can_run_in_job(launch: WorkerLaunch, field_name: str, what: str) -> None:
    """Refuse (naming ``field_name``) a scheduler in the job where the batch script runs on a launch node (jsrun)."""
    if launch.task_launcher.runs_on_launch_node:
        raise ValidationError(
            field_name,
            f"{what} starts the scheduler where the batch script runs; with launcher {launch.launcher!r} that is "
            "a launch node without the job's GPUs",
        )
