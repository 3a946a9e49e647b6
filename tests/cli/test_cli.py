"""The gpujobqueue command: render and demo, run as a user runs them."""

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from gpujobqueue.cli import main
from gpujobqueue.machine.gpus import nvidia_gpu_ids
from gpujobqueue.sites import load_site

GPUJOBQUEUE = [sys.executable, "-m", "gpujobqueue.cli"]
SHIPPED = Path(__file__).resolve().parents[2] / "site-configs"
MINIMAL = Path(__file__).parents[1] / "sites" / "good" / "minimal.yaml"


def run(*args, check=True):
    return subprocess.run([*GPUJOBQUEUE, *args], capture_output=True, text=True, check=check, timeout=300)


def cli(*args, env=None, check=True):
    """``gpujobqueue ARGS`` in this process (no interpreter start-up), with ``env`` set meanwhile."""
    result = CliRunner().invoke(main, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0 or not check, result.stderr
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def test_render_options_mirror_keywords():
    out = run(
        "render",
        "slurm",
        "--cpus-per-gpu",
        "1",
        "--memory-per-gpu",
        "512MiB",
        "--gpus-per-node",
        "2",
        "--gpu-request",
        "gres",
        "--gpu-type",
        "h200",
        "--queue",
        "gpu",
        "--walltime",
        "00:20:00",
        "--env",
        "A=b",
        "--job-script-prologue",
        "module load cuda",
        "--scheduler-address",
        "tls://10.1.1.1:8786",
    ).stdout
    assert out.startswith("#!/usr/bin/env bash\n")
    for line in (
        "#SBATCH --gres=gpu:h200:2",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=00:20:00",
        "export A=b",
        "module load cuda",
        "tls://10.1.1.1:8786",
    ):
        assert line in out


def test_render_refuses_bad_input_with_the_field():
    result = run("render", "slurm", "--walltime", "25:99", check=False)
    assert result.returncode != 0
    assert "walltime: '25:99'" in result.stderr
    assert result.stdout == ""


def test_demo_runs_the_seed_workloads_and_checks_them():
    result = run("demo", "--size", "small", "--gpus", "2", "--dashboard")
    if nvidia_gpu_ids():
        assert "starting 2 dask-cuda worker(s), one per GPU" in result.stdout
    else:
        assert "no NVIDIA GPU here; starting 2 CPU worker(s)" in result.stdout
    assert "ok: mean" in result.stdout and "ok: relative error" in result.stdout
    # Opened as asked, saying who can read it; the line says it, not a Python warning.
    assert re.search(r"dashboard: http://127\.0\.0\.1:\d+/status \(every user of this host can read it", result.stdout)
    assert "OpenDashboardWarning" not in result.stderr
    assert "FAILED" not in result.stdout


def test_render_speaks_each_batch_systems_gpu_syntax():
    pbs = run(
        "render",
        "pbs",
        "--cpus-per-gpu",
        "1",
        "--memory-per-gpu",
        "512MiB",
        "--gpus-per-node",
        "4",
        "--chunk-resource",
        "system=polaris",
        "--filesystems",
        "home:eagle",
        "--place",
        "scatter",
    ).stdout
    assert (
        "#PBS -l select=1:ncpus=4:ngpus=4:mem=2gb:system=polaris\n" in pbs
        and "#PBS -l filesystems=home:eagle\n" in pbs
        and "#PBS -l place=scatter\n" in pbs
    )
    torque = run(
        "render", "pbs", "--memory-per-gpu", "512MiB", "--gpus-per-node", "2", "--cores", "8", "--gpu-request", "torque"
    ).stdout
    assert "#PBS -l nodes=1:ppn=8:gpus=2\n" in torque
    lsf = run(
        "render",
        "lsf",
        "--cpus-per-gpu",
        "1",
        "--gpus-per-node",
        "2",
        "--gpu-mode",
        "shared",
        "--lsf-units",
        "mb",
        "--memory",
        "4GiB",
    ).stdout
    # -M as dask-jobqueue writes it: 4 GiB over 1000**2, rounded up; no rusage[mem=] added
    assert '#BSUB -gpu "num=2:mode=shared"\n' in lsf and "#BSUB -M 4295\n" in lsf and "rusage" not in lsf
    csm = run(
        "render",
        "lsf",
        "--cpus-per-gpu",
        "1",
        "--memory-per-gpu",
        "512MiB",
        "--gpus-per-node",
        "6",
        "--gpu-request",
        "csm",
    ).stdout
    assert "#BSUB -nnodes 1\n" in csm and "jsrun --nrs 1 " in csm and "#BSUB -gpu" not in csm
    sge = run(
        "render",
        "sge",
        "--memory-per-gpu",
        "512MiB",
        "--gpus-per-node",
        "4",
        "--parallel-environment",
        "smp",
        "--cores",
        "2",
    ).stdout
    assert (
        "#$ -l gpu=2\n" in sge and "#$ -pe smp 2\n" in sge and 'allocated="${SGE_HGR_gpu:-}"' in sge
    )  # gpu counts per slot
    sge = run(
        "render",
        "sge",
        "--memory-per-gpu",
        "512MiB",
        "--gpus-per-node",
        "2",
        "--parallel-environment",
        "smp",
        "--cores",
        "8",
        "--gpu-consumable",
        "job",
    ).stdout
    assert "#$ -l gpu=2\n" in sge and "#$ -pe smp 8\n" in sge


def test_render_refuses_another_batch_systems_option():
    result = run("render", "pbs", "--qos", "regular", check=False)
    assert result.returncode != 0 and "qos" in result.stderr and result.stdout == ""
    result = run("render", "sge", "--gpu-request", "gres", check=False)
    assert result.returncode != 0 and "complex, resource-type, none" in result.stderr


def every_command(group: click.Group, path: tuple = ()) -> list[tuple]:
    found = [path]
    for name, command in group.commands.items():
        found += every_command(command, path + (name,)) if isinstance(command, click.Group) else [path + (name,)]
    return found


def test_h_is_help_on_every_command_and_group():
    commands = every_command(main)
    assert len(commands) >= 8
    for path in commands:
        short, long = (CliRunner().invoke(main, [*path, flag]) for flag in ("-h", "--help"))
        assert short.exit_code == 0 and short.output == long.output and "Usage:" in short.output, (path, short.output)


@pytest.mark.parametrize(
    "args, closest",
    [
        (("render", "slrum"), "slurm"),
        (("render", "perlmuter", "--account", "m1234_g"), "perlmutter"),
        (("render", "lfs"), "lsf"),
        (("show", "perlmuter"), "perlmutter"),
        (("show", "polars"), "polaris"),
    ],
)
def test_a_mistyped_batch_system_or_site_gets_the_closest_name(args, closest):
    result = cli(*args, check=False)
    assert result.returncode != 0 and result.stdout == ""
    assert f"did you mean {closest!r}?" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_check_site_and_an_unknown_command_get_the_closest_name_too():
    result = run("check", "--site", "frontiers", check=False)
    assert result.returncode == 1 and "did you mean 'frontier'?" in result.stdout, result.stdout + result.stderr
    result = run("rendr", "slurm", check=False)
    assert result.returncode == 2 and "Did you mean 'render'?" in result.stderr


@pytest.mark.parametrize(
    "args, option_words",
    [
        (
            ("render", "slurm", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--account", "a b"),
            "Error: --account: 'a b' is not accepted",
        ),
        (
            ("render", "slurm", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--gpus-per-node", "0"),
            "Error: --gpus-per-node: ",
        ),
        (("render", "perlmutter", "--walltime", "00:10:00"), "jobs need an account (--account ...)"),
        (
            (
                "render",
                "slurm",
                "--cpus-per-gpu",
                "1",
                "--memory-per-gpu",
                "512MiB",
                "--processes",
                "3",
                "--gpus-per-node",
                "2",
            ),
            "--processes 3 but --gpus-per-node 2",
        ),
        (("render", "slurm", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--name", "a/b"), "--name"),
        (
            ("render", "pbs", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--qos", "regular"),
            "Error: --qos is not an option for this batch system",
        ),
        (
            ("render", "perlmutter", "--gpu-complex", "gpu"),
            "--gpu-complex is not an option for this batch system; did you mean --gpu-type",
        ),
        (
            (
                "render",
                "slurm",
                "--cpus-per-gpu",
                "1",
                "--memory-per-gpu",
                "512MiB",
                "--scheduler-address",
                "tls://bad address",
            ),
            "Error: --scheduler-address: ",
        ),
    ],
)
def test_command_line_errors_name_the_option_not_the_keyword(args, option_words):
    result = cli(*args, check=False)
    assert result.returncode != 0 and result.stdout == ""
    assert option_words in result.stderr, result.stderr
    assert not re.search(r"Error: [a-z_]+: |\(account=|\bprocesses=|\bgpus_per_node=", result.stderr), result.stderr


def test_show_prints_the_sites_yaml_naming_its_file_once():
    result = cli("show", "perlmutter")
    path = str(load_site("perlmutter").files[0])
    assert result.stdout.count(path) == 1, result.stdout
    assert yaml.safe_load(result.stdout) == load_site("perlmutter").data  # YAML, with the lines as comments
    lines = Path(path).read_text().splitlines()
    account = next(line for line in result.stdout.splitlines() if line.strip().startswith("required:"))
    number = int(re.search(r"# line (\d+)$", account)[1])
    assert lines[number - 1].strip() == "required: true"


def test_show_names_each_file_of_a_merged_site_once_and_where_each_value_came_from(tmp_path):
    (tmp_path / "minimal.yaml").write_text("# my override\nnode:\n  gpus: 2\n")
    env = {"GPUJOBQUEUE_SITE_PATH": f"{MINIMAL.parent}{os.pathsep}{tmp_path}", "HOME": str(tmp_path / "home")}
    out = cli("show", "minimal", env=env).stdout
    assert out.count(str(MINIMAL)) == 1 and out.count(str(tmp_path / "minimal.yaml")) == 1, out
    assert re.search(r"^  gpus: 2 +# file 2, line 3$", out, re.M), out
    assert re.search(r"^  cpus: 8 +# file 1, line 14$", out, re.M), out


def test_sites_fits_100_columns_and_counts_each_sites_unconfirmed_facts():
    result = cli("sites", env={"COLUMNS": "100"})
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, "\n".join(line for line in lines if len(line) > 100)
    headings = lines[0].split()
    assert headings[-1] == "UNCONFIRMED"
    counted = {line.split()[0]: int(line.split()[-1]) for line in lines[1:]}
    for path in SHIPPED.glob("[!_]*.yaml"):
        assert counted[path.stem] == len(yaml.safe_load(path.read_text()).get("unconfirmed") or []), path.stem
    assert len(counted) >= 20 and sum(counted.values()) > 0


def test_render_spells_cudf_spill_as_dask_cuda_does_and_takes_processes():
    for flag in ("--disable-cudf-spill", "--no-enable-cudf-spill"):
        out = cli(
            "render", "slurm", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--gpus-per-node", "2", flag
        ).stdout
        assert "--disable-cudf-spill" in out and "--enable-cudf-spill" not in out
    assert (
        "--enable-cudf-spill"
        in cli("render", "slurm", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--enable-cudf-spill").stdout
    )
    out = cli(
        "render", "slurm", "--cpus-per-gpu", "1", "--memory-per-gpu", "512MiB", "--processes", "3"
    ).stdout  # dask-jobqueue's workers per job; with no GPU count given the job asks for no GPU, as its does
    assert "#SBATCH --gpus-per-node" not in out and "#SBATCH --cpus-per-task=3\n" in out
    out = cli(
        "render",
        "slurm",
        "--cpus-per-gpu",
        "1",
        "--memory-per-gpu",
        "512MiB",
        "--gpus-per-node",
        "3",
        "--processes",
        "3",
    ).stdout
    assert "#SBATCH --gpus-per-node=3\n" in out


def test_one_broken_file_on_the_site_path_is_reported_and_the_other_sites_still_work(tmp_path):
    (tmp_path / "minimal.yaml").write_text(MINIMAL.read_text())
    broken = tmp_path / "typo.yaml"
    broken.write_text(MINIMAL.read_text().replace("name: minimal", "name: typo").replace("  gpus: 4", "  gpus: four"))
    env = {"GPUJOBQUEUE_SITE_PATH": str(tmp_path), "HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    listed = cli("sites", env=env)
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert "minimal" in rows and "perlmutter" in rows and rows["typo"].split()[-3:] == ["broken", "-", "-"]
    reported = [line for line in listed.stderr.splitlines() if str(broken) in line]
    assert len(reported) == 1 and "node.gpus: 'four' is not of type 'integer'" in reported[0], listed.stderr
    assert "#SBATCH --gpus-per-node=4" in cli("render", "minimal", env=env).stdout
    assert "#SBATCH" in cli("render", "generic-slurm", env=env).stdout
    refused = cli("render", "typo", env=env, check=False)
    assert refused.returncode == 1, refused.stderr
    assert f"{broken}:12: node.gpus: 'four' is not of type 'integer'" in refused.stderr, refused.stderr


RENDER_ONLY_OPTIONS = {  # each named after the field its errors name (--scheduler-address's is scheduler)
    "standalone",
    "scheduler",
    "name",
    "run",
    "workers_timeout",
    "scheduler_file",
    "job_array",
    "no_tls",
    "tls_directory",
    "explain",
    "when",
}


def test_render_has_an_option_for_every_keyword_of_every_batch_system():
    from gpujobqueue.batch import names as batch_names
    from gpujobqueue.cli.main import render
    from gpujobqueue.runtime.factory import cluster_class
    from gpujobqueue.settings.keywords import LAUNCH, PROCESSES, REQUEST

    options = {param.name for param in render.params if isinstance(param, click.Option)}
    keywords = set()
    for batch in batch_names():
        for keyword in (*REQUEST, *LAUNCH, PROCESSES, *cluster_class(batch).batch_system.keywords):
            keywords.add(keyword)
            if keyword.command_line is not None:  # a keyword that no script can carry says why
                assert keyword not in options and len(keyword.command_line) > 20, (batch, keyword)
            else:
                assert keyword in options, f"{batch}: no render option for the {keyword} keyword"
    assert options - keywords == RENDER_ONLY_OPTIONS


def test_the_options_of_batch_and_launch_keywords_reach_the_script():
    lsf = run(
        "render", "lsf", "--ncpus", "4", "--mem", str(8 * 10**9), "--lsf-units", "mb", "--gpus-per-node", "2"
    ).stdout
    assert "#BSUB -M 8000\n" in lsf and "#BSUB -n 4\n" in lsf
    slurm = run(
        "render",
        "slurm",
        "--cores",
        "2",
        "--memory",
        "8GB",
        "--gpus-per-node",
        "2",
        "--worker-mode",
        "per-device",
        "--allocation-variable",
        "GPU_DEVICE_ORDINAL",
        "--no-nanny",
    ).stdout
    assert 'allocated="${GPU_DEVICE_ORDINAL:-}"' in slurm
