"""``gpujobqueue check --submit-test``: the site's default job and one job per routing bin, rendered and
shown to the batch system itself, which says whether it would take each (its ``test_submit``); nothing
is submitted."""

from __future__ import annotations

import asyncio
import os
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

from ..batch import batch_system
from ..errors import GPUJobQueueError
from ..plan.scripts import job_script_for
from ..settings.limits import MAX_SUBMIT_TEST_JOBS
from ..sites import Site, SiteConfigError
from ..sites.routing import has_gpus, nodes_text, walltime_bins


@dataclass(frozen=True)
class TrialJob:
    """One job of the submit test: its label (the default job, or a routing bin's queue, nodes and walltime), the
    keywords its script is rendered with (besides the site), and the batch system's answer: ``accepted`` (None where
    it was not asked) and ``said``, its own words (or why nothing was asked); ``rendered`` is False where gpujobqueue
    refused the keywords, which ``said`` then gives."""

    label: str
    keywords: dict[str, Any]
    accepted: bool | None
    said: str
    rendered: bool = True


def trial_keywords(site: Site) -> list[tuple[str, dict[str, Any]]]:
    """The submit test's jobs: the site's default job (no keywords), then, for each queue with GPUs that the
    centre has not withdrawn, one job per walltime bin at the bin's edge (its most nodes for its longest
    walltime) or, for a queue without bins, its most nodes for its longest walltime: a limit the centre
    lowered since the site file was written is refused. A :class:`SiteConfigError` naming ``queues`` where they
    would make more than :data:`~gpujobqueue.settings.limits.MAX_SUBMIT_TEST_JOBS` jobs."""
    jobs: list[tuple[str, dict[str, Any]]] = [("default job", {})]
    for name, entry in site.open_queues.items():
        if not has_gpus(entry):
            continue
        bins = walltime_bins(entry)
        edges = [(b.high, b.max_walltime, b.name) for b in bins] or [
            (entry.get("max_nodes") or entry.get("min_nodes") or 1, entry.get("max_walltime"), None)
        ]
        for nodes, walltime, bin_name in edges:
            keywords = {"queue": name, "nodes": nodes, **({"walltime": str(walltime)} if walltime else {})}
            label = f"{name}, {nodes_text(nodes)}, {walltime or 'default walltime'}"
            jobs.append((label + (f" ({bin_name})" if bin_name else ""), keywords))
    if len(jobs) > MAX_SUBMIT_TEST_JOBS:  # each is a command run on the batch system's controller, in a row
        raise SiteConfigError(
            ", ".join(site.files),
            "queues",
            None,
            f"the submit test would show the batch system {len(jobs)} jobs (the default and one per queue and "
            f"walltime bin); it shows at most {MAX_SUBMIT_TEST_JOBS} (gpujobqueue.settings.limits)",
        )
    return jobs


def submit_tests(site: Site, account: str | None = None, does_not_answer: str | None = None) -> list[TrialJob]:
    """Render each of :func:`trial_keywords`' jobs for ``site`` (with ``account`` where given) and ask the
    site's batch system whether it would take it; nothing is submitted. Where it could not be asked (its error
    in ``does_not_answer``, or the first job's answer), the jobs are rendered but not asked."""
    system = batch_system(site.scheduler)
    extra = {"account": account} if account else {}
    try:
        jobs = trial_keywords(site)
    except SiteConfigError as error:  # too many: a failure of the test, that asks nothing
        return [TrialJob("the site's jobs", {}, None, str(error), rendered=False)]
    with tempfile.TemporaryDirectory(prefix="gpujobqueue-submit-test-") as folder:
        return asyncio.run(_ask_all(system, site, jobs, extra, folder, does_not_answer))


async def _ask_all(
    system: Any,
    site: Site,
    jobs: list[tuple[str, dict[str, Any]]],
    extra: dict[str, Any],
    folder: str,
    does_not_answer: str | None,
) -> list[TrialJob]:
    trials = []
    unasked = f"{system.name} does not answer: {does_not_answer}" if does_not_answer else None
    for number, (label, keywords) in enumerate(jobs):
        keywords = {**keywords, **extra}
        try:
            with warnings.catch_warnings():  # the site's unconfirmed facts: said once by `check`'s site lines
                warnings.simplefilter("ignore")
                script = job_script_for(site.scheduler, {**keywords, "site": site}, name=f"submit-test-{number}")
        except GPUJobQueueError as error:
            trials.append(TrialJob(label, keywords, None, str(error), rendered=False))
            continue
        if unasked:
            trials.append(TrialJob(label, keywords, None, unasked))
            continue
        path = os.path.join(folder, f"job-{number}.sh")
        with open(path, "w", encoding="utf-8") as file:
            file.write(script)
        answer = await system.test_submit(path)
        trials.append(TrialJob(label, keywords, answer.accepted, answer.said))
        if answer.accepted is None and system.test_submit_options is not None:  # no answer: the rest not asked
            unasked = answer.said
    return trials
