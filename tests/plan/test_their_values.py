"""Issue 42: what dask-jobqueue users' code and configs pass is taken as dask-jobqueue takes it.

Each test holds one point of the issue against the plan a cluster class makes from the keywords (nothing is
submitted), and, where the point is about the script, against the rendered script.
"""

from __future__ import annotations

import glob
import logging
import pathlib
import warnings

import dask
import pytest
from distributed import Client

from gpujobqueue import LocalGPUCluster, LSFGPUCluster, PBSGPUCluster, SGEGPUCluster, SLURMGPUCluster, ValidationError
from gpujobqueue.jobs.job_status import read_log_tail
from gpujobqueue.plan.scripts import job_script_for

JOB = {"cores": 8, "memory": "64GB", "gpus_per_node": 2}


def plan_of(cls, **keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.parse_keywords({**JOB, **keywords})


# Point 1: whole numbers where dask-jobqueue formats the value as text.


@pytest.mark.parametrize(
    ("cls", "seconds"),
    [
        (SLURMGPUCluster, 1800 * 60),  # sbatch -t 1800: minutes
        (LSFGPUCluster, 1800 * 60),  # bsub -W 1800: minutes
        (PBSGPUCluster, 1800),  # -l walltime=1800: seconds
        (SGEGPUCluster, 1800),  # -l h_rt=1800: seconds
    ],
)
def test_an_int_walltime_means_what_the_batch_system_reads_in_the_bare_number(cls, seconds):
    assert plan_of(cls, walltime=1800).request.walltime == seconds


def test_an_int_walltime_warns_that_yaml_may_have_read_minutes_and_seconds_as_a_number():
    with pytest.warns(UserWarning, match=r"(?s)walltime=1800.*YAML.*30:00.*quote"):
        SLURMGPUCluster.parse_keywords({**JOB, "walltime": 1800})


def test_a_walltime_given_as_text_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SLURMGPUCluster.parse_keywords({**JOB, "walltime": "00:30:00"})


def test_an_int_walltime_from_a_jobqueue_yaml_is_taken():
    with dask.config.set({"jobqueue.slurm.walltime": 1800}), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert SLURMGPUCluster.parse_keywords(dict(JOB)).request.walltime == 1800 * 60


@pytest.mark.parametrize("keyword", ["account", "job_name"])
def test_a_numeric_account_or_job_name_is_its_text(keyword):
    script = job_script_for("slurm", {**JOB, keyword: 123456}, name="w", scheduler="tls://10.0.0.1:8786")
    assert "123456" in script


def test_a_bool_is_not_taken_for_a_number():
    with pytest.raises(ValidationError, match="walltime"):
        plan_of(SLURMGPUCluster, walltime=True)


# Point 2: worker-CLI spellings with one meaning.


def test_no_nanny_in_the_worker_arguments_means_nanny_false():
    plan = plan_of(SLURMGPUCluster, worker_extra_args=["--no-nanny"])
    assert plan.launch.nanny is False
    assert "--no-nanny" not in plan.launch.extra_args


def test_no_nanny_in_dask_jobqueues_extra_means_nanny_false():
    assert plan_of(SLURMGPUCluster, extra=["--no-nanny"]).launch.nanny is False


def test_no_nanny_against_nanny_true_is_refused_naming_both():
    with pytest.raises(ValidationError, match=r"(?s)--no-nanny.*nanny=True"):
        plan_of(SLURMGPUCluster, worker_extra_args=["--no-nanny"], nanny=True)


def test_nanny_in_the_worker_arguments_is_what_the_worker_does_anyway():
    plan = plan_of(SLURMGPUCluster, worker_extra_args=["--nanny"])
    assert plan.launch.nanny is True
    assert "--nanny" not in plan.launch.extra_args


def test_nanny_spellings_never_reach_dask_cudas_worker_line_check():
    # take_worker_spellings takes them out first: dask cuda worker's option check has no hint for them.
    plan = plan_of(SLURMGPUCluster, worker_extra_args=["--nanny=true"], worker_mode="dask-cuda")
    assert plan.launch.mode == "dask-cuda" and plan.launch.extra_args == ()
    with pytest.raises(ValidationError, match="dask-cuda always starts its workers under a nanny"):
        plan_of(SLURMGPUCluster, worker_extra_args=["--no-nanny"], worker_mode="dask-cuda")


def test_a_nanny_port_asks_for_per_device_workers():
    plan = plan_of(SLURMGPUCluster, worker_extra_args=["--nanny-port", "40000:40100"])
    assert plan.launch.mode == "per-device"
    assert "--nanny-port" in plan.launch.extra_args


@pytest.mark.parametrize("directive", ["--gres=gpu:1", "--gpus-per-node=1", "--time=01:00:00", "--partition=gpu"])
def test_a_batch_directive_in_the_worker_arguments_is_refused_naming_job_extra_directives(directive):
    with pytest.raises(ValidationError, match=r"(?s)batch directive.*job_extra_directives") as caught:
        plan_of(SLURMGPUCluster, worker_extra_args=[directive])
    assert len(str(caught.value)) < 400, "a refusal names the place, not the worker's 48 options"


# Point 3: the prologue runs as in dask-jobqueue's scripts: a failing line is logged, and the job goes on.


def script_with_prologue(**keywords):
    return job_script_for(
        "slurm",
        {**JOB, "job_script_prologue": ["module load cuda/99"], **keywords},
        name="w",
        scheduler="tls://10.0.0.1:8786",
    )


def test_a_prologue_does_not_stop_the_job_on_a_failing_line_by_default():
    script = script_with_prologue()
    prologue = script[script.index("# prologue") : script.index("module load cuda/99")]
    assert "set -e" not in prologue and "trap 'echo \"gpujobqueue: prologue command failed" in prologue


def test_prologue_errors_stop_ends_the_job_at_a_failing_line():
    script = script_with_prologue(prologue_errors="stop")
    assert "set -e\nmodule load cuda/99\nset +e" in script


def test_prologue_errors_is_refused_naming_its_values():
    with pytest.raises(ValidationError, match="prologue_errors.*'continue' or 'stop'"):
        plan_of(SLURMGPUCluster, prologue_errors="halt")


def test_a_multi_line_prologue_item_is_taken_as_dask_jobqueue_writes_it():
    item = "if ! command -v nvidia-smi >/dev/null; then\n    echo no GPU\nfi"
    assert item in job_script_for("slurm", {**JOB, "job_script_prologue": [item]}, name="w", tls=False)


def test_a_job_whose_prologue_line_fails_starts_its_workers_and_logs_the_line(tmp_path):
    keywords = dict(gpus_per_node=1, worker_mode="per-device", memory_per_gpu="512MiB", devices=[0])
    prologue = ["echo preparing", "module load cuda/99", "false"]
    with (
        LocalGPUCluster(**keywords, job_script_prologue=prologue, log_directory=str(tmp_path)) as cluster,
        Client(cluster) as client,
    ):
        cluster.scale(1)
        client.wait_for_workers(1, timeout=120)
        assert client.submit(sum, range(11)).result() == 55
    logs = "".join(pathlib.Path(path).read_text() for path in glob.glob(str(tmp_path / "*")))
    assert "gpujobqueue: prologue command failed with status 127: module load cuda/99" in logs
    assert "gpujobqueue: prologue command failed with status 1: false" in logs


def test_a_failed_prologue_line_far_above_the_end_of_the_log_is_kept_in_its_tail(tmp_path):
    log = tmp_path / "job.err"
    log.write_text(
        "gpujobqueue: prologue command failed with status 127: module load cuda/99\n"
        + "".join(f"worker line {i}\n" for i in range(200))
    )
    _path, tail = read_log_tail([str(log)], lines=20)
    assert tail.splitlines()[:2] == ["gpujobqueue: prologue command failed with status 127: module load cuda/99", "..."]
    assert tail.splitlines()[-1] == "worker line 199"


# Point 4: a GPU count given only as a worker resource.


def test_a_gpu_resource_alone_asks_for_that_many_gpus_per_worker():
    keywords = {"processes": 1, "cores": 2, "memory": "8GB", "worker_extra_args": ["--resources ssdGB=200,GPU=2"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = SLURMGPUCluster.parse_keywords(keywords)
    assert plan.request.gpus_per_node == 2
    assert plan.launch.workers_per_node == 1
    assert plan.launch.gpus_per_worker == 2
    assert dict(plan.launch.resources)["GPU"] == "2"


# Point 5: memory as a bare number.


@pytest.mark.parametrize("value", [240, "240", 1000])
def test_a_memory_under_a_mebibyte_is_refused_naming_the_unit(value):
    with pytest.raises(ValidationError, match=r'(?s)memory.*bytes.*"240GB"|memory.*bytes.*GB'):
        plan_of(SLURMGPUCluster, memory=value)


def test_a_memory_under_a_mebibyte_from_a_jobqueue_yaml_is_refused():
    with dask.config.set({"jobqueue.slurm.memory": 240}), pytest.raises(ValidationError, match="bytes"):
        SLURMGPUCluster.parse_keywords({"cores": 8, "gpus_per_node": 2})


# Point 7: the log says the workers the script starts.


def test_the_log_counts_the_workers_the_script_starts(caplog):
    caplog.set_level(logging.INFO, logger="gpujobqueue")
    plan_of(SLURMGPUCluster, processes=2, gpus_per_node=4, job_extra_directives=["--gres=gpu:4"])
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "starting 2 GPU workers per job" in said and "starting 4 GPU workers" not in said


def test_an_int_walltime_routes_as_the_batch_system_reads_it():
    """Polaris (PBS: a bare number is seconds) sends 2 nodes for an hour to debug, for longer to capacity."""
    for walltime, queue in ((3600, "debug"), (3660, "capacity")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            keywords = {"site": "polaris", "account": "abc123", "nodes": 2, "walltime": walltime}
            plan = PBSGPUCluster.parse_keywords(keywords)
        assert plan.request.queue == queue, walltime


@pytest.mark.parametrize(("cls", "prefix"), [(SLURMGPUCluster, "#SBATCH"), (SGEGPUCluster, "#$")])
def test_a_shell_line_that_would_read_as_a_batch_directive_is_refused(cls, prefix):
    """A prologue item may hold several lines, but none may start with the batch system's directive prefix."""
    with pytest.raises(ValidationError, match=r"job_script_epilogue\[0\].*batch directive.*job_extra_directives"):
        plan_of(cls, job_script_epilogue=[f"echo done\n{prefix} --qos=high"])
