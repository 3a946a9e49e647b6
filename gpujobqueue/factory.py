"""``GPUCluster()``: the cluster class of a site's batch system, or of the batch system named."""

from __future__ import annotations

import logging
import socket
import warnings
from typing import TYPE_CHECKING, Any

from . import config, sites
from .batch import cluster_class
from .errors import ValidationError

if TYPE_CHECKING:
    from .cluster import GPUJobQueueCluster

logger = logging.getLogger("gpujobqueue.cluster")


class LocalFallbackWarning(UserWarning):
    """``GPUCluster()`` found no site and runs its jobs on this machine (the local batch system)."""


def GPUCluster(batch: str | None = None, *, site: Any = None, **kwargs: Any) -> "GPUJobQueueCluster":
    """A GPU cluster on a site's batch system, or on the named batch system.

    Parameters
    ----------
    batch : {"slurm", "pbs", "lsf", "sge", "local"}, optional
        The batch system. Without it and without ``site``: the site ``gpujobqueue.site``
        of dask config names, else the site detected from the host name (the choice is
        logged); where no site matches, ``gpujobqueue.batch`` from dask config (``local``, which
        warns: :class:`LocalFallbackWarning`, naming how to pick a site).
    site : str or Site, optional
        A site config by name (``"perlmutter"``) or path; its scheduler picks the class.
    **kwargs
        The cluster's keywords (see :class:`GPUJobQueueCluster`).

    Returns
    -------
    GPUJobQueueCluster
        A :class:`SLURMGPUCluster`, :class:`PBSGPUCluster`, :class:`LSFGPUCluster`,
        :class:`SGEGPUCluster` or :class:`LocalGPUCluster`.
    """
    site, how = sites.choose_site(site, batch)
    if how == sites.DETECTED:
        logger.warning(
            "gpujobqueue: this host matches site %r (%s); pass site= or batch= to choose otherwise",
            site.name,
            site.files[-1],
        )
    if site is not None:
        if batch is not None and batch != site.scheduler:
            raise ValidationError(
                "batch", f"batch={batch!r} but site {site.name} runs {site.scheduler} ({site.files[0]})"
            )
        return cluster_class(site.scheduler)(site=site, **kwargs)
    chosen = batch or config.default_batch()
    if batch is None and getattr(cluster_class(chosen).job_cls, "runs_jobs_here", False):
        # Without this a user on a login node whose site was not recognised would run workers there, silently.
        warnings.warn(
            f"GPUCluster: {how} ({socket.gethostname()}), so the jobs run on this machine, with the local batch "
            "system; to use a site's batch system pass site='perlmutter' (or a YAML file), or set it once in "
            "dask config: gpujobqueue.site in ~/.config/dask/gpujobqueue.yaml or DASK_GPUJOBQUEUE__SITE=perlmutter "
            "(`gpujobqueue sites` lists them); pass batch='local' to say that this is meant",
            LocalFallbackWarning,
            stacklevel=2,
        )
    return cluster_class(chosen)(**kwargs)
