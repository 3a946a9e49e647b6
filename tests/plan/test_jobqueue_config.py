"""dask-jobqueue's configuration is a source under gpujobqueue's own (issue 31, point 8): keyword >
``gpujobqueue.<batch>.*`` > ``jobqueue.<batch>.*`` > site > default, and only the values a user set
count, never the defaults dask-jobqueue ships in its own jobqueue.yaml."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import dask
import pytest

from gpujobqueue.batch import batch_system
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.settings import config

# A centre's jobqueue.yaml, as handed out: dask-jobqueue's whole file, a few lines edited. The untouched
# lines (walltime '00:30:00', name dask-worker, death-timeout 60, the worker command) are no choice.
CENTRE_JOBQUEUE_YAML = textwrap.dedent("""
    jobqueue:
      {batch}:
        name: dask-worker
        cores: 8
        memory: 32GB
        processes: null
        python: null
        interface: null
        death-timeout: 60
        local-directory: null
        worker-command: "distributed.cli.dask_worker"
        worker-extra-args: ["--resources FPGA=0"]
        shebang: "#!/usr/bin/env bash"
        queue: gpuq
        {account}: ABC123
        walltime: '02:00:00'
        job-script-prologue: ["module load cuda"]
        job-extra-directives: []
        scheduler-options: {{}}
""")

RENDER_PROGRAM = textwrap.dedent("""
    import json, sys, warnings
    from gpujobqueue import GPUJobQueueError
    from gpujobqueue.plan.scripts import job_script_for

    warnings.simplefilter("ignore")  # plain TCP, the workers' python
    try:
        script = job_script_for(sys.argv[1], json.loads(sys.argv[2]), name="x", tls=False)
    except GPUJobQueueError as error:
        print(json.dumps({"refused": f"{type(error).__name__}: {error}"}))
    else:
        print(json.dumps({"script": script}))
""")


def _render_in_a_fresh_process(tmp_path: Path, batch: str, keywords: dict, yaml_text: str) -> dict:
    folder = tmp_path / "dask"
    folder.mkdir(exist_ok=True)
    (folder / "jobqueue.yaml").write_text(yaml_text)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    result = subprocess.run(
        [sys.executable, "-c", RENDER_PROGRAM, batch, json.dumps(keywords)],
        env={**clean, "DASK_CONFIG": str(folder)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "batch, account, lines",
    [
        (
            "slurm",
            "account",
            [
                "#SBATCH --cpus-per-task=8",
                "#SBATCH --partition=gpuq",
                "#SBATCH --account=ABC123",
                "#SBATCH --time=02:00:00",
            ],
        ),
        ("pbs", "account", ["#PBS -q gpuq", "#PBS -A ABC123", "#PBS -l walltime=02:00:00"]),
        ("lsf", "project", ["#BSUB -q gpuq", "#BSUB -P ABC123", "#BSUB -W 02:00"]),
        ("sge", "project", ["#$ -q gpuq", "#$ -P ABC123", "#$ -l h_rt=02:00:00"]),
    ],
)
def test_a_centres_jobqueue_yaml_sizes_and_places_the_job(tmp_path, batch, account, lines):
    yaml_text = CENTRE_JOBQUEUE_YAML.format(batch=batch, account=account)
    seen = _render_in_a_fresh_process(tmp_path, batch, {}, yaml_text)
    assert "script" in seen, seen  # main: JobSizeMissingError, cores and memory not given
    script = seen["script"]
    for line in lines:
        assert line + "\n" in script, (line, script)
    assert "module load cuda\n" in script
    assert "FPGA=0" in script  # the user's resources, merged with GPU=1
    assert "distributed.cli.dask_worker" not in script


def test_a_keyword_and_gpujobqueues_own_section_stand_over_jobqueues(tmp_path):
    yaml_text = CENTRE_JOBQUEUE_YAML.format(batch="slurm", account="account") + textwrap.dedent("""
        gpujobqueue:
          slurm:
            queue: ownq
    """)
    script = _render_in_a_fresh_process(tmp_path, "slurm", {"walltime": "00:10:00"}, yaml_text)["script"]
    assert "#SBATCH --partition=ownq\n" in script and "gpuq" not in script
    assert "#SBATCH --time=00:10:00\n" in script and "02:00:00" not in script
    assert "#SBATCH --account=ABC123\n" in script


def test_only_values_the_user_set_count_not_dask_jobqueues_shipped_defaults():
    import dask_jobqueue  # noqa: F401  (registers its jobqueue.yaml in dask.config.defaults)

    batch_system("slurm")  # the registry tells config dask-jobqueue's keys of each batch system
    assert dask.config.get("jobqueue.slurm.walltime") == "00:30:00"  # dask-jobqueue's shipped default
    assert config.jobqueue_settings("slurm") == {}
    with dask.config.set({"jobqueue.slurm.walltime": "04:00:00", "jobqueue.slurm.cores": 4}):
        assert config.jobqueue_settings("slurm") == {
            "walltime": ("04:00:00", "jobqueue.slurm.walltime"),
            "cores": (4, "jobqueue.slurm.cores"),
        }
        assert config.source("slurm", "walltime") == "jobqueue.slurm.walltime"
    with dask.config.set({"jobqueue.slurm.walltime": "04:00:00", "gpujobqueue.slurm.walltime": "01:00:00"}):
        assert config.source("slurm", "walltime") == "gpujobqueue.slurm.walltime"


def test_jobqueues_scheduler_options_reach_the_scheduler_and_a_bad_one_is_named_by_its_key():
    from gpujobqueue.runtime.cluster_options import scheduler_options

    with dask.config.set({"jobqueue.slurm.scheduler-options": {"dashboard_address": "127.0.0.1:0", "port": 0}}):
        options, _ = scheduler_options("slurm", None)
        assert options["port"] == 0
    with dask.config.set({"jobqueue.slurm.scheduler-options": {"no_such_option": 1}}):
        from distributed import Scheduler

        from gpujobqueue import ValidationError

        with pytest.raises(ValidationError) as raised:
            scheduler_options("slurm", None, Scheduler)
        assert raised.value.field == "jobqueue.slurm.scheduler-options"


def test_jobqueue_config_without_a_job_size_on_main_was_refused_now_renders():
    with dask.config.set({"jobqueue.slurm.cores": 4, "jobqueue.slurm.memory": "16GB"}):
        script = job_script_for("slurm", {}, name="x", tls=False)
    assert "#SBATCH --cpus-per-task=4\n" in script


# YAML writes a set as a mapping of null values: a jobqueue.yaml's ``job-extra: {'-C h20'}`` (a Keeling
# user's, shared as a gist) is {'-C h20': None}, and dask-jobqueue writes one directive per key.
def test_a_yaml_set_of_directives_is_its_lines_as_dask_jobqueue_writes_them():
    import yaml

    section = yaml.safe_load("job-extra: {'-C h20'}\ncores: 5\nmemory: 200 GB\n")
    assert section["job-extra"] == {"-C h20": None}
    with warnings_ignored(), dask.config.set({"jobqueue.slurm": section}):
        script = job_script_for("slurm", {}, name="x", tls=False)
    assert "#SBATCH -C h20\n" in script


@pytest.mark.parametrize(
    "keyword, value, line",
    [
        ("job_extra_directives", {"-C h20": None, "--exclusive": None}, "#SBATCH -C h20\n#SBATCH --exclusive\n"),
        ("job_extra_directives", {"--qos=low", "-C h20"}, "#SBATCH --qos=low\n#SBATCH -C h20\n"),  # sorted
        ("job_script_prologue", {"module load cuda": None}, "\nmodule load cuda\n"),
    ],
)
def test_a_set_of_lines_given_by_keyword_is_read_as_its_lines(keyword, value, line):
    with warnings_ignored():
        script = job_script_for("slurm", {keyword: value, "cores": 4, "memory": "8GB"}, name="x", tls=False)
    assert line in script


def test_a_hand_written_gpu_line_in_a_yaml_set_is_adopted_as_from_a_list():
    with warnings_ignored():
        script = job_script_for(
            "slurm", {"job_extra_directives": {"--gres=gpu:2": None}, "cores": 4, "memory": "8GB"}, name="x", tls=False
        )
    assert [line for line in script.splitlines() if "gpu" in line and line.startswith("#SBATCH")] == [
        "#SBATCH --gres=gpu:2"
    ]


def test_a_mapping_of_directives_with_values_is_refused_naming_what_would_be_dropped():
    from gpujobqueue import ValidationError

    with pytest.raises(ValidationError) as refused:
        job_script_for("slurm", {"job_extra_directives": {"--mem": "4G"}, "cores": 4, "memory": "8GB"}, name="x")
    assert refused.value.field == "job_extra_directives"
    assert "'4G'" in str(refused.value) and "list" in str(refused.value)


@contextlib.contextmanager
def warnings_ignored():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plain TCP, the workers' python: not what these tests are about
        yield
