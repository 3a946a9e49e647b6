"""dask-jobqueue 0.9's tests/test_jobqueue_core.py, from the installed package, run unchanged
(see djq_suite_plugin.py)."""

from dask_jobqueue.tests.test_jobqueue_core import *  # noqa: F401,F403
