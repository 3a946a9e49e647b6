"""Every shipped site's queues at their edges: the largest job each queue states it takes (its
``max_nodes`` with the walltime of that size's bin) is accepted when the queue is named, and one
node or one minute more is refused, naming the field or the queue that can take it."""

from __future__ import annotations

import warnings

import pytest
from site_samples import SAMPLE_ACCOUNTS, SHIPPED

from gpujobqueue.errors import ValidationError
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.settings.walltimes import parse_walltime
from gpujobqueue.sites import load_site


def _walltime_text(seconds: int) -> str:
    # with its seconds: Clariden's debug gives a 4-node job 22 min 30 s (90 node-minutes)
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _largest_job(queue: dict) -> tuple[int, int] | None:
    """(nodes, walltime seconds) of the largest job the queue states it takes."""
    nodes, walltime = queue.get("max_nodes"), queue.get("max_walltime")
    if not nodes or not walltime:
        return None
    seconds = parse_walltime("max_walltime", walltime)
    for bin_ in queue.get("walltime_by_nodes") or ():
        low, _, high = str(bin_["nodes"]).partition("-")
        if int(low) <= nodes <= int(high or low):
            seconds = min(seconds, parse_walltime("max_walltime", bin_["max_walltime"]))
    return nodes, seconds


def _cases() -> list[tuple[str, str]]:
    cases = []
    for name in SHIPPED:
        site = load_site(name)
        if site.data.get("status") == "retired":
            continue
        for queue_name, queue in site.data["queues"].items():
            if queue.get("gpus", 1) and _largest_job(queue) is not None:
                cases.append((name, queue_name))
    return cases


CASES = _cases()


def _plan(site_name: str, queue: str, nodes: int, seconds: int):
    site = load_site(site_name)
    keywords = {"site": site, "queue": queue, "nodes": nodes, "walltime": _walltime_text(seconds), "python": "python3"}
    if site_name in SAMPLE_ACCOUNTS:
        keywords["account"] = SAMPLE_ACCOUNTS[site_name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts, retired machines
        plan = cluster_class(site.scheduler).parse_keywords(keywords)
        return plan.settings, plan.request, plan.launch


def test_there_are_edges_to_test():
    assert len(CASES) >= 40, CASES


@pytest.mark.parametrize("site, queue", CASES, ids=[f"{s}-{q}" for s, q in CASES])
def test_a_named_queue_takes_its_largest_job_and_refuses_one_node_or_one_minute_more(site, queue):
    nodes, seconds = _largest_job(load_site(site).queue(queue))
    _, request, _ = _plan(site, queue, nodes, seconds)
    assert request.nodes == nodes and request.walltime == seconds
    with pytest.raises(ValidationError) as past_nodes:
        _plan(site, queue, nodes + 1, min(seconds, 3600))
    assert past_nodes.value.field in ("nodes", "queue"), past_nodes.value
    with pytest.raises(ValidationError) as past_walltime:
        _plan(site, queue, nodes, seconds + 60)
    assert past_walltime.value.field in ("walltime", "queue"), past_walltime.value
