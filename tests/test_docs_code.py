"""Issues 42 and 43: every code block of README.md and docs/ runs as written, in a test, and gives what its page says.

Python blocks. Each page's blocks run in one python process, in order, as a reader pastes them into one session (a
block without its own imports uses the earlier ones'; ``cluster`` and ``client`` stay until a block makes new ones).
The batch commands on PATH are the corpus harness's stand-ins (tests/corpus/_build.py): they record each call and
answer as a batch system that queued the job, so nothing is submitted anywhere; the embedded ``local`` batch system
starts its real workers here. A site's interface (hsn0 on Perlmutter and Polaris) is given as ``lo``, in dask
config, as a login node of the site has its network and this machine may not. Every block that makes a cluster
is held to what its page promises (``PROMISED``): the GPU request line of its job script and the jobs it plans.

Not run, each counted (``NOT_RUN``): a block marked ``<!-- not run: REASON -->`` on its page (a fragment, ``...``
for the rest of a call); a ``>>>`` session, marked ``<!-- output of: ... -->``, whose output tests/docs_samples.py
makes and test_the_sample_outputs_are_what_the_commands_print compares; and the few blocks that cannot run on a
machine without GPUs and a batch system, in ``CANNOT_RUN_HERE`` with the reason.

Shell lines. Every ``gpujobqueue`` and ``dask config`` line of the pages' bash blocks runs as written, in the
sandbox of tests/docs_samples.py (no batch system on PATH); every other line is skipped by a rule of
``SKIPPED_BY_RULE``, which says why.

Samples. A block that shows what a command prints is made by running it (tests/docs_samples.py, ``<!-- output of:
COMMAND -->``) and compared here with what it prints now; one copied from a machine not at hand (``<!-- recorded:
WHERE -->``) is listed in ``RECORDED`` with the reason.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_pages import PAGES, ROOT, Block, blocks, shell_lines
from docs_samples import SAMPLE_PAGES, regenerate, run_line, samples, sandbox
from fixtures.made_once import made_once

sys.path.insert(0, str(ROOT / "tests" / "corpus"))
from _build import write_stand_ins  # noqa: E402

# Blocks that cannot run on a machine without GPUs, distributed-ucxx and a batch system that starts jobs:
# (page, text the block holds) -> why.
CANNOT_RUN_HERE = {
    ("docs/networking.md", 'protocol="ucx"'): "protocol='ucx' needs distributed-ucxx, and a GPU in this process",
    ("docs/troubleshooting.md", "import cupy"): "asks each GPU worker's cupy for its GPU's PCI bus",
    ("docs/quickstart.md", "client.wait_for_workers(8)"): "waits for 8 GPU workers, which only a SLURM cluster "
    "with GPU nodes starts (the stand-ins queue nothing)",
}

# Per page, the blocks not run: marked "not run" on the page, ">>>" sessions (their output is generated), and
# CANNOT_RUN_HERE's.
NOT_RUN = {
    "docs/contributing.md": {"not run": 1},
    "docs/quickstart.md": {"session": 2, "cannot run here": 1},
    "docs/networking.md": {"cannot run here": 1},
    "docs/troubleshooting.md": {"not run": 3, "session": 1, "cannot run here": 1},
}

# Samples copied from a machine not at hand: (page, WHERE, as its marker ``<!-- recorded: WHERE -->`` says) -> why.
RECORDED = {
    ("docs/check.md", "tests/sites/test_submit_test.py, against the tests' SLURM, 2026-12-07"): "needs the "
    "tests' real SLURM, which the slurm-marked tests start",
    ("docs/check.md", "tests/sites/test_submit_test.py, against the tests' Grid Engine, 2026-12-07"): "needs the "
    "tests' real Grid Engine, which the sge-marked tests start",
    ("docs/check.md", "tests/cli/test_silent_controller.py, with Debian's SLURM 22.05 client commands, 2026-12-07"): (
        "needs SLURM's client commands, which the samples' sandbox leaves out"
    ),
    (
        "docs/check.md",
        "the device machine of docs/benchmarks.md (4 H200s), 2026-11-21, when 22 site files were known",
    ): "needs 4 NVIDIA GPUs with NVLink and the GPU stack",
}

# The shell lines run: gpujobqueue's commands and dask's config commands. The others are skipped by a rule: what the
# line begins with -> why.
RUN = ("gpujobqueue ", "dask config ")
SKIPPED_BY_RULE = {
    "bash .ci/": "installs the venv (and SLURM and Grid Engine) and runs the demo or the whole suite: CI's own run",
    "pip install ": "installs packages",
    "sbatch ": "submits a job to a real batch system",
    "ssh ": "opens a tunnel to another host",
    "PYTHONPATH=tests/dask_jobqueue_suite python -m pytest": "dask-jobqueue's own tests (tests/dask_jobqueue_suite)",
    "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES='[]' dask scheduler": "a scheduler: it serves until stopped",
}

# Per page, each run block that makes a cluster, in order: a line its job script must hold (the GPU request its
# text promises; None for the local batch system, whose script asks nothing) and the jobs it plans.
PROMISED = {
    "README.md": [("#SBATCH --gpus-per-node=4", 2), ("#SBATCH --gpus-per-node=4", 4)],
    "docs/batch/local.md": [(None, 2)],
    "docs/batch/lsf.md": [('#BSUB -gpu "num=4:mode=exclusive_process"', 2)],
    "docs/batch/pbs.md": [("#PBS -l select=1:ncpus=32:ngpus=4:", 2)],
    "docs/batch/sge.md": [("#$ -l gpu=1", 2)],  # a consumable per slot: 1 for each of the 2 slots
    "docs/batch/slurm.md": [("#SBATCH --gpus-per-node=4", 2)],
    "docs/index.md": [("#SBATCH --gpus-per-node=4", 4)],
    "docs/migrating.md": [("#SBATCH --gpus-per-node=4", 2)] * 3,
    # The last one is closed as its `with` block ends: no job left.
    "docs/quickstart.md": [("#SBATCH --gpus-per-node=4", 2), ("#SBATCH --gpus-per-node=4", 4)]
    + [("#SBATCH --gpus-per-node=4", 0)],
    "docs/rendered-scripts.md": [],
    "docs/site-configs.md": [("#SBATCH --gpus-per-node=4", 2)],
    "docs/sites.md": [("#PBS -l select=1:ncpus=32:ngpus=4:", 0)],
}

# The stand-ins' qsub answers as Grid Engine's where CORPUS_BATCH says so.
ENVIRONMENT = {"docs/batch/sge.md": {"CORPUS_BATCH": "sge"}}

# What the page's reader has at hand before its first block: the job's scheduler that `Client()` finds in
# rendered-scripts.md's analysis.py (its job sets DASK_SCHEDULER_ADDRESS).
SETUP = {
    "docs/rendered-scripts.md": (
        "import os\nfrom dask.distributed import LocalCluster\n"
        "job = LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)\n"
        "os.environ['DASK_SCHEDULER_ADDRESS'] = job.scheduler_address\n"
    ),
}


def python_blocks(page: str) -> tuple[list[Block], dict[str, int]]:
    """The page's python blocks to run, and how many of each kind are not run."""
    run, not_run = [], {}
    for block in blocks(page):
        if block.language != "python":
            continue
        cannot = [why for (where, holds), why in CANNOT_RUN_HERE.items() if where == page and holds in block.text]
        if block.marker and block.marker[0] == "not run":
            kind = "not run"
        elif block.text.startswith(">>> "):
            assert block.marker and block.marker[0] == "output of", f"{block.where}: a >>> session without its marker"
            kind = "session"
        elif cannot:
            kind = "cannot run here"
        else:
            run.append(block)
            continue
        not_run[kind] = not_run.get(kind, 0) + 1
    return run, not_run


def run_every_page(folder: Path) -> None:
    """Every page's python blocks, one page after another in one python process (tests/docs_pages.py run_pages),
    with the stand-ins first on PATH; what they made in ``folder/made.json``."""
    stand_ins = folder / "stand-ins"
    write_stand_ins(stand_ins)
    lo = {f"DASK_GPUJOBQUEUE__{batch}__INTERFACE": "lo" for batch in ("SLURM", "PBS", "LSF", "SGE")}
    env = {**os.environ, **lo, "PATH": f"{stand_ins}{os.pathsep}{os.environ['PATH']}"}
    spec = {
        page: {
            "blocks": [block.text for block in python_blocks(page)[0]],
            "folder": str(folder / page.replace("/", "-")),
            "setup": SETUP.get(page, ""),
            "environment": {
                "CORPUS_CALLS": str(folder / f"{page.replace('/', '-')}.calls"),
                **ENVIRONMENT.get(page, {}),
            },
        }
        for page in sorted(PROMISED)
    }
    (folder / "spec.json").write_text(json.dumps(spec))
    command = [
        sys.executable,
        str(ROOT / "tests" / "docs_pages.py"),
        str(folder / "spec.json"),
        str(folder / "made.json"),
    ]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict:
    return json.loads((made_once(tmp_path_factory, "docs-python-blocks", run_every_page) / "made.json").read_text())


def test_every_page_is_read_and_its_not_run_blocks_are_counted():
    assert {"README.md", "docs/quickstart.md", "docs/batch/slurm.md", "docs/check.md"} <= set(PAGES), PAGES
    counted = {page: python_blocks(page)[1] for page in PAGES}
    assert {page: kinds for page, kinds in counted.items() if kinds} == NOT_RUN
    pages_run = {page for page in PAGES if python_blocks(page)[0]}
    assert pages_run == set(PROMISED), "each page whose python blocks run is in PROMISED"
    recorded = {
        (page, b.marker[1]) for page in SAMPLE_PAGES for b in blocks(page) if b.marker and b.marker[0] == "recorded"
    }
    assert recorded == set(RECORDED), "RECORDED lists each sample copied from a machine not at hand"
    for page in ("docs/check.md", "docs/quickstart.md"):  # what a command prints there is made or recorded, never typed
        typed = [block.where for block in blocks(page) if block.language in ("", "text") and not block.marker]
        assert not typed, f"output blocks without an output-of or recorded marker: {typed}"
    for (page, holds), why in CANNOT_RUN_HERE.items():
        assert sum(holds in block.text for block in blocks(page)) == 1, (page, holds, why)


@pytest.mark.parametrize("page", sorted(PROMISED))
def test_the_pages_python_blocks_run_as_written_and_ask_for_their_gpus(page, made):
    assert made[page]["error"] is None, made[page]["error"]
    clusters = made[page]["made"]
    assert len(clusters) == len(PROMISED[page]), f"{page}: {len(clusters)} clusters made; PROMISED lists each"
    for index, (cluster, (line, jobs)) in enumerate(zip(clusters, PROMISED[page])):
        script = cluster["script"].splitlines()
        assert line is None or any(line in text for text in script), (page, index, [s for s in script if s[:1] == "#"])
        assert cluster["jobs"] == jobs, (page, index, cluster["jobs"])


def shell_commands() -> dict[str, list[str]]:
    """Every line of every page's bash blocks, each once, with the pages that show it."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for block in blocks(page):
            if block.language == "bash":
                for line in shell_lines(block):
                    found.setdefault(line.split("  #")[0].strip(), []).append(page)
    return found


def sampled_commands() -> set[str]:
    """The commands whose output a page shows (``<!-- output of: COMMAND -->``): run by the samples' test."""
    return {block.marker[1] for page in SAMPLE_PAGES for block in samples(page)}


def test_every_shell_line_is_run_or_skipped_by_a_rule():
    lines = shell_commands()
    ruled = {line: [rule for rule in SKIPPED_BY_RULE if line.startswith(rule)] for line in lines}
    run = [line for line in lines if line.startswith(RUN)]
    assert all(bool(ruled[line]) != line.startswith(RUN) for line in lines), {
        line: pages for line, pages in lines.items() if bool(ruled[line]) == line.startswith(RUN)
    }
    assert all(any(line.startswith(rule) for line in lines) for rule in SKIPPED_BY_RULE), "a rule that skips nothing"
    assert len(run) >= 20 and any(" render sge " in line for line in run), run


def test_every_gpujobqueue_command_of_the_pages_runs_as_written(tmp_path):
    """Issue 43: every ``gpujobqueue`` (and ``dask config``) line of the pages' bash blocks runs as written, one after
    another in one folder (its HOME too), with no batch system on PATH (tests/docs_samples.py's sandbox): the batch
    commands they feed (sbatch, qsub) are not run. A placeholder is given a value (``NAME``: a copy of a shipped site
    file, ``[DIRECTORY]``: none). ``check`` gives its verdict (0 or 1), the others 0; none prints a traceback. The
    commands whose output a page shows are run by test_the_sample_outputs_are_what_the_commands_print."""
    env = sandbox(tmp_path)
    sampled = sampled_commands()
    for line, pages in shell_commands().items():
        if not line.startswith(RUN) or line in sampled:
            continue
        status, output = run_line(line, tmp_path, env, timeout=120)
        verdicts = (0, 1) if line.startswith("gpujobqueue check") else (0,)
        assert status in verdicts and "Traceback" not in output, (pages, line, status, output[-3000:])


@pytest.mark.parametrize("page", [page for page in SAMPLE_PAGES if samples(page)])
def test_the_sample_outputs_are_what_the_commands_print(page, tmp_path):
    """Issue 43: a page's sample outputs are what their commands print now (tests/docs_samples.py wrote them; the
    examples' own are compared by tests/test_examples.py, which runs them)."""
    new = regenerate(page, tmp_path, skip=lambda block: block.marker[1].startswith("python examples/"))
    old = (ROOT / page).read_text()
    diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), page, "what it prints now"))
    assert new == old, f"{diff}\nthe page's samples are stale: python tests/docs_samples.py {page} rewrites them"
