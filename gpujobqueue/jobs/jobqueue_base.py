"""What gpujobqueue takes from dask-jobqueue, imported in this one place (its runner module's
SIGINT handler never set: :mod:`gpujobqueue.jobs.sigint`, from the package's import on)."""

from dask_jobqueue.core import Job, JobQueueCluster
from dask_jobqueue.lsf import lsf_detect_units, lsf_format_bytes_ceil

__all__ = ["Job", "JobQueueCluster", "lsf_detect_units", "lsf_format_bytes_ceil"]
