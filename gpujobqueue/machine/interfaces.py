"""This host's network interfaces, and the refusal of a scheduler interface it does not have."""

from __future__ import annotations

import socket
from typing import Any

from ..errors import InterfaceNotFoundError


def host_interfaces() -> dict[str, list[str]]:
    """This host's network interfaces that are up, name to IPv4 addresses, sorted by name."""
    import psutil

    stats = psutil.net_if_stats()
    return {
        name: [a.address for a in addrs if a.family == socket.AF_INET]
        for name, addrs in sorted(psutil.net_if_addrs().items())
        if stats.get(name) is None or stats[name].isup
    }


def usable_interfaces(interfaces: dict[str, list[str]]) -> list[str]:
    """The interfaces a scheduler can listen on for workers on other nodes: with an IPv4
    address, the loopback last (only workers on this host reach it)."""
    return sorted((name for name, addresses in interfaces.items() if addresses), key=lambda name: (name == "lo", name))


def check_scheduler_interface(interface: str | None, field: str, site: Any = None) -> None:
    """Refuse (:class:`~gpujobqueue.errors.InterfaceNotFoundError`) a scheduler that would listen, in this
    process, on an ``interface`` this host lacks (None, distributed's choice, always works), before anything
    starts, naming the keyword (``field``: ``interface``, maybe the ``site``'s ``network.interface``, or
    ``scheduler_options``) and what to do: distributed would fail with a RuntimeError of its own."""

    available = host_interfaces()
    if interface is None or available.get(interface):
        return
    host = socket.gethostname()
    choices = usable_interfaces(available)
    listed = ", ".join(f"{name} ({' '.join(available[name])})" for name in choices) or "none with an IPv4 address"
    example = choices[0] if choices else "eth0"
    state = "has no IPv4 address on" if interface in available else "does not have"
    network = (site.data.get("network") or {}) if site is not None else {}
    if site is not None and field == "interface" and network.get("interface") == interface:
        origin = f"{site.name}'s network.interface, {site.where('network', 'interface')}"
        # hostnames are regular expressions matched against the host name: said as such, not as hosts.
        patterns = [f"'{pattern}'" for pattern in site.data.get("hostnames", [])]
        matches = f"the pattern {patterns[0]}" if len(patterns) == 1 else f"one of the patterns {', '.join(patterns)}"
        login = f" (one whose host name matches {matches})" if patterns else ""
        first = f"run this on a {site.name} login node{login}, where {interface!r} is"
    else:
        first = None
        named = f"scheduler_options={{'interface': {interface!r}}}"
        origin = f"interface={interface!r}" if field == "interface" else named
    ways = [first] if first else []
    ways.append(
        f"give scheduler_options={{'interface': {example!r}}} for the scheduler alone"
        + (f" (the workers keep {interface!r} on the compute nodes)" if field == "interface" else "")
    )
    if field == "interface":
        ways.append(f"or interface={example!r} for the scheduler and the workers")
    message = (
        f"the scheduler runs in this process and would listen on {interface!r} ({origin}), "
        f"which this host ({host}) {state}; its interfaces: {listed}. To fix: {'; '.join(ways)}."
    )
    raise InterfaceNotFoundError(field, interface, available, message)
