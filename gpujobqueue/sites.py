"""Site configs: load and validate the YAML files, find them, merge overrides, detect the machine."""

from __future__ import annotations

import copy
import datetime
import difflib
import functools
import logging
import os
import re
import socket
import urllib.parse
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import yaml

from . import queue_routing
from .errors import GPUJobQueueError, ValidationError
from .limits import MAX_PATTERN_INPUT, MAX_PATTERN_REPEATS, MAX_SITE_DEPTH, MAX_SITE_FILE_BYTES
from .render import package_data_dir

logger = logging.getLogger(__name__)
SCHEMA_FILE = Path(__file__).with_name("site_schema.yaml")
SYSTEM_SITE_DIR = Path("/etc/gpujobqueue/sites")
USER_SITE_DIR = Path("~/.config/gpujobqueue/sites")
SITE_PATH_VARIABLE = "GPUJOBQUEUE_SITE_PATH"


class SiteConfigError(GPUJobQueueError):
    """A site file that is not valid: names the file, the key path and the line.

    Parameters
    ----------
    path : str
        The file.
    key : str
        The key path, dotted (``queues.debug.max_walltime``), or empty for the whole file.
    line : int or None
        1-based line of the key in the file.
    message : str
        What is wrong.
    """

    def __init__(self, path: str | os.PathLike[str], key: str, line: int | None, message: str):
        self.path, self.key, self.line, self.message = str(path), key, line, message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {key or '(file)'}: {message}")


class QueueRefusedError(SiteConfigError, ValidationError):
    """A job the queue cannot take (too many or too few nodes, too long, no GPUs): a
    :class:`SiteConfigError` naming the site key whose limit it breaks, and a
    :class:`~gpujobqueue.errors.ValidationError` whose ``field`` is the keyword to change
    (``queue`` when the user named a queue and another one takes the job).

    Parameters
    ----------
    path, key, line, message
        As :class:`SiteConfigError`.
    field : str
        The keyword to change.
    """

    def __init__(self, path: str | os.PathLike[str], key: str, line: int | None, message: str, field: str):
        self.path, self.key, self.line, self.message, self.field = str(path), key, line, message, field
        where = f"{self.path}:{line}" if line else self.path
        Exception.__init__(self, f"{where}: {key or '(file)'}: {message}")


class RetiredSiteWarning(UserWarning):
    """The site is a machine that has been retired: its scripts are kept as examples, no job will run there."""


def warn_if_retired(site: "Site") -> None:
    """Warn (:class:`RetiredSiteWarning`), naming the date, when ``site`` is a retired machine."""
    if site.data.get("status") == "retired":
        since = f" on {site.data['retired']}" if site.data.get("retired") else ""
        warnings.warn(f"site {site.name} is a retired machine (it stopped running jobs{since}); the script is an "
                      f"example of its form, no job will run there ({site.files[0]})", RetiredSiteWarning, stacklevel=3)


def sources_text(site: "Site") -> str:
    """The site's sources, one per paragraph (address, dates, the keys it confirms), then the key
    groups no source covers and its unconfirmed facts: what ``gpujobqueue show`` prints."""
    data = site.data
    out = []
    if data.get("status") == "retired":
        out.append(f"# retired: {data.get('retired', 'date not given')}")
    out.append(f"# sources ({len(data.get('sources', []))}):")
    for source in data.get("sources", []):
        shows = f", the page shows {source['shows']}" if source.get("shows") else ""
        out.append(f"#   {source['url']}")
        out.append(f"#     checked {source['checked']}{shows}; covers {', '.join(source['covers'])}")
        if source.get("note"):
            out.append(f"#     {source['note']}")
    missing = unsourced_groups(data)
    if missing:
        out.append(f"# no source for: {', '.join(missing)}")
    if data.get("unconfirmed"):
        out.append("# unconfirmed:")
        out += [f"#   - {line}" for line in data["unconfirmed"]]
    return "\n".join(out)


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping (PyYAML keeps the last)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} given twice (first on line {seen[key]})", key_node.start_mark)
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# Dates stay text: the checks below name a bad one's key, where PyYAML's own conversion of
# 2026-13-45 raises a bare ValueError; and a date the schema reads is a YYYY-MM-DD string either way.
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read_bounded_text(path: Path) -> str:
    """The file's text, refused before it is parsed when it is too big, not UTF-8, nested too
    deep or uses YAML aliases (which can expand a small file into a huge object).

    Raises
    ------
    SiteConfigError
    """
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_SITE_FILE_BYTES + 1)
    except OSError as error:
        raise SiteConfigError(path, "", None, f"cannot read: {error.strerror}") from None
    if len(raw) > MAX_SITE_FILE_BYTES:
        raise SiteConfigError(path, "", None, f"over {MAX_SITE_FILE_BYTES // 1024} KiB; a site file is a page of YAML (gpujobqueue.limits)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise SiteConfigError(path, "", line, f"not UTF-8 text: byte {raw[error.start]:#04x} cannot be decoded") from None
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise SiteConfigError(path, "", event.start_mark.line + 1, f"YAML alias *{event.anchor}: site files may not use aliases (anchors "
                                                                           "and *references); write the value out")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_SITE_DEPTH:
                    raise SiteConfigError(path, "", event.start_mark.line + 1, f"nested more than {MAX_SITE_DEPTH} levels deep")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        pass  # reported, with its line, by the loader
    return text


def pattern_problem(pattern: Any) -> str | None:
    """Why a site's regular expression could take too long to match, or None.

    Python's ``re`` backtracks: a repeat over something that can itself repeat or branch
    (``(a+)+``, ``(a|aa)+``) takes exponential time on a near miss, and many unbounded repeats
    in a row polynomial time. So a site pattern may repeat only single characters and
    character classes (``\\w+``, ``[0-9]{4}``, ``(ab)+``), hold at most
    :data:`~gpujobqueue.limits.MAX_PATTERN_REPEATS` unbounded repeats, and no backreference;
    and it is matched against at most :data:`~gpujobqueue.limits.MAX_PATTERN_INPUT` characters.
    That bounds a match to about 128**3 steps, well under a second.
    """
    if not isinstance(pattern, str):
        return "not a string"
    try:
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_parse as parser  # type: ignore[no-redef]
    try:
        tree = parser.parse(pattern)
    except re.error as problem:
        return f"not a regular expression: {problem}"
    constants = parser  # the opcodes live beside the parser
    repeats = (constants.MAX_REPEAT, constants.MIN_REPEAT) + ((constants.POSSESSIVE_REPEAT,) if hasattr(constants, "POSSESSIVE_REPEAT") else ())
    unbounded = 0

    def walk(items, inside_repeat: bool) -> str | None:
        nonlocal unbounded
        for op, av in items:
            if op in repeats:
                low, high, body = av
                if inside_repeat:
                    return "a repeat inside a repeat (such as (a+)+) can take exponential time"
                if high == constants.MAXREPEAT or high > 64:
                    unbounded += 1
                found = walk(body, True)
            elif op is constants.BRANCH:
                if inside_repeat:
                    return "a repeated alternation (such as (a|aa)+) can take exponential time"
                found = next((p for p in (walk(branch, inside_repeat) for branch in av[1]) if p), None)
            elif op is constants.SUBPATTERN:
                found = walk(av[-1], inside_repeat)
            elif op in (constants.ASSERT, constants.ASSERT_NOT):
                found = walk(av[1], inside_repeat)
            elif op in (constants.GROUPREF, constants.GROUPREF_EXISTS):
                return "backreferences are not accepted in site patterns"
            else:
                found = None
            if found:
                return found
        return None

    found = walk(tree, False)
    if found:
        return found
    if unbounded > MAX_PATTERN_REPEATS:
        return f"{unbounded} unbounded repeats; a site pattern may hold {MAX_PATTERN_REPEATS}"
    return None


def pattern_matches(pattern: str, text: str) -> bool:
    """``re.fullmatch`` of a site pattern (checked by :func:`pattern_problem` when its file was
    read) on at most :data:`~gpujobqueue.limits.MAX_PATTERN_INPUT` characters; longer text never matches."""
    if len(text) > MAX_PATTERN_INPUT or pattern_problem(pattern):
        return False
    return re.fullmatch(pattern, text) is not None


def _line_index(node: yaml.Node, prefix: tuple = (), index: dict | None = None) -> dict[tuple, int]:
    """Key path -> 1-based line, from a composed YAML node tree."""
    index = {} if index is None else index
    index.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = prefix + (key_node.value,)
            index[path] = key_node.start_mark.line + 1
            _line_index(value_node, path, index)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_index(item, prefix + (i,), index)
    return index


@functools.lru_cache(maxsize=1)
def _schemas() -> tuple[dict, dict]:
    """The full schema, and a copy without required keys (for override files)."""
    full = yaml.safe_load(SCHEMA_FILE.read_text())

    def drop_required(node):
        if isinstance(node, dict):
            # the keyword (a list of names), not a property that happens to be called "required"
            return {k: drop_required(v) for k, v in node.items() if not (k == "required" and isinstance(v, list))}
        if isinstance(node, list):
            return [drop_required(v) for v in node]
        return node

    return full, drop_required(full)


def _dotted(path: Iterable) -> str:
    return ".".join(str(p) for p in path)


def _schema_errors(data: Any, schema: dict, path: str, lines: dict[tuple, int]) -> list[SiteConfigError]:
    errors = []
    for error in jsonschema.Draft202012Validator(schema).iter_errors(data):
        key = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            for extra in sorted(set(error.instance) - allowed, key=str):
                known = ", ".join(sorted(allowed))
                errors.append(SiteConfigError(path, _dotted(key + (extra,)), lines.get(key + (extra,)), f"unknown key; known keys here: {known}"))
            continue
        if error.validator == "required":
            missing = error.message.split("'")[1] if "'" in error.message else error.message
            errors.append(SiteConfigError(path, _dotted(key + (missing,)), lines.get(key), f"required key missing (in {_dotted(key) or 'the file'})"))
            continue
        errors.append(SiteConfigError(path, _dotted(key), lines.get(key), error.message))
    return sorted(errors, key=lambda e: (e.line or 0, e.key))


def read_site_file(path: str | os.PathLike[str], *, partial: bool = False) -> tuple[dict, dict[tuple, int]]:
    """Read and check one site file against the schema.

    Parameters
    ----------
    path : path
        The YAML file.
    partial : bool
        An override file: every key is checked but none is required.

    Returns
    -------
    data : dict
    lines : dict
        Key path (tuple) to its line in the file.

    Raises
    ------
    SiteConfigError
        The first problem (all of them are in ``.errors`` of the exception).
    """
    path = Path(path)
    text = _read_bounded_text(path)
    node = None
    try:
        node = yaml.compose(text, Loader=_UniqueKeyLoader)
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        line = mark.line + 1 if mark else None
        key = ""
        if node is not None and line is not None:  # composed but not loaded: name the key on that line
            key = _dotted(max((p for p, at in _line_index(node).items() if at == line), key=len, default=()))
        raise SiteConfigError(path, key, line, f"not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise SiteConfigError(path, "", 1, "a site file is a mapping of keys (schema: 1, name: ..., ...)")
    lines = _line_index(node) if node is not None else {}
    full, relaxed = _schemas()
    errors = _schema_errors(data, relaxed if partial else full, str(path), lines)
    if not partial:
        errors += _semantic_errors(data, str(path), lines)
    else:  # an override's sources may cover keys of the file below it: only their form is checked here
        errors += _source_errors(data, str(path), lines, whole=False)
    if errors:
        first = errors[0]
        first.errors = errors
        raise first
    return data, lines


def _semantic_errors(data: dict, path: str, lines: dict[tuple, int]) -> list[SiteConfigError]:
    """What a schema cannot say: names that must agree, expressions that must compile."""
    errors = []

    def error(key: tuple, message: str):
        errors.append(SiteConfigError(path, _dotted(key), lines.get(key), message))

    stem = Path(path).stem
    if data.get("name") != stem and not stem.startswith("_"):  # _template.yaml and the like are not sites
        error(("name",), f"{data.get('name')!r} must be the file's name without .yaml ({stem!r})")
    scheduler = data.get("scheduler")
    style = data.get("gpu_request", {}).get("style")
    from .batch import BATCH_SYSTEMS, cluster_class  # the batch modules import this one

    # The schema refuses any other scheduler; a batch system without a site hook (local) has no sites.
    batch_cls = cluster_class(scheduler) if scheduler in BATCH_SYSTEMS else None
    if not hasattr(batch_cls, "site_settings"):
        batch_cls = None
    if batch_cls is not None:
        styles = batch_cls.gpu_request_styles
        if style not in styles:
            error(("gpu_request", "style"), f"{style!r} is not a {scheduler} GPU request style; use one of {', '.join(styles)}")
    if data.get("default_queue") not in data.get("queues", {}):
        error(("default_queue",), f"{data.get('default_queue')!r} is not one of the queues ({', '.join(data.get('queues', {}))})")
    for i, pattern in enumerate(data.get("hostnames", [])):
        problem = pattern_problem(pattern)
        if problem:
            error(("hostnames", i), problem)
    pattern = data.get("account", {}).get("pattern")
    if pattern is not None:
        problem = pattern_problem(pattern)
        if problem:
            error(("account", "pattern"), problem)
    errors += _value_errors(data, path, lines)
    errors += _source_errors(data, path, lines)
    # The site's worker, and each queue's own worker over it, blamed on the key that makes it wrong.
    site_worker = data.get("worker", {})
    workers = [(("worker", "visibility_variable"), site_worker)]
    for queue_name, queue in data.get("queues", {}).items():
        if "worker" in queue:
            culprit = "visibility_variable" if "visibility_variable" in queue["worker"] else "mode"
            workers.append((("queues", queue_name, "worker", culprit), {**site_worker, **queue["worker"]}))
    for key, worker in workers:
        if worker.get("mode") == "dask-cuda" and worker.get("visibility_variable", "CUDA_VISIBLE_DEVICES") != "CUDA_VISIBLE_DEVICES":
            error(key, "dask-cuda pins NVIDIA GPUs through CUDA_VISIBLE_DEVICES; use mode per-device for other variables")
    for queue_name, queue in (data.get("queues") or {}).items():
        if isinstance(queue, dict):
            for key, problem in queue_routing.bin_problems(queue_name, queue):
                error(key, problem)
    network = data.get("network", {})
    if "ucx" in network and network.get("protocol") != "ucx":
        error(("network", "ucx"), "UCX transports are given but the protocol is not ucx")
    launcher = data.get("launcher", {}).get("name")
    if (launcher == "jsrun") != (style == "csm"):
        error(("launcher", "name"), "jsrun goes with LSF's CSM style (gpu_request.style: csm) and only with it")
    elif launcher not in (None, "direct", *(batch_cls.launchers if batch_cls else ())):
        accepted = ", ".join(("direct", *(batch_cls.launchers if batch_cls else ())))
        error(("launcher", "name"), f"{launcher} does not start tasks on {scheduler} nodes; use one of {accepted}")
    return errors


# The groups of keys a site's facts come in; each shipped site's sources cover every one it has
# (or its unconfirmed list names it). Each queue is a group of its own: queues.NAME.
FACT_GROUPS = ("hostnames", "node", "gpu_request", "account", "directives", "default_queue", "launcher", "worker",
               "network", "prologue", "environment")
_KEYS_PREFIX = re.compile(r"^([a-z_][A-Za-z0-9_.-]*(?:, *[a-z_][A-Za-z0-9_.-]*)*): ")


def _has_key(data: Any, dotted: str) -> bool:
    """Whether a dotted key path (``queues.debug.max_walltime``) names a key of ``data``."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _iso_date_problem(text: Any, *, past: bool) -> str | None:
    """Why ``text`` is not a YYYY-MM-DD date (that has come, with ``past``), or None."""
    try:
        day = datetime.date.fromisoformat(str(text))
    except ValueError:
        return f"{text!r} is not a date; write YYYY-MM-DD"
    if len(str(text)) != 10:
        return f"{text!r}: write the date as YYYY-MM-DD"
    if past and day > datetime.date.today():
        return f"{text} is in the future"
    return None


def unconfirmed_keys(line: str) -> list[str]:
    """The keys an ``unconfirmed`` line names before its colon (``queues.debug, node.cpus: why``), or none."""
    match = _KEYS_PREFIX.match(line)
    if not match or match.group(1).split(".")[0].split(",")[0] not in _top_level_keys():
        return []
    return [key.strip() for key in match.group(1).split(",")]


@functools.lru_cache(maxsize=1)
def _top_level_keys() -> frozenset[str]:
    return frozenset(_schemas()[0]["properties"])


def fact_groups(data: dict) -> list[str]:
    """The groups of keys a site file holds facts in: :data:`FACT_GROUPS` it has, and ``queues.NAME`` per queue."""
    return [key for key in FACT_GROUPS if key in data] + [f"queues.{name}" for name in data.get("queues", {})]


def unsourced_groups(data: dict) -> list[str]:
    """The fact groups of a site that no source covers and no ``unconfirmed`` line names.

    A source covers a group when its ``covers`` names the group or a key that holds it
    (``queues`` covers ``queues.debug``); naming one key inside a group (``node.cpus``) is
    precise but leaves the rest of the group to be sourced or listed.
    """
    named = {key for source in data.get("sources", []) for key in source.get("covers", [])}
    named |= {key for line in data.get("unconfirmed", []) for key in unconfirmed_keys(line)}
    return [group for group in fact_groups(data)
            if not any(group == key or group.startswith(key + ".") for key in named)]


def _source_errors(data: dict, path: str, lines: dict[tuple, int], whole: bool = True) -> list[SiteConfigError]:
    """Sources' URLs and dates, the keys they cover, and a retired machine's date (the last two
    only for a ``whole`` site file, not an override)."""
    errors = []

    def error(key: tuple, message: str):
        errors.append(SiteConfigError(path, _dotted(key), lines.get(key), message))

    for i, source in enumerate(data.get("sources") or []):
        if not isinstance(source, dict):
            continue
        url = urllib.parse.urlsplit(str(source.get("url", "")))
        if url.scheme not in ("http", "https") or "." not in (url.hostname or ""):
            error(("sources", i, "url"), f"{source.get('url')!r} is not the address of a page (https://host/...)")
        for field_name, past in (("checked", True), ("shows", False)):
            if field_name in source:
                problem = _iso_date_problem(source[field_name], past=past)
                if problem:
                    error(("sources", i, field_name), problem)
        for j, key in enumerate(source.get("covers") or []):
            if whole and not _has_key(data, str(key)):
                error(("sources", i, "covers", j), f"{key!r} is not a key of this file; a source covers keys the file "
                                                    "sets")
    if not whole:
        return errors
    for i, line in enumerate(data.get("unconfirmed") or []):
        for key in unconfirmed_keys(str(line)):
            if not _has_key(data, key):
                error(("unconfirmed", i), f"{key!r} is not a key of this file (an unconfirmed line starts with the keys "
                                          "it is about)")
    retired = data.get("retired")
    if retired is not None:
        problem = _iso_date_problem(retired, past=True)
        if problem:
            error(("retired",), problem)
        if data.get("status") != "retired":
            status = data.get("status", "production")
            error(("retired",), f"a retirement date with status {status!r}; set status: retired")
    elif data.get("status") == "retired":
        error(("status",), "a retired machine gives the date it stopped running jobs: retired: YYYY-MM-DD")
    return errors


def _value_errors(data: dict, path: str, lines: dict[tuple, int]) -> list[SiteConfigError]:
    """The values a cluster parses from the site, parsed here as it parses them, so that a file
    ``gpujobqueue check FILE`` passes is not refused when used."""
    from .request import ValidationError, parse_environment, parse_job_path, parse_lines, parse_walltime

    checks: list[tuple[tuple, Any, Any]] = []
    if isinstance(data.get("environment"), dict):
        checks += [(("environment", name), parse_environment, {name: str(value)}) for name, value in data["environment"].items()]
    if data.get("prologue") is not None:
        checks.append((("prologue",), parse_lines, data["prologue"]))
    workers = [(("worker",), data.get("worker"))]
    for queue_name, queue in (data.get("queues") or {}).items():
        if isinstance(queue, dict):
            workers.append((("queues", queue_name, "worker"), queue.get("worker")))
            if queue.get("max_walltime") is not None:
                checks.append((("queues", queue_name, "max_walltime"), parse_walltime, queue["max_walltime"]))
    for key, worker in workers:
        if isinstance(worker, dict) and worker.get("local_directory") is not None:
            checks.append((key + ("local_directory",), parse_job_path, worker["local_directory"]))
    errors = []
    for key, parser, value in checks:
        try:
            parser(_dotted(key), value)
        except ValidationError as problem:
            message = str(problem).partition(": ")[2] or str(problem)
            errors.append(SiteConfigError(path, _dotted(key), lines.get(key), message))
    return errors


def _merge(base: dict, override: dict, origins: dict[tuple, str], source: str, prefix: tuple = ()) -> dict:
    """``override`` over ``base`` field by field (mappings merged, anything else replaced)."""
    merged = dict(base)
    for key, value in override.items():
        path = prefix + (key,)
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value, origins, source, path)
        else:
            merged[key] = copy.deepcopy(value)
            for known in [p for p in origins if p[: len(path)] == path]:
                del origins[known]
            _record_origins(value, origins, source, path)
    return merged


def _record_origins(value: Any, origins: dict[tuple, str], source: str, path: tuple) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _record_origins(item, origins, source, path + (key,))
    else:
        origins[path] = source


@dataclass
class Site:
    """One machine's facts, merged from its files.

    Attributes
    ----------
    name : str
    data : dict
        The merged config.
    files : list of str
        The files it was merged from, first the base.
    origins : dict
        Key path (tuple) to the ``file:line`` its value came from.
    """

    name: str
    data: dict
    files: list[str]
    origins: dict[tuple, str] = field(default_factory=dict)
    lines: dict[str, dict[tuple, int]] = field(default_factory=dict)

    def where(self, *key: str) -> str:
        """``file:line`` of a key (for error messages), or the base file."""
        for length in range(len(key), 0, -1):
            if key[:length] in self.origins:
                return self.origins[key[:length]]
            # a mapping: the file that holds its first value, at the mapping's own line
            for path, source in self.origins.items():
                if path[:length] == key[:length]:
                    file = source.rpartition(":")[0]
                    line = self.lines.get(file, {}).get(key[:length])
                    return f"{file}:{line}" if line else file
        return self.files[0]

    @property
    def scheduler(self) -> str:
        return self.data["scheduler"]

    def queue(self, name: str) -> dict:
        """The queue's entry; raises naming the site file when there is no such queue."""
        queues = self.data["queues"]
        if name not in queues:
            path, line = self.location("queues")
            raise SiteConfigError(path, "queues", line, f"{self.name} has no queue {name!r}; its queues are {', '.join(queues)}")
        return queues[name]

    def node(self, queue: str) -> dict:
        """The node facts of a queue's nodes: the site's ``node`` with the queue's ``node`` over it."""
        return {**self.data["node"], **self.queue(queue).get("node", {})}

    def worker(self, queue: str) -> dict:
        """The worker settings for a queue: the site's ``worker`` with the queue's over it."""
        return {**self.data["worker"], **self.queue(queue).get("worker", {})}

    def key_of(self, queue: str, section: str, key: str) -> tuple:
        """The key path that sets ``section.key`` for a queue: the queue's own, or the site's."""
        if key in self.queue(queue).get(section, {}):
            return ("queues", queue, section, key)
        return (section, key)

    def location(self, *key: str) -> tuple[str, int | None]:
        """(file, line) of a key, as :meth:`where` gives it."""
        where = self.where(*key)
        path, _, line = where.rpartition(":")
        return (path, int(line)) if path and line.isdigit() else (where, None)


def site_directories() -> list[Path]:
    """Where site files are looked for, lowest precedence first."""
    directories = [package_data_dir("site-configs"), SYSTEM_SITE_DIR, USER_SITE_DIR.expanduser()]
    extra = os.environ.get(SITE_PATH_VARIABLE, "")
    directories += [Path(p).expanduser() for p in extra.split(os.pathsep) if p]
    return directories


def site_files() -> dict[str, list[Path]]:
    """Site name -> its files, lowest precedence first (files named ``_*.yaml`` are not sites)."""
    found: dict[str, list[Path]] = {}
    for directory in site_directories():
        if directory.is_dir():
            for path in sorted(directory.glob("*.yaml")):
                if not path.name.startswith("_"):
                    found.setdefault(path.stem, []).append(path)
    return found


def load_site(name_or_path: str | os.PathLike[str]) -> Site:
    """Load a site by name (merging every file of that name) or from one file.

    Raises
    ------
    SiteConfigError
        No such site, or a file (or the merged result) does not validate.
    """
    text = os.fspath(name_or_path)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        paths = [Path(text)]
        name = Path(text).stem
    else:
        name = text
        paths = site_files().get(name)
        if not paths:
            known = sorted(site_files())
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise SiteConfigError(name, "", None,
                                  f"no site called {name!r}; {hint}known sites: {', '.join(known) or 'none'}")
    data, lines = read_site_file(paths[0], partial=len(paths) > 1)
    all_lines = {str(paths[0]): lines}
    origins: dict[tuple, str] = {}
    _record_origins(data, origins, str(paths[0]), ())
    origins = {key: f"{paths[0]}:{lines.get(key, 1)}" for key in origins}
    for path in paths[1:]:
        override, override_lines = read_site_file(path, partial=True)
        all_lines[str(path)] = override_lines
        data = _merge(data, override, origins, str(path))
        for key, source in origins.items():
            if source == str(path):
                origins[key] = f"{path}:{override_lines.get(key, 1)}"
    if len(paths) > 1:  # the merged whole must be a complete, valid site
        full, _ = _schemas()
        errors = _schema_errors(data, full, f"{name} (merged from {', '.join(map(str, paths))})", {})
        if errors:
            raise errors[0]
    return Site(name=name, data=data, files=[str(p) for p in paths], origins=origins, lines=all_lines)


def detect_site(names: Iterable[str] | None = None) -> Site | None:
    """The site whose ``hostnames`` match this machine's host name or FQDN, or None."""
    if names is None:
        names = {socket.gethostname(), socket.getfqdn()}
    names = [n for n in names if n]
    for site_name in sorted(site_files()):
        try:
            site = load_site(site_name)
        except SiteConfigError as error:  # one broken file must not keep the others from being found
            logger.warning("gpujobqueue: site %s is skipped: %s", site_name, error)
            continue
        for pattern in site.data.get("hostnames", []):
            if any(pattern_matches(pattern, host) for host in names):
                return site
    return None


DETECTED = "matched by the host name"


def choose_site(site: "str | os.PathLike[str] | Site | None", batch: str | None) -> tuple[Site | None, str]:
    """The site a cluster uses, and how it was chosen.

    ``site`` if given; else, without ``batch`` either, ``gpujobqueue.site`` of dask config,
    else the site whose ``hostnames`` match this machine (:data:`DETECTED`); else none.

    Raises
    ------
    SiteConfigError, GPUJobQueueError
        The chosen site does not load.
    """
    import dask

    how = "given"
    if site is None and batch is None:
        site, how = dask.config.get("gpujobqueue.site", default=None), "gpujobqueue.site in dask config"
    if site is None and batch is None:
        detected = detect_site()
        return (detected, DETECTED) if detected is not None else (None, "no site matches this host name")
    if site is None:
        return None, f"batch={batch} given"
    return (site if isinstance(site, Site) else load_site(site)), how


def site_problems(target: "str | os.PathLike[str]") -> list[str]:
    """What is wrong with a site (a name or a file), each as ``file:line: key: problem``; empty if nothing.

    Beyond the file's own checks, each of its queues' settings is parsed as a cluster parses
    them, so a site that passes here is not refused when used.
    """
    try:
        site = load_site(target)
    except SiteConfigError as error:
        return [str(problem) for problem in getattr(error, "errors", [error])]
    from .batch import cluster_class  # the batch modules import this one

    problems = []
    for queue, entry in site.data["queues"].items():
        if not queue_routing.has_gpus(entry):
            continue  # no GPU job goes there
        # A job the queue takes: as many nodes as it needs at least (its first bin's), and its longest walltime there.
        bins = sorted(queue_routing.walltime_bins(entry), key=lambda b: b.low)
        nodes, walltime = (bins[0].low, bins[0].max_walltime) if bins else (entry.get("min_nodes"), entry.get("max_walltime"))
        keywords = {"site": site, "queue": queue, "nodes": nodes, "walltime": walltime}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RetiredSiteWarning)  # checking a retired site's file is not using it
                cluster_class(site.scheduler).parse_keywords(keywords)
        except SiteConfigError as error:
            if not error.key.startswith("account."):  # the account is the user's to give
                problems.append(str(error))
        except GPUJobQueueError as error:
            problems.append(f"{site.files[-1]}: queues.{queue}: {error}")
    return problems


def site_table() -> list[dict[str, Any]]:
    """One row per known site: name, centre, scheduler, GPUs per node, GPU model, protocol, status
    and the number of unconfirmed facts, and ``retired`` (the date a retired machine stopped, else empty);
    a site whose files do not load gets a row saying why, and the others are listed as usual."""
    rows = []
    for name in sorted(site_files()):
        try:
            data = load_site(name).data
        except SiteConfigError as error:
            rows.append({"name": name, "centre": "-", "scheduler": "-", "gpus": "-", "gpu": "-", "protocol": "-",
                         "status": f"broken: {error}", "retired": "", "unconfirmed": "-"})
            continue
        rows.append({
            "name": name, "centre": data["centre"], "scheduler": data["scheduler"], "gpus": data["node"]["gpus"],
            "gpu": data["node"]["gpu_model"], "protocol": data["network"]["protocol"], "status": data.get("status", "production"),
            "retired": data.get("retired", ""),
            "unconfirmed": len(unconfirmed_facts(data)),
        })
    return rows


def site_settings(site: Site, queue: str | None) -> dict[str, Any]:
    """Cluster keyword defaults from a site, for one of its queues.

    Parameters
    ----------
    site : Site
    queue : str or None
        The site's queue name (``debug``); None means the site's ``default_queue``.

    Returns
    -------
    dict
        Keyword name to value; the batch system's keyword names only.
    """
    data = site.data
    queue_name = queue or data["default_queue"]
    entry = site.queue(queue_name)
    node, worker = site.node(queue_name), site.worker(queue_name)
    gpu = {**data["gpu_request"], **entry.get("gpu_request", {})}
    directives, network = data.get("directives", {}), data.get("network", {})
    settings: dict[str, Any] = {
        "queue": entry["partition"] if "partition" in entry else queue_name,
        "gpus_per_node": entry.get("gpus_per_node", node["gpus"]),
        "gpu_request": gpu["style"],
        "gpu_type": gpu.get("type"),
        "exclusive": directives.get("exclusive"),
        "job_extra_directives": [*directives.get("extra", []), *entry.get("extra", [])] or None,
        "worker_mode": worker.get("mode"),
        "visibility_variable": worker.get("visibility_variable"),
        # Unless the site says otherwise, each GPU gets its share of the node's cores.
        "cpus_per_gpu": worker.get("cpus_per_gpu", max(1, node["cpus"] // node["gpus"])),
        "memory_per_gpu": worker.get("memory_per_gpu"),
        "local_directory": worker.get("local_directory"),
        "interface": network.get("interface"),
        "protocol": network.get("protocol"),
        "job_script_prologue": data.get("prologue"),
        "environment": {k: str(v) for k, v in data.get("environment", {}).items()} or None,
        # Used by jobs of several nodes (and by every job for jsrun); one-node jobs start their workers directly.
        "launcher": data["launcher"]["name"],
        "launcher_args": data["launcher"].get("args") or None,
    }
    for transport, on in network.get("ucx", {}).items():
        settings[f"enable_{transport}"] = on
    from .batch import cluster_class  # the batch modules import this one

    # The batch system's own keywords, read from the site by its module.
    settings.update(cluster_class(data["scheduler"]).site_settings(entry=entry, gpu=gpu, directives=directives))
    return {key: value for key, value in settings.items() if value is not None}


def node_memory_bytes(size: Any) -> int:
    """A node's ``memory`` in bytes, ``GB`` and ``TB`` read as GiB and TiB: a node's memory is
    built and sold in binary units (Perlmutter's "256 GB" is 256 GiB of DIMMs), whatever the
    page says; a request is checked against that."""
    from .request import parse_size

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKMGTP])i?B\s*", str(size))
    if match is None:
        return parse_size("node.memory", size)
    return int(float(match.group(1)) * 1024 ** " KMGTP".index(match.group(2).upper()))


def _given_field(settings: Any, per_job: str, per_gpu: str) -> str | None:
    """Which keyword set an amount: the per-job one (``memory``) or the per-GPU one (``memory_per_gpu``)."""
    if not settings:
        return None
    return per_job if settings.get(per_job) is not None else per_gpu if settings.get(per_gpu) is not None else None


def _asked_per_node(settings: Any, per_job: str, per_gpu: str, request: Any, text: str) -> str:
    """A per-node amount as it was asked, in the user's words: ``memory_per_gpu='100GB' x 4 GPUs = 400 GB per node``."""
    field = _given_field(settings, per_job, per_gpu)
    if field == per_gpu:
        return f"{per_gpu}={settings[per_gpu]!r} x {request.gpus_per_node} GPUs = {text} per node"
    if field == per_job and request.nodes > 1:
        return f"{per_job}={settings[per_job]!r} over {request.nodes} nodes = {text} per node"
    if field == per_job:
        return f"{per_job}={settings[per_job]!r} per node"
    return f"{text} per node"


def check_request(site: Site, queue: str | None, request: Any, settings: Any = None) -> None:
    """Refuse a job request the site cannot run, naming the site file and key.

    Parameters
    ----------
    site : Site
    queue : str or None
        The site queue the job goes to (None: the default).
    request : JobRequest
        The parsed request.
    settings : mapping, optional
        The settings it was parsed from: a refusal then names the keyword that asked too
        much (``memory`` or ``memory_per_gpu``), as the error's ``field``.

    Raises
    ------
    SiteConfigError
        :class:`QueueRefusedError` (also a ``ValidationError``) for a job the queue cannot take,
        naming the queue that can.
    """
    data = site.data
    queue_name = queue or data["default_queue"]
    entry = site.queue(queue_name)

    def refuse(key: tuple, message: str, field: str | None = None):
        path, line = site.location(*key)
        error = SiteConfigError(path, _dotted(key), line, f"{site.name}: {message}")
        error.field = field  # the keyword asking too much, where one does
        raise error

    node = site.node(queue_name)
    gpus_key = ("queues", queue_name, "gpus_per_node") if "gpus_per_node" in entry else site.key_of(queue_name, "node", "gpus")
    node_gpus = entry.get("gpus_per_node", node["gpus"])
    if request.gpus_per_node > node_gpus:
        refuse(gpus_key, f"gpus_per_node={request.gpus_per_node} but {queue_name} jobs get at most {node_gpus} GPUs per node")
    if request.cpus_per_node > node["cpus"]:
        asked = _asked_per_node(settings, "cores", "cpus_per_gpu", request, f"{request.cpus_per_node} cores")
        refuse(site.key_of(queue_name, "node", "cpus"), f"{asked} asked but {queue_name} nodes have {node['cpus']}",
               field=_given_field(settings, "cores", "cpus_per_gpu"))
    node_memory = node_memory_bytes(node["memory"]) if node.get("memory") is not None else None
    if node_memory is not None and request.memory_per_node is not None and request.memory_per_node > node_memory:
        amount = f"{request.memory_per_node / 2**30:.4g} GiB"
        asked = _asked_per_node(settings, "memory", "memory_per_gpu", request, amount)
        refuse(site.key_of(queue_name, "node", "memory"), f"{asked} asked but {queue_name} nodes have {node['memory']} "
                                                                f"(read as {node_memory / 2**30:.4g} GiB)",
               field=_given_field(settings, "memory", "memory_per_gpu"))
    refused = queue_routing.refusal(queue_name, entry, request.nodes, request.walltime, request.walltime_text)
    if refused is not None:
        others = [name for name in queue_routing.queues_taking(data["queues"], data["default_queue"], request.nodes,
                                                                request.walltime, request.walltime_text, routed_only=False)
                  if name != queue_name]
        if others:
            hint, field = f"; queue {others[0]!r} takes it (queue={others[0]!r})", "queue"
        else:
            hint = f"; no queue of {site.name} takes {queue_routing.nodes_text(request.nodes)} for {request.walltime_text}"
            field = refused.field
        path, line = site.location(*refused.key)
        raise QueueRefusedError(path, _dotted(refused.key), line, f"{site.name}: {refused.message}{hint}", field)
    account = data.get("account", {})
    if account.get("required") and not request.account:
        refuse(("account", "required"), f"jobs need an account (account=...){': ' + account['hint'] if account.get('hint') else ''}")
    if request.account and account.get("pattern") and not pattern_matches(account["pattern"], request.account):
        refuse(("account", "pattern"), f"account {request.account!r} does not match {account['pattern']!r}{': ' + account['hint'] if account.get('hint') else ''}")
    if request.gpu_request in data["gpu_request"].get("rejects", []):
        refuse(("gpu_request", "rejects"), f"the site refuses GPU requests of the {request.gpu_request!r} form; use {data['gpu_request']['style']!r}")


def route_queue(site: Site, request: Any) -> tuple[str, str]:
    """The queue a site picks for a job that names none, and why (one line).

    The first of :func:`~gpujobqueue.queue_routing.routing_order` (the default queue, then the
    others in file order but those with ``routing: false``) that takes the job's nodes and walltime.

    Parameters
    ----------
    site : Site
    request : JobRequest
        The parsed request (its ``nodes`` and ``walltime`` count).

    Raises
    ------
    QueueRefusedError
        No queue the site picks takes the job: the default queue's refusal, naming a queue
        the user may name (a debug one) where one takes it.
    """
    data = site.data
    taking = queue_routing.queues_taking(data["queues"], data["default_queue"], request.nodes, request.walltime,
                                         request.walltime_text)
    if taking:
        name = taking[0]
        return name, queue_routing.fit_text(name, data["queues"][name], request.nodes, request.walltime_text)
    order = queue_routing.routing_order(data["queues"], data["default_queue"])
    refusals = {name: queue_routing.refusal(name, data["queues"][name], request.nodes, request.walltime,
                                            request.walltime_text) for name in order}
    # Blame the first queue that takes the job's nodes but not its walltime, else the first one.
    blamed = next((r for r in refusals.values() if r is not None and r.field == "walltime"),
                  next(iter(refusals.values()), None))
    if blamed is None:  # no queue with GPUs: the default queue's refusal says so
        check_request(site, None, request)
        raise AssertionError("the default queue takes the job it was found not to take")  # pragma: no cover
    others = [name for name in queue_routing.queues_taking(data["queues"], data["default_queue"], request.nodes,
                                                            request.walltime, request.walltime_text, routed_only=False)]
    hint = f"; name queue={others[0]!r}, which takes it" if others else ""
    why = "; ".join(f"{name}: {refused.message}" for name, refused in refusals.items() if refused is not None)
    path, line = site.location(*blamed.key)
    raise QueueRefusedError(path, _dotted(blamed.key), line,
                            f"{site.name}: no queue it chooses takes {queue_routing.nodes_text(request.nodes)} for "
                            f"{request.walltime_text} ({why}){hint}", "queue" if others else blamed.field)


class UnconfirmedSiteFactsWarning(UserWarning):
    """A site in use states facts that its centre's documentation did not confirm (its
    ``unconfirmed`` list): they may be wrong on the machine."""


_warned_unconfirmed: set[str] = set()


def unconfirmed_facts(data: dict) -> list[str]:
    """The facts a site file lists as not confirmed by the centre's documentation.

    Parameters
    ----------
    data : dict
        A site's merged config (:attr:`Site.data`).
    """
    return [str(fact) for fact in data.get("unconfirmed") or []]


def _fact_head(fact: str, width: int = 40) -> str:
    """A fact's leading words, before its explanation (in parentheses, after a comma or a semicolon);
    for a line that starts with the keys it is about, those keys."""
    keys = unconfirmed_keys(fact)
    if keys:
        shown = [keys[0]]
        for key in keys[1:]:
            if len("/".join(shown + [key])) > width - 1:
                return "/".join(shown) + "/…"
            shown.append(key)
        return "/".join(shown)
    head = re.split(r" \(|[;,:] | - ", " ".join(fact.split()), maxsplit=1)[0].rstrip(" ,.:")
    return head if len(head) <= width else head[: width - 1].rstrip() + "…"


def unconfirmed_warning(site: Site, width: int = 120) -> str | None:
    """The one-line warning naming the site's unconfirmed facts (by their leading words, as many
    as fit in ``width`` characters, then how many more), or None when it has none."""
    facts = unconfirmed_facts(site.data)
    if not facts:
        return None
    heads: list[str] = []
    for fact in facts:
        head = _fact_head(fact)
        if heads and len("; ".join(heads + [head])) > width:
            break
        heads.append(head)
    named = "; ".join(heads) + (f"; and {len(facts) - len(heads)} more" if len(heads) < len(facts) else "")
    plural = "s" if len(facts) > 1 else ""
    return (f"{site.name}: {len(facts)} fact{plural} unconfirmed by the centre's documentation: {named}; "
            f"see gpujobqueue show {site.name}")


def warn_unconfirmed(site: Site | None) -> None:
    """Warn (:class:`UnconfirmedSiteFactsWarning`, once per site per process) that a site in
    use has unconfirmed facts; a rendered script or a started cluster calls it."""
    if site is None or site.name in _warned_unconfirmed:
        return
    message = unconfirmed_warning(site)
    if message is not None:
        _warned_unconfirmed.add(site.name)
        warnings.warn(message, UnconfirmedSiteFactsWarning, stacklevel=3)
