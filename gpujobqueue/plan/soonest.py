"""When a job would start in each of a site's queues that take it, as the batch system estimates it now without
submitting anything (SLURM's ``sbatch --test-only``), and ``queue="soonest"``: the site's routed queue where it
would start first. Each queue is asked with the script a cluster naming that queue would submit, so a queue that
gpujobqueue or the batch system refuses is never chosen."""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Callable

from ..batch import batch_system
from ..errors import GPUJobQueueError
from ..sites import Site
from ..sites.routing import has_gpus, routing_order

#: The queue keyword's value that asks for the queue where the job would start first.
SOONEST = "soonest"


@dataclasses.dataclass(frozen=True)
class QueueStart:
    """One queue's answer: whether the site routes jobs there (else by request only), whether the batch system
    would take the job (None where it could not be asked, or gpujobqueue refused it: ``said`` says which), when it
    would start (seconds since the epoch; None where it gave no time) and its own words."""

    queue: str
    routed: bool
    accepted: bool | None
    start: float | None
    said: str


def queue_starts(site: Site, script_of: Callable[[str], str]) -> list[QueueStart]:
    """Each of ``site``'s open queues with GPUs, in its routing order (the by-request ones last): the job's script
    in that queue (``script_of(queue)``, as a cluster naming the queue would submit it), shown to the batch system,
    which says whether and when it would start it. Queues whose script gpujobqueue refuses to write (the job's
    size, walltime, the queue's limits: a :class:`~gpujobqueue.errors.GPUJobQueueError`) are left out."""
    system = batch_system(site.scheduler)
    routed = routing_order(site.open_queues, site.data["default_queue"])
    scripts = {}
    for name in routed + [name for name in site.open_queues if name not in routed]:
        if has_gpus(site.open_queues[name]):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scripts[name] = script_of(name)
            except GPUJobQueueError:
                continue  # a job this queue does not take: a fixed choice of it would be refused too
    answers = system.test_scripts(list(scripts.values()))
    return [
        QueueStart(
            name,
            name in routed,
            answer.accepted,
            system.trial_start(answer.said) if answer.accepted else None,
            answer.said,
        )
        for name, answer in zip(scripts, answers)
    ]


def soonest(starts: list[QueueStart]) -> QueueStart | None:
    """The routed queue that would take the job and start it first (a queue with a time before one without;
    the routing order between equals), or None where no routed queue would take it."""
    taking = [start for start in starts if start.routed and start.accepted]
    if not taking:
        return None
    return min(taking, key=lambda start: (start.start is None, start.start or 0.0))


def start_text(start: QueueStart, now: float | None = None) -> str:
    """``expected 14:32, in 11 min``; or why there is no time (refused, not asked, no estimate)."""
    from ..jobs.job_status import expected_words

    if start.accepted is False:
        return "refused"
    if start.accepted is None:
        return "not asked"
    return expected_words(start.start, time.time() if now is None else now) if start.start else "no estimate"
