"""Which site queue a job goes to: the one named, or the one the site routes the job's nodes and
walltime to. A pure function of the site's facts and the job's request: it reads no config and
starts nothing."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..sites import Site, check_queue_takes, route_queue


@dataclasses.dataclass(frozen=True)
class Route:
    """Where a site sends a job.

    Parameters
    ----------
    queue : str or None
        The site's name of the queue (None without a site, or where the site's default queue is
        taken without a word).
    why : str or None
        Why the site chose it (one line, as the script's comment says it); None where the user named it.
    """

    queue: str | None
    why: str | None = None


def route(site: Site | None, named: str | None, request: Any) -> Route:
    """The queue of a job of ``request`` (its nodes and walltime) on ``site``.

    Parameters
    ----------
    site : Site or None
        The site; without one, nothing is routed.
    named : str or None
        The queue the user named (keyword or config): taken where it takes the job.
    request : JobRequest
        The job's request as the site's default queue resolves it.

    Raises
    ------
    QueueRefusedError
        The named queue does not take the job, or no queue the site routes to does.
    """
    if site is None:
        return Route(None)
    if named is not None:
        check_queue_takes(site, named, request)
        return Route(named)
    return Route(*route_queue(site, request))
