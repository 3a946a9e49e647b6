"""Issue 42: the Python code blocks of README.md and docs/migrating.md run as written, and ask for the GPUs their
text promises.

Each page's blocks run in one python process, in order, as a reader pastes them into one session (a block without
its own imports uses the earlier ones'). The batch commands on PATH are the corpus harness's stand-ins
(tests/corpus/_build.py): they record each call and answer as a batch system that queued the job, so nothing is
submitted anywhere. After each block that makes a cluster, its job script is printed and the cluster closed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "corpus"))
from _build import write_stand_ins  # noqa: E402

BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)

# Each page's blocks, in order: the GPU request line its script carries (None: the block makes no new cluster).
PROMISED = {
    "README.md": ["--gpus-per-node=4", "--gpus-per-node=4"],
    "docs/migrating.md": ["--gpus-per-node=4", "--gpus-per-node=4", "--gpus-per-node=4"],
}

RUNNER = """
import json, sys, warnings
warnings.simplefilter("ignore")
namespace, scripts = {}, []
for block in json.loads(sys.argv[1]):
    namespace.pop("cluster", None)
    exec(compile(block, "<block>", "exec"), namespace)
    cluster = namespace.get("cluster")
    scripts.append(cluster.job_script() if cluster is not None else None)
    if "client" in namespace:
        namespace.pop("client").close()
    if cluster is not None:
        cluster.close()
print(json.dumps(scripts))
"""


@pytest.mark.parametrize("page", sorted(PROMISED))
def test_the_pages_python_blocks_run_as_written_and_ask_for_their_gpus(page, tmp_path):
    blocks = BLOCK.findall((ROOT / page).read_text())
    assert len(blocks) == len(PROMISED[page]), f"{page}: {len(blocks)} python blocks; PROMISED lists each"
    stand_ins = tmp_path / "stand-ins"
    write_stand_ins(stand_ins)
    env = {
        **os.environ,
        "PATH": f"{stand_ins}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "CORPUS_CALLS": str(tmp_path / "calls.log"),
        # A login node of the site has its network; this machine may not (the site's interface, hsn0 on Perlmutter).
        "DASK_GPUJOBQUEUE__SLURM__INTERFACE": "lo",
    }
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(blocks)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    scripts = json.loads(result.stdout.splitlines()[-1])
    for index, (script, promised) in enumerate(zip(scripts, PROMISED[page])):
        gpu_lines = [line for line in (script or "").splitlines() if line.startswith("#SBATCH") and "gpu" in line]
        assert f"#SBATCH {promised}" in gpu_lines, (page, index, gpu_lines)


def test_the_readmes_gpujobqueue_commands_run_as_written(tmp_path):
    """Issue 43, point 3: every ``gpujobqueue`` line of README's shell blocks runs as written, in a fresh home; the
    batch commands they feed (sbatch, qsub) are not run. A placeholder is given a value (``my-site.yaml``: a copy of
    a shipped site file; ``NAME``: that site); ``check`` gives its verdict (0 or 1, no traceback), the others 0."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
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
