"""Job scripts from keywords alone, without starting a cluster (for ``gpujobqueue render``)."""

from __future__ import annotations

from typing import Any, Mapping

from .batch import BATCH_SYSTEMS, cluster_class
from .render import PLACEHOLDER_SCHEDULER, render_job_script
from .run import ClientRun
from .sites import load_site


def job_script_for(batch: str, keywords: Mapping[str, Any], *, name: str, scheduler: str = PLACEHOLDER_SCHEDULER, run: ClientRun | None = None) -> str:
    """Render the script a cluster of ``batch`` would submit for ``keywords``.

    Parameters
    ----------
    batch : str
        ``slurm``, ``pbs``, ``lsf``, ``sge`` or ``local``; or a site's name or YAML file,
        whose facts fill in the keywords not given.
    keywords : mapping
        Cluster keywords (as :class:`~gpujobqueue.cluster.GPUJobQueueCluster` takes them).
    name : str
        Worker name prefix.
    scheduler : str
        Scheduler address the workers connect to.
    run : ClientRun, optional
        A self-contained script instead: its own scheduler, the workers, then this client.

    Raises
    ------
    UnknownKeywordError, ValidationError, SiteConfigError
    """
    keywords = dict(keywords)
    if batch not in BATCH_SYSTEMS:  # a site's name or file
        site = load_site(batch)
        batch, keywords["site"] = site.scheduler, site
    cluster_cls = cluster_class(batch)
    _, request, launch = cluster_cls.parse_keywords(keywords)
    if scheduler == PLACEHOLDER_SCHEDULER and launch.protocol not in (None, "tcp"):
        scheduler = scheduler.replace("tcp://", f"{launch.protocol}://", 1)
    return render_job_script(batch, request, launch, name=name, scheduler=scheduler, directive_prefix=cluster_cls.job_cls.directive_prefix, run=run)
