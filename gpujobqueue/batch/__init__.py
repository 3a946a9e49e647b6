"""One module per batch system: how to ask it for GPUs, submit, and cancel."""

from __future__ import annotations

import importlib

from ..errors import ValidationError

# name -> (module, cluster class). The one place outside a batch module that names the batch
# systems: everything else reads their names from here and their knowledge from their classes.
_CLUSTERS = {
    "slurm": ("slurm", "SLURMGPUCluster"),
    "pbs": ("pbs", "PBSGPUCluster"),
    "lsf": ("lsf", "LSFGPUCluster"),
    "sge": ("sge", "SGEGPUCluster"),
    "local": ("local", "LocalGPUCluster"),
}
BATCH_SYSTEMS = tuple(_CLUSTERS)
# Without a site or gpujobqueue.batch: the embedded batch system, jobs as processes on this machine.
DEFAULT_BATCH = "local"


def cluster_class(batch: str) -> type:
    """The cluster class of a batch system name (``slurm``, ``pbs``, ``lsf``, ``sge``, ``local``)."""
    if batch not in _CLUSTERS:
        raise ValidationError("batch", f"{batch!r} is not a batch system; use one of {', '.join(BATCH_SYSTEMS)}")
    module, name = _CLUSTERS[batch]
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
