"""Ends workers whose scheduler stops answering, and a job's scheduler whose cluster stops calling.

Job scripts preload it by name (``--preload gpujobqueue.preloads.watchdog``) into their workers
(and into the scheduler of ``scheduler="job"``); ``gpujobqueue render --standalone`` writes its
text into the job's private folder and preloads it by path. distributed's ``death_timeout``
bounds only the connection to a scheduler: a worker whose scheduler process is stopped
(SIGSTOP, a frozen login node) keeps its TCP connection, the kernel still completes new
handshakes, and the heartbeats fail every 30 s for ever. So a worker asks the scheduler for a
reply every few seconds, and once none came for ``death_timeout`` seconds it closes itself and
its nanny (which then restarts nothing): the job script, waiting on its workers, ends, and the
allocation with it. A job's scheduler (``scheduler="job"``, armed by GPUJOBQUEUE_CLUSTER_TIMEOUT)
ends the same way once the process holding the cluster has not called it for that long.
"""

import asyncio
import logging
import os
import time

logger = logging.getLogger("gpujobqueue.watchdog")

CLUSTER_TIMEOUT_VARIABLE = "GPUJOBQUEUE_CLUSTER_TIMEOUT"
CLUSTER_ALIVE_HANDLER = "gpujobqueue_cluster_alive"
_ENDING = ("closing", "closed", "closing_gracefully", "failed")


def probe_interval(timeout):
    """Seconds between two probes: a quarter of the timeout, within 0.5 .. 5 s."""
    return max(0.5, min(5.0, timeout / 4))


async def watch_scheduler(worker, timeout):
    """Close ``worker`` and its nanny once its scheduler has not replied for ``timeout`` s."""
    last_reply = time.monotonic()
    while worker.status.name not in _ENDING:
        remaining = last_reply + timeout - time.monotonic()
        if remaining <= 0:
            logger.error(
                "gpujobqueue: the scheduler %s has not answered for %s s; this worker and its nanny close",
                worker.scheduler.address,
                timeout,
            )
            # Its own task: closing tears the preloads down, which must not cancel the close.
            closing = worker.close(nanny=True, reason="gpujobqueue-scheduler-unresponsive")
            worker._gpujobqueue_closing = asyncio.ensure_future(closing)
            return
        try:
            await asyncio.wait_for(worker.scheduler.echo(data="gpujobqueue"), remaining)
            last_reply = time.monotonic()
        except asyncio.CancelledError:
            raise
        except Exception:  # refused, reset, timed out: no reply
            pass
        await asyncio.sleep(min(probe_interval(timeout), max(0.0, last_reply + timeout - time.monotonic())))


async def watch_cluster(scheduler, timeout):
    """Close ``scheduler`` once its cluster has not called it for ``timeout`` s."""
    heard = [time.monotonic()]

    def cluster_alive(**_):
        heard[0] = time.monotonic()
        return "ok"

    scheduler.handlers[CLUSTER_ALIVE_HANDLER] = cluster_alive
    while scheduler.status.name not in _ENDING:
        remaining = heard[0] + timeout - time.monotonic()
        if remaining <= 0:
            logger.error("gpujobqueue: the cluster owning this scheduler has not called for %s s; it closes", timeout)
            closing = scheduler.close(reason="gpujobqueue-cluster-unresponsive")
            scheduler._gpujobqueue_closing = asyncio.ensure_future(closing)
            return
        await asyncio.sleep(min(probe_interval(timeout), remaining))


async def dask_setup(server):
    """distributed's preload hook: watch the scheduler from a worker, the cluster from a scheduler."""
    from distributed import Scheduler, Worker

    if isinstance(server, Worker):
        timeout = server.death_timeout
        if timeout:
            server._gpujobqueue_watchdog = asyncio.ensure_future(watch_scheduler(server, float(timeout)))
    elif isinstance(server, Scheduler) and os.environ.get(CLUSTER_TIMEOUT_VARIABLE):  # the scheduler of scheduler="job"
        timeout = float(os.environ[CLUSTER_TIMEOUT_VARIABLE])
        server._gpujobqueue_watchdog = asyncio.ensure_future(watch_cluster(server, timeout))


async def dask_teardown(server):
    """Stop watching (the server closes)."""
    task = getattr(server, "_gpujobqueue_watchdog", None)
    if task is not None and task is not asyncio.current_task():
        task.cancel()
