"""The one place that reads dask config: settings resolved keyword > dask config > site config >
package default, and a named getter for each of gpujobqueue's own settings, whose defaults are in
gpujobqueue/gpujobqueue.yaml. dask-jobqueue's ``jobqueue.<name>.*`` is never read."""

from __future__ import annotations

import contextlib
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


def _get(key: str) -> Any:
    return dask.config.get(f"gpujobqueue.{key}")


def adapt_interval() -> Any:
    """``gpujobqueue.adapt.interval``: time between two looks of ``adapt()``."""
    return _get("adapt.interval")


def adapt_wait_count() -> Any:
    """``gpujobqueue.adapt.wait-count``: looks at a lower need before ``adapt()`` scales down."""
    return _get("adapt.wait-count")


def job_poll_interval() -> Any:
    """``gpujobqueue.job-poll-interval``: how often a cluster asks its batch system about its jobs."""
    return _get("job-poll-interval")


def query_timeout() -> Any:
    """``gpujobqueue.query-timeout``: how long a status query may go unanswered before it is stopped."""
    return _get("query-timeout")


def progress() -> Any:
    """``gpujobqueue.progress``: ``auto``, true or false."""
    return _get("progress")


def max_failures() -> Any:
    """``gpujobqueue.replace.max-failures``: jobs in a row that fail before the replacing stops."""
    return _get("replace.max-failures")


def usage_sample_interval() -> Any:
    """``gpujobqueue.usage.sample-interval``: how often a cluster samples how busy its workers are."""
    return _get("usage.sample-interval")


def default_batch() -> str:
    """``gpujobqueue.batch``: the batch system ``GPUCluster()`` uses when none is given."""
    return _get("batch")


def default_site() -> Any:
    """``gpujobqueue.site``: the site ``GPUCluster()`` uses when none is given (None: detected)."""
    return _get("site")


def shared_temp_directory(batch: str) -> str | None:
    """``gpujobqueue.<batch>.shared-temp-directory``: where a cluster keeps its private folder."""
    return configured(batch, "shared_temp_directory")


def max_jobs_per_user(batch: str) -> Any:
    """``gpujobqueue.<batch>.max-jobs-per-user``: a queue's limit on one user's jobs, over the site's."""
    return configured(batch, "max_jobs_per_user")


def scheduler_options(batch: str) -> dict | None:
    """``gpujobqueue.<batch>.scheduler-options``: the scheduler's options when none are given."""
    return configured(batch, "scheduler_options")


def ucx_cuda_context(needed: bool) -> contextlib.AbstractContextManager:
    """While a cluster starts: ``distributed-ucxx.create-cuda-context`` on where ``needed`` (UCX
    with a GPU here). distributed-ucxx reads it once, at this process's first UCX listener or
    connection (``init_once``), which the cluster's start makes; scoped, so it does not stay
    set for the rest of the process."""
    if not needed:
        return contextlib.nullcontext()
    return dask.config.set({"distributed-ucxx.create-cuda-context": True})


def no_scheduler_http_routes(closed: bool) -> contextlib.AbstractContextManager:
    """While a cluster starts its scheduler in this process: no route in the scheduler's HTTP
    server (``distributed.scheduler.http.routes``, read once, when the scheduler is made), which
    distributed starts whatever ``dashboard=False`` says, where ``closed`` (no dashboard opened);
    scoped, so that other schedulers of this process keep the user's routes."""
    if not closed:
        return contextlib.nullcontext()
    return dask.config.set({"distributed.scheduler.http.routes": []})
