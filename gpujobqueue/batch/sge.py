"""Grid Engine: GPUs as a consumable complex (``-l gpu=G``) or a resource type (``-l rt_F=1``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..cluster import GPUJobQueueCluster
from ..errors import ValidationError
from ..job import GPUJob
from ..request import JobRequest, _matching

_COMPLEX = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# dask-jobqueue's resource_spec: one `-l` value, resources joined by , and =
_RESOURCE_SPEC = re.compile(r"[A-Za-z0-9_.@/=:,*-]{1,1024}")


@dataclass(frozen=True)
class SGEOptions:
    """Grid Engine's own settings of a job.

    Parameters
    ----------
    gpu_complex : str
        The consumable complex that counts GPUs (``-l gpu=G``; default ``gpu``).
    resource_type : str or None
        For ``gpu_request="resource-type"``: the complex whose one unit is a node with
        its GPUs (ABCI's ``rt_F``, TSUBAME's ``node_f``).
    parallel_environment : str or None
        ``-pe NAME SLOTS``: the parallel environment that gives the job its cores.
    resource_spec : str or None
        dask-jobqueue's extra ``-l`` value (memory complexes and the like).
    """

    gpu_complex: str = "gpu"
    resource_type: str | None = None
    parallel_environment: str | None = None
    resource_spec: str | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], request: JobRequest) -> "SGEOptions":
        """Parse the Grid Engine keywords of resolved settings."""
        get = settings.get

        def complex_name(name):
            value = get(name)
            return None if value is None else _matching(name, value, _COMPLEX, "a Grid Engine complex name (letters, digits, _)")

        resource_type = complex_name("resource_type")
        if request.gpu_request == "resource-type" and resource_type is None:
            raise ValidationError("resource_type", "gpu_request='resource-type' needs the resource type that brings the GPUs, e.g. resource_type='rt_F'")
        resource_spec = get("resource_spec")
        if resource_spec is not None:
            resource_spec = _matching("resource_spec", resource_spec, _RESOURCE_SPEC, "one Grid Engine -l value such as h_vmem=8G,mem_free=8G (no spaces or shell characters)")
        return cls(
            gpu_complex=complex_name("gpu_complex") or "gpu",
            resource_type=resource_type,
            parallel_environment=complex_name("parallel_environment"),
            resource_spec=resource_spec,
        )


class SGEGPUJob(GPUJob):
    """A Grid Engine job of GPU workers, submitted with ``qsub`` and cancelled with ``qdel``."""

    batch = "sge"
    directive_prefix = "#$"
    submit_command = "qsub"
    cancel_command = "qdel"
    config_name = "sge"
    job_id_regexp = r"Your job(?:-array)? (?P<job_id>\d+)"


class SGEGPUCluster(GPUJobQueueCluster):
    __doc__ = """A Dask cluster of GPU workers submitted to Grid Engine (SGE, Son of Grid Engine, Altair/Univa).

    Takes every keyword of :class:`dask_jobqueue.SGECluster` with the same meaning
    (``project`` is ``-P``, ``resource_spec`` an extra ``-l``), and the GPU keywords of
    :class:`~gpujobqueue.cluster.GPUJobQueueCluster`.

    Grid Engine itself does not tell a job which GPUs it holds. The workers take their
    devices from the variable ``allocation_variable`` names: ``SGE_HGR_<gpu_complex>`` by
    default, which Altair Grid Engine's RSMAP sets and which sites without RSMAP set in a
    starter method or prolog (``resource-type`` requests read ``CUDA_VISIBLE_DEVICES``,
    which such sites set). Where the variable is unset in the job, the workers take
    devices ``0 .. G-1`` of the node in order: right only when the job has the node's
    GPUs to itself.

    Parameters
    ----------
    gpu_request : {"complex", "resource-type", "none"}
        ``complex``: ``#$ -l gpu=G`` (the default; the complex is ``gpu_complex``);
        ``resource-type``: ``#$ -l <resource_type>=<nodes>``, a node type that brings
        ``gpus_per_node`` GPUs; ``none``: the queue implies GPUs.
    gpu_complex : str
        Name of the GPU consumable (default ``gpu``).
    resource_type : str
        The node type of ``gpu_request="resource-type"`` (ABCI's ``rt_F``).
    parallel_environment : str
        ``#$ -pe NAME SLOTS`` for the job's cores (SLOTS = cores); without it no cores are
        asked for, as with dask-jobqueue's SGECluster.
    resource_spec : str
        More ``-l`` resources, e.g. ``h_vmem=8G``.

    Examples
    --------
    >>> cluster = SGEGPUCluster(gpus_per_node=2, queue="gpu.q", parallel_environment="smp", walltime="01:00:00")
    >>> cluster.scale(gpus=4)  # two 2-GPU jobs
    """
    job_cls = SGEGPUJob
    batch_keywords = ("gpu_complex", "resource_type", "parallel_environment", "resource_spec")
    batch_synonyms = {"project": "account"}
    gpu_request_styles = ("complex", "resource-type", "none")

    @classmethod
    def _apply_batch_defaults(cls, settings: dict[str, Any]) -> None:
        if settings.get("allocation_variable") is None and (settings.get("gpu_request") or "complex") == "complex":
            settings["allocation_variable"] = f"SGE_HGR_{settings.get('gpu_complex') or 'gpu'}"

    @classmethod
    def _parse_batch_options(cls, settings: dict[str, Any], request: JobRequest) -> SGEOptions:
        return SGEOptions.from_settings(settings, request)
