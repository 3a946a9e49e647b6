"""What gpujobqueue takes from dask-jobqueue, imported in this one place.

dask-jobqueue's ``runner`` module sets a SIGINT handler (``sys.exit()``: status 0, no
``KeyboardInterrupt``) when dask-jobqueue is imported, and ``signal.signal`` raises in any thread but the
main one: while it is imported here, that one call is skipped, so gpujobqueue's clusters can be imported
from any thread and Ctrl-C keeps Python's meaning. Where dask-jobqueue was imported before, its
handler is given back to Python's (:func:`gpujobqueue.runtime.exit_cleanup.restore_python_sigint`).
"""

import contextlib
import signal
from collections.abc import Iterator

from .runtime.exit_cleanup import restore_python_sigint


@contextlib.contextmanager
def _without_dask_jobqueues_sigint_handler() -> Iterator[None]:
    set_handler = signal.signal

    def all_but_dask_jobqueues(signalnum, handler):
        if getattr(handler, "__module__", None) == "dask_jobqueue.runner":
            return signal.getsignal(signalnum)
        return set_handler(signalnum, handler)

    signal.signal = all_but_dask_jobqueues
    try:
        yield
    finally:
        signal.signal = set_handler


with _without_dask_jobqueues_sigint_handler():
    from dask_jobqueue.core import Job, JobQueueCluster
    from dask_jobqueue.lsf import lsf_detect_units, lsf_format_bytes_ceil

restore_python_sigint()

__all__ = ["Job", "JobQueueCluster", "lsf_detect_units", "lsf_format_bytes_ceil"]
