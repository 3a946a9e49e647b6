"""SIGINT in the test run: conftest.py gives Python's handler back where the run was started with SIGINT ignored
(a shell's `&` without job control, nohup), so that what the tests start gets Ctrl-C as from a terminal; and
its guard (tests/fixtures/sigint_guard.py) fails a test that leaves SIGINT's handler changed, from its body or
from a fixture of any scope, and gives the handler back before the next test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

PLANTED = textwrap.dedent("""
    import signal

    import pytest

    BEFORE = signal.getsignal(signal.SIGINT)


    @pytest.fixture(scope="module")
    def ignores_sigint_until_the_module_ends():
        yield
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a module fixture's teardown would, after the test's own


    def test_leaves_sigint_ignored():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


    def test_restores_what_it_changes():
        assert signal.getsignal(signal.SIGINT) is BEFORE, "the guard gave the handler back"
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGINT, old)


    def test_last_of_the_module(ignores_sigint_until_the_module_ends):
        pass
""")


def test_the_guard_fails_a_test_that_leaves_sigint_changed_and_gives_the_handler_back(tmp_path):
    (tmp_path / "test_planted.py").write_text(PLANTED)
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fixtures.sigint_guard", "-p", "no:cacheprovider", "-q", "-rE"]
        + ["--rootdir", str(tmp_path), "-c", os.devnull, "test_planted.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it: Python's handler
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "3 passed, 2 errors" in out, out
    assert "ERROR at teardown of test_leaves_sigint_ignored" in out, out
    assert "ERROR at teardown of test_last_of_the_module" in out, out
    assert "left SIGINT's handler changed: Python's default_int_handler before it, SIG_IGN (ignored) after it" in out


def test_a_program_a_test_starts_has_sigint_at_its_default():
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "True"


def test_a_run_started_with_sigint_ignored_starts_its_programs_with_sigint_at_its_default(tmp_path):
    # as `nohup bash .ci/run &` starts it: the CI runs at 1a55e10 and b63a5d5 (every xdist worker's SIGINT ignored)
    test = f"{Path(__file__).resolve()}::test_a_program_a_test_starts_has_sigint_at_its_default"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:xdist", test],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
