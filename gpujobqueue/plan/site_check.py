"""Checking a whole site as ``gpujobqueue check`` does: its files, then each GPU queue's settings
planned as a cluster plans them (here, beside the plan, which reads the sites)."""

from __future__ import annotations

import os
import warnings

from ..batch import batch_system
from ..errors import GPUJobQueueError
from ..machine.install import WorkerPythonWarning
from ..sites import routing
from ..sites.errors import SiteConfigError
from ..sites.registry import load_site
from ..sites.use_warnings import RetiredSiteWarning
from .plan import make_plan


def site_problems(target: "str | os.PathLike[str]") -> list[str]:
    """What is wrong with a site (a name or a file), each as ``file:line: key: problem``; empty if nothing.

    Beyond the file's own checks, each of its queues' settings is planned as a cluster plans them
    (:func:`~gpujobqueue.plan.make_plan`), so a site that passes here is not refused when used.
    """
    try:
        site = load_site(target)
    except SiteConfigError as error:
        return [str(problem) for problem in getattr(error, "errors", [error])]
    problems = []
    for queue, entry in site.open_queues.items():
        if not routing.has_gpus(entry):
            continue  # no GPU job goes there
        # A job the queue takes: as many nodes as it needs at least (its first bin's), and its longest walltime there.
        bins = sorted(routing.walltime_bins(entry), key=lambda b: b.low)
        nodes, walltime = (
            (bins[0].low, bins[0].max_walltime) if bins else (entry.get("min_nodes"), entry.get("max_walltime"))
        )
        keywords = {"site": site, "queue": queue, "nodes": nodes, "walltime": walltime}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RetiredSiteWarning)  # checking a retired site's file is not using it
                # This machine's python is not the site file's problem (`gpujobqueue check` judges it once).
                warnings.simplefilter("ignore", WorkerPythonWarning)
                make_plan(batch_system(site.scheduler), keywords)
        except SiteConfigError as error:
            if not error.key.startswith("account."):  # the account is the user's to give
                problems.append(str(error))
        except GPUJobQueueError as error:
            problems.append(f"{site.files[-1]}: queues.{queue}: {error}")
    return problems
