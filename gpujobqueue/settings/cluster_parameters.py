"""The keywords every gpujobqueue cluster class takes, documented once (as dask-jobqueue keeps
``cluster_parameters``): one entry per keyword of the registry (:mod:`~gpujobqueue.settings.keywords`), with its
type, documentation and default; only the constructor's parameters that are no setting (``n_workers``, ``site``,
dask-jobqueue's pass-through arguments) are written here. Each cluster class's docstring is composed from it
(:func:`~gpujobqueue.settings.docstrings.with_shared_parameters`)."""

from __future__ import annotations

import textwrap
from typing import Sequence

from .keywords import Keyword, documented_keywords

_ENTRY_INDENT, _TEXT_INDENT, _WIDTH = " " * 4, " " * 8, 112

_CONSTRUCTOR_PARAMETERS = """
    n_workers : int
        GPU workers to start at once (default 0; see :meth:`scale`). Every count here is a whole
        number, given as an integer or in the digits 0-9 (``"4"``; not ``"1_0"`` or ``"٤"``,
        which Python's ``int()`` reads as 10 and 4), within the bounds of
        :mod:`gpujobqueue.settings.limits`; every size and duration the same, with a unit.
    site : str or Site, optional
        A site config (``"perlmutter"``, or a path to a YAML file) whose facts fill in
        every keyword not given; ``queue`` then names one of the site's queues, and the
        request is checked against the site's limits before anything is submitted.
        Each keyword is resolved once: the keyword, else ``gpujobqueue.<batch>.<key>`` in dask
        config, else the site, else its default.
    dashboard_address : str
        Refused, as in dask-jobqueue: give it in ``scheduler_options``, which opens the
        scheduler's dashboard there (``dashboard=True`` alone: ``127.0.0.1:8787``) with an
        ``OpenDashboardWarning`` saying who can read it. By default the cluster serves no web
        page: no dashboard, and no route on the scheduler's and workers' HTTP servers, which
        listen on the loopback; ``--dashboard-address`` in ``worker_extra_args`` opens the workers'.
    host : str
        Refused, as in dask-jobqueue: give the scheduler's host in ``scheduler_options``.
    env : dict
        distributed's name for ``environment`` (``LocalCluster(env=...)``, a nanny's ``env``): the
        workers' environment variables, exported in the job and checked as ``environment``'s.
        dask-jobqueue refuses it since 0.7.2, and dropped it without a word before.
    job_cls : type
        The job class; each batch system's cluster class sets its own.
    security, scheduler_cls, silence_logs, asynchronous, loop, name, config_name
        As in :class:`dask_jobqueue.SLURMCluster`.
"""


def keyword_entries(keywords: Sequence[Keyword]) -> str:
    """A numpydoc Parameters section's entries for ``keywords``: ``name : type``, then the keyword's
    documentation and its default."""
    entries = []
    for keyword in keywords:
        text = textwrap.fill(
            f"{keyword.doc} {keyword.default_doc}",
            _WIDTH,
            initial_indent=_TEXT_INDENT,
            subsequent_indent=_TEXT_INDENT,
            break_on_hyphens=False,
        )
        entries.append(f"{_ENTRY_INDENT}{keyword} : {keyword.type_doc}\n{text}")
    return "\n".join(entries) + "\n"


def parameters_section(keywords: Sequence[Keyword], extra: str = "") -> str:
    """A docstring's Parameters section: ``extra`` (entries written by hand), then one entry per keyword."""
    return f"\n{_ENTRY_INDENT}Parameters\n{_ENTRY_INDENT}----------{extra.rstrip()}\n{keyword_entries(keywords)}"


def shared_parameters() -> str:
    """The shared Parameters section of every cluster class, from the keyword registry as it is now."""
    return parameters_section(documented_keywords(), _CONSTRUCTOR_PARAMETERS)


CLUSTER_PARAMETERS = shared_parameters()
