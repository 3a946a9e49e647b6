"""Each batch system's cluster class documents every keyword it takes: its own, then the
shared ones of :class:`~gpujobqueue.cluster.GPUJobQueueCluster` (as dask-jobqueue's classes
document theirs, and as ``help(SLURMGPUCluster)`` should show)."""

from __future__ import annotations

import re

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
