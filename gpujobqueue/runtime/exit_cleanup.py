"""No job outlives the process that submitted it: cancelled at exit, and at once on SIGTERM and SIGHUP."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import threading
import weakref
from typing import Any

logger = logging.getLogger(__name__)

# A closed SSH session (SIGHUP) or a batch system ending a job that runs the client (SIGTERM).
HANDLED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

# By identity: distributed's Cluster compares by name, which a half-made cluster does not have yet.
_open_clusters: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
_installed = False
_install_lock = threading.Lock()


def track(cluster: Any) -> None:
    """Cancel ``cluster``'s jobs when this process ends, if it is still open then."""
    _open_clusters[id(cluster)] = cluster
    _install()


def forget(cluster: Any) -> None:
    """``cluster`` has closed: nothing is left to cancel."""
    if _open_clusters.get(id(cluster)) is cluster:
        del _open_clusters[id(cluster)]


def _install() -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        _installed = True
        atexit.register(_at_exit)
        if threading.current_thread() is not threading.main_thread():
            logger.info(
                "gpujobqueue: first cluster made outside the main thread: its jobs are cancelled at exit, "
                "not on SIGTERM or SIGHUP"
            )
            return
        for signum in HANDLED_SIGNALS:
            if signal.getsignal(signum) in (signal.SIG_DFL, None):  # never replace a handler the program set
                signal.signal(signum, _on_signal)


def cancel_all_now() -> None:
    """Cancel every job of every open cluster at once, without the event loop."""
    for cluster in list(_open_clusters.values()):
        try:
            cluster.cancel_jobs_now()
        except Exception:  # one cluster's failure must not keep the others' jobs alive
            logger.exception("gpujobqueue: could not cancel the jobs of %s", getattr(cluster, "name", cluster))


def _on_signal(signum: int, frame: Any) -> None:
    logger.warning(
        "gpujobqueue: %s received: cancelling the jobs of %d open cluster(s)",
        signal.Signals(signum).name,
        len(_open_clusters),
    )
    cancel_all_now()
    # Then end as the signal would have ended the process.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _at_exit() -> None:
    for cluster in list(_open_clusters.values()):
        if not getattr(cluster, "asynchronous", False):
            with contextlib.suppress(Exception):
                cluster.close(timeout=10)  # gracefully, where the loop still runs
    cancel_all_now()
