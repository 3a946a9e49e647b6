"""Dask clusters of GPU workers on HPC batch systems.

The public names are imported when first used (PEP 562): a worker that preloads
``gpujobqueue.preloads.*`` by module name, or a job's ``gpujobqueue.preloads.watchdog``, imports
that module alone, not the clusters, dask-jobqueue and the sites (about half a second of every
worker process's start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .sigint import keep_python_sigint

keep_python_sigint()  # importing dask-jobqueue, before or after, would make Ctrl-C exit 0

# Each public name and the module that defines it.
_PUBLIC = {
    "BatchCommandNotFoundError": ".errors",
    "GPUJobQueueError": ".errors",
    "InterfaceNotFoundError": ".errors",
    "JobSizeMissingError": ".errors",
    "SubmissionError": ".errors",
    "UnknownKeywordError": ".errors",
    "ValidationError": ".errors",
    "GPUCluster": ".factory",
    "LocalFallbackWarning": ".factory",
    "LocalGPUCluster": ".factory",
    "LSFGPUCluster": ".factory",
    "PBSGPUCluster": ".factory",
    "SGEGPUCluster": ".factory",
    "SLURMGPUCluster": ".factory",
    "JobCannotStartError": ".job_status",
    "JobFailedError": ".job_status",
    "JobStatus": ".job_status",
    "JobRequest": ".request",
    "WorkersNotStartedError": ".runtime.cluster",
    "render_job_script": ".plan.scripts",
    "Charge": ".usage",
    "JobUsage": ".usage",
    "UsageReport": ".usage",
    "WorkerLaunch": ".workers",
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
        GPUJobQueueError,
        InterfaceNotFoundError,
        JobSizeMissingError,
        SubmissionError,
        UnknownKeywordError,
        ValidationError,
    )
    from .factory import (
        GPUCluster,
        LocalFallbackWarning,
        LocalGPUCluster,
        LSFGPUCluster,
        PBSGPUCluster,
        SGEGPUCluster,
        SLURMGPUCluster,
    )
    from .job_status import JobCannotStartError, JobFailedError, JobStatus
    from .plan.scripts import render_job_script
    from .request import JobRequest
    from .runtime.cluster import WorkersNotStartedError
    from .usage import Charge, JobUsage, UsageReport
    from .workers import WorkerLaunch
