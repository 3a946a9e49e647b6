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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_pages import PAGES, ROOT, Block, blocks, shell_lines
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


def test_the_readmes_gpujobqueue_commands_run_as_written(tmp_path):
    """Issue 43, point 3: every ``gpujobqueue`` line of README's shell blocks runs as written, in a fresh home; the
    batch commands they feed (sbatch, qsub) are not run. A placeholder is given a value (``my-site.yaml``: a copy of
    a shipped site file; ``NAME``: that site); ``check`` gives its verdict (0 or 1, no traceback), the others 0."""
    lines = [line for block in blocks("README.md") if block.language == "bash" for line in shell_lines(block)]
    commands = [line for line in lines if line.startswith("gpujobqueue ")]
    assert any(" render sge " in command for command in commands) and len(commands) >= 10, commands
    (tmp_path / "analysis.py").write_text("print('analysis')\n")
    (tmp_path / "my-site.yaml").write_text((ROOT / "site-configs" / "generic-slurm.yaml").read_text())
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}"}
    for command in commands:
        run = command.replace("--site NAME", "--site my-site.yaml")
        done = subprocess.run(["bash", "-c", run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=99)
        verdicts = (0, 1) if command.startswith("gpujobqueue check") else (0,)
        assert done.returncode in verdicts and "Traceback" not in done.stderr, (command, done.stderr[-2000:])
