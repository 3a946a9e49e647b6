"""Config in one place: gpujobqueue reads dask config only through gpujobqueue/settings/config.py, and
dask-jobqueue's ``jobqueue.<name>.*`` reaches a cluster under gpujobqueue's own section."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import dask
import pytest

from gpujobqueue import SLURMGPUCluster, ValidationError
from gpujobqueue.batch import names as batch_names
from gpujobqueue.plan import make_plan
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.settings import config

ROOT = Path(__file__).resolve().parents[2]
SIZE = {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "gpus_per_node": 1, "security": False}
SIZED = {"cpus_per_gpu": 2, "memory_per_gpu": "8GB"}
QUIET = {"dashboard_address": "127.0.0.1:0"}
# Modules that set dask's own config, not gpujobqueue's, with the reason.
ALLOWED = {
    "gpujobqueue/cli/demo.py": "sets dask's array.backend for the length of one demo run",
    "gpujobqueue/settings/defaults.py": "registers the package's defaults at import, lighter than config.py (issue 43)",
}


def test_dask_jobqueues_shared_directory_and_scheduler_options_reach_the_cluster_under_gpujobqueues(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir(), theirs.mkdir()
    jobqueue = {
        "jobqueue.slurm.shared-temp-directory": str(theirs),
        "jobqueue.slurm.scheduler-options": {"dashboard_address": "127.0.0.1:0", "interface": "lo"},
    }
    with dask.config.set(jobqueue), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plain TCP warns
        with SLURMGPUCluster(**SIZE) as cluster:
            assert cluster._shared_directory == str(theirs)
            assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        with dask.config.set({"gpujobqueue.slurm.shared-temp-directory": str(ours)}):
            with SLURMGPUCluster(**SIZE) as cluster:
                assert cluster._shared_directory == str(ours)


def test_the_shared_directory_and_scheduler_options_come_from_gpujobqueues_section(tmp_path):
    settings = {
        "gpujobqueue.slurm.shared-temp-directory": str(tmp_path),
        "gpujobqueue.slurm.scheduler-options": {"dashboard_address": "127.0.0.1:0", "interface": "lo"},
    }
    with dask.config.set(settings), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with SLURMGPUCluster(**SIZE) as cluster:
            assert cluster._shared_directory == str(tmp_path)
            assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")


def test_no_module_but_config_reads_or_sets_dask_config():
    calls = re.compile(
        r"\bdask\.config\.(get|set|update|refresh)\(|^\s*from dask\.config import|\bimport dask\.config\b"
    )
    found = []
    for path in sorted((ROOT / "gpujobqueue").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in ("gpujobqueue/settings/config.py", *ALLOWED):
            continue
        found += [f"{name}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if calls.search(line)]
    assert found == [], "read dask config through a getter in gpujobqueue/settings/config.py"


@pytest.mark.parametrize("needed", [True, False])
def test_the_ucx_cuda_context_setting_lasts_only_while_the_cluster_starts(needed):
    key = "distributed-ucxx.create-cuda-context"
    before = dask.config.get(key, default=None)
    with config.ucx_cuda_context(needed):
        assert (dask.config.get(key, default=None) is True) == needed or before is True
    assert dask.config.get(key, default=None) == before


def test_every_getter_has_its_default_in_the_packages_yaml():
    assert config.setting("adapt.interval") == "2s" and config.setting("adapt.wait-count") == 10
    assert config.setting("job-poll-interval") == "5s" and config.setting("progress") == "auto"
    assert config.setting("replace.max-failures") == 3
    assert config.configured("slurm", "shared_temp_directory") is None
    assert config.configured("slurm", "scheduler_options") is None


# What a cluster makes of gpujobqueue.slurm.* set before dask is imported (an environment
# variable, a YAML file): dask keeps the key as it was spelled, underscores and all.
SPELLING_PROGRAM = textwrap.dedent("""
    import json, warnings
    from gpujobqueue import SLURMGPUCluster, ValidationError
    from gpujobqueue.plan import make_plan
    from gpujobqueue.plan.scripts import job_script_for

    warnings.simplefilter("ignore")  # plain TCP
    keywords = {"cpus_per_gpu": 2, "memory_per_gpu": "8GB"}
    try:
        plan = make_plan(SLURMGPUCluster, keywords)
        script = job_script_for("slurm", keywords, name="x", tls=False)
    except ValidationError as error:
        print(json.dumps({"refused": error.field}))
    else:
        limit = plan.jobs_per_user.submitted if plan.jobs_per_user else None
        print(json.dumps({"script": script, "jobs_per_user": limit, "mode": plan.launch.mode}))
""")


def _plan_in_a_fresh_process(tmp_path: Path, env: dict[str, str]) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    result = subprocess.run(
        [sys.executable, "-c", SPELLING_PROGRAM],
        env={**clean, "DASK_CONFIG": str(tmp_path / "no-config"), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_a_setting_spelled_with_underscores_in_an_environment_variable_is_read(tmp_path):
    # No GPU count given: the job asks for no GPU, as dask-jobqueue's (issue 31); the setting gives one.
    assert "#SBATCH --gpus-per-node" not in _plan_in_a_fresh_process(tmp_path, {})["script"]
    env = {"DASK_GPUJOBQUEUE__SLURM__GPUS_PER_NODE": "3", "DASK_GPUJOBQUEUE__SLURM__MAX_JOBS_PER_USER": "2"}
    seen = _plan_in_a_fresh_process(tmp_path, env)
    assert "#SBATCH --gpus-per-node=3\n" in seen["script"]
    assert seen["jobs_per_user"] == 2


def test_a_bad_value_spelled_with_underscores_in_an_environment_variable_is_refused_by_name(tmp_path):
    seen = _plan_in_a_fresh_process(tmp_path, {"DASK_GPUJOBQUEUE__SLURM__WORKER_MODE": "nonsense"})
    assert seen == {"refused": "gpujobqueue.slurm.worker-mode"}  # the key set, not the keyword (issue 40)


def test_a_setting_spelled_with_underscores_in_a_yaml_file_is_read(tmp_path):
    folder = tmp_path / "dask"
    folder.mkdir()
    (folder / "site.yaml").write_text("gpujobqueue:\n  slurm:\n    gpus_per_node: 3\n    worker_mode: per-device\n")
    seen = _plan_in_a_fresh_process(tmp_path, {"DASK_CONFIG": str(folder)})
    assert "#SBATCH --gpus-per-node=3\n" in seen["script"] and seen["mode"] == "per-device"


@pytest.mark.parametrize(
    "settings",
    [
        {"gpujobqueue.slurm.gpus_per_node": 3},
        {"gpujobqueue.slurm.gpus-per-node": 3},
        {"gpujobqueue.slurm": {"gpus_per_node": 3}},
    ],
)
def test_a_setting_is_read_whichever_spelling_dask_config_set_keeps(settings):
    with dask.config.set(settings):
        assert make_plan(SLURMGPUCluster, SIZED).request.gpus_per_node == 3


def test_a_setting_given_in_both_spellings_with_two_values_is_refused_naming_it():
    with dask.config.set({"gpujobqueue.slurm": {"gpus_per_node": 3, "gpus-per-node": 2}}):
        with pytest.raises(ValidationError) as raised:
            make_plan(SLURMGPUCluster, SIZED)
    assert raised.value.field == "gpujobqueue.slurm.gpus-per-node"
    assert "gpus_per_node" in str(raised.value) and "3" in str(raised.value)


@pytest.mark.parametrize(
    "key, suggested",
    [
        ("gpujobqueue.slurm.gpus-pernode", "gpus-per-node"),
        ("gpujobqueue.slurm.job-extra", "job-extra-directives"),
        ("gpujobqueue.job-poll-intervall", "job-poll-interval"),
        ("gpujobqueue.adapt.waitcount", "wait-count"),
    ],
)
def test_an_unknown_key_in_a_gpujobqueue_section_is_named_in_a_warning(key, suggested):
    with dask.config.set({key: 3}), pytest.warns(UserWarning) as warned:
        make_plan(SLURMGPUCluster, SIZED)
    (message,) = [str(w.message) for w in warned if key in str(w.message)]
    assert suggested in message


@pytest.mark.parametrize("batch", batch_names())
def test_no_key_of_the_packages_own_yaml_is_taken_for_a_typo(batch):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        make_plan(cluster_class(batch), SIZED)
    assert [str(w.message) for w in seen if "gpujobqueue." in str(w.message)] == []


def test_importing_the_package_registers_its_dask_config_and_nothing_heavy():
    # Issue 43, point 9: before, dask.config.get("gpujobqueue") was None until a class was used; dask-jobqueue's
    # and dask-cuda's sections are there once imported. The workers' preloads import the package too: cheaply.
    code = (
        "import sys, gpujobqueue, dask.config\n"
        "print(dask.config.get('gpujobqueue.usage.sample-interval', None) is not None)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dask_jobqueue', 'distributed', 'gpujobqueue.settings.c',"
        " 'gpujobqueue.runtime', 'gpujobqueue.sites', 'gpujobqueue.batch'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["True", "[]"], done.stdout + done.stderr
