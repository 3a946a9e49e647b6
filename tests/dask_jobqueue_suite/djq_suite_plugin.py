"""What dask-jobqueue's own conftest.py gives its tests (it is not in the wheel), for
gpujobqueue's four batch classes instead of dask-jobqueue's.

``shipped_job.py`` and ``shipped_jobqueue_core.py`` import dask-jobqueue 0.9's
``tests/test_job.py`` and ``tests/test_jobqueue_core.py`` from the installed package, so
pytest runs them unchanged. Their names do not match ``test_*.py``: the whole suite runs
them once, in tests/batch/test_dask_jobqueue_suite.py, which checks the outcome against the list
in docs/migrating.md. This is a plugin, not a conftest.py, so that the whole suite's
collection does not meet a second module named ``conftest``. By hand::

    PYTHONPATH=tests/dask_jobqueue_suite python -m pytest -p djq_suite_plugin -p no:cacheprovider \
        tests/dask_jobqueue_suite/shipped_job.py tests/dask_jobqueue_suite/shipped_jobqueue_core.py
"""

from __future__ import annotations

import pytest
from distributed.utils_test import loop, loop_in_thread  # noqa: F401  (test_security* take `loop`)

from gpujobqueue import LSFGPUCluster, PBSGPUCluster, SGEGPUCluster, SLURMGPUCluster

CLASSES = {"slurm": SLURMGPUCluster, "pbs": PBSGPUCluster, "lsf": LSFGPUCluster, "sge": SGEGPUCluster}


def pytest_configure(config):
    # dask-jobqueue's marks, used by its test files
    config.addinivalue_line("markers", "env(NAME): needs the batch system NAME (dask-jobqueue's -E NAME)")
    config.addinivalue_line("markers", "xfail_env(NAME): a known failure on the batch system NAME")


@pytest.fixture(params=list(CLASSES.values()), ids=list(CLASSES))
def Cluster(request):
    """Each of gpujobqueue's batch classes, for the tests that need no batch system."""
    return request.param


@pytest.fixture(params=list(CLASSES.values()), ids=list(CLASSES))
def EnvSpecificCluster(request):
    """The tests that submit jobs to a running batch system (dask-jobqueue runs them in its
    docker-compose CI with ``-E NAME``): skipped, as dask-jobqueue skips them without ``-E``."""
    name = request.node.callspec.id
    pytest.skip(f"submits jobs to a running {name} batch system (dask-jobqueue's -E {name})")
