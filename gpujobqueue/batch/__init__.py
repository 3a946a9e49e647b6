"""One module per batch system: how to ask it for GPUs, submit, and cancel."""

from __future__ import annotations

from ..errors import ValidationError

BATCH_SYSTEMS = ("slurm", "local")


def cluster_class(batch: str) -> type:
    """The cluster class of a batch system name."""
    if batch == "slurm":
        from .slurm import SLURMGPUCluster

        return SLURMGPUCluster
    if batch == "local":
        from .local import LocalGPUCluster

        return LocalGPUCluster
    raise ValidationError("batch", f"{batch!r} is not a batch system; use one of {', '.join(BATCH_SYSTEMS)}")
