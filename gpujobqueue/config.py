"""The one place that resolves settings: keyword > dask config > site config > package default."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Iterable, Mapping

import dask.config
import yaml

from .errors import UnknownKeywordError

_DEFAULTS_FILE = Path(__file__).with_name("gpujobqueue.yaml")


def _register_defaults() -> None:
    with _DEFAULTS_FILE.open() as f:
        defaults = yaml.safe_load(f)
    dask.config.update_defaults(defaults)


_register_defaults()


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
    """``gpujobqueue.<batch>.<name>`` from dask config (None when unset)."""
    section = dask.config.get(f"gpujobqueue.{batch}", default={}) or {}
    return section.get(name.replace("_", "-"))


def resolve(
    batch: str, keywords: Mapping[str, Any], names: Iterable[str], site_defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Settings for one cluster: each name from the keywords, else ``gpujobqueue.<batch>.<name>``,
    else the site's value.

    Parameters
    ----------
    batch : str
        Batch system whose config section applies (``slurm``, ``local``).
    keywords : mapping
        The keyword arguments the user gave; None counts as not given.
    names : iterable of str
        Every setting name to resolve (keyword spelling, with underscores).
    site_defaults : mapping, optional
        The site config's values (see :func:`gpujobqueue.sites.site_settings`).

    Returns
    -------
    dict
        Name to value, None where nothing sets it (the parsers then apply defaults).
    """
    section = dask.config.get(f"gpujobqueue.{batch}", default={}) or {}
    site_defaults = site_defaults or {}
    settings = {}
    for name in names:
        value = keywords.get(name)
        if value is None:
            value = section.get(name.replace("_", "-"))
        if value is None:
            value = site_defaults.get(name)
        settings[name] = value
    return settings
