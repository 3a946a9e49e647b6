"""One module per batch system: how to ask it for GPUs, submit, and cancel.

This package's ``__init__`` is the registry of their cluster classes, and imports none of them:
each ``batch/<name>.py`` registers its class here when it is imported (``gpujobqueue``'s own
``__init__`` imports them all), so modules below the batch modules ask the registry for a class
without importing the batch modules, which import them.
"""

from __future__ import annotations

from ..errors import ValidationError

# The one place outside a batch module that names the batch systems, in the order the command
# line and the messages list them: everything else reads their knowledge from their classes.
BATCH_SYSTEMS = ("slurm", "pbs", "lsf", "sge", "local")
# Without a site or gpujobqueue.batch: the embedded batch system, jobs as processes on this machine.
DEFAULT_BATCH = "local"
_CLUSTERS: dict[str, type] = {}


def register(cls: type) -> type:
    """Register a batch system's cluster class under its job class's ``batch`` name (a class decorator)."""
    batch = cls.job_cls.batch
    if batch not in BATCH_SYSTEMS:
        raise ValueError(f"{batch!r} is not in gpujobqueue.batch.BATCH_SYSTEMS; add it there")
    _CLUSTERS[batch] = cls
    return cls


def cluster_class(batch: str) -> type:
    """The cluster class of a batch system name (``slurm``, ``pbs``, ``lsf``, ``sge``, ``local``)."""
    if batch not in BATCH_SYSTEMS:
        raise ValidationError("batch", f"{batch!r} is not a batch system; use one of {', '.join(BATCH_SYSTEMS)}")
    if batch not in _CLUSTERS:  # only while gpujobqueue itself is being imported
        raise RuntimeError(f"gpujobqueue.batch.{batch} is not imported yet; import gpujobqueue first")
    return _CLUSTERS[batch]
