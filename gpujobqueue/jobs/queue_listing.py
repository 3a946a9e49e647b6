"""The helpers with which each batch system reads its queue listing (``sinfo``, ``qstat -Qf``, ``bqueues -l``,
``qconf -sq``) into :class:`ListedQueue` limits: the output and queue count bounded, each field checked, and an
output that is not a listing refused with a :class:`ListingError` naming the line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ..errors import ValidationError
from ..settings.limits import MAX_LISTED_QUEUES, MAX_NODES, MAX_QUEUE_LISTING_BYTES, MAX_WALLTIME_SECONDS
from ..settings.validation import parse_count
from ..settings.walltimes import parse_walltime

_QUEUE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@-]{0,127}")
# What a listing writes for "no limit".
UNLIMITED = frozenset({"infinite", "unlimited", "infinity", "none", "-", "n/a"})


class ListingError(ValidationError):
    """A queue listing that cannot be read: its ``field`` names the command and line."""


@dataclass(frozen=True)
class ListedQueue:
    """One queue as its batch system lists it; None where the listing states no such limit."""

    name: str
    max_nodes: int | None = None  # a limit on one job's nodes (SLURM's MaxNodes, PBS's resources_max.nodect)
    nodes: int | None = None  # the queue's nodes, which bound a job without being a limit (a host list)
    max_walltime: int | None = None  # seconds
    gpus_per_node: int | None = None  # the largest where its nodes differ, gpus_text saying so
    gpus_text: str | None = None
    job_gpus: int | None = None  # a limit on one job's GPUs (PBS's resources_max.ngpus)


def checked_size(command: str, text: str) -> str:
    """``text`` where it is no longer than a listing may be; a ListingError otherwise."""
    if len(text) > MAX_QUEUE_LISTING_BYTES:
        raise ListingError(command, f"its output is over {MAX_QUEUE_LISTING_BYTES >> 20} MiB; not read")
    return text


def queue_name(where: str, text: str) -> str:
    """A queue's name as listed: a word of queue-name characters."""
    if not _QUEUE_NAME.fullmatch(text):
        raise ListingError(where, f"{text[:80]!r} is not a queue name")
    return text


def listed_count(where: str, text: str, maximum: int = MAX_NODES) -> int | None:
    """A whole number from 0 to ``maximum``, or None for a listing's "no limit" words."""
    if text.strip().lower() in UNLIMITED:
        return None
    try:
        return parse_count(where, text.strip(), maximum=maximum)
    except ValidationError as error:
        raise ListingError(where, error.message) from None


def listed_walltime(where: str, text: str, number_unit: int = 1) -> int | None:
    """A walltime limit in seconds (a bare number of ``number_unit`` seconds), or None for "no limit"."""
    value = text.strip()
    if value.lower() in UNLIMITED:
        return None
    try:
        return parse_walltime(where, value, number_unit)
    except ValidationError as error:
        if "longer than" in error.message:  # past what gpujobqueue asks for: no limit to it
            return MAX_WALLTIME_SECONDS
        raise ListingError(where, error.message) from None


def listed_queues(command: str, queues: dict[str, ListedQueue]) -> dict[str, ListedQueue]:
    """``queues`` where there are some and no more than :data:`MAX_LISTED_QUEUES`."""
    if not queues:
        raise ListingError(command, "it lists no queue")
    if len(queues) > MAX_LISTED_QUEUES:
        raise ListingError(command, f"it lists more than {MAX_LISTED_QUEUES} queues; not read")
    return queues


def blocks(command: str, text: str, opening: re.Pattern) -> Iterator[tuple[str, int, list[str]]]:
    """Each block of a listing opened by a line ``opening`` matches (group 1: the queue): name, first line, lines;
    lines before the first block must be blank."""
    name, first, lines = None, 0, []
    for number, line in enumerate(checked_size(command, text).splitlines(), 1):
        found = opening.match(line)
        if found:
            if name is not None:
                yield name, first, lines
            name, first, lines = queue_name(f"{command} line {number}", found.group(1).strip()), number, []
        elif name is not None:
            lines.append(line)
        elif line.strip():
            raise ListingError(f"{command} line {number}", f"{line.strip()[:80]!r} before the first queue")
    if name is not None:
        yield name, first, lines
