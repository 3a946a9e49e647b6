"""Dask clusters of GPU workers on HPC batch systems.

The public names are imported when first used (PEP 562): a worker that preloads
``gpujobqueue.preloads.*`` by module name, or a job's ``gpujobqueue.preloads.watchdog``, imports
that module alone, not the clusters, dask-jobqueue and the sites (about half a second of every
worker process's start). Importing it registers the package's dask config defaults (``gpujobqueue.*``), as
dask-jobqueue and dask-cuda do, and nothing more.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .jobs.sigint import keep_python_sigint
from .settings import defaults as _defaults  # noqa: F401  (registers gpujobqueue's dask config, as dask-jobqueue does)

keep_python_sigint()  # importing dask-jobqueue, before or after, would make Ctrl-C exit 0

# Each public name and the module that defines it.
_PUBLIC = {
    "BatchCommandNotFoundError": ".errors",
    "BatchSystemUnreachableError": ".errors",
    "GPUJobQueueError": ".errors",
    "InterfaceNotFoundError": ".errors",
    "JobSizeMissingError": ".errors",
    "SubmissionError": ".errors",
    "UnknownKeywordError": ".errors",
    "ValidationError": ".errors",
    "GPUCluster": ".runtime.factory",
    "LocalFallbackWarning": ".runtime.factory",
    "LocalGPUCluster": ".runtime.factory",
    "LSFGPUCluster": ".runtime.factory",
    "PBSGPUCluster": ".runtime.factory",
    "SGEGPUCluster": ".runtime.factory",
    "SLURMGPUCluster": ".runtime.factory",
    "JobCannotStartError": ".jobs.job_status",
    "JobFailedError": ".jobs.job_status",
    "JobStatus": ".jobs.job_status",
    "JobRequest": ".jobs.request",
    "WorkersNotStartedError": ".runtime.cluster",
    "render_job_script": ".plan.scripts",
    "Charge": ".jobs.usage",
    "JobUsage": ".jobs.usage",
    "UsageReport": ".jobs.usage",
    "WorkerLaunch": ".jobs.workers",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


if TYPE_CHECKING:
    from .errors import (
        BatchCommandNotFoundError,
        BatchSystemUnreachableError,
        GPUJobQueueError,
        InterfaceNotFoundError,
        JobSizeMissingError,
        SubmissionError,
        UnknownKeywordError,
        ValidationError,
    )
    from .jobs.job_status import JobCannotStartError, JobFailedError, JobStatus
    from .jobs.request import JobRequest
    from .jobs.usage import Charge, JobUsage, UsageReport
    from .jobs.workers import WorkerLaunch
    from .plan.scripts import render_job_script
    from .runtime.cluster import WorkersNotStartedError
    from .runtime.factory import (
        GPUCluster,
        LocalFallbackWarning,
        LocalGPUCluster,
        LSFGPUCluster,
        PBSGPUCluster,
        SGEGPUCluster,
        SLURMGPUCluster,
    )
