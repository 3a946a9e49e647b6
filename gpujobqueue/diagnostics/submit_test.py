"""``gpujobqueue check --submit-test``: the site's jobs at its limits (:func:`within_trials`) and one step past
them (:func:`past_trials`), rendered and shown to the batch system's ``test_submit``; nothing is submitted."""

from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

from ..batch import batch_system
from ..errors import GPUJobQueueError
from ..plan.scripts import job_script_for
from ..settings.limits import MAX_GPUS_PER_NODE, MAX_NODES, MAX_SUBMIT_TEST_JOBS, MAX_WALLTIME_SECONDS
from ..settings.walltimes import format_hours_walltime
from ..sites import Site, SiteConfigError, node_memory_bytes
from ..sites.errors import dotted_key
from ..sites.routing import has_gpus, nodes_text, walltime_bins
from .queue_check import Limit, file_limits

WALLTIME_STEP = 60  # a minute past a walltime limit: the unit SLURM's and LSF's limits count in
# The walltime of the jobs past another limit (or the queue's shortest limit), so that only the limit tested is passed.
SHORT_WALLTIME = 3600


@dataclass(frozen=True)
class TrialJob:
    """A :class:`Trial` and the batch system's answer: ``accepted`` (None where it was not asked) and ``said``, its
    words (or why nothing was asked); ``rendered`` False where gpujobqueue refused the keywords (``said`` says why)."""

    label: str
    keywords: dict[str, Any]
    accepted: bool | None
    said: str
    rendered: bool = True
    limits: str | None = None
    past: str | None = None


@dataclass(frozen=True)
class Trial:
    """A job to show the batch system: its label, keywords, the site it is rendered with (past a limit, a copy
    without that limit), the file's limits it sits at and the one it steps past (``key = value at file:line``)."""

    label: str
    keywords: dict[str, Any]
    site: Site
    limits: str | None = None
    past: str | None = None
    fallback: dict[str, Any] | None = None  # the keywords to render with where gpujobqueue refuses ``keywords``


def within_trials(site: Site) -> list[Trial]:
    """The site's default job, then, for each open queue with GPUs, a job at each walltime bin's edge (its most
    nodes for its longest walltime), or at the queue's most nodes and longest walltime."""
    jobs = [Trial("default job", {}, site)]
    for name, entry in site.open_queues.items():
        if not has_gpus(entry):
            continue
        bins, key = walltime_bins(entry), ("queues", name)
        edges = [(b.high, b.max_walltime, b.name, f"{b.nodes_text} nodes for {b.max_walltime}") for b in bins] or [
            (entry.get("max_nodes") or entry.get("min_nodes") or 1, entry.get("max_walltime"), None, None)
        ]
        for index, (nodes, walltime, bin_name, bin_text) in enumerate(edges):
            keywords = {"queue": name, "nodes": nodes, **({"walltime": str(walltime)} if walltime else {})}
            label = f"{name}, {nodes_text(nodes)}, {walltime or 'default walltime'}"
            at = [(key + ("walltime_by_nodes", index), bin_text)] if bins else []
            at += [(key + (n,), entry[n]) for n in ("max_nodes", "max_walltime") if not bins and n in entry]
            limits = ", ".join(f"{dotted_key(k)} = {v} at {site.where(*k)}" for k, v in at)
            jobs.append(Trial(label + (f" ({bin_name})" if bin_name else ""), keywords, site, limits or None))
    return jobs


def past_trials(site: Site) -> list[Trial]:
    """For each open queue with GPUs, a job one step past each limit the file states (a node, a minute, a GPU
    where the GPU request writes a count), else at the least nodes and :data:`SHORT_WALLTIME`."""
    system, style = batch_system(site.scheduler), site.data["gpu_request"].get("style")
    counted = style not in (*system.whole_node_styles, "none")
    trials = []
    for name, entry in site.open_queues.items():
        if not has_gpus(entry):
            continue
        limits = file_limits(site, name)
        short = {"walltime": format_hours_walltime(min(limits.shortest, SHORT_WALLTIME))} if limits.shortest else {}
        base = {"queue": name, "nodes": limits.min_nodes, **short}
        if limits.max_nodes and limits.max_nodes.value < MAX_NODES:
            nodes = limits.max_nodes.value + 1
            lifted = _lifted(site, name, max_nodes=nodes, walltime_by_nodes=None)
            trials.append(_past(site, {**base, "nodes": nodes}, lifted, limits.max_nodes))
        for low, limit in limits.walltimes:
            if limit.value + WALLTIME_STEP <= MAX_WALLTIME_SECONDS:
                longer = format_hours_walltime(limit.value + WALLTIME_STEP)
                lifted = _lifted(site, name, max_walltime=longer, walltime_by_nodes=None)
                trials.append(_past(site, {**base, "nodes": low, "walltime": longer}, lifted, limit))
        if counted and limits.gpus and limits.gpus.value < MAX_GPUS_PER_NODE:
            trials.append(_gpu_past(site, name, limits.gpus, base))
    return trials


def _past(site: Site, keywords: dict[str, Any], lifted: Site, limit: Limit, gpus: str = "") -> Trial:
    short = dotted_key(limit.key[2:] if limit.key[0] == "queues" else limit.key)
    walltime = keywords.get("walltime", "default walltime")
    label = f"{keywords['queue']}, {nodes_text(keywords['nodes'])}, {gpus}{walltime}, past {short}"
    return Trial(label, keywords, lifted, past=f"{dotted_key(limit.key)} = {limit.text} at {site.where(*limit.key)}")


def _gpu_past(site: Site, queue: str, limit: Limit, base: dict[str, Any]) -> Trial:
    """A job of a GPU more a node than ``limit`` and the node's cores (else, as Grid Engine's GPUs counted per slot
    need, a core a GPU); the site copy gives its nodes the GPU and the memory its per-GPU amounts take."""
    gpus, node = limit.value + 1, site.node(queue)
    facts = {**site.queue(queue).get("node", {}), "cpus": max(node["cpus"], gpus)}
    if node.get("memory") is not None:
        facts["memory"] = f"{node_memory_bytes(node['memory']) * gpus // limit.value}B"
    keywords = {**base, "gpus_per_node": gpus, "cores": node["cpus"] * base["nodes"]}
    trial = _past(site, {**keywords, "nthreads": max(1, node["cpus"] // gpus)}, site, limit, f"{gpus} GPUs a node, ")
    fallback = {**keywords, "cores": gpus * base["nodes"]}
    return dataclasses.replace(trial, site=_lifted(site, queue, gpus_per_node=gpus, node=facts), fallback=fallback)


def _lifted(site: Site, queue: str, **changes: Any) -> Site:
    """A copy of ``site`` whose ``queue`` has ``changes`` (None: the key dropped)."""
    data = copy.deepcopy(site.data)
    entry = data["queues"][queue]
    for key, value in changes.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    return dataclasses.replace(site, data=data)


def submit_tests(site: Site, account: str | None = None, does_not_answer: str | None = None) -> list[TrialJob]:
    """Each job of the submit test (past the limits only where the batch system has a test mode) rendered, with
    ``account``, and asked; once it could not be asked (``does_not_answer``, or a job's answer), rendered alone."""
    system = batch_system(site.scheduler)
    extra = {"account": account} if account else {}
    jobs = within_trials(site) + (past_trials(site) if system.test_submit_options is not None else [])
    if len(jobs) > MAX_SUBMIT_TEST_JOBS:  # each is a command run on the batch system's controller, in a row
        error = SiteConfigError(
            ", ".join(site.files),
            "queues",
            None,
            f"the submit test would show the batch system {len(jobs)} jobs (the default, one per queue and walltime "
            f"bin, and one past each limit); it shows at most {MAX_SUBMIT_TEST_JOBS} (gpujobqueue.settings.limits)",
        )
        return [TrialJob("the site's jobs", {}, None, str(error), rendered=False)]
    shown = []
    for number, job in enumerate(jobs):
        keywords = {**job.keywords, **extra}
        try:
            keywords, script = _rendered(job, keywords, {**(job.fallback or {}), **extra}, f"trial-{number}")
        except GPUJobQueueError as error:
            shown.append((TrialJob(job.label, keywords, None, str(error), False, job.limits, job.past), None))
        else:
            shown.append((TrialJob(job.label, keywords, None, "", limits=job.limits, past=job.past), script))
    unasked = f"{system.name} does not answer: {does_not_answer}" if does_not_answer else None
    answers = system.test_scripts([script for _, script in shown], unasked)
    return [
        trial if answer is None else dataclasses.replace(trial, accepted=answer.accepted, said=answer.said)
        for (trial, _), answer in zip(shown, answers)
    ]


def _rendered(job: Trial, keywords: dict[str, Any], fallback: dict[str, Any], name: str) -> tuple[dict, str]:
    """The keywords a job is rendered with and its script: its own, else its fallback's where it has one."""
    with warnings.catch_warnings():  # the site's unconfirmed facts: said once by `check`'s site lines
        warnings.simplefilter("ignore")
        try:
            return keywords, job_script_for(job.site.scheduler, {**keywords, "site": job.site}, name=name)
        except GPUJobQueueError:
            if job.fallback is None:
                raise
        return fallback, job_script_for(job.site.scheduler, {**fallback, "site": job.site}, name=name)
