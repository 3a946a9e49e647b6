"""The registry of batch systems: one :class:`~gpujobqueue.batch.base.BatchSystem` per name, found through the
entry-point group ``gpujobqueue.batch_systems`` (gpujobqueue's own in its ``setup.cfg``, another package's the same
way) or added at run time by :func:`register`. It imports no batch module: the entry points are loaded the first time
it is asked, so the modules below the batch modules can ask it without importing the modules that import them."""

from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import sys
import sysconfig
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..settings import config
from ..settings.keywords import CHOICE, Keyword, command_line_base_keywords, jobqueue_keys

if TYPE_CHECKING:
    from .base import BatchSystem

logger = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "gpujobqueue.batch_systems"
# Without a site or gpujobqueue.batch: the embedded batch system, jobs as processes on this machine.
DEFAULT_BATCH = "local"
_OWN_DISTRIBUTION = "gpujobqueue"
_installed: dict[str, type[BatchSystem]] | None = None  # the entry points', once loaded
_registered: dict[str, type[BatchSystem]] = {}  # register()'s


def _installed_entry_points() -> list[importlib.metadata.EntryPoint]:
    """The group's entry points of the distributions on ``sys.path`` but the current directory (unless it is a
    site-packages folder): a ``*.dist-info`` another user left in a shared folder one stands in must not run."""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the current directory was removed: no entry can be it
        here = None
    kept = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    path = [
        entry
        for entry in sys.path
        if entry and os.path.isabs(entry) and (os.path.realpath(entry) != here or here in kept)
    ]
    found, seen = [], set()
    for dist in importlib.metadata.distributions(path=path):
        entries = [entry for entry in dist.entry_points if entry.group == ENTRY_POINT_GROUP]
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower() if entries else ""
        if entries and name not in seen:  # the first of a name on the path, as Python imports it
            seen.add(name)
            found += entries
    return found


def _load_entry_points() -> dict[str, type[BatchSystem]]:
    """The batch systems the installed packages declare, gpujobqueue's own first, each group by name;
    a plugin that does not load, or is no batch system, is left out with a warning line naming it."""
    found = _installed_entry_points()
    own = sorted(
        (entry for entry in found if entry.dist is not None and entry.dist.name == _OWN_DISTRIBUTION),
        key=lambda entry: entry.name,
    )
    others = sorted((entry for entry in found if entry not in own), key=lambda entry: entry.name)
    if not own:
        raise RuntimeError(
            f"gpujobqueue's installed metadata declares no batch systems (entry-point group {ENTRY_POINT_GROUP}); "
            "install gpujobqueue again (pip install -e . in a checkout) so that it does"
        )
    systems: dict[str, type[BatchSystem]] = {}
    for entry in [*own, *others]:
        if entry.name in systems:
            continue  # a second package declaring a name keeps the first (gpujobqueue's own stay its own)
        try:
            systems[entry.name] = _checked(entry.load(), entry.name)
        except Exception as error:  # a plugin's import may raise anything; the other batch systems work
            words = " ".join(f"{type(error).__name__}: {error}".split())
            source = f" of {entry.dist.name}" if entry.dist is not None else ""
            logger.warning(
                "gpujobqueue: batch-system plugin %s (%s%s) is skipped: %s", entry.name, entry.value, source, words
            )
    return systems


def _checked(cls: Any, name: str | None = None) -> type[BatchSystem]:
    """``cls`` if it is a usable batch system (named ``name`` where given); else TypeError naming what is wrong."""
    from .base import BatchSystem

    if not (isinstance(cls, type) and issubclass(cls, BatchSystem)):
        raise TypeError(f"{cls!r} is not a gpujobqueue.batch.base.BatchSystem subclass")
    if name is not None and cls.name != name:
        raise TypeError(f"{cls.__name__}.name is {cls.name!r}, but its entry point is named {name!r}")
    cls.check_declaration()
    return cls


def batch_systems() -> dict[str, type[BatchSystem]]:
    """Every batch system by name: gpujobqueue's own, then the other packages', then :func:`register`'s."""
    global _installed
    if _installed is None:
        _installed = _load_entry_points()
        _add_settings(_installed)
    return {**_installed, **{name: cls for name, cls in _registered.items() if name not in _installed}}


def register(cls: type[BatchSystem]) -> type[BatchSystem]:
    """Add a batch system defined at run time (usable as a class decorator; a package's is an entry point instead).
    A TypeError where ``cls`` is no BatchSystem that declares what it must; a ValueError where its name is taken."""
    _checked(cls)
    known = batch_systems().get(cls.name)
    if known is not None and known is not cls:
        raise ValueError(f"the batch system name {cls.name!r} is taken by {known.__module__}.{known.__qualname__}")
    _registered[cls.name] = cls
    _add_settings({cls.name: cls})
    return cls


def _add_settings(systems: dict[str, type[BatchSystem]]) -> None:
    """The dask config sections ``gpujobqueue.<name>`` of ``systems``, and their ``jobqueue.<name>`` keys."""
    config.add_batch_sections({name: cls.setting_names() for name, cls in systems.items()})
    for name, cls in systems.items():
        config.add_jobqueue_keys(name, jobqueue_keys(cls.setting_names(), cls.synonyms))


def unregister(name: str) -> None:
    """Forget a batch system that :func:`register` added (a test's, a notebook's); the installed ones stay."""
    if _registered.pop(name, None) is not None:
        config.remove_batch_section(name)


def names() -> tuple[str, ...]:
    """The batch systems' names, in the order the command line and the messages list them (:func:`batch_systems`)."""
    return tuple(batch_systems())


def batch_system(name: str) -> type[BatchSystem]:
    """The batch system called ``name``; a ValidationError naming ``batch`` for a name no batch system has."""
    systems = batch_systems()
    if not isinstance(name, str) or name not in systems:
        raise ValidationError("batch", f"{name!r} is not a batch system; use one of {', '.join(systems)}")
    return systems[name]


def command_line_keywords() -> list[Keyword]:
    """Every keyword of every batch system that ``render`` mirrors as an option, each once; the
    choices of ``gpu_request`` and ``launcher`` are those of the batch systems registered (each once)."""
    systems = batch_systems().values()
    choices = {
        "gpu_request": tuple(dict.fromkeys(style for cls in systems for style in cls.gpu_request_styles)),
        "launcher": ("direct", *dict.fromkeys(name for cls in systems for name in cls.launcher_names())),
    }
    found: dict[str, Keyword] = {}
    for keyword in command_line_base_keywords():
        chosen = keyword.kind == CHOICE and keyword in choices
        found[keyword] = keyword.with_facts(choices=choices[keyword]) if chosen else keyword
    for cls in systems:
        for keyword in cls.keywords:
            found.setdefault(keyword, keyword)
    return list(found.values())
