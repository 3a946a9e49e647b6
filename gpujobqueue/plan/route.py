"""Which site queue a job goes to: the one named, or the one the site routes the job's nodes and
walltime to. A pure function of the site's facts and the job's request: it reads no config and
starts nothing."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..sites import Site, check_queue_takes, route_queue


@dataclasses.dataclass(frozen=True)
class Route:
    """Where a site sends a job: the site's name of the ``queue`` (None without a site, or where the site's
    default queue is taken without a word), and ``why`` it chose it (one line; None where the user named it)."""

    queue: str | None
    why: str | None = None


def route(site: Site | None, named: str | None, request: Any) -> Route:
    """The queue of a job of ``request`` (its nodes and walltime) on ``site`` (None: nothing is routed): the one
    ``named`` (keyword or config), else the one the site routes it to; a :class:`QueueRefusedError` where the
    named queue, or every queue the site routes to, does not take the job."""
    if site is None:
        return Route(None)
    if named is not None:
        check_queue_takes(site, named, request)
        return Route(named)
    return Route(*route_queue(site, request))
