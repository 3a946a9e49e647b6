"""The cluster's HTTP servers: closed unless a dashboard is opened on purpose, and one opened on
purpose says who can reach it.

distributed starts an HTTP server in every scheduler and worker, whatever its dashboard switch
(``Node.start_http_server``), serving ``distributed.scheduler.http.routes`` (Prometheus' /metrics,
/health, /info with the workers' logs and call stacks, /json) or ``distributed.worker.http.routes``
(/metrics, /health), and the dashboard's pages (/status, /profile, /system) when it is on. None takes
a password, and a page on the loopback is read by every user of that host. Closed, a server has no
dashboard and no route, and listens on the loopback at a free port: nothing to read there.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

# Where a closed server listens: it serves no page, and no fixed port is taken from other users.
CLOSED_HTTP_ADDRESS = "127.0.0.1:0"
# Where scheduler_options={"dashboard": True} opens the scheduler's dashboard (distributed's port).
DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8787"
# The worker CLIs' own default address (dask worker's and dask cuda worker's): every interface.
WORKER_CLI_DASHBOARD_ADDRESS = ":0"


class OpenDashboardWarning(UserWarning):
    """A dashboard was opened: others than you can read it, without a password (the warning says who)."""


def is_loopback_address(address: Any) -> bool:
    """Whether a ``host:port`` dashboard address names the loopback."""
    return str(address).rpartition(":")[0].strip("[]") in ("127.0.0.1", "localhost", "::1")


def who_can_reach(address: str, where: str) -> str:
    """Who can read an HTTP server of ``where`` (``"this host"``) listening at ``address``."""
    if is_loopback_address(address):
        return f"every user of {where}"
    return f"everyone who can reach {where} on the network"


def dashboard_options(scheduler_options: dict | None, where: str = "this host") -> tuple[dict[str, Any], str | None]:
    """The scheduler's options with its HTTP server closed, unless they open the dashboard; and the address it is
    open at, else None. ``dashboard_address`` opens it there, ``dashboard=True`` alone at
    :data:`DEFAULT_DASHBOARD_ADDRESS`, with an :class:`OpenDashboardWarning` saying who (``where``: the scheduler's
    host) can read it; ``dashboard=False`` keeps it closed whatever the address."""

    options = dict(scheduler_options or {})
    address, asked = options.get("dashboard_address"), options.get("dashboard")
    if asked is False or (address in (None, False) and asked is not True):
        options.update(dashboard=False, dashboard_address=CLOSED_HTTP_ADDRESS)
        return options, None
    if address in (None, False):
        address = DEFAULT_DASHBOARD_ADDRESS
    options.update(dashboard=True, dashboard_address=address)
    warnings.warn(
        f"the scheduler's dashboard at {address!r} (your workers' logs and call stacks, /metrics) can be read by "
        f"{who_can_reach(address, where)}, with no password; leave scheduler_options' dashboard_address unset "
        "for none",
        OpenDashboardWarning,
        stacklevel=3,
    )
    return options, address


def worker_dashboard_address(worker_args: Sequence[str]) -> str | None:
    """Where workers started with ``worker_args`` (``worker_extra_args``) serve their dashboard:
    the ``--dashboard-address`` given, the worker CLIs' every interface for ``--dashboard`` alone;
    None where the arguments open none (``--no-dashboard`` alone closes it as gpujobqueue does)."""
    opened, address = False, None
    for i, word in enumerate(worker_args):
        if word == "--dashboard-address" and i + 1 < len(worker_args):
            opened, address = True, worker_args[i + 1]
        elif word.startswith("--dashboard-address="):
            opened, address = True, word.partition("=")[2]
        elif word == "--dashboard":
            opened = True
    if not opened:
        return None
    return address or WORKER_CLI_DASHBOARD_ADDRESS


def warn_if_workers_serve_dashboards(worker_args: Sequence[str]) -> None:
    """Warn (:class:`OpenDashboardWarning`) where ``worker_extra_args`` open the workers' dashboards,
    saying who can read them."""
    address = worker_dashboard_address(worker_args)
    if address is None:
        return
    readers = who_can_reach(address, "the job's nodes")
    warnings.warn(
        f"the workers serve their dashboards at {address!r} (worker_extra_args: /status, /profile, /system, "
        f"/metrics), which {readers} can read, with no password; leave "
        "--dashboard and --dashboard-address out of worker_extra_args for none",
        OpenDashboardWarning,
        stacklevel=4,
    )
