"""The keywords every gpujobqueue cluster class takes, documented once (as dask-jobqueue keeps
``cluster_parameters``): one entry per keyword of the registry (:mod:`~gpujobqueue.settings.keywords`), with its
type, documentation and default; only the constructor's parameters that are no setting (``n_workers``, ``site``,
dask-jobqueue's pass-through arguments) are written here. Each cluster class's docstring is composed from it
(:func:`with_shared_parameters`: its own keywords, then the shared ones, as dask-jobqueue's classes document theirs
and as ``help(SLURMGPUCluster)`` should show)."""

from __future__ import annotations

import re
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


_INDENT = "    "  # class docstrings: every line after the first is indented by four spaces
_UNDERLINE = re.compile(r"\s*-{3,}\s*")


def _sections(lines: list[str]) -> list[tuple[str, int, int]]:
    """The numpydoc sections of a docstring's lines: (title, first body line, end)."""
    starts = [
        (lines[i].strip(), i) for i in range(len(lines) - 1) if lines[i].strip() and _UNDERLINE.fullmatch(lines[i + 1])
    ]
    ends = [i for _, i in starts[1:]] + [len(lines)]
    return [(title, i + 2, end) for (title, i), end in zip(starts, ends)]


def _entries(body: list[str]) -> list[tuple[set[str], list[str]]]:
    """A Parameters section's entries: the names each documents, and its lines."""
    entries: list[tuple[set[str], list[str]]] = []
    for line in body:
        if line.startswith(_INDENT) and not line.startswith(_INDENT + " "):
            names = {name.strip() for name in line.split(" : ")[0].split(",")}
            entries.append((names, [line]))
        elif entries:
            entries[-1][1].append(line)
    for _, entry_lines in entries:
        while entry_lines and not entry_lines[-1].strip():
            entry_lines.pop()
    return entries


def with_shared_parameters(doc: str, shared_doc: str) -> str:
    """``doc`` with the entries of ``shared_doc``'s Parameters section added to its own
    Parameters section (made before its next section, or at its end, when it has none).
    A shared entry whose names ``doc`` documents already is left out."""
    lines, shared_lines = doc.rstrip().split("\n"), shared_doc.split("\n")
    shared = next(((start, end) for title, start, end in _sections(shared_lines) if title == "Parameters"), None)
    if shared is None:
        return doc
    sections = _sections(lines)
    own = next(((start, end) for title, start, end in sections if title == "Parameters"), None)
    if own is None:
        at = sections[0][1] - 2 if sections else len(lines)
        lines[at:at] = [f"{_INDENT}Parameters", f"{_INDENT}----------"]
        own = (at + 2, at + 2)
    own_entries = _entries(lines[own[0] : own[1]])
    documented = set().union(*(names for names, _ in own_entries))
    shared_entries = _entries(shared_lines[shared[0] : shared[1]])
    added = [line for names, entry in shared_entries if not names <= documented for line in entry]
    merged = [line for _, entry in own_entries for line in entry] + added + [""]
    lines[own[0] : own[1]] = merged
    return "\n".join(lines).rstrip() + "\n    "
