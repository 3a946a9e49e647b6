"""Issue 45: while jobs wait in the queue, the batch system's estimate of their start is shown (``cluster.jobs``,
the progress line, a timeout's message), read from the one status query per poll; where the batch system gives
none, that is said once.

The formats are the real commands': SLURM's squeue ``%S`` (``2026-12-06T14:32:00`` under
``SLURM_TIME_FORMAT=standard``, ``N/A`` without an estimate), PBS Pro's ``qstat -f`` ``estimated.start_time``
(ctime form, for the jobs its scheduler calendars), LSF's ``bjobs -o esstart_time`` (where its estimator runs). The
PBS and LSF emulators compute the estimate from the running jobs' walltimes; the real SLURM's backfill scheduler is
tested in tests/runtime/test_start_estimates_slurm.py.
"""

from __future__ import annotations

import datetime
import logging
import os
import re
from types import SimpleNamespace

import dask.config
import pytest
from conftest import wait_until
from emulators.common import JobStore
from fixtures.emulators import lsf, pbs  # noqa: F401
from test_conformance import COMMON

from gpujobqueue import LSFGPUCluster, PBSGPUCluster
from gpujobqueue.batch.lsf import LSF, lsf_time
from gpujobqueue.batch.pbs import PBS
from gpujobqueue.batch.sge import SGE
from gpujobqueue.batch.slurm import SLURM
from gpujobqueue.jobs.job_status import expected_words
from gpujobqueue.runtime.job_watch import JobRow, JobWatch

FAST = {"gpujobqueue.job-poll-interval": "1s"}
LATER = datetime.datetime.now().replace(microsecond=0) + datetime.timedelta(minutes=11)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # PBS copies job output back to the submit directory
    return tmp_path


def test_squeue_asks_for_the_start_in_the_standard_time_format():
    command = SLURM.query_command(["7"], [])
    assert command[-1].endswith("|%S") and SLURM.query_environment == {"SLURM_TIME_FORMAT": "standard"}


def test_a_pending_slurm_jobs_estimate_is_read_and_no_estimate_is_none():
    out = (
        f"7|PENDING|Resources||{LATER:%Y-%m-%dT%H:%M:%S}\n"
        "8|PENDING|Priority||N/A\n"
        "9|RUNNING|None|node1|2026-01-01T00:00:00\n"
        "10|PENDING|Priority||Unknown\n"
    )
    statuses = SLURM.interpret_statuses(["7", "8", "9", "10"], 0, out, "")
    assert statuses["7"].expected_start == LATER.timestamp()
    assert [statuses[job].expected_start for job in ("8", "9", "10")] == [None, None, None]


def test_a_queued_pbs_jobs_estimated_start_is_read():
    out = (
        "Job Id: 12.server\n    job_state = Q\n    comment = Not Running: Insufficient amount of resource: ngpus\n"
        "    estimated.exec_vnode = (node01:ncpus=4:ngpus=4)\n"
        f"    estimated.start_time = {LATER:%a %b %e %H:%M:%S %Y}\n"
        "\nJob Id: 13.server\n    job_state = Q\n    estimated.start_time = UNKNOWN\n"
    )
    statuses = PBS.interpret_statuses(["12", "13"], 0, out, "")
    assert statuses["12"].expected_start == LATER.timestamp() and statuses["13"].expected_start is None


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"{LATER:%b} {LATER.day:2d} {LATER:%H:%M}", LATER.replace(second=0).timestamp()),
        (f"{LATER:%b} {LATER.day:2d} {LATER:%H:%M} L", LATER.replace(second=0).timestamp()),
        (f"{LATER:%b} {LATER.day:2d} {LATER:%H:%M} {LATER.year}", LATER.replace(second=0).timestamp()),
        ("-", None),
        ("Dec 99 14:32", None),
        ("x" * 10_000, None),
    ],
)
def test_lsfs_estimated_start_is_read_in_its_time_forms(text, expected):
    assert lsf_time(text) == expected


@pytest.mark.parametrize(
    "offset, words",
    [(11 * 60, r"expected \d\d:\d\d, in 11 min"), (0, "expected now"), (3 * 3600 + 120, r"in 3 h 2 min")],
)
def test_an_estimate_is_said_as_a_clock_time_and_a_wait(offset, words):
    now = datetime.datetime.now().replace(hour=10, minute=0).timestamp()
    assert re.search(words, expected_words(now + offset, now))


def test_a_batch_system_without_estimates_says_so_and_one_with_them_names_its_source():
    waiting = [JobRow("w-0", "1", "qw", None, None, None, 4, 0)]
    watch = SimpleNamespace(start_estimates=None, no_start_estimates=SGE.no_start_estimates)
    assert JobWatch.estimates_note(watch, waiting) == "Grid Engine gives no start estimate"
    watch = SimpleNamespace(start_estimates=SLURM.start_estimates)
    assert JobWatch.estimates_note(watch, waiting) == "no SLURM backfill estimate yet"
    shown = [JobRow("w-0", "1", "PENDING", "Resources", "expected 14:32, in 11 min", None, 4, 0)]
    assert JobWatch.estimates_note(watch, shown) == "SLURM backfill estimate"
    assert shown[0].waiting("submitted") == "w-0 PENDING (Resources), expected 14:32, in 11 min"


def _second_job_waits_with_its_estimate(cluster, emulator):
    """Two jobs of all four GPUs: the first runs, the second's estimated start is the first's start + walltime."""
    cluster.scale(jobs=2)
    wait_until(lambda: any(row.expected for row in cluster.jobs), 30, what="an estimate in cluster.jobs")
    running = [job for job in emulator.job_ids() if emulator.state(job) in ("R", "RUN")]
    assert len(running) == 1
    started = JobStore(emulator.home).get(running[0].split(".")[0]).start_time
    waiting = next(row for row in cluster.jobs if row.expected)
    status = cluster._job_watch.book.statuses[waiting.name]
    assert abs(status.expected_start - (started + 600)) < 61  # walltime 10 min; LSF's shows minutes
    assert re.fullmatch(r"expected \d\d:\d\d, in (9|10) min", waiting.expected)
    assert "expected" in repr(cluster.jobs) and waiting.expected in waiting.waiting("submitted")
    assert f"a waiting job {waiting.expected}" in repr(cluster) and waiting.expected in cluster._repr_html_()


def test_the_pbs_estimate_of_a_waiting_job_is_shown_in_cluster_jobs(pbs, in_tmp):  # noqa: F811
    pbs.config.extra["estimates"] = True
    pbs.config.write(pbs.home)
    with dask.config.set(FAST), PBSGPUCluster(**{**COMMON, "gpus_per_node": 4}, queue="workq") as cluster:
        _second_job_waits_with_its_estimate(cluster, pbs)
    pbs.wait_queue_empty(30)


def test_the_lsf_estimate_of_a_waiting_job_is_shown_in_cluster_jobs(lsf, in_tmp, monkeypatch):  # noqa: F811
    monkeypatch.setattr(LSF, "estimates_field", True)
    lsf.config.extra["estimates"] = True
    lsf.config.write(lsf.home)
    with dask.config.set(FAST), LSFGPUCluster(**{**COMMON, "gpus_per_node": 4}, queue="normal") as cluster:
        _second_job_waits_with_its_estimate(cluster, lsf)
    assert lsf.wait_queue_empty(30)


def test_an_lsf_without_the_estimators_field_is_asked_again_without_it(lsf, in_tmp, monkeypatch):  # noqa: F811
    monkeypatch.setattr(LSF, "estimates_field", True)
    with dask.config.set(FAST), LSFGPUCluster(**{**COMMON, "gpus_per_node": 4}, queue="normal") as cluster:
        cluster.scale(jobs=2)
        wait_until(lambda: sum(row.state == "PEND" for row in cluster.jobs) == 1, 30, what="a pending job listed")
        assert LSF.estimates_field is False and not cluster._job_watch.unreachable
        assert all(row.expected is None for row in cluster.jobs)
    assert lsf.wait_queue_empty(30)


def test_a_wait_on_a_batch_system_without_estimates_says_so_once(pbs, in_tmp, caplog):  # noqa: F811
    with dask.config.set(FAST), PBSGPUCluster(**{**COMMON, "gpus_per_node": 4}, queue="workq") as cluster:
        cluster._job_watch.start_estimates = None  # as Grid Engine's
        cluster._job_watch.no_start_estimates = SGE.no_start_estimates
        cluster.scale(jobs=2)
        with caplog.at_level(logging.INFO, logger="gpujobqueue.cluster"), pytest.raises(Exception, match="workers"):
            cluster.wait_for_workers(8, timeout=6)
        said = [r.message for r in caplog.records if "gives no start estimate" in r.message]
        assert said == ["gpujobqueue: Grid Engine gives no start estimate"], said
    pbs.wait_queue_empty(30)


def test_an_estimate_is_not_shown_while_the_batch_system_does_not_answer(pbs, in_tmp, monkeypatch):  # noqa: F811
    pbs.config.extra["estimates"] = True
    pbs.config.write(pbs.home)
    with dask.config.set(FAST), PBSGPUCluster(**{**COMMON, "gpus_per_node": 4}, queue="workq") as cluster:
        _second_job_waits_with_its_estimate(cluster, pbs)
        silent = in_tmp / "silent"
        silent.mkdir()
        (silent / "qstat").write_text(
            "#!/bin/sh\necho 'Connection refused' >&2\necho 'qstat: cannot connect to server' >&2\nexit 2\n"
        )
        (silent / "qstat").chmod(0o755)
        path = os.environ["PATH"]
        monkeypatch.setenv("PATH", f"{silent}{os.pathsep}{path}")
        rows = wait_until(
            lambda: [row for row in cluster._job_watch.rows() if row.state == "unknown"] or None,
            30,
            what="the outage shown",
        )
        assert all(row.expected is None for row in cluster._job_watch.rows()), repr(cluster._job_watch.rows())
        assert rows and "a waiting job expected" not in repr(cluster)
        monkeypatch.setenv("PATH", path)
    pbs.wait_queue_empty(30)
