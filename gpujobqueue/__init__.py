"""Dask clusters of GPU workers on HPC batch systems."""

from ._version import __version__ as __version__
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
from .request import JobRequest
from .runtime.cluster import WorkersNotStartedError
from .script.from_keywords import render_job_script
from .usage import Charge, JobUsage, UsageReport
from .workers import WorkerLaunch

__all__ = [
    "BatchCommandNotFoundError",
    "Charge",
    "GPUCluster",
    "GPUJobQueueError",
    "InterfaceNotFoundError",
    "JobCannotStartError",
    "JobFailedError",
    "JobRequest",
    "JobSizeMissingError",
    "JobStatus",
    "JobUsage",
    "LocalFallbackWarning",
    "LocalGPUCluster",
    "LSFGPUCluster",
    "PBSGPUCluster",
    "SGEGPUCluster",
    "SLURMGPUCluster",
    "SubmissionError",
    "UnknownKeywordError",
    "UsageReport",
    "ValidationError",
    "WorkerLaunch",
    "WorkersNotStartedError",
    "render_job_script",
]
