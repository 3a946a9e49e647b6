"""The memory a job may use on a node, as the centres state it (issue 33, sites re-read of 2026-11-27): the
usable memory, not what is installed, so that a request a node cannot hold is refused before it waits in a queue.

Limits written out by hand from the centres' pages, not computed from the site files; a memory keyword is read in
powers of 1000 (as dask reads it) and a site's node memory in powers of 1024."""

from __future__ import annotations

import warnings

import pytest

from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.sites import SiteConfigError, load_site

ACCOUNT = "abc123"


def parse(site_name: str, **keywords):
    site = load_site(site_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unconfirmed facts
        plan = cluster_class(site.scheduler).parse_keywords({"site": site, "account": ACCOUNT, **keywords})
        return plan.settings, plan.request, plan.launch


@pytest.mark.parametrize(
    ("site", "queue", "fits", "too_much", "limit"),
    [
        # ALCF, Aurora System Updates, entry of 2025-06-13 (argonne-lcf/user-guides docs/aurora/system-updates.md
        # @ 9a947b74): from June 23, 2025 "approximately 960GB between DDR5 + HBM" per node (1 TiB DDR5 installed)
        ("aurora", None, "1030GB", "1050GB", "960GB"),
        # NCAR, "Available memory by system" (NCAR/HPC-Docs docs/pbs/checking-memory-use/index.md @ cf442d5d):
        # four-way V100 750541 MB usable (768 GB installed), four-way A100 1008999 MB (992 GB installed)
        ("casper", None, "785GB", "790GB", "732GB"),
        ("casper", "casper-a100-80gb", "1057GB", "1060GB", "985GB"),
        # the same page: Derecho's GPU nodes 498907 MB (~487.21 GB) usable of 512 GB
        ("derecho", None, "522GB", "525GB", "487GB"),
    ],
)
def test_a_memory_request_past_the_usable_memory_of_a_node_is_refused(site, queue, fits, too_much, limit):
    queue_keyword = {"queue": queue} if queue else {}
    parse(site, memory=fits, **queue_keyword)
    with pytest.raises(SiteConfigError, match=f"nodes have {limit}") as error:
        parse(site, memory=too_much, **queue_keyword)
    assert error.value.field == "memory"
