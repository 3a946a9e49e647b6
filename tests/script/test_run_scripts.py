"""`gpujobqueue render ... --run analysis.py`: one self-contained script, submitted by hand to the
real SLURM and Grid Engine, starts a scheduler and the GPU workers in the job, runs the user's
script as the client, and ends the job with that script's exit code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import wait_until
from fixtures.sizes import with_size_options

from gpujobqueue.security.owned_folders import PREFIX, judge_folder

# A process of the same user on the same node without the job's credentials: plain TCP, and
# TLS with a certificate of another CA. Prints how many of its tries the scheduler refused.
STRANGER = textwrap.dedent("""\
    import sys
    from distributed import Client
    from distributed.security import Security

    refused = 0
    for address, security in ((sys.argv[1].replace("tls://", "tcp://"), None), (sys.argv[1], Security.temporary())):
        try:
            Client(address, security=security, timeout=3).close()
        except Exception:
            refused += 1
    print(refused)
""")

# The user's script: finds the scheduler with a bare Client(), computes, reports what it saw, and
# exits with a code of its own.
ANALYSIS = textwrap.dedent("""\
    import json, os, stat, subprocess, sys
    from distributed import Client

    client = Client()
    workers = client.scheduler_info()["workers"]
    stranger = subprocess.run([sys.executable, os.environ["STRANGER"], client.scheduler.address],
                              capture_output=True, text=True,
                              env={k: v for k, v in os.environ.items() if not k.startswith("DASK_")})
    credentials = os.environ.get("GPUJOBQUEUE_TLS_DIR")
    report = {
        "scheduler_address": client.scheduler.address,
        "worker_addresses": sorted(workers),
        "stranger_refused": stranger.stdout.strip() or stranger.stderr,
        "credential_modes": {name: oct(stat.S_IMODE(os.stat(os.path.join(credentials, name)).st_mode))
                             for name in [".", *os.listdir(credentials)]
                             if name.endswith((".", ".pem"))} if credentials else None,
        "args": sys.argv[2:],
        "workers": len(workers),
        "worker_devices": sorted(client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES")).values()),
        "gpu_resources": sorted(w["resources"].get("GPU", 0) for w in workers.values()),
        "job_devices": os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("SGE_HGR_gpu"),
        "scheduler_job": client.run_on_scheduler(lambda: os.environ.get("SLURM_JOB_ID") or os.environ.get("JOB_ID")),
        "client_job": os.environ.get("SLURM_JOB_ID") or os.environ.get("JOB_ID"),
        "sum": client.submit(sum, range(101)).result(),
    }
    with open(sys.argv[1], "w") as out:
        json.dump(report, out)
    sys.exit(int(os.environ.get("EXIT_CODE", "0")))
""")


def render_run_script(tmp_path, batch, *options, exit_code=7, python=sys.executable):
    script = tmp_path / "analysis.py"
    script.write_text(ANALYSIS)
    (tmp_path / "stranger.py").write_text(STRANGER)
    args = [
        sys.executable,
        "-m",
        "gpujobqueue.cli",
        "render",
        batch,
        "--gpus-per-node",
        "2",
        "--worker-mode",
        "per-device",
        "--python",
        str(python),
        "--walltime",
        "00:10:00",
        "--memory-per-gpu",
        "512MiB",
        "--cpus-per-gpu",
        "1",
        "--log-directory",
        str(tmp_path),
        "--env",
        f"EXIT_CODE={exit_code}",
        "--env",
        f"STRANGER={tmp_path / 'stranger.py'}",
        *options,
        "--run",
        str(script),
        "--",
        str(tmp_path / "report.json"),
        "--flag",
        "two words",
    ]
    result = subprocess.run(args, capture_output=True, text=True, check=True)
    path = tmp_path / "job.sh"
    path.write_text(result.stdout)
    return path


def check_report(tmp_path, allocated):
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["args"] == ["--flag", "two words"]
    assert report["workers"] == 2 and report["gpu_resources"] == [1, 1]
    assert report["worker_devices"] == sorted(allocated(report)), report  # one worker per allocated device, none shared
    assert report["scheduler_job"] == report["client_job"] is not None  # the scheduler runs inside the job
    assert report["sum"] == 5050
    check_private(report)
    return report


def check_private(report):
    # Private by default: TLS between the job's scheduler, workers and client, with credentials
    # made in the job for it alone; the scheduler listens on the node's loopback.
    assert report["scheduler_address"].startswith("tls://127.0.0.1:"), report
    assert all(address.startswith("tls://") for address in report["worker_addresses"]), report
    assert report["stranger_refused"] == "2", report
    assert report["credential_modes"] == {".": "0o700", "ca.pem": "0o600", "cert.pem": "0o600", "key.pem": "0o600"}, (
        report
    )


@pytest.mark.slurm
def test_run_script_submitted_by_hand_to_slurm(slurm, tmp_path):
    path = render_run_script(tmp_path, "slurm", "--queue", "gpu")
    result = subprocess.run(["sbatch", "--wait", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=180)
    logs = "".join(p.read_text() for p in tmp_path.glob("*.out"))
    assert result.returncode == 7, f"{result.stdout}{result.stderr}\n{logs}"  # the client's exit code is the job's
    check_report(tmp_path, lambda report: report["job_devices"].split(","))
    assert not slurm.squeue_ids()


@pytest.mark.slurm
def test_a_failing_client_fails_the_job_and_stops_everything(slurm, tmp_path):
    path = render_run_script(tmp_path, "slurm", exit_code=0)
    path.write_text(path.read_text().replace(str(tmp_path / "analysis.py"), str(tmp_path / "missing.py")))
    result = subprocess.run(["sbatch", "--wait", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=180)
    assert result.returncode == 2  # python's status for a script it cannot open
    assert not slurm.squeue_ids()


@pytest.mark.sge
def test_run_script_submitted_by_hand_to_grid_engine(sge, tmp_path):
    path = render_run_script(tmp_path, "sge", "--parallel-environment", "smp")
    result = sge.run("qsub", "-sync", "y", "-V", str(path), cwd=tmp_path, timeout=180, check=False)
    logs = "".join(p.read_text() for p in tmp_path.glob("*.o*"))
    assert result.returncode == 7, f"{result.stdout}{result.stderr}\n{logs}"
    check_report(tmp_path, lambda report: report["job_devices"].split(","))
    assert not sge.job_ids()


# The job's python, which keeps each command line it is given (one file of NUL-separated words per
# call), and whose scheduler fails to start (FAIL_SCHEDULER=1) or never starts (=hang).
PYTHON_WRAPPER = """#!/bin/bash
printf '%s\\0' "$@" > "$(mktemp "{record}/argv.XXXXXX")"
if [[ " $* " == *" -m distributed.cli.dask_scheduler "* ]]; then
    case "${{FAIL_SCHEDULER:-}}" in
        1) echo "wrapper: this scheduler does not start" >&2; exit 1 ;;
        hang) exec sleep 600 ;;
    esac
fi
exec {python} "$@"
"""


def python_wrapper(tmp_path: Path) -> tuple[Path, Path]:
    """A python for the job that records its command lines in the folder returned with it."""
    record = tmp_path / "argv"
    record.mkdir()
    wrapper = tmp_path / "python"
    wrapper.write_text(PYTHON_WRAPPER.format(record=record, python=sys.executable))
    wrapper.chmod(0o755)
    return wrapper, record


def recorded_command_lines(record: Path) -> list[list[str]]:
    return [path.read_text().split("\0")[:-1] for path in sorted(record.iterdir())]


def job_environment(tmp_path: Path, **more: str) -> dict[str, str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    return {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "2,5", "HOME": str(tmp_path), "TMPDIR": str(temp), **more}


def credentials_left(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*.pem"))


def test_run_script_runs_on_this_machine_with_the_local_batch_system(tmp_path):
    python, record = python_wrapper(tmp_path)
    path = render_run_script(tmp_path, "local", exit_code=0, python=python)
    result = subprocess.run(
        ["bash", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=180, env=job_environment(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["worker_devices"] == ["2", "5"] and report["sum"] == 5050
    check_private(report)
    # No script text in the processes' arguments: the job's own Python reads its code from stdin, not -c.
    command_lines = recorded_command_lines(record)
    assert any("distributed.cli.dask_scheduler" in words for words in command_lines), command_lines
    assert not [words for words in command_lines if "-c" in words], command_lines
    assert credentials_left(tmp_path / "tmp") == []


def test_a_run_job_whose_scheduler_fails_leaves_no_credentials(tmp_path):
    python, _ = python_wrapper(tmp_path)
    path = render_run_script(tmp_path, "local", exit_code=0, python=python)
    result = subprocess.run(
        ["bash", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=180,
        env=job_environment(tmp_path, FAIL_SCHEDULER="1"),
    )
    assert result.returncode == 1 and "the scheduler exited before it started" in result.stderr, result.stderr
    assert credentials_left(tmp_path / "tmp") == [] and os.listdir(tmp_path / "tmp") == []


def test_a_killed_run_jobs_folder_is_one_gpujobqueue_clean_removes(tmp_path):
    python, _ = python_wrapper(tmp_path)
    path = render_run_script(tmp_path, "local", exit_code=0, python=python)
    temp = tmp_path / "tmp"
    job = subprocess.Popen(
        ["bash", str(path)],
        cwd=tmp_path,
        env=job_environment(tmp_path, FAIL_SCHEDULER="hang"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        (folder,) = wait_until(lambda: {p.parent for p in credentials_left(temp)}, 60, what="the job's credentials")
        assert folder.name.startswith(PREFIX) and folder.parent == temp, folder
        verdict = judge_folder(str(folder))
        assert verdict is not None and not verdict.stale and f"process {job.pid}" in verdict.reason, verdict
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # nothing in the job can run: the folder stays
        job.wait()
    assert credentials_left(temp), "SIGKILL leaves the folder"
    clean = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "clean", str(temp)], capture_output=True, text=True, timeout=120
    )
    assert clean.returncode == 0 and f"removed {folder}" in clean.stdout, clean.stdout + clean.stderr
    assert credentials_left(temp) == []


@pytest.mark.parametrize(
    "args, words",
    [
        (["--run", "/nonexistent/analysis.py"], "is not a file"),
        (["--", "stray"], "arguments after -- are for the --run script"),
        (["--scheduler-address", "tcp://10.0.0.1:8786", "--run", __file__], "--run starts its own scheduler"),
        (["--gpu-request", "csm", "--queue", "batch", "--account", "ABC", "--run", __file__], "launch node"),
    ],
)
def test_run_refuses_what_it_cannot_do(args, words):
    batch = "lsf" if "csm" in args else "slurm"
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "render", batch, *with_size_options(args)],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and words in result.stderr, result.stderr


def test_a_run_job_whose_workers_share_the_gpus_waits_for_the_workers_it_starts(tmp_path):
    # processes=1 on two GPUs: one worker seeing both devices. The client waits for the workers the job
    # starts (one), not one per GPU: on 9269b18 it waited for two and the job ended at the wait's timeout.
    python, _ = python_wrapper(tmp_path)
    path = render_run_script(
        tmp_path, "local", "--processes", "1", "--workers-timeout", "40s", exit_code=0, python=python
    )
    result = subprocess.run(
        ["bash", str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=180, env=job_environment(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["workers"] == 1 and report["gpu_resources"] == [2], report
    assert report["worker_devices"] == ["2,5"] and report["sum"] == 5050, report
