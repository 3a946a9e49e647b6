"""``scale(n)`` keeps n workers through walltimes, on the real SLURM and Grid Engine of the fixtures.

Jobs started together would retire together: the cluster staggers their retirements so that never
all of them leave at once, and submits each replacement ahead of the retirement it replaces (here it
waits in the queue: the fixtures' four GPUs leave no room to spare, as a full machine would).
The computation is four workers' worth of 75 s (500 tasks of 0.6 s) in jobs of one minute.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import re
import threading
import time

import dask.config
import pytest
from conftest import wait_until
from dask.distributed import Client, wait
from test_conformance import _backend, tmp_path_cwd  # noqa: F401  (fixture)

TASKS, TASK_SECONDS, WORKERS = 500, 0.6, 4
IDEAL_SECONDS = TASKS * TASK_SECONDS / WORKERS  # 75 s
RETIRED = r"Reason: (scheduler-remove-worker|worker-lifetime-reached)"


def _a_little_work(x: int) -> int:
    time.sleep(TASK_SECONDS)
    return x + 1


@pytest.mark.long
@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend_name", ["slurm", "sge"])
def test_scale_n_keeps_n_workers_through_walltimes(backend_name, request, tmp_path):
    backend = _backend(request, backend_name)
    keywords = {"gpus_per_node": 1, "walltime": "00:01:00", "log_directory": str(tmp_path / "logs")}
    with (
        dask.config.set({"gpujobqueue.job-poll-interval": "1s"}),
        backend.cluster(**keywords) as cluster,
        Client(cluster) as client,
    ):
        cluster.scale(WORKERS)
        client.wait_for_workers(WORKERS, timeout=120)
        connected, jobs, done = [], set(), threading.Event()

        def sample_workers():
            while not done.is_set():
                connected.append(len(cluster.scheduler.workers))  # the scheduler's own table (this process)
                jobs.update(cluster.worker_spec)
                time.sleep(0.2)

        sampler = threading.Thread(target=sample_workers)
        sampler.start()
        started = time.monotonic()
        try:
            futures = client.map(_a_little_work, range(TASKS), pure=False)
            with contextlib.suppress(TimeoutError):
                wait(futures, timeout=2 * IDEAL_SECONDS)
            elapsed = time.monotonic() - started
        finally:
            done.set()
            sampler.join()
        states = collections.Counter(future.status for future in futures)
        assert states["finished"] == TASKS, f"after {elapsed:.0f} s: {dict(states)} (ideal {IDEAL_SECONDS:.0f} s)"
        assert client.gather(futures) == list(range(1, TASKS + 1))
        timeline = [(count, len(list(run))) for count, run in itertools.groupby(connected)]
        assert min(connected) > 0, f"every worker left at once: (workers, samples 0.2 s apart) {timeline}"
        print(
            f"{backend_name}: {TASKS} tasks in {elapsed:.1f} s (ideal {IDEAL_SECONDS:.0f} s), "
            f"fewest workers {min(connected)}, jobs {len(jobs)}"
        )
    wait_until(lambda: not backend.queue_ids(), 120, what="the queue to empty")
    logs = {path.name: path.read_text(errors="replace") for path in (tmp_path / "logs").iterdir()}
    assert not [name for name, text in logs.items() if "DUE TO TIME LIMIT" in text], "a job reached its walltime"
    # Retired through the scheduler (the handover) or by the workers' own lifetime; the jobs left at close
    # (at most the four kept and their replacements, queued ahead) were cancelled instead.
    graceful = [name for name, text in logs.items() if re.search(RETIRED, text)]
    assert len(graceful) >= len(jobs) - 2 * WORKERS, f"{len(jobs)} jobs, retired gracefully: {sorted(graceful)}"
