"""Where the scheduler's dashboard listens: the loopback unless told otherwise, with a warning
for an address beyond it."""

from __future__ import annotations

import warnings
from typing import Any

# The dashboard shows worker logs and takes no password: on a shared login node (or a compute
# node) it listens on the loopback only, reached through an SSH tunnel or jupyter-server-proxy.
DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8787"


def is_loopback_address(address: Any) -> bool:
    """Whether a ``host:port`` dashboard address names the loopback."""
    return str(address).rpartition(":")[0].strip("[]") in ("127.0.0.1", "localhost", "::1")


class OpenDashboardWarning(UserWarning):
    """The dashboard listens beyond the loopback, without authentication."""


def dashboard_options(scheduler_options: dict | None) -> dict[str, Any]:
    """The scheduler options with the dashboard on the loopback unless
    ``scheduler_options["dashboard_address"]`` gives an address; one open beyond the loopback warns."""
    options = dict(scheduler_options or {})
    address = options.setdefault("dashboard_address", DEFAULT_DASHBOARD_ADDRESS)
    if address not in (None, False) and not is_loopback_address(address):
        warnings.warn(
            f"the dashboard at {address!r} listens beyond this machine's loopback, without authentication, and "
            "shows your workers' logs; leave scheduler_options' dashboard_address unset to keep it on 127.0.0.1 "
            "and reach it through an SSH tunnel",
            OpenDashboardWarning,
            stacklevel=3,
        )
    return options
