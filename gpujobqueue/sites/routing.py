"""Which of a site's queues takes a job of so many nodes for so long: when it has GPUs, the job's nodes are within
``min_nodes``..``max_nodes``, and its walltime within ``max_walltime`` and the limit of its ``walltime_by_nodes``
bin (a count in no bin is refused); the queue a site picks, and the one to name instead."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError
from ..settings.walltimes import parse_walltime

_NODE_RANGE = re.compile(r"^\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?$")


@dataclass(frozen=True)
class WalltimeBin:
    """One node-count bin of a queue: jobs of ``low``..``high`` nodes run at most ``max_walltime``."""

    low: int
    high: int
    max_walltime: str
    seconds: int
    name: str | None = None

    @property
    def nodes_text(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True)
class Refusal:
    """Why a queue does not take a job: the site key whose limit it breaks, and the words."""

    key: tuple
    message: str
    field: str  # the job's keyword that asks too much: nodes, walltime, or queue (for a queue without GPUs)


def parse_node_range(text: Any) -> tuple[int, int]:
    """``"10-24"`` -> (10, 24); ``"7"`` -> (7, 7); a ValueError where not ``N`` or ``N-M`` with 1 <= N <= M."""
    match = _NODE_RANGE.match(str(text))
    if match is None:
        raise ValueError(f"{text!r} is not a node range; write N-M (10-24) or N")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if not 1 <= low <= high:
        raise ValueError(f"{text!r}: a node range N-M has 1 <= N <= M")
    return low, high


def walltime_bins(entry: dict) -> list[WalltimeBin]:
    """A queue's ``walltime_by_nodes``, parsed (the file's checks have refused bad ones)."""
    bins = []
    for item in entry.get("walltime_by_nodes") or []:
        low, high = parse_node_range(item["nodes"])
        seconds = parse_walltime("max_walltime", item["max_walltime"])
        bins.append(WalltimeBin(low, high, str(item["max_walltime"]), seconds, item.get("name")))
    return bins


def bin_of(entry: dict, nodes: int) -> WalltimeBin | None:
    """The bin of ``entry`` that holds ``nodes``, or None."""
    return next((b for b in walltime_bins(entry) if b.low <= nodes <= b.high), None)


def has_gpus(entry: dict) -> bool:
    """Whether a queue's nodes have GPUs (``gpus: false`` says they do not)."""
    return entry.get("gpus", True) is not False


def routable(name: str, entry: dict) -> bool:
    """Whether the site may pick this queue (of GPU nodes): its ``routing``, by default false for ``debug`` ones."""
    return bool(entry.get("routing", "debug" not in name.lower())) and has_gpus(entry)


def routing_order(queues: dict[str, dict], default_queue: str) -> list[str]:
    """The queues a site tries, in order, for a job that names none: its default queue (whatever its ``routing``),
    then the routable others in file order."""
    rest = [name for name, entry in queues.items() if name != default_queue and routable(name, entry)]
    return ([default_queue] if default_queue in queues and has_gpus(queues[default_queue]) else []) + rest


def nodes_text(n: int) -> str:
    """``1 node``, ``12 nodes``."""
    return f"{n} node" + ("" if n == 1 else "s")


def refusal(name: str, entry: dict, nodes: int, walltime: int | None, walltime_text: str) -> Refusal | None:
    """Why queue ``name`` does not take a job of ``nodes`` nodes for ``walltime`` seconds, or None when it does."""
    key = ("queues", name)
    if not has_gpus(entry):
        return Refusal(key + ("gpus",), f"the {name} queue's nodes have no GPUs", "queue")
    if entry.get("min_nodes") is not None and nodes < entry["min_nodes"]:
        return Refusal(
            key + ("min_nodes",),
            f"{nodes_text(nodes)} per job but the {name} queue takes jobs of {entry['min_nodes']} nodes or more",
            "nodes",
        )
    if entry.get("max_nodes") is not None and nodes > entry["max_nodes"]:
        return Refusal(
            key + ("max_nodes",),
            f"{nodes_text(nodes)} per job but the {name} queue allows {entry['max_nodes']}",
            "nodes",
        )
    max_walltime = entry.get("max_walltime")
    if walltime is not None and max_walltime is not None and walltime > parse_walltime("max_walltime", max_walltime):
        return Refusal(
            key + ("max_walltime",),
            f"walltime {walltime_text} is over the {name} queue's limit of {max_walltime}",
            "walltime",
        )
    bins = walltime_bins(entry)
    if bins:
        found = bin_of(entry, nodes)
        if found is None:
            ranges = ", ".join(b.nodes_text for b in bins)
            return Refusal(
                key + ("walltime_by_nodes",),
                f"{nodes_text(nodes)} per job is in none of the {name} queue's node-count bins ({ranges})",
                "nodes",
            )
        if walltime is not None and walltime > found.seconds:
            index = bins.index(found)
            return Refusal(
                key + ("walltime_by_nodes", index, "max_walltime"),
                f"walltime {walltime_text} is over the {name} queue's limit of {found.max_walltime} "
                f"for jobs of {found.nodes_text} nodes{_bin_name(found)}",
                "walltime",
            )
    return None


def _bin_name(found: WalltimeBin) -> str:
    return f" ({found.name})" if found.name else ""


def fit_text(name: str, entry: dict, nodes: int, walltime_text: str) -> str:
    """Why queue ``name`` takes the job: ``queue prod: 12 nodes, 03:00:00 fit its 10-24 node bin (...)``."""
    found = bin_of(entry, nodes)
    if found is not None:
        named = f"{found.name}, " if found.name else ""
        return (
            f"queue {name}: {nodes_text(nodes)}, {walltime_text} fit its {found.nodes_text} node bin "
            f"({named}max {found.max_walltime})"
        )
    low, high = entry.get("min_nodes", 1), entry.get("max_nodes")
    span = f"{low}-{high} nodes" if high is not None else f"{low} nodes or more"
    limit = f", max {entry['max_walltime']}" if entry.get("max_walltime") else ""
    return f"queue {name}: {nodes_text(nodes)}, {walltime_text} fit its limits ({span}{limit})"


def queues_taking(
    queues: dict[str, dict],
    default_queue: str,
    nodes: int,
    walltime: int | None,
    walltime_text: str,
    *,
    routed_only: bool = True,
) -> list[str]:
    """The queues that take the job, in :func:`routing_order`; with ``routed_only`` False, then the others."""
    order = routing_order(queues, default_queue)
    if not routed_only:
        order += [name for name in queues if name not in order]
    return [name for name in order if refusal(name, queues[name], nodes, walltime, walltime_text) is None]


def bin_problems(name: str, entry: dict) -> list[tuple[tuple, str]]:
    """What is wrong with a queue's ``walltime_by_nodes``, as (key path, message)."""
    items = entry.get("walltime_by_nodes")
    if not isinstance(items, list):
        return []
    problems: list[tuple[tuple, str]] = []
    key = ("queues", name, "walltime_by_nodes")
    low_limit, high_limit = entry.get("min_nodes", 1), entry.get("max_nodes")
    queue_max = None
    if entry.get("max_walltime") is not None:
        try:
            queue_max = parse_walltime("max_walltime", entry["max_walltime"])
        except ValidationError:
            pass  # reported on its own key
    seen: list[tuple[int, int, int]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        try:
            low, high = parse_node_range(item.get("nodes"))
        except ValueError as problem:
            problems.append((key + (i, "nodes"), str(problem)))
            continue
        if isinstance(low_limit, int) and low < low_limit or isinstance(high_limit, int) and high > high_limit:
            span = f"{low_limit}-{high_limit}" if high_limit is not None else f"{low_limit} or more"
            problems.append(
                (
                    key + (i, "nodes"),
                    f"{low}-{high} nodes leaves the queue's own node range ({span}: min_nodes, max_nodes)",
                )
            )
        for j, (other_low, other_high, _) in enumerate(seen):
            if low <= other_high and other_low <= high:
                problems.append(
                    (
                        key + (i, "nodes"),
                        f"{low}-{high} nodes overlaps bin {j} ({other_low}-{other_high}); "
                        "a node count falls in one bin only",
                    )
                )
        seen.append((low, high, i))
        try:
            seconds = parse_walltime("max_walltime", item.get("max_walltime"))
        except ValidationError as problem:
            problems.append((key + (i, "max_walltime"), str(problem).partition(": ")[2] or str(problem)))
            continue
        if queue_max is not None and seconds > queue_max:
            problems.append(
                (
                    key + (i, "max_walltime"),
                    f"{item['max_walltime']} is over the queue's max_walltime ({entry['max_walltime']})",
                )
            )
    return problems
