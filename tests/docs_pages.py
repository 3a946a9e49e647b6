"""The docs pages' fenced blocks, each with the marker line just before it, for the tests that run them
(tests/test_docs_code.py) and the generator of their sample outputs (tests/docs_samples.py).

A marker is an HTML comment alone on the line before the fence, which neither GitHub nor Sphinx shows:

- ``<!-- not run: REASON -->``: a fragment, not meant to run (``...`` stands for the rest of a call);
- ``<!-- output of: WHAT -->``: the block is what WHAT prints, made by tests/docs_samples.py;
- ``<!-- recorded: WHERE -->``: the block is what a command printed on a machine that is not at hand (a GPU node,
  the tests' real SLURM), copied as it printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The pages: README.md and docs/ (its batch/ folder too; docs/site-research/ holds the centres' sources).
PAGES = [
    "README.md",
    *(str(p.relative_to(ROOT)) for p in sorted([*ROOT.glob("docs/*.md"), *ROOT.glob("docs/batch/*.md")])),
]

FENCE = re.compile(r"^```(\S*).*$")
MARKER = re.compile(r"^<!-- (not run|output of|recorded): (.+?) -->$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language (``""`` for a bare fence; ``{directive}`` for a MyST directive),
    text, the line of its opening fence (1-based) and its marker (kind, value) where it has one."""

    page: str
    line: int
    language: str
    text: str
    marker: tuple[str, str] | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: str, text: str | None = None) -> list[Block]:
    """The fenced blocks of ``page`` (a path relative to the checkout), in order."""
    lines = (ROOT / page).read_text().splitlines() if text is None else text.splitlines()
    found, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].rstrip() == "```")
        previous = lines[index - 1] if index else ""
        marker = MARKER.match(previous)
        body = "".join(f"{line}\n" for line in lines[index + 1 : end])
        found.append(Block(page, index + 1, opening.group(1), body, marker.groups() if marker else None))
        index = end + 1
    return found


def shell_lines(block: Block) -> list[str]:
    """A bash block's command lines, continuation lines joined, comments kept (bash drops them)."""
    return [line for line in block.text.replace("\\\n", " ").splitlines() if line.strip()]


def run_pages(spec: dict) -> dict:
    """Run each page's python blocks in this process, in order, as a reader pastes them into one session: a page of
    its own namespace, working folder and HOME (and environment variables ``spec[page]["environment"]``), after its
    ``setup`` code. What each block makes (a new ``cluster``: its job script and the jobs it plans, after the block)
    and each page's error (a traceback, None) come back per page. Every client and cluster is closed at the page's
    end."""
    import os
    import traceback
    import warnings

    warnings.simplefilter("ignore")
    results, saved_environment = {}, dict(os.environ)
    for page, what in spec.items():
        folder = Path(what["folder"])
        folder.mkdir(parents=True, exist_ok=True)
        os.chdir(folder)
        os.environ.update(HOME=str(folder), **what.get("environment", {}))
        namespace: dict = {"__name__": "__main__"}
        made, clusters, clients, error = [], [], [], None
        try:
            exec(what.get("setup", ""), namespace)
            for text in what["blocks"]:
                before = namespace.get("cluster"), namespace.get("client")
                exec(compile(text, f"<{page}>", "exec"), namespace)
                cluster, client = namespace.get("cluster"), namespace.get("client")
                if client is not None and client is not before[1]:
                    clients.append(client)
                if cluster is not None and cluster is not before[0]:
                    clusters.append(cluster)
                    made.append({"script": cluster.job_script(), "jobs": len(cluster.worker_spec)})
        except BaseException:
            error = traceback.format_exc()
        finally:
            for thing in clients + clusters + [namespace.get("job")]:
                try:
                    thing is not None and thing.close()
                except BaseException:
                    error = error or traceback.format_exc()
            os.environ.clear()
            os.environ.update(saved_environment)
        results[page] = {"made": made, "error": error}
    return results


if __name__ == "__main__":  # python tests/docs_pages.py SPEC.json RESULTS.json
    import json
    import sys

    Path(sys.argv[2]).write_text(json.dumps(run_pages(json.loads(Path(sys.argv[1]).read_text()))))
