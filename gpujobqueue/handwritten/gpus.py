"""GPU requests that dask-jobqueue users write by hand (``--gres=gpu:2``, ``resource_spec="select=1:ngpus=4"``),
taken over: the count becomes ``gpus_per_node`` where nothing else sets it, and is refused, naming both, where
something else says otherwise. The script then carries one GPU request: the generated one, in the style written,
or the user's line where ours could not say as much (``gpu_request="none"``, the batch system's ``keep_hand_written``).
"""

from __future__ import annotations

import logging
import math
from typing import Any, Mapping

from dask.utils import parse_bytes

from ..errors import ValidationError
from ..settings.keywords import parse_keyword
from .directives import skips
from .gpu_parsers import HandWrittenGPUs, find

logger = logging.getLogger(__name__)


def adopt(
    system: Any,
    settings: dict[str, Any],
    explicit: Mapping[str, Any],
    *,
    site: Any = None,
    node_gpus: int | None = None,
    processes: int | None = None,
) -> HandWrittenGPUs | None:
    """Take a hand-written GPU request of ``system``'s syntax over into ``settings`` (in place); what was found.
    dask-jobqueue's ``processes``, where given, are the workers each node starts on those GPUs (the log says so).
    A directive that contradicts ``explicit`` (keyword or dask config, not the ``site``) or asks for more than the
    site's ``node_gpus`` is refused with a ValidationError naming both."""

    found = find(system, settings)
    if found is None:
        return None
    _check_against_given(system, found, settings.get("gpu_request"), explicit, site, node_gpus)
    nodes = found.settings.get("nodes", settings.get("nodes") or 1)
    count, style = found.gpus_per_node, settings.get("gpu_request")
    system.check_hand_written(found, settings)
    where = found.describe()
    for name, value in found.settings.items():
        if explicit.get(name) is not None and not _same(name, explicit[name], value):
            raise ValidationError(name, f"{name}={explicit[name]!r} but {where} says {value!r}; give one of them")
    for name, value in found.settings.items():
        if explicit.get(name) is None:
            settings[name] = value
    for name, value in found.defaults.items():
        if settings.get(name) is None:
            settings[name] = value
    if "cores" in found.settings and explicit.get("cpus_per_gpu") is None:
        settings["cpus_per_gpu"] = None  # the site's share per GPU gives way to the cores written
    if "memory" in found.settings and explicit.get("memory_per_gpu") is None:
        settings["memory_per_gpu"] = None
    settings["gpus_per_node"] = count
    if found.gpu_type is not None:
        settings["gpu_type"] = found.gpu_type
    # The user's own line stays the job's GPU request where the generated one is left out, or where the
    # batch system's syntax keeps it (PBS's select line; SLURM's --gres with other resources).
    skipped = style == "none" or skips(settings, system.gpu_line(style or found.style, count, settings))
    if not (system.keep_hand_written(found, settings, style, skipped) or skipped):
        if style is None:
            settings["gpu_request"] = found.style
        if found.field == "resource_spec":
            settings["resource_spec"] = found.rest
        else:
            drop_line(settings, found)
    logger.info(
        "%s asks for %d GPU%s per node (%s): starting %d GPU workers per job",
        found.field.partition("[")[0],
        count,
        "s" if count > 1 else "",
        found.text.strip(),
        (processes or count) * nodes,  # processes=2 on 4 GPUs: 2 workers, each on 2
    )
    return found


def _check_against_given(
    system: Any,
    found: HandWrittenGPUs,
    style: str | None,
    explicit: Mapping[str, Any],
    site: Any,
    node_gpus: int | None,
) -> None:
    """Refuse a hand-written GPU request that contradicts the GPU request style, the GPUs or their type given, or
    the site's node."""
    where, count = found.describe(), found.gpus_per_node
    if style in system.whole_node_styles:
        raise ValidationError(
            found.field,
            f"{where} asks for {count} GPU(s) but gpu_request={style!r} takes "
            "whole nodes with their GPUs; leave the GPU directive out",
        )
    given = explicit.get("gpus_per_node")
    if given is not None and str(given) != str(count):
        raise ValidationError(
            "gpus_per_node", f"gpus_per_node={given} but {where} asks for {count} GPU(s) per node; give one of them"
        )
    if node_gpus is not None and count > node_gpus:
        raise ValidationError(
            found.field,
            f"{where} asks for {count} GPUs per node but the nodes of site "
            f"{getattr(site, 'name', site)} have gpus_per_node={node_gpus}",
        )
    if found.gpu_type is not None and explicit.get("gpu_type") not in (None, found.gpu_type):
        raise ValidationError(
            "gpu_type",
            f"gpu_type={explicit['gpu_type']!r} but {where} asks for {found.gpu_type!r} GPUs; give one of them",
        )


def _same(name: str, given: Any, written: Any) -> bool:
    if name == "nodes":
        return str(given) == str(written) or (str(given) == "1" and written == 1)
    if name == "memory":
        try:  # PBS's sizes are binary, dask-jobqueue's decimal: "100GB" and mem=100gb agree
            return math.isclose(parse_bytes(given) if isinstance(given, str) else given, written, rel_tol=0.1)
        except ValueError:
            return False
    return str(given) == str(written)


def drop_line(settings: dict[str, Any], found: HandWrittenGPUs) -> None:
    """Take the directive out of the extra directives, leaving what else it held in its place."""
    extras = list(parse_keyword("job_extra_directives", settings["job_extra_directives"]))  # as the finder read them
    index = int(found.field.partition("[")[2].rstrip("]"))
    extras[index : index + 1] = [found.rest] if found.rest else []
    settings["job_extra_directives"] = extras
