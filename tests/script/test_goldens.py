"""The golden scripts hold what a job script says, not the modules it runs: the workers preload
gpujobqueue's preloads by module name, and no golden carries a line of a preload's source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpujobqueue.preloads import PRELOADS, module_name, source

GOLDEN = Path(__file__).parents[1] / "golden"
GOLDENS = sorted(GOLDEN.rglob("*.sh"))


def source_lines(preload: str) -> set[str]:
    """The lines of a preload's source that say something of their own (not blank, a bracket or a comment)."""
    lines = {line.strip() for line in source(preload).splitlines()}
    return {line for line in lines if len(line) > 20 and not line.startswith("#")}


def test_there_are_goldens_of_the_batch_systems_and_the_sites():
    assert len([path for path in GOLDENS if path.parent == GOLDEN]) >= 30
    assert len([path for path in GOLDENS if path.parent.name == "sites"]) >= 40


@pytest.mark.parametrize("path", GOLDENS, ids=lambda path: str(path.relative_to(GOLDEN)))
def test_a_golden_preloads_by_module_name_and_holds_no_preload_source(path):
    text = path.read_text()
    lines = {line.strip() for line in text.splitlines()}
    for preload in PRELOADS:
        assert not lines & source_lines(preload), f"{path.name} holds the source of {preload}"
    named = re.findall(r"--preload(?:-nanny)? (\S+)", text)
    assert named and set(named) <= {module_name(preload) for preload in PRELOADS}, named
