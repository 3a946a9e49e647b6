"""Issue 43: what the commands print for a user to run is safe as printed, and says how it fits
the terminal: `credentials`' scheduler command (points 5), `sites` (6), `demo --gpus` (7), `render`
without TLS credentials here (10)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner
from distributed import Client
from distributed.security import Security

from gpujobqueue.cli import main


def cli(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def test_the_printed_scheduler_command_serves_no_dashboard_and_says_how_to_open_one(tmp_path):
    # Before: `dask scheduler --protocol tls ...` alone, whose dashboard (the workers' logs and
    # call stacks, no password) listens on every interface at port 8787.
    done = cli("credentials", str(tmp_path / "tls"))
    assert done.exit_code == 0, done.output
    command = next(line.strip() for line in done.stdout.splitlines() if " dask scheduler " in f" {line} ")
    words = shlex.split(command)
    assert words[words.index("--dashboard-address") + 1] == "127.0.0.1:0" and "--no-dashboard" in words
    assert words[0] == "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES=[]"  # no /metrics, no /info on its HTTP server
    opening = [line for line in done.stdout.splitlines() if "127.0.0.1:8787" in line]
    assert opening and "every user of this host" in opening[0] and "no password" in opening[0], done.stdout
    # It runs as printed (here on a free port, writing its address to a file).
    scheduler_file = tmp_path / "scheduler.json"
    process = subprocess.Popen(
        ["bash", "-c", f"{command} --host 127.0.0.1 --port 0 --scheduler-file {scheduler_file}"],
        env=dict(os.environ, PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() or not scheduler_file.read_text():
            assert time.monotonic() < deadline and process.poll() is None, "the printed scheduler did not start"
            time.sleep(0.2)
        tls = tmp_path / "tls"
        security = Security(
            tls_ca_file=str(tls / "ca.pem"),
            tls_client_cert=str(tls / "cert.pem"),
            tls_client_key=str(tls / "key.pem"),
            require_encryption=True,
        )
        with Client(scheduler_file=str(scheduler_file), security=security, timeout=30) as client:
            routes = client.run_on_scheduler(lambda: __import__("dask").config.get("distributed.scheduler.http.routes"))
            assert routes == []
    finally:
        process.terminate()
        process.wait(30)


def test_demo_refuses_fewer_than_one_gpu_naming_the_option(monkeypatch):
    # Before: --gpus 0 started 2 workers; --gpus -1 printed "starting -1 CPU worker(s)", then an
    # error naming gpus_per_node.
    from gpujobqueue.cli import demo

    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: pytest.fail(f"the demo ran with {kwargs}"))
    for count in ("0", "-1"):
        done = cli("demo", "--gpus", count)
        assert done.exit_code == 2, done.output
        assert "'--gpus'" in done.stderr and "x>=1" in done.stderr and "starting" not in done.output, done.output


RENDER = (
    "render",
    "slurm",
    "--gpus-per-node",
    "1",
    "--cpus-per-gpu",
    "1",
    "--memory-per-gpu",
    "512MiB",
    "--scheduler-address",
    "tls://h:8786",
)


def test_render_says_at_once_that_this_host_has_no_tls_credentials_for_the_script(tmp_path):
    # Before: the script was written silently, and its job ended after the queue wait with
    # "the TLS credential .../ca.pem is missing".
    home = {"HOME": str(tmp_path)}
    done = cli(*RENDER, env=home)
    assert done.exit_code == 0, done.output
    folder = tmp_path / ".config" / "gpujobqueue" / "tls"
    warning = f"gpujobqueue: warning: this host has no TLS credentials in {folder}"
    assert warning in done.stderr and "make them with: gpujobqueue credentials" in done.stderr, done.stderr
    assert "#!/" in done.stdout  # the script is still written: the nodes may read another home
    elsewhere = tmp_path / "elsewhere"
    done = cli(*RENDER, "--tls-directory", str(elsewhere), env=home)
    assert f"in {elsewhere} " in done.stderr and f"gpujobqueue credentials {elsewhere}" in done.stderr, done.stderr
    assert "TLS credentials" not in cli(*RENDER, "--no-tls", env=home).stderr
    assert cli("credentials", env=home).exit_code == 0
    assert "TLS credentials" not in cli(*RENDER, env=home).stderr


def table(output: str) -> dict[str, dict[str, str]]:
    """The sites table's rows by site name, each cell read at its heading's place."""
    header, *lines = output.splitlines()
    headings = list(re.finditer(r"\S+", header))
    names, starts = [m.group() for m in headings], [m.start() for m in headings]
    return {
        line.split()[0]: {
            name: line[start : (starts[i + 1] if i + 1 < len(starts) else None)].strip()
            for i, (name, start) in enumerate(zip(names, starts))
        }
        for line in lines
    }


def test_sites_fits_an_80_column_terminal_and_wide_lists_every_column_whole():
    # Before: 92 columns at COLUMNS=80 (204 whole), the centres cut to "NationaM…".
    for columns in (80, 100, 120):
        done = cli("sites", env={"COLUMNS": str(columns)})
        lines = done.stdout.splitlines()
        assert max(map(len, lines)) <= columns, (columns, done.stdout)
        rows = table(done.stdout)
        assert rows["perlmutter"]["SITE"] == "perlmutter" and rows["perlmutter"]["GPU"] == "A100"
        assert rows["aurora"]["GPU"] == "Max 1550" and rows["frontera"]["GPU"] == "RTX 5000"
        assert rows["perlmutter"]["STATUS"] == "production" and rows["summit"]["STATUS"] == "retired 2024-11-15"
        if "CENTRE" in rows["perlmutter"]:
            assert rows["perlmutter"]["CENTRE"] == "NERSC" and rows["alps"]["CENTRE"] == "CSCS"
            assert rows["abci3"]["CENTRE"] == "AIST" and rows["setonix"]["CENTRE"] == "Pawsey"
        if columns == 80:
            assert "CENTRE" in rows["perlmutter"] and "left out" in done.stderr and "--wide" in done.stderr
        else:
            assert "UNCONFIRMED" in rows["perlmutter"]
    wide = cli("sites", "--wide", env={"COLUMNS": "80"})
    rows = table(wide.stdout)
    assert rows["perlmutter"]["CENTRE"] == "NERSC (National Energy Research Scientific Computing Center)"
    assert rows["aurora"]["GPU"] == "Data Center GPU Max 1550 (one tile)" and rows["perlmutter"]["PROTOCOL"] == "tcp"
    assert "left out" not in wide.stderr
