"""The examples' CPU forms run to the end on the local batch system and say their results are right.

Each example checks its own answer against a known one and exits 1 when a check fails,
3 when a package it needs is missing: these tests run them as a user would and read
their verdict. The CPU forms need pyarrow (in the test extra; missing, it fails the test
with the install command) and torch_ddp.py needs torch, which the tests install nowhere:
PyPI's torch wheel pulls the CUDA libraries (16 NVIDIA wheels for torch 2.15) and its CPU
build is only on download.pytorch.org, so that example's test runs where torch is
importable and is skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from docs_samples import normalise, samples

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# Each example and the number of checks its CPU form makes at --size small.
CHECKS = {
    "cupy_arrays.py": 6,
    "dataframes.py": 3,
    "delayed_model_fits.py": 4,
    "torch_ddp.py": 4,
    "mixed_pool.py": 4,
}


# The example whose CPU form's output examples/README.md shows ("What a run prints").
SHOWN = "delayed_model_fits.py"


def run_example(cwd: Path, *argv: str, code: str | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}  # start a cluster, as a user would
    # This checkout's gpujobqueue, for the script and for the workers it starts.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(EXAMPLES.parent), env.get("PYTHONPATH")]))
    command = [sys.executable, "-c", code, *argv] if code else [sys.executable, *argv]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_example_is_tested():
    assert sorted(CHECKS) == sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


TORCH_MISSING = (
    "torch is not installed (PyPI's torch wheel brings the CUDA libraries, its CPU build is not on PyPI): "
    "pip install torch --index-url https://download.pytorch.org/whl/cpu runs this example's test"
)


def needs(example: str):
    if example == "torch_ddp.py":
        missing = importlib.util.find_spec("torch") is None
        return pytest.param(example, marks=pytest.mark.skipif(missing, reason=TORCH_MISSING))
    return example


@pytest.mark.long
@pytest.mark.parametrize("example", [needs(example) for example in sorted(CHECKS)])
def test_cpu_form(example, tmp_path):
    done = run_example(tmp_path, str(EXAMPLES / example), "--size", "small", "--form", "cpu")
    report = f"exit status {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-4000:]}"
    assert done.returncode == 0, report
    assert re.search(r"^form: CPU ", done.stdout, re.M), report
    assert "FAILED" not in done.stdout, report
    assert len(re.findall(r"^ok: ", done.stdout, re.M)) == CHECKS[example], report
    assert f"RESULT: ok ({CHECKS[example]} checks passed)" in done.stdout, report
    if example != "mixed_pool.py":  # its GPU pool's workers stand in for GPU workers: routing to them is its point
        # Issue 43: a CPU run on this machine holds no GPU. Its workers are a CPU pool's, counted as CPU workers, with
        # no GPU resource, and the usage summary at close counts cores and core-hours, not GPUs and GPU-hours.
        assert re.search(r"^\d+ CPU worker\(s\) connected", done.stdout, re.M), report
        assert "GPU=" not in done.stdout, report
        usage = re.findall(r"^gpujobqueue: LocalGPUCluster: .*", done.stderr, re.M)
        assert len(usage) == 1 and "core-h" in usage[0], report
        assert not re.search(r"\bGPUs?\b|GPU-h", usage[0]), report
    if example == SHOWN:  # examples/README.md shows this run's output, made by tests/docs_samples.py
        shown = next(block for block in samples("examples/README.md") if example in block.marker[1])
        printed = normalise(done.stdout + done.stderr, tmp_path, Path(os.environ.get("TMPDIR", tempfile.gettempdir())))
        assert printed == shown.text, (
            f"{report}\n--- examples/README.md shows\n{shown.text}--- this run, normalised\n{printed}"
        )
    # The cluster's private folder (TLS files) and the examples' data folders are gone.
    assert not list(tmp_path.glob(".gpujobqueue-*")) and not list(tmp_path.glob("gpujobqueue-example-*")), list(
        tmp_path.iterdir()
    )


def test_a_failed_check_fails_the_example(tmp_path):
    code = (
        "import _common, sys; checks = _common.Checks(); checks('right', True); checks('wrong', False, 'detail'); "
        "sys.exit(checks.exit_code())"
    )
    done = run_example(EXAMPLES, code=code)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ok: right\nFAILED: wrong (detail)\nRESULT: FAILED (1 of 2 checks failed: wrong)" in done.stdout


def test_missing_torch_is_said_and_has_its_own_exit_status(tmp_path):
    code = (
        "import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
        "sys.path.insert(0, sys.argv[0].rpartition('/')[0]); runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    done = run_example(tmp_path, str(EXAMPLES / "torch_ddp.py"), "--size", "small", code=code)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "MISSING PACKAGE: torch is not importable" in done.stderr and "pip install torch" in done.stderr
    assert "RESULT: not run (torch missing)" in done.stdout
