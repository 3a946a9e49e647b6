"""Shared fixtures: the real SLURM, counted batch commands, helpers that read job state."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest

# The tests mirror the package, one folder per part (batch/, plan/, sites/, runtime/, script/, cli/,
# hostile/); the helpers (conftest, fixtures, emulators, site_samples) stay here. Every folder is
# importable by module name: tests import each other's helpers (``from test_conformance import ...``),
# and workers (local processes and SLURM jobs, which inherit this environment) unpickle functions
# defined in the test modules.
_TESTS = Path(__file__).resolve().parent
TEST_FOLDERS = [str(_TESTS)] + sorted(str(path.parent) for path in _TESTS.glob("*/test_*.py"))
TEST_FOLDERS = list(dict.fromkeys(TEST_FOLDERS))
sys.path[:0] = [folder for folder in TEST_FOLDERS if folder not in sys.path]
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [*TEST_FOLDERS, os.environ.get("PYTHONPATH")]))

# The machine's temporary folder holds the locks of the daemons, one of each per machine (fixtures/daemons.py):
# recorded before this session takes a folder of its own, and inherited by the xdist workers.
os.environ.setdefault("GPUJOBQUEUE_TESTS_LOCKS", tempfile.gettempdir())

# The package's default folders ($TMPDIR/gpujobqueue-<user>/logs: local jobs' logs and usage reports)
# are this session's own (each xdist worker's too: a worker makes its own below the controller's), for this
# process and every process it starts, and go with it: the tests must not write into the real user's folders.
_SESSION_TMPDIR = tempfile.mkdtemp(prefix="gpujobqueue-tests-")
os.environ["TMPDIR"] = _SESSION_TMPDIR
tempfile.tempdir = None  # read $TMPDIR again
atexit.register(shutil.rmtree, _SESSION_TMPDIR, ignore_errors=True)


# SIGINT as a terminal leaves it, in this process, the xdist workers and every program a test starts: a run
# started in the background by a shell without job control (`nohup bash .ci/run &`, as CI harnesses start it)
# inherits SIGINT ignored, Python leaves an inherited SIG_IGN as it is, and so did every worker, job and program
# (gpujobqueue demo ran to its end on a Ctrl-C, test_ctrl_c; the LSF emulator's bkill sends SIGINT first).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from fixtures.commands import CommandLog  # noqa: E402
from fixtures.emulators import lsf, pbs, torque  # noqa: E402,F401  (PBS Pro, Torque and LSF emulators on PATH)
from fixtures.sge import sge, sge_cluster  # noqa: E402,F401  (a real Grid Engine, session-wide)
from fixtures.sigint_guard import pytest_runtest_setup, pytest_runtest_teardown  # noqa: E402,F401  (SIGINT left changed)

# Imported here, in the main thread: an xdist controller imports a warning's module to show a worker's
# warning (a site's UnconfirmedSiteFactsWarning), from a thread of its own, and dask_jobqueue (which
# gpujobqueue imports) sets a signal handler when first imported, which only the main thread may do.
import gpujobqueue  # noqa: E402,F401


@pytest.fixture(scope="session")
def slurm():
    """A real one-node SLURM (munged, slurmctld, slurmd) with four fake GPUs, on loopback."""
    from fixtures.daemons import running_on_a_free_shard
    from fixtures.slurm import SlurmTestCluster

    # one per xdist worker that runs a SLURM test, each on its own ports; outside CI, skipped where this
    # machine has no SLURM or no root
    with running_on_a_free_shard("SlurmTestCluster", lambda shard: SlurmTestCluster(shard=shard)) as cluster:
        yield cluster


# Parameters naming the batch system a test runs on (test_conformance's backends, test_reliability's modes).
_BACKEND_PARAMETERS = {"backend", "batch_backend", "any_backend", "array_backend", "backend_name", "style"}


def pytest_collection_modifyitems(config, items):
    """Mark every test that starts the real SLURM or Grid Engine, also those that reach the daemons through a
    backend parameter, so that ``-m "not slurm and not sge"`` leaves the daemons alone and ``-m "slurm or
    sge"`` takes them all. Each xdist worker that runs such a test starts a SLURM or Grid Engine of its own, on
    its own shard's ports (`fixtures.daemons.running_on_a_free_shard`).
    """
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        backends = [value for key, value in params.items() if key in _BACKEND_PARAMETERS and isinstance(value, str)]
        named = {value.split("-")[0] for value in backends}
        if "slurm" in fixtures or "slurm" in named:
            item.add_marker(pytest.mark.slurm)
        if fixtures & {"sge", "sge_cluster"} or "sge" in named:
            item.add_marker(pytest.mark.sge)
    workers = getattr(config, "workerinput", {}).get("workercount", 0)
    if workers > 1:
        items[:] = long_tests_first_in_each_share(items, workers)


def long_tests_first_in_each_share(items: list, workers: int) -> list:
    """The tests in an order where each xdist worker's first share starts with its part of the long ones.

    ``--dist worksteal`` gives each worker a contiguous share of the collection, in order, and an idle
    worker steals from the end of another's. The long tests (marked ``long``: a minute or so of waiting)
    were collected last, in the root folder and a few modules, and so ran at the end of the session, one
    worker still waiting while the others had finished. Here they are dealt out to the shares' starts.
    """
    long = [item for item in items if item.get_closest_marker("long")]
    if not long:
        return items
    rest = [item for item in items if not item.get_closest_marker("long")]
    ordered, remaining = [], len(items)
    for share in range(workers):
        size = remaining // (workers - share)  # as worksteal sends the first shares
        mine = long[share::workers]
        taken = max(0, size - len(mine))
        ordered += mine + rest[:taken]
        rest = rest[taken:]
        remaining -= size
    return ordered + rest


def pytest_sessionfinish(session, exitstatus):
    """In CI a run that collected no test is a failure, not pytest's exit status 5."""
    from fixtures.daemons import in_ci

    if in_ci() and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# The folders whose tests start clusters and wait for what their job watch sees.
_POLLING_FOLDERS = {"batch", "runtime"}


@pytest.fixture(autouse=True)
def log_capture_outside_silence_logs(monkeypatch):
    """Keep pytest's log capture at its own levels while a cluster silences distributed's logging.

    pytest attaches its capture handlers to every logger that does not propagate, distributed's among
    them, and a cluster's ``silence_logs`` (distributed's ``silence_logging_cmgr``) sets every stream
    handler of that logger to ERROR for the cluster's life: with distributed imported before pytest's
    logging plugin starts (conftest imports gpujobqueue), caplog then heard no WARNING of gpujobqueue
    while a cluster ran. The users' own handlers are not on distributed's logger, so this is the tests' alone.
    """
    import contextlib
    import logging

    import distributed.deploy.spec as spec

    silence = spec.silence_logging_cmgr

    @contextlib.contextmanager
    def silence_but_not_pytest(level, root="distributed"):
        logger = logging.getLogger(root)
        pytests = {
            handler: handler.level for handler in logger.handlers if type(handler).__module__ == "_pytest.logging"
        }
        with silence(level, root):
            for handler, kept in pytests.items():
                handler.setLevel(kept)
            yield

    monkeypatch.setattr(spec, "silence_logging_cmgr", silence_but_not_pytest)


@pytest.fixture(autouse=True)
def fast_job_poll(request):
    """A cluster started by a test of batch/ or runtime/ asks its batch system how its jobs are every second,
    not every 5 s (gpujobqueue.yaml's default): the test waits for what the watch sees, not for the interval.
    A test that sets the interval itself (``dask.config.set`` inside it) has its own."""
    folder = request.node.path.parent.name
    if folder not in _POLLING_FOLDERS:
        yield
        return
    import dask

    with dask.config.set({"gpujobqueue.job-poll-interval": "1s"}):
        yield


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """Counts sbatch and scancel calls made by the code under test."""
    monkeypatch.chdir(tmp_path)  # SLURM writes slurm-<id>.out where sbatch runs
    folder = tmp_path / "bin"
    folder.mkdir()
    log = CommandLog(folder, ["sbatch", "scancel"])
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def wait_until(predicate, timeout: float, interval: float = 0.25, what: str = "condition"):
    """Poll ``predicate`` until it is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what() if callable(what) else what}")
