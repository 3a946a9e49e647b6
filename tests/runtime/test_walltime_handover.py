"""``scale(n)`` keeps n workers through walltimes, on the real SLURM and Grid Engine of the fixtures.

Jobs started together would retire together: the cluster retires them one at a time, each well
before its workers' own lifetime would end it, and submits each replacement ahead of the retirement
it replaces (here it waits in the queue: the fixtures' four GPUs leave no room to spare, as a full
machine would). The computation is four workers' worth of 54 s (360 tasks of 0.6 s) in jobs of one
minute whose workers' own lifetime (45 s: the walltime less its 15-s margin) has no stagger: left to
it, all four jobs would end at one instant, and a retirement planned at the lifetime's edge loses to
it. 54 s of work outlasts the first jobs' lifetime, so all four of them hand over while it runs (at
04e8fe8 the last one was ended by its own lifetime); the 75 s this test ran before (500 tasks) added
only some of the replacements' own retirements. The issue's longer run (2000 tasks, 300 s, the
default stagger) is the same test with ``GPUJOBQUEUE_HANDOVER_TASKS=2000
GPUJOBQUEUE_HANDOVER_STAGGER=auto`` in the environment (and ``-s`` to see its figures).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import threading
import time
from pathlib import Path

import dask.config
import pytest
from conftest import wait_until
from dask.distributed import Client, wait
from test_conformance import _backend, tmp_path_cwd  # noqa: F401  (fixture)

TASKS = int(os.environ.get("GPUJOBQUEUE_HANDOVER_TASKS", "360"))
STAGGER = os.environ.get("GPUJOBQUEUE_HANDOVER_STAGGER", "0")  # the workers' own lifetime stagger, or auto
TASK_SECONDS, WORKERS = 0.6, 4
IDEAL_SECONDS = TASKS * TASK_SECONDS / WORKERS  # 54 s
SAMPLE_SECONDS = 0.1


def _a_little_work(x: int, done_file: str) -> int:
    time.sleep(TASK_SECONDS)
    with open(done_file, "a") as done:  # one line per result computed: more lines than tasks were recomputed
        done.write(f"{x}\n")
    return x + 1


class WorkerCounts(threading.Thread):
    """The scheduler's workers, counted every :data:`SAMPLE_SECONDS` s, with the time of each count."""

    def __init__(self, cluster):
        super().__init__()
        self.cluster, self.samples, self.jobs, self.done = cluster, [], set(), threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append((time.monotonic(), len(self.cluster.scheduler.workers)))  # this process's scheduler
            self.jobs.update(self.cluster.worker_spec)
            time.sleep(SAMPLE_SECONDS)

    def under(self, fewest: int) -> list[tuple[float, float]]:
        """When (seconds from the first sample) and for how long fewer than ``fewest`` workers were connected."""
        spells: dict[float, float] = {}
        since = None
        for at, count in self.samples:
            if count < fewest:
                since = at if since is None else since
                spells[since] = at - since + SAMPLE_SECONDS
            else:
                since = None
        first = self.samples[0][0]
        return [(round(at - first, 1), round(length, 1)) for at, length in spells.items()]


@contextlib.contextmanager
def logged_at_close():
    """What distributed, asyncio and gpujobqueue log while the block runs (the cluster's close)."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(self.format(record))

    handler = Keep(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    loggers = [logging.getLogger(name) for name in ("distributed", "asyncio", "gpujobqueue", "tornado")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield lines
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _compute(client, done_file: Path) -> tuple[list, float]:
    started = time.monotonic()
    futures = client.map(_a_little_work, range(TASKS), done_file=str(done_file), pure=False)
    with contextlib.suppress(TimeoutError):
        wait(futures, timeout=3 * IDEAL_SECONDS)
    return futures, time.monotonic() - started


def _retirements(log_directory: Path) -> collections.Counter:
    """Jobs' logs by how their workers left: retired by the cluster, by their own lifetime, by the walltime."""
    reasons = collections.Counter()
    for path in log_directory.iterdir():
        text = path.read_text(errors="replace")
        reasons.update(set(re.findall(r"Reason: (scheduler-remove-worker|worker-lifetime-reached)", text)))
        reasons["walltime"] += "DUE TO TIME LIMIT" in text
    return reasons


@pytest.mark.long
@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend_name", ["slurm", "sge"])
def test_scale_n_keeps_n_workers_through_walltimes(backend_name, request, tmp_path):
    backend = _backend(request, backend_name)
    keywords = {"gpus_per_node": 1, "walltime": "00:01:00", "log_directory": str(tmp_path / "logs")}
    if STAGGER != "auto":
        keywords["worker_extra_args"] = ["--lifetime-stagger", STAGGER]
    done_file = tmp_path / "done"
    with (
        dask.config.set({"gpujobqueue.job-poll-interval": "1s"}),
        backend.cluster(**keywords) as cluster,
        Client(cluster) as client,
    ):
        asked = time.monotonic()
        cluster.scale(WORKERS)
        client.wait_for_workers(WORKERS, timeout=120)
        startup = time.monotonic() - asked  # one job start-up, measured in this run (its jobs started together)
        counts = WorkerCounts(cluster)
        counts.start()
        try:
            futures, elapsed = _compute(client, done_file)
        finally:
            counts.done.set()
            counts.join()
        states = collections.Counter(future.status for future in futures)
        assert states["finished"] == TASKS, f"after {elapsed:.0f} s: {dict(states)} (ideal {IDEAL_SECONDS:.0f} s)"
        assert client.gather(futures) == list(range(1, TASKS + 1))
        with logged_at_close() as at_close:
            client.close()
            cluster.close()
    computed = done_file.read_text().split()
    spells = counts.under(WORKERS / 2)
    under_half = max((length for _, length in spells), default=0.0)
    print(
        f"{backend_name}: {TASKS} tasks in {elapsed:.1f} s ({elapsed / IDEAL_SECONDS:.2f} x the ideal "
        f"{IDEAL_SECONDS:.0f} s), fewest workers {min(count for _, count in counts.samples)}, under {WORKERS / 2:g} "
        f"for {under_half:.1f} s (start-up {startup:.1f} s), {len(computed) - TASKS} results recomputed, "
        f"{len(counts.jobs)} jobs, load {os.getloadavg()[0]:.2f}; under {WORKERS / 2:g} (at s, for s): {spells}"
    )
    assert under_half <= startup, f"fewer than {WORKERS / 2:g} workers for {under_half:.1f} s"
    assert not [line for line in at_close if "Traceback" in line or "CancelledError" in line], at_close
    wait_until(lambda: not backend.queue_ids(), 120, what="the queue to empty")
    reasons = _retirements(tmp_path / "logs")
    assert reasons["walltime"] == 0 and reasons["worker-lifetime-reached"] == 0, dict(reasons)
    assert reasons["scheduler-remove-worker"] >= len(counts.jobs) - 2 * WORKERS, dict(reasons)
