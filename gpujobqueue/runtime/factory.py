"""The cluster classes: each batch system's (``SLURMGPUCluster`` ...), and ``GPUCluster()``, a site's."""

from __future__ import annotations

import logging
import socket
import warnings
from typing import Any

from .. import sites
from ..batch import batch_system
from ..batch.base import BatchSystem
from ..batch.local import Local
from ..batch.lsf import LSF
from ..batch.pbs import PBS
from ..batch.sge import SGE
from ..batch.slurm import SLURM
from ..errors import ValidationError
from ..settings import config
from .cluster import GPUJobQueueCluster
from .job import GPUJob

logger = logging.getLogger("gpujobqueue.cluster")
_BOUND: dict[type[BatchSystem], type[GPUJobQueueCluster]] = {}


def bound_cluster(system: type[BatchSystem]) -> type[GPUJobQueueCluster]:
    """The cluster class of ``system`` (``SLURMGPUCluster``), made once, documented by its ``cluster_doc``."""
    if system not in _BOUND:
        _BOUND[system] = type(
            system.class_name("GPUCluster"),
            (GPUJobQueueCluster,),
            {
                "batch_system": system,
                "job_cls": GPUJob.bound_to(system),
                "__doc__": system.cluster_doc or f"A Dask cluster of GPU workers submitted to {system.name}.\n    ",
                "__module__": system.__module__,
            },
        )
    return _BOUND[system]


SLURMGPUCluster = bound_cluster(SLURM)
PBSGPUCluster = bound_cluster(PBS)
LSFGPUCluster = bound_cluster(LSF)
SGEGPUCluster = bound_cluster(SGE)
LocalGPUCluster = bound_cluster(Local)


def cluster_class(batch: str) -> type[GPUJobQueueCluster]:
    """The cluster class of a registered batch system's name (``slurm``); a ValidationError for another."""
    return bound_cluster(batch_system(batch))


class LocalFallbackWarning(UserWarning):
    """``GPUCluster()`` found no site and runs its jobs on this machine (the local batch system)."""


def GPUCluster(batch: str | None = None, *, site: Any = None, **kwargs: Any) -> GPUJobQueueCluster:
    """A GPU cluster on a site's batch system, or on the named batch system.

    Parameters
    ----------
    batch : str, optional
        The batch system (``slurm``, ``pbs``, ``lsf``, ``sge``, ``local``, or another registered one).
        Without it and without ``site``: the site ``gpujobqueue.site`` of dask config names,
        else the site detected from the host name (the choice is logged); where no site matches,
        ``gpujobqueue.batch`` from dask config (``local``, which warns: :class:`LocalFallbackWarning`,
        naming how to pick a site).
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
    if batch is None and batch_system(chosen).runs_jobs_here:
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
