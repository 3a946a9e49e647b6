"""Rendered scripts are private by default: workers that join a scheduler you run use TLS with
the credentials `gpujobqueue credentials` made; --no-tls is an explicit, warned opt-out.
(`--run` scripts, which make their credentials in the job, are run for real in
test_run_scripts.py on the local batch system, SLURM and Grid Engine.)"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time

import pytest
from distributed import Client
from distributed.security import Security
from fixtures.sizes import with_job_size

from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.security.tls import InsecureScriptWarning

CLI = [sys.executable, "-m", "gpujobqueue.cli"]
WORKER = [
    "--worker-mode",
    "per-device",
    "--gpus-per-node",
    "1",
    "--python",
    sys.executable,
    "--memory-per-gpu",
    "512MiB",
]


def cli(*args, home=None, check=True):
    env = dict(os.environ, HOME=str(home)) if home else None
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=check, env=env)


def start_scheduler(credentials, tmp_path):
    scheduler_file = tmp_path / "scheduler.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--protocol",
            "tls",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--dashboard-address",
            "127.0.0.1:0",
            "--scheduler-file",
            str(scheduler_file),
            "--tls-ca-file",
            str(credentials / "ca.pem"),
            "--tls-cert",
            str(credentials / "cert.pem"),
            "--tls-key",
            str(credentials / "key.pem"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not scheduler_file.exists() or not scheduler_file.read_text():
        assert time.monotonic() < deadline and process.poll() is None, "the scheduler did not start"
        time.sleep(0.1)
    import json

    return process, json.loads(scheduler_file.read_text())["address"]


def test_workers_of_a_rendered_script_join_your_tls_scheduler_and_strangers_do_not(tmp_path):
    made = cli("credentials", home=tmp_path).stdout
    credentials = tmp_path / ".config" / "gpujobqueue" / "tls"
    assert f"made TLS credentials in {credentials}" in made
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o700
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in credentials.iterdir()} == {
        "ca.pem": 0o600,
        "cert.pem": 0o600,
        "key.pem": 0o600,
    }
    assert (
        "kept TLS credentials" in cli("credentials", home=tmp_path).stdout
    )  # a second call keeps the set that scripts use
    scheduler, address = start_scheduler(credentials, tmp_path)
    try:
        assert address.startswith("tls://")
        script = tmp_path / "workers.sh"
        script.write_text(
            cli("render", "local", *WORKER, "--scheduler-address", address.removeprefix("tls://"), home=tmp_path).stdout
        )
        assert (
            '"$HOME/.config/gpujobqueue/tls"' in script.read_text()
        )  # the job's shell finds them; no path of this machine
        job = subprocess.Popen(
            ["bash", str(script)],
            env=dict(os.environ, HOME=str(tmp_path), CUDA_VISIBLE_DEVICES="3"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            security = Security(
                tls_ca_file=str(credentials / "ca.pem"),
                tls_client_cert=str(credentials / "cert.pem"),
                tls_client_key=str(credentials / "key.pem"),
                require_encryption=True,
            )
            with Client(address, security=security, timeout=30) as client:
                client.wait_for_workers(1, timeout=60)
                assert client.submit(sum, [1, 2, 3]).result() == 6
                assert client.run(lambda: os.environ["CUDA_VISIBLE_DEVICES"]) and list(
                    client.scheduler_info()["workers"]
                )[0].startswith("tls://")
            for stranger in (None, Security.temporary()):  # no credentials; a certificate of another CA
                with pytest.raises((OSError, TimeoutError)):
                    Client(
                        address.replace("tls://", "tcp://") if stranger is None else address,
                        security=stranger,
                        timeout=3,
                    )
        finally:
            os.killpg(job.pid, 15)
            job.wait(30)
    finally:
        scheduler.terminate()
        scheduler.wait(30)


def test_a_job_without_the_credentials_fails_at_once_naming_the_command(tmp_path):
    script = tmp_path / "workers.sh"
    script.write_text(cli("render", "local", *WORKER, "--scheduler-address", "tls://127.0.0.1:1", home=tmp_path).stdout)
    result = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env=dict(os.environ, HOME=str(tmp_path)), timeout=30
    )
    assert result.returncode == 1
    assert (
        f"{tmp_path}/.config/gpujobqueue/tls/ca.pem is missing; make the set with: gpujobqueue credentials"
        in result.stderr
    )


def test_no_tls_is_explicit_and_warned():
    result = cli("render", "slurm", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--no-tls")
    assert "warning: plain TCP (--no-tls): anyone who can reach" in result.stderr
    assert "'tcp://<insert-scheduler-address-here>:8786'" in result.stdout and "--tls-" not in result.stdout
    assert "# Plain TCP (--no-tls)" in result.stdout
    with pytest.warns(InsecureScriptWarning):
        job_script_for("slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB"}, name="w", tls=False)


@pytest.mark.parametrize("batch", ["slurm", "pbs", "lsf", "sge", "local"])
def test_tls_is_the_default_on_every_batch_system(batch):
    text = job_script_for(batch, with_job_size({}), name="w")
    assert "'tls://<insert-scheduler-address-here>:8786'" in text and "--protocol tls" in text
    for option, name in (("--tls-ca-file", "ca"), ("--tls-cert", "cert"), ("--tls-key", "key")):
        assert f'{option} "$GPUJOBQUEUE_TLS_DIR/{name}.pem"' in text


def test_a_tcp_scheduler_address_is_refused_unless_tls_is_turned_off():
    result = cli(
        "render",
        "slurm",
        "--cpus-per-gpu",
        "1",
        "--memory-per-gpu",
        "512MiB",
        "--scheduler-address",
        "tcp://10.0.0.1:8786",
        check=False,
    )
    assert result.returncode != 0 and "--scheduler-address: 'tcp://10.0.0.1:8786' is not TLS" in result.stderr
    assert (
        "dask_cuda.cli tcp://10.0.0.1:8786 \\"
        in cli(
            "render",
            "slurm",
            "--cpus-per-gpu",
            "1",
            "--memory-per-gpu",
            "512MiB",
            "--scheduler-address",
            "tcp://10.0.0.1:8786",
            "--no-tls",
        ).stdout
    )


def test_ucx_scripts_have_no_tls_and_no_warning(recwarn):
    text = job_script_for("slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "protocol": "ucx"}, name="w")
    assert "--tls-" not in text and "'ucx://" in text
    assert not [w for w in recwarn if issubclass(w.category, InsecureScriptWarning)]


def test_a_tls_directory_is_a_path_the_job_can_expand_safely():
    text = job_script_for(
        "slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB"}, name="w", tls_directory="$SCRATCH/dask-tls"
    )
    assert 'export GPUJOBQUEUE_TLS_DIR="$SCRATCH/dask-tls"' in text
    for hostile in ("$(id)", "/a b", "`id`", "x\ny"):
        with pytest.raises(ValidationError, match="tls_directory"):
            job_script_for("slurm", with_job_size({}), name="w", tls_directory=hostile)


def test_the_run_script_makes_its_credentials_in_a_private_folder_of_the_job():
    from gpujobqueue.script.run import ClientRun

    run = ClientRun.from_command_line(__file__)
    single = job_script_for("slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB"}, name="w", run=run)
    # Named as `gpujobqueue clean` reads an owner: the script's pid, its start time and its host.
    owned = r'/\.gpujobqueue-p\$\$-t\$job_start-h\$\{job_host//\[\^A-Za-z0-9\.-\]/_\}-XXXXXX"\)"'
    assert re.search(r'private_dir="\$\(mktemp -d "\$\{TMPDIR:-/tmp\}' + owned, single)
    assert "--host 127.0.0.1" in single and "--no-dashboard" in single
    several = job_script_for(
        "slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "nodes": 2, "launcher": "srun"}, name="w", run=run
    )
    # The job's other nodes read the credentials: a private folder of the submit directory, and the scheduler on
    # the node's name.
    assert re.search(r'mktemp -d "\$\{PBS_O_WORKDIR:-\$PWD\}' + owned, several) and '--host "$(hostname)"' in several
