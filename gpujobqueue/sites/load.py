"""Loading site files: reading and validating one file, and merging overrides over the base."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..batch import batch_systems
from ..errors import ValidationError
from ..settings.keywords import PAIRS, Keyword, default_of
from ..settings.walltimes import parse_walltime
from . import routing
from .charges import charge_problems
from .errors import SiteConfigError, dotted_key, value_at
from .facts import Site
from .patterns import pattern_problem
from .schema import schema_errors, schemas
from .sources import source_problems
from .yaml_text import line_index, load_site_yaml


def read_site_file(path: str | os.PathLike[str], *, partial: bool = False) -> tuple[dict, dict[tuple, int]]:
    """One site file's data and its keys' lines, checked (``partial``: an override); raises every problem."""
    path = Path(path)
    data, node = load_site_yaml(path)
    if not isinstance(data, dict):
        raise SiteConfigError(path, "", 1, "a site file is a mapping of keys (schema: 1, name: ..., ...)")
    lines = line_index(node) if node is not None else {}
    full, relaxed = schemas()
    errors = schema_errors(data, relaxed if partial else full, str(path), lines)
    # The checks below read the shape the schema holds: a file of another shape is reported by the schema alone.
    if not errors and not partial:
        errors = _semantic_errors(data, str(path), lines)
    elif not errors:  # an override's sources may cover keys of the file below it: only their form is checked here
        problems = [*source_problems(data, whole=False), *charge_problems(data, whole=False)]
        errors = _errors(problems, str(path), lines)
    if errors:
        first = errors[0]
        first.errors = errors
        raise first
    return data, lines


def _semantic_errors(data: dict, path: str, lines: dict[tuple, int]) -> list[SiteConfigError]:
    """What a schema cannot say: names that must agree, expressions that must compile."""
    batch_cls = batch_systems()[data["scheduler"]]  # the schema took only a batch system that takes sites
    problems = [
        *_naming_problems(data, Path(path).stem, batch_cls),
        *_value_problems(data, batch_cls),
        *source_problems(data),
        *charge_problems(data),
        *_worker_problems(data),
        *_launch_problems(data, batch_cls),
    ]
    return _errors(problems, path, lines)


def _errors(problems: Iterable[tuple[tuple, str]], path: str, lines: dict[tuple, int]) -> list[SiteConfigError]:
    """Each (key, problem) as the error naming the file, the key and its line."""
    return [SiteConfigError(path, dotted_key(key), lines.get(key), message) for key, message in problems]


def _naming_problems(data: dict, stem: str, batch_cls: Any) -> Iterator[tuple[tuple, str]]:
    """The site's names, patterns and flags against each other and its batch system, as (key, problem)."""
    if data.get("name") != stem and not stem.startswith("_"):  # _template.yaml and the like are not sites
        yield ("name",), f"{data.get('name')!r} must be the file's name without .yaml ({stem!r})"
    scheduler, style = data.get("scheduler"), data.get("gpu_request", {}).get("style")
    if style not in batch_cls.gpu_request_styles:
        accepted = ", ".join(batch_cls.gpu_request_styles)
        yield ("gpu_request", "style"), f"{style!r} is not a {scheduler} GPU request style; use one of {accepted}"
    if data.get("default_queue") not in data.get("queues", {}):
        queues = ", ".join(data.get("queues", {}))
        yield ("default_queue",), f"{data.get('default_queue')!r} is not one of the queues ({queues})"
    for name in data.get("removed_queues", {}):
        if name in data.get("queues", {}):
            yield (
                ("removed_queues", name),
                f"{name!r} is in queues too; a queue the centre removed is deleted from queues",
            )
    for i, pattern in enumerate(data.get("hostnames", [])):
        if problem := pattern_problem(pattern):
            yield ("hostnames", i), problem
    flag = data.get("account", {}).get("flag")
    if flag is not None and flag not in batch_cls.account_flags:
        yield (
            ("account", "flag"),
            f"{scheduler} names an account with {' or '.join(batch_cls.account_flags)}, not {flag}",
        )
    if "clusters" in data and batch_cls.clusters_option is None:
        yield ("clusters",), f"{scheduler} has no clusters to send jobs to (SLURM's --clusters)"
    pattern = data.get("account", {}).get("pattern")
    if pattern is not None and (problem := pattern_problem(pattern)):
        yield ("account", "pattern"), problem


def _worker_problems(data: dict) -> Iterator[tuple[tuple, str]]:
    """The site's worker, each queue's own worker over it, and each queue's walltime bins."""
    site_worker = data.get("worker", {})
    workers = [(("worker", "visibility_variable"), site_worker)]
    for queue_name, queue in data.get("queues", {}).items():
        if "worker" in queue:
            culprit = "visibility_variable" if "visibility_variable" in queue["worker"] else "mode"
            workers.append((("queues", queue_name, "worker", culprit), {**site_worker, **queue["worker"]}))
    for key, worker in workers:
        variable = worker.get("visibility_variable", default_of("visibility_variable"))
        if worker.get("mode") == "dask-cuda" and variable != "CUDA_VISIBLE_DEVICES":
            yield (
                key,
                "dask-cuda pins NVIDIA GPUs through CUDA_VISIBLE_DEVICES; use mode per-device for other variables",
            )
    for queue_name, queue in (data.get("queues") or {}).items():
        if isinstance(queue, dict):
            yield from routing.bin_problems(queue_name, queue)


def _launch_problems(data: dict, batch_cls: Any) -> Iterator[tuple[tuple, str]]:
    """The network's UCX and the launcher against the protocol, the GPU request style and the batch system."""
    network = data.get("network", {})
    if "ucx" in network and network.get("protocol") != "ucx":
        yield ("network", "ucx"), "UCX transports are given but the protocol is not ucx"
    launcher, style = data.get("launcher", {}).get("name"), data.get("gpu_request", {}).get("style")
    accepted = ("direct", *batch_cls.launcher_names())
    if (launcher == "jsrun") != (style == "csm"):
        yield ("launcher", "name"), "jsrun goes with LSF's CSM style (gpu_request.style: csm) and only with it"
    elif launcher not in (None, *accepted):
        yield (
            ("launcher", "name"),
            f"{launcher} does not start tasks on {data.get('scheduler')} nodes; use one of {', '.join(accepted)}",
        )


def _keyword_values(data: dict, keywords: Iterable[Keyword]) -> Iterator[tuple[tuple, Keyword, Any]]:
    """Each value the site sets for a keyword that has a parser, at its key path, as site_settings reads it."""
    for keyword in keywords:
        if keyword.site_key is None or keyword.parse is None:
            continue
        key = tuple(keyword.site_key.split("."))
        queues = (data.get("queues") or {}) if key[0] == "worker" else {}
        for place in [key, *(("queues", name, *key) for name, queue in queues.items() if isinstance(queue, dict))]:
            value = value_at(data, place)
            if keyword.kind == PAIRS and isinstance(value, dict):
                yield from ((place + (name,), keyword, {name: str(item)}) for name, item in value.items())
            elif value is not None:
                yield place, keyword, value


def _value_problems(data: dict, batch_cls: Any) -> Iterator[tuple[tuple, str]]:
    """The values a cluster parses from the site, parsed here so that a file that passes is not refused in use."""
    checks = [(key, keyword.parse, value) for key, keyword, value in _keyword_values(data, batch_cls.setting_names())]
    for queue_name, queue in (data.get("queues") or {}).items():
        if isinstance(queue, dict) and queue.get("max_walltime") is not None:
            checks.append((("queues", queue_name, "max_walltime"), parse_walltime, queue["max_walltime"]))
    for key, parser, value in checks:
        try:
            parser(dotted_key(key), value)
        except ValidationError as problem:
            yield key, problem.message


def _merge(base: dict, override: dict) -> dict:
    """``override`` over ``base`` field by field (mappings merged, anything else replaced)."""
    merged = dict(base)
    for key, value in override.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if both else copy.deepcopy(value)
    return merged


def _leaf_keys(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """The key path of each value in ``value`` that is not a mapping."""
    if not isinstance(value, dict):
        yield path
    for key, item in value.items() if isinstance(value, dict) else ():
        yield from _leaf_keys(item, path + (key,))


def load_files(name: str, paths: list[Path]) -> Site:
    """The site ``name`` from its files, each merged over the one before, and checked whole."""
    data: dict = {}
    origins: dict[tuple, tuple[str, int]] = {}
    all_lines = {}
    for path in paths:
        part, lines = read_site_file(path, partial=len(paths) > 1)
        all_lines[str(path)] = lines
        data = _merge(data, part)
        for key in _leaf_keys(part):  # the file that gave each value last, at the value's line
            origins.pop(key, None)
            origins[key] = (str(path), lines.get(key, 1))
    leaves = set(_leaf_keys(data))
    origins = {key: where for key, where in origins.items() if key in leaves}
    if len(paths) > 1:  # the merged whole must be a complete, valid site
        full, _ = schemas()
        errors = schema_errors(data, full, f"{name} (merged from {', '.join(map(str, paths))})", {})
        if errors:
            raise errors[0]
    return Site(name=name, data=data, files=[str(p) for p in paths], origins=origins, lines=all_lines)
