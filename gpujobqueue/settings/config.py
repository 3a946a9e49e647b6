"""The one place that reads dask config: settings resolved keyword > dask config > site config >
package default, and a named getter for each of gpujobqueue's own settings, whose defaults are in
gpujobqueue/gpujobqueue.yaml. dask-jobqueue's ``jobqueue.<name>.*`` is read under gpujobqueue's own
section: only the values a user set, never the defaults dask-jobqueue registers."""

from __future__ import annotations

import contextlib
import difflib
import functools
import math
import operator
import re
import warnings
from typing import Any, Iterable, Mapping

import dask.config

from ..errors import UnknownKeywordError, ValidationError, shown
from .declaration import Keyword
from .defaults import PACKAGE_DEFAULTS
from .keywords import CLUSTER
from .limits import MAX_LIST_ITEMS
from .validation import check_bounded, path_text

# Settings of gpujobqueue.<batch> that the cluster reads beside its keywords' (BatchSystem.setting_names): the
# cluster's own keywords that dask config sets too (gpujobqueue.settings.keywords.CLUSTER), and a queue's per-user job
# limit, which only dask config sets.
CONFIG_ONLY_SETTINGS = ("max_jobs_per_user",)
CLUSTER_SETTINGS = (*CLUSTER, *CONFIG_ONLY_SETTINGS)


class UnknownSettingWarning(UserWarning):
    """A key in one of gpujobqueue's dask config sections that gpujobqueue does not read (a typo)."""


_DEFAULTS = PACKAGE_DEFAULTS["gpujobqueue"]  # registered with dask by .defaults

# Per batch system: dask-jobqueue's key (its spelling, ``-``) to the setting it sets; the batch registry's.
_JOBQUEUE_KEYS: dict[str, dict[str, str]] = {}


def _spelling(name: str) -> str:
    """A setting's key as gpujobqueue.yaml spells it (``gpus-per-node``): dask takes ``_`` and ``-`` for one
    character, and keeps whichever spelling came first (an environment variable's underscores)."""
    return str(name).replace("_", "-")


def _section(*path: str) -> dict[str, Any]:
    """``gpujobqueue[.<path>]`` from dask config, each key in gpujobqueue.yaml's spelling (the values, a setting's
    own mappings among them, as given); empty where unset. A ValidationError where the section is not a mapping,
    one key is set in both spellings to two values, or a value is past the bounds of any (:func:`check_bounded`)."""
    where = ".".join(("gpujobqueue", *path))
    value = _mapping(where)
    section: dict[str, Any] = {}
    spelled_as: dict[str, str] = {}
    for key, setting in value.items():
        name = _spelling(key)
        if path or not isinstance(setting, Mapping):  # a section (gpujobqueue.adapt) is checked as it is read
            check_bounded(f"{where}.{name}", setting)
        if name in section and setting is not None and section[name] is not None and setting != section[name]:
            raise ValidationError(
                f"{where}.{name}",
                f"set twice, as {spelled_as[name]}: {shown(section[name])} and as {key}: {shown(setting)} (dask takes "
                "'_' and '-' for one key); keep one",
            )
        if section.get(name) is None:
            section[name], spelled_as[name] = setting, str(key)
    return section


def _mapping(where: str) -> Mapping[str, Any]:
    """The dask config section ``where`` (``jobqueue.slurm``), empty where unset; a ValidationError
    names the first key on the way set to something else (``jobqueue: [slurm]``)."""
    parts = where.split(".")
    for i in range(1, len(parts) + 1):
        value = dask.config.get(".".join(parts[:i]), default=None)
        if value is None:
            return {}
        if not isinstance(value, Mapping) or len(value) > MAX_LIST_ITEMS:
            raise ValidationError(
                ".".join(parts[:i]), f"expected a mapping of at most {MAX_LIST_ITEMS} settings, got {shown(value)}"
            )
    return value


def add_batch_sections(settings_by_batch: Mapping[str, Iterable[str]]) -> None:
    """Register the section ``gpujobqueue.<batch>`` of each batch system of ``settings_by_batch`` (the registry's,
    as it learns of them) in dask config's defaults: every setting its clusters read (its setting names and
    :data:`CLUSTER_SETTINGS`), null, so that ``dask config get gpujobqueue.<batch>`` lists them."""
    sections = {
        batch: {_spelling(name): None for name in (*names, *CLUSTER_SETTINGS)}
        for batch, names in settings_by_batch.items()
    }
    dask.config.update_defaults({"gpujobqueue": sections})


def add_jobqueue_keys(batch: str, keys: Mapping[str, str]) -> None:
    """Read ``jobqueue.<batch>.<key>`` as the setting ``keys[key]`` (a batch system's
    :meth:`~gpujobqueue.batch.base.BatchSystem.jobqueue_keys`), under ``gpujobqueue.<batch>``."""
    _JOBQUEUE_KEYS[batch] = {_spelling(key): name for key, name in keys.items()}


def _shipped_jobqueue_defaults(batch: str) -> dict[str, Any]:
    """What dask-jobqueue's own jobqueue.yaml (registered in ``dask.config.defaults`` when it is
    imported) holds for ``jobqueue.<batch>``: values nobody set."""
    shipped: dict[str, Any] = {}
    for layer in dask.config.defaults:
        section = (layer.get("jobqueue") or {}).get(batch) if isinstance(layer, Mapping) else None
        if isinstance(section, Mapping):
            shipped.update({_spelling(key): value for key, value in section.items()})
    return shipped


def jobqueue_settings(batch: str) -> dict[str, tuple[Any, str]]:
    """dask-jobqueue's ``jobqueue.<batch>.*`` as the user set it (a file, a ``DASK_JOBQUEUE__*`` variable,
    ``dask.config.set``): setting name to its value and its key. Left out: a value equal to the default
    dask-jobqueue ships (centres hand out whole copies of its jobqueue.yaml, whose untouched lines are no choice),
    null, an empty list or mapping (dask-jobqueue's "unset"), a key that no setting of ``batch`` reads. A
    ValidationError where a section is not a mapping, or a value is past the bounds of any."""
    where = f"jobqueue.{batch}"
    current = _mapping(where)
    keys, shipped = _JOBQUEUE_KEYS.get(batch, {}), _shipped_jobqueue_defaults(batch)
    settings: dict[str, tuple[Any, str]] = {}
    for key, value in current.items():
        spelled = _spelling(key)
        name = keys.get(spelled)
        unset = value is None or (isinstance(value, (list, tuple, Mapping)) and not value)
        if name is None or unset or (spelled in shipped and shipped[spelled] == value):
            continue
        check_bounded(f"{where}.{spelled}", value)
        if name not in settings or spelled.replace("-", "_") == name:  # the current key over a deprecated one
            settings[name] = (value, f"{where}.{spelled}")
    return settings


def batch_settings(batch: str) -> dict[str, tuple[Any, str]]:
    """Every setting dask config sets for ``batch``, read once: setting name to its value and its key,
    ``gpujobqueue.<batch>.<name>`` (either spelling) over what the user set in ``jobqueue.<batch>``
    (:func:`jobqueue_settings`); a setting neither sets is left out."""
    found = dict(jobqueue_settings(batch))
    for key, value in _section(batch).items():
        if value is not None:
            found[key.replace("-", "_")] = (value, f"gpujobqueue.{batch}.{key}")
    return found


def source(batch: str, name: str) -> str | None:
    """Where dask config sets ``name`` for ``batch`` (:func:`batch_settings`), or None."""
    found = batch_settings(batch).get(name)
    return found[1] if found is not None else None


def remove_batch_section(batch: str) -> None:
    """Take back the section :func:`add_batch_sections` registered for ``batch`` (a batch system
    unregistered), where nobody set a value in it: its key is then no longer read."""
    for layer in dask.config.defaults:
        section = layer.get("gpujobqueue") if isinstance(layer, dict) else None
        if isinstance(section, dict):
            section.pop(batch, None)
    own = dask.config.config.get("gpujobqueue")
    if isinstance(own, dict) and isinstance(own.get(batch), Mapping) and all(v is None for v in own[batch].values()):
        del own[batch]


def warn_unknown_keys(batch: str, settings: Iterable[str], batch_sections: Iterable[str]) -> None:
    """Warn (:class:`UnknownSettingWarning`) of each key that gpujobqueue does not read in its own sections
    (``gpujobqueue``, ``gpujobqueue.adapt`` and the like) and in ``gpujobqueue.<batch>``, whose cluster class reads
    ``settings`` and :data:`CLUSTER_SETTINGS`, naming it and the keys it may have meant: a typo is never silent.
    ``batch_sections``: every batch system's section, each checked by its own clusters."""
    sections = set(batch_sections)
    _warn_unknown("gpujobqueue", _section(), {*_DEFAULTS, *sections})
    for name, default in _DEFAULTS.items():
        if isinstance(default, dict) and name not in sections:
            _warn_unknown(f"gpujobqueue.{name}", _section(name), set(default))
    known = {_spelling(name) for name in (*settings, *CLUSTER_SETTINGS)} | set(_DEFAULTS.get(batch) or {})
    _warn_unknown(f"gpujobqueue.{batch}", _section(batch), known)


def _warn_unknown(where: str, section: Mapping[str, Any], known: set[str]) -> None:
    for key in sorted(set(section) - known):
        close = difflib.get_close_matches(key, sorted(known), n=3)
        hint = f"did you mean {' or '.join(close)}?" if close else f"the keys it has: {', '.join(sorted(known))}"
        warnings.warn(
            f"{where}.{key} in dask config is not a setting gpujobqueue reads, and is ignored; {hint}",
            UnknownSettingWarning,
            stacklevel=4,
        )


def check_keywords(given: Iterable[str], accepted: Iterable[str], owner: str | None = None) -> None:
    """Raise :class:`UnknownKeywordError` for the first keyword not in ``accepted``; with
    ``owner`` (the refusing class's name), its message shows ``given`` (a mapping) too."""
    accepted = sorted(set(accepted))
    for keyword in given:
        if keyword not in accepted:
            raise UnknownKeywordError(
                keyword,
                difflib.get_close_matches(keyword, accepted, n=3),
                owner,
                dict(given) if owner is not None and isinstance(given, Mapping) else None,
            )


def configured(batch: str, name: str) -> Any:
    """What dask config sets ``name`` to for ``batch`` (:func:`batch_settings`); None when nothing does."""
    return batch_settings(batch).get(name, (None, None))[0]


def resolve(
    batch: str,
    keywords: Mapping[str, Any],
    names: Iterable[str],
    site_defaults: Mapping[str, Any] | None = None,
    configured_now: Mapping[str, tuple[Any, str]] | None = None,
) -> dict[str, Any]:
    """Each of the setting ``names`` (keyword spelling) for one cluster: from the ``keywords`` given (None is not
    given), else dask config (:func:`batch_settings` of ``batch``, or ``configured_now`` where the caller read it
    already), else the site's value (``site_defaults``); None where nothing sets it (the parsers then apply
    defaults)."""
    configured_here = batch_settings(batch) if configured_now is None else configured_now
    site_defaults = site_defaults or {}
    settings = {}
    for name in names:
        value = keywords.get(name)
        if value is None:
            value = configured_here.get(name, (None, None))[0]
        if value is None:
            value = site_defaults.get(name)
        settings[name] = name.taken(value) if isinstance(name, Keyword) else value
    return settings


def setting(key: str) -> Any:
    """``gpujobqueue.<key>`` (``adapt.interval``, ``job-poll-interval``, ``progress``), whichever
    spelling; the package's default (gpujobqueue/gpujobqueue.yaml) where it is unset or null."""
    *path, name = key.split(".")
    value = _section(*path).get(name)
    return functools.reduce(operator.getitem, (*path, name), _DEFAULTS) if value is None else value


WORKER_SATURATION_KEY = "gpujobqueue.worker-saturation"
MAX_WORKER_SATURATION = 1000.0  # tasks ahead per thread; beyond it, say inf
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+", re.ASCII)


def parse_worker_saturation(value: Any) -> float | None:
    """A worker saturation (distributed's ``worker-saturation``): a number in (0, 1000] or ``inf``; None for
    ``"distributed"`` (distributed's own setting is left alone); anything else a ValidationError."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text == "distributed":
        return None
    if text == "inf" or (isinstance(value, float) and math.isinf(value) and value > 0):
        return math.inf
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        number = float(value)
    elif text is not None and _DECIMAL.fullmatch(text):
        number = float(text)
    if number is None or not 0 < number <= MAX_WORKER_SATURATION:
        raise ValidationError(
            WORKER_SATURATION_KEY,
            f"a number > 0 and at most {MAX_WORKER_SATURATION:g}, inf, or 'distributed' for distributed's own;"
            f" got {shown(value)}",
        )
    return number


def worker_saturation() -> float | None:
    """``gpujobqueue.worker-saturation``: the clusters' schedulers' worker saturation; None where
    it is ``distributed`` (distributed's own ``distributed.scheduler.worker-saturation``)."""
    return parse_worker_saturation(setting("worker-saturation"))


def worker_saturation_text(value: float | None) -> str | None:
    """A worker saturation (:func:`worker_saturation`) as a ``DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION``
    value for a scheduler started in a job (``inf``, which distributed reads from the environment as such)."""
    if value is None:
        return None
    return "inf" if math.isinf(value) else repr(value)


def default_batch() -> str:
    """``gpujobqueue.batch``: the batch system ``GPUCluster()`` uses when none is given."""
    return path_text("gpujobqueue.batch", setting("batch"))


def default_site() -> str | None:
    """``gpujobqueue.site``: the site ``GPUCluster()`` uses when none is given (None: detected); a
    site's name or file."""
    site = setting("site")
    return None if site is None else path_text("gpujobqueue.site", site)


def _set_while(key: str, value: Any, on: bool) -> contextlib.AbstractContextManager:
    """``dask.config.set({key: value})`` where ``on``, else nothing; for the settings that distributed reads once,
    as a cluster's start makes its scheduler or first UCX connection, scoped so that the rest of the process keeps
    the user's."""
    return dask.config.set({key: value}) if on else contextlib.nullcontext()


def scheduler_worker_saturation(value: float | None) -> contextlib.AbstractContextManager:
    """While a cluster starts its scheduler here: distributed's worker saturation set to ``value``
    (:func:`worker_saturation`, read when the cluster was made); None: distributed's own."""
    return _set_while("distributed.scheduler.worker-saturation", value, value is not None)


def ucx_cuda_context(needed: bool) -> contextlib.AbstractContextManager:
    """While a cluster starts: ``distributed-ucxx.create-cuda-context`` on where ``needed`` (UCX with a GPU here)."""
    return _set_while("distributed-ucxx.create-cuda-context", True, needed)


def no_scheduler_http_routes(closed: bool) -> contextlib.AbstractContextManager:
    """While a cluster starts its scheduler here: no route in the scheduler's HTTP server (which distributed starts
    whatever ``dashboard=False`` says), where ``closed`` (no dashboard opened)."""
    return _set_while("distributed.scheduler.http.routes", [], closed)
