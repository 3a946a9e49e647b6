"""What gpujobqueue takes from dask-jobqueue, imported in this one place.

dask-jobqueue's ``runner`` module sets a SIGINT handler (``sys.exit()``, no ``KeyboardInterrupt``) when
dask-jobqueue is imported; Python's own is given back here, right after
(:func:`gpujobqueue.runtime.exit_cleanup.restore_python_sigint`), whichever module imports it first.
"""

from dask_jobqueue.core import Job, JobQueueCluster
from dask_jobqueue.lsf import lsf_detect_units

from .runtime.exit_cleanup import restore_python_sigint

restore_python_sigint()

__all__ = ["Job", "JobQueueCluster", "lsf_detect_units"]
