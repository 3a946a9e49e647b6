"""``check --submit-test``: the site file's limits of a queue (:func:`file_limits`) and the batch system's listing
of its queues compared with them (:func:`compare_queues`), each difference with the file's line."""

from __future__ import annotations

import asyncio
import os
from dataclasses import asdict, dataclass
from typing import Any

from ..batch import batch_system
from ..jobs.job_commands import run_for_at_most
from ..jobs.queue_listing import ListedQueue, ListingError, checked_size
from ..settings.intervals import query_timeout
from ..settings.limits import MAX_QUEUE_LISTING_BYTES
from ..settings.walltimes import format_hours_walltime, parse_walltime
from ..sites import Site
from ..sites.errors import dotted_key
from ..sites.routing import has_gpus, walltime_bins

STRICTER = "the machine is stricter than the file says"
LOOSER = "the machine is looser than the file says"


@dataclass(frozen=True)
class Limit:
    """One limit a site file states for a queue: its value (seconds for a walltime), key path and text."""

    value: int
    key: tuple
    text: str


@dataclass(frozen=True)
class FileLimits:
    """A queue's least nodes, most nodes (``max_nodes``, or its top bin's), GPUs per node (None: no GPUs), and each
    walltime limit (its bins', else ``max_walltime``) with the least nodes it holds for."""

    min_nodes: int
    max_nodes: Limit | None
    gpus: Limit | None
    walltimes: tuple[tuple[int, Limit], ...]

    @property
    def max_walltime(self) -> Limit | None:
        return max((limit for _, limit in self.walltimes), key=lambda limit: limit.value, default=None)

    @property
    def shortest(self) -> int | None:
        """The shortest walltime limit in seconds: a job that asks for it tests another limit alone."""
        return min((limit.value for _, limit in self.walltimes), default=None)


def file_limits(site: Site, queue: str) -> FileLimits:
    """The limits ``site``'s file states for ``queue``."""
    entry, key = site.queue(queue), ("queues", queue)
    bins, least = walltime_bins(entry), entry.get("min_nodes") or 1
    top = max(bins, key=lambda b: b.high, default=None)
    nodes = (
        Limit(entry["max_nodes"], key + ("max_nodes",), str(entry["max_nodes"]))
        if entry.get("max_nodes") is not None
        else (Limit(top.high, key + ("walltime_by_nodes",), f"{top.nodes_text} nodes") if top else None)
    )
    keys = [key + ("walltime_by_nodes", i, "max_walltime") for i in range(len(bins))]
    times = [(b.low, Limit(b.seconds, k, b.max_walltime)) for b, k in zip(bins, keys)]
    if not bins and entry.get("max_walltime") is not None:
        seconds = parse_walltime("max_walltime", entry["max_walltime"])
        times.append((least, Limit(seconds, key + ("max_walltime",), str(entry["max_walltime"]))))
    gpus_key = key + ("gpus_per_node",) if "gpus_per_node" in entry else site.key_of(queue, "node", "gpus")
    count = entry.get("gpus_per_node", site.node(queue)["gpus"])
    return FileLimits(least, nodes, Limit(count, gpus_key, str(count)) if has_gpus(entry) else None, tuple(times))


def compare_queues(site: Site, does_not_answer: str | None = None) -> dict[str, Any]:
    """The batch system's listing against ``site``'s queues: ``{"command", "error", "lines", "compared"}``,
    ``lines`` each a :class:`Difference` as a dict; ``error`` why there is no listing."""
    system = batch_system(site.scheduler)
    command = system.queue_listing(site.data)
    result: dict[str, Any] = {"command": " ".join(command or ()), "error": None, "lines": [], "compared": 0}
    if command is None:
        result["error"] = f"{system.name} has no queue listing gpujobqueue reads"
    elif does_not_answer:
        result["error"] = f"{system.name} does not answer: {does_not_answer}"
    else:
        listed, result["error"] = _listing(system, command)
        named = {name: entry for name, entry in site.open_queues.items() if entry.get("partition", name)}
        if listed is not None:
            lines = [line for name, entry in named.items() for line in _differences(site, name, entry, listed)]
            result.update(lines=[asdict(line) for line in lines], compared=len(named))
    return result


def _listing(system: Any, command: list[str]) -> tuple[dict[str, ListedQueue] | None, str | None]:
    """The listing, or None and why not."""
    name = os.path.basename(command[0])
    try:
        environment, most = system.query_environment, MAX_QUEUE_LISTING_BYTES
        done = asyncio.run(run_for_at_most(command, query_timeout(), environment, most_bytes=most))
    except OSError as error:
        return None, f"{name} cannot run: {error.strerror or error}"
    if done is None:
        return None, f"{name} did not answer within {query_timeout():g} s"
    code, out, err = done
    shown = " ".join(command)
    try:
        if code != 0 and len(out) <= MAX_QUEUE_LISTING_BYTES:  # stopped past the bound: that is the error
            last = [line.strip() for line in (err or out).splitlines() if line.strip()][-1:] or ["(no output)"]
            return None, f"{shown} exited with status {code}: {last[0][:300]}"
        return system.parse_queue_listing(checked_size(shown, out)), None
    except ListingError as error:
        return None, f"{shown} printed what gpujobqueue does not read as a listing: {error}"


@dataclass(frozen=True)
class Difference:
    """A queue's difference with the file: ``fail`` (missing, or stricter), ``warn`` (looser) or ``info`` (a limit
    the file does not state), and the file's line."""

    status: str
    queue: str
    detail: str
    where: str


def _differences(site: Site, name: str, entry: dict, listed: dict[str, ListedQueue]) -> list[Difference]:
    partition = entry.get("partition", name)
    found, shown = listed.get(partition), name if partition == name else f"{name} ({partition})"
    if found is None:
        return [Difference("fail", name, f"{shown}: not in the listing", site.where("queues", name))]
    limits = file_limits(site, name)
    lowered = bool(entry.get("qos"))  # a QOS may lower the queue's limits: only a file above them is wrong
    lines = []
    if found.max_nodes is not None or found.nodes is not None:  # hosts alone bound a job, limit none
        most, limit = (found.max_nodes, "a job") if found.max_nodes is not None else (found.nodes, "in the queue")
        words = f"{shown}: listed with {most} node(s) {limit}"
        lines += _compared(site, name, limits.max_nodes, most, words, lowered or found.max_nodes is None)
    if found.max_walltime is not None:
        words = f"{shown}: listed with a walltime limit of {format_hours_walltime(found.max_walltime)}"
        lines += _compared(site, name, limits.max_walltime, found.max_walltime, words, lowered)
    if limits.gpus is not None and found.gpus_per_node is not None:
        words = f"{shown}: listed with {found.gpus_text or found.gpus_per_node} GPUs a node"
        lines += _compared(site, name, limits.gpus, found.gpus_per_node, words, False)
    job_gpus = (
        limits.gpus.value * (limits.max_nodes.value if limits.max_nodes else limits.min_nodes) if limits.gpus else 0
    )
    if found.job_gpus is not None and job_gpus > found.job_gpus:
        words = f"{shown}: listed with at most {found.job_gpus} GPUs a job, the file's largest job asks {job_gpus}"
        lines.append(Difference("fail", name, f"{words}: {STRICTER}", site.where(*limits.gpus.key)))
    return lines


def _compared(
    site: Site, name: str, limit: Limit | None, listed: int, words: str, bound_only: bool
) -> list[Difference]:
    """How the file's ``limit`` differs from the listed value: above it (stricter), below it (looser, unless the
    listed value only ``bound_only`` bounds the limit), or not stated."""
    if limit is None:
        return [Difference("info", name, f"{words}; the file states no such limit", site.where("queues", name))]
    said = f"the file's {dotted_key(limit.key)} = {limit.text}"
    if limit.value > listed:
        return [Difference("fail", name, f"{words}, {said}: {STRICTER}", site.where(*limit.key))]
    if limit.value < listed and not bound_only:
        return [Difference("warn", name, f"{words}, {said}: {LOOSER}", site.where(*limit.key))]
    return []
