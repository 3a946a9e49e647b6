"""The worker command lines the templates render parse under the installed CLIs themselves."""

import atexit
import functools
import runpy
import shlex
import shutil
import tempfile
import warnings
from unittest import mock

import click
import pytest
from fixtures.sizes import with_job_size

from gpujobqueue import render_job_script
from gpujobqueue.batch import names as batch_names
from gpujobqueue.jobs.scheduler_job import SchedulerStart
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.preloads import PRELOADS, source, standalone_file_name
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.script.render import SchedulerInJob
from gpujobqueue.script.run import ClientRun
from gpujobqueue.security.dashboard import OpenDashboardWarning
from gpujobqueue.security.tls import make_credentials

pytest.importorskip("dask_cuda.cli", reason="dask-cuda (with cuda-bindings) is needed to parse its command line")

# The workers preload gpujobqueue's modules by name; the CLIs import them to check their arguments.
WATCHDOG = "gpujobqueue.preloads.watchdog"
PIN_DEVICE = "gpujobqueue.preloads.pin_device"
NIC_AFFINITY = "gpujobqueue.preloads.nic_affinity"
FULL_DASK_CUDA = {
    "gpus_per_node": 4,
    "python": "python3",
    "rmm_pool_size": "20GB",
    "device_memory_limit": "0.8",
    "local_directory": "/tmp/dask",
    "protocol": "ucx",
    "interface": "ib0",
    "death_timeout": 30,
    "nthreads": 2,
    "memory_per_gpu": "60GiB",
    "worker_extra_args": ["--dashboard-address", ":0"],
}


class _CommandFound(Exception):
    def __init__(self, command: click.Command):
        self.command = command


def python_m_command(module: str) -> click.Command:
    """The click command that ``python -m <module>`` runs, as click is handed it: the module run as
    ``__main__`` up to its command's ``main``, which returns it instead of parsing ``sys.argv``. No
    source is parsed with ``ast`` (CPython 3.11 once raised "AST constructor recursion depth
    mismatch" there under load)."""

    def found(command: click.Command, *args, **kwargs):
        raise _CommandFound(command)

    with mock.patch.object(click.Command, "main", found), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module is imported already
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=False)
        except _CommandFound as caught:
            return caught.command
    raise AssertionError(f"python -m {module} runs no click command")


@functools.cache
def credentials_folder() -> str:
    folder = tempfile.mkdtemp(prefix="gpujobqueue-test-tls-")
    atexit.register(shutil.rmtree, folder, True)
    return str(make_credentials(folder)[0])


def worker_arguments(script: str, module: str, private_dir: str = "/nonexistent") -> list[str]:
    """The arguments after ``python -m <module>`` in a rendered script, continuation lines joined;
    ``$private_dir`` (where a ``--standalone`` script writes its preloads) as ``private_dir``."""
    lines = script.split("\n")
    start = next(i for i, line in enumerate(lines) if f" -m {module} " in line)
    command = []
    for line in lines[start:]:
        command.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    # The job's shell would expand the TLS folder; the CLIs check that the files exist.
    credentials = credentials_folder()
    text = " ".join(command).rstrip("&").replace("$GPUJOBQUEUE_TLS_DIR", credentials)
    words = shlex.split(text.replace("$private_dir", private_dir))
    return words[words.index(module.split()[0]) + len(module.split()) :]


def test_dask_cuda_command_parses_under_dask_cuda():
    script = job_script_for("slurm", with_job_size(FULL_DASK_CUDA), name="job-7", scheduler="tcp://10.0.0.1:8786")
    args = worker_arguments(script, "dask_cuda.cli")
    context = python_m_command("dask_cuda.cli").make_context("dask_cuda.cli", args)
    params = context.params
    assert params["scheduler"] == "tcp://10.0.0.1:8786"
    assert params["name"] == "job-7"
    assert params["nthreads"] == 2
    assert params["resources"] == "GPU=1"
    assert params["rmm_pool_size"] == str(20 * 10**9)
    assert params["device_memory_limit"] == "0.8"
    assert params["protocol"] == "ucx" and params["interface"] == "ib0"
    assert params["death_timeout"] == "30"
    assert params["preload"] == (WATCHDOG,)
    assert params["memory_limit"] == str(60 * 2**30)


def test_memory_and_ucx_options_parse_under_dask_cuda_with_its_names():
    keywords = {
        **FULL_DASK_CUDA,
        "rmm_pool_size": None,
        "rmm_async": True,
        "rmm_maximum_pool_size": "100GB",
        "rmm_release_threshold": "0.5",
        "enable_cudf_spill": True,
        "set_rmm_allocator_for_libs": "cupy,torch",
        "enable_nvlink": True,
        "enable_infiniband": False,
        "enable_rdmacm": False,
        "enable_tcp_over_ucx": True,
    }
    script = job_script_for("slurm", with_job_size(keywords), name="job-7", scheduler="ucx://10.0.0.1:8786")
    params = (
        python_m_command("dask_cuda.cli")
        .make_context("dask_cuda.cli", worker_arguments(script, "dask_cuda.cli"))
        .params
    )
    assert (
        params["rmm_async"],
        params["rmm_pool_size"],
        params["rmm_maximum_pool_size"],
        params["rmm_release_threshold"],
    ) == (True, None, str(100 * 10**9), "0.5")
    assert params["enable_cudf_spill"] is True and params["rmm_allocator_external_lib_list"] == ["cupy", "torch"]
    assert (
        params["enable_nvlink"],
        params["enable_infiniband"],
        params["enable_rdmacm"],
        params["enable_tcp_over_ucx"],
    ) == (True, False, False, True)


def test_ucx_gets_an_rmm_pool_unless_the_user_says_otherwise():
    def params(**keywords):
        protocol = keywords.get("protocol", "ucx")
        script = job_script_for(
            "slurm",
            {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "python": "python3", "protocol": "ucx", **keywords},
            name="w",
            scheduler=f"{'ucx' if protocol == 'ucx' else 'tls'}://10.0.0.1:8786",
        )
        return (
            python_m_command("dask_cuda.cli")
            .make_context("dask_cuda.cli", worker_arguments(script, "dask_cuda.cli"))
            .params
        )

    assert params()["rmm_pool_size"] == str(10**9)
    assert params(rmm_pool_size=False)["rmm_pool_size"] is None
    assert params(rmm_pool_size="0.9")["rmm_pool_size"] == "0.9"
    assert params(rmm_async=True)["rmm_pool_size"] is None
    assert params(protocol="tcp")["rmm_pool_size"] is None


def test_parser_rejects_what_dask_cuda_rejects():
    # The check above can fail: dask-cuda refuses --lifetime, which dask worker takes (gpujobqueue turns
    # the user's into the lifetime config, tests/test_worker_line_cli.py). With a --preload (the
    # watchdog) an unknown option goes to the preload's arguments, refused too.
    script = job_script_for("slurm", {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", **FULL_DASK_CUDA}, name="job-7")
    args = worker_arguments(script, "dask_cuda.cli")
    python_m_command("dask_cuda.cli").make_context("dask_cuda.cli", args)
    with pytest.raises(click.UsageError):
        python_m_command("dask_cuda.cli").make_context("dask_cuda.cli", [*args, "--lifetime", "1h"])


def test_a_subcommand_word_is_caught_as_the_scheduler():
    # `python -m dask_cuda.cli worker ADDR` hands "worker" to dask-cuda as its scheduler:
    # the form that once failed on real GPUs, and that parsing as python -m does catches.
    with pytest.raises(click.UsageError, match="unexpected extra argument"):
        python_m_command("dask_cuda.cli").make_context(
            "dask_cuda.cli", ["worker", "tcp://10.0.0.1:8786", "--name", "x"]
        )


def test_per_device_command_parses_under_dask_worker():
    script = job_script_for(
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "512MiB",
            "gpus_per_node": 2,
            "worker_mode": "per-device",
            "python": "python3",
            "death_timeout": 30,
        },
        name="job-3",
        scheduler="tls://10.0.0.1:8786",
    )
    args = worker_arguments(script, "distributed.cli.dask_worker")
    params = python_m_command("distributed.cli.dask_worker").make_context("dask-worker", args).params
    assert params["name"] == "job-3"  # dask worker names its nannies' workers job-3-0, job-3-1
    assert params["n_workers"] == "2"
    assert params["nanny"] is True
    assert params["preload_nanny"] == (PIN_DEVICE,)
    assert params["preload"] == (WATCHDOG,) and params["death_timeout"] == "30"
    assert params["resources"] == "GPU=1"
    assert params["memory_limit"] == str(512 * 2**20)  # memory_per_gpu, each worker its GPU's share


def test_per_device_without_nanny_parses_under_dask_worker():
    script = job_script_for(
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "512MiB",
            "gpus_per_node": 2,
            "worker_mode": "per-device",
            "python": "python3",
            "nanny": False,
        },
        name="job-3",
    )
    params = (
        python_m_command("distributed.cli.dask_worker")
        .make_context("dask-worker", worker_arguments(script, "distributed.cli.dask_worker"))
        .params
    )
    assert params["name"] == "job-3-$i"  # the script expands $i to the device's index
    assert params["nanny"] is False


def test_workers_get_a_death_timeout_of_60_s_unless_told():
    # The key is always in the settings (None when not given): it must not mean "no timeout".
    script = job_script_for(
        "slurm",
        {
            "cpus_per_gpu": 1,
            "memory_per_gpu": "512MiB",
            "gpus_per_node": 2,
            "worker_mode": "per-device",
            "python": "python3",
        },
        name="job-3",
        scheduler="tls://10.0.0.1:8786",
    )
    args = worker_arguments(script, "distributed.cli.dask_worker")
    params = python_m_command("distributed.cli.dask_worker").make_context("dask-worker", args).params
    assert params["death_timeout"] == "60" and params["preload"] == (WATCHDOG,)


def test_per_device_nannies_preload_the_card_choice_after_the_pinning_when_asked():
    keywords = with_job_size({"gpus_per_node": 2, "worker_mode": "per-device", "nic_affinity": True})
    script = job_script_for("slurm", keywords, name="job-3", scheduler="tls://10.0.0.1:8786")
    args = worker_arguments(script, "distributed.cli.dask_worker")
    params = python_m_command("distributed.cli.dask_worker").make_context("dask-worker", args).params
    assert params["preload_nanny"] == (PIN_DEVICE, NIC_AFFINITY)  # pin_device sets the device nic_affinity reads
    assert params["preload"] == (WATCHDOG,)


@pytest.mark.parametrize("nic_affinity", [False, True])
def test_dask_cuda_takes_the_card_choice_as_a_nanny_preload_from_dask_config(nic_affinity):
    # dask cuda worker has no --preload-nanny: its nannies read distributed.nanny.preload.
    keywords = with_job_size({"gpus_per_node": 2, "protocol": "ucx", "nic_affinity": nic_affinity})
    script = job_script_for("slurm", keywords, name="job-3", scheduler="ucx://10.0.0.1:8786")
    params = (
        python_m_command("dask_cuda.cli")
        .make_context("dask_cuda.cli", worker_arguments(script, "dask_cuda.cli"))
        .params
    )
    assert params["preload"] == (WATCHDOG,)
    variables = command_environment(script, "dask_cuda.cli")
    if nic_affinity:
        assert variables["DASK_DISTRIBUTED__NANNY__PRELOAD"] == NIC_AFFINITY
    else:  # UCX chooses its cards: nothing of gpujobqueue's sets UCX_NET_DEVICES
        assert "DASK_DISTRIBUTED__NANNY__PRELOAD" not in variables and "nic_affinity" not in script
        assert "UCX_NET_DEVICES" not in script


@pytest.mark.parametrize(
    "module, keywords",
    [
        ("distributed.cli.dask_worker", {"worker_mode": "per-device", "nic_affinity": True}),
        ("distributed.cli.dask_worker", {"worker_mode": "per-device", "nanny": False}),
        ("dask_cuda.cli", {"worker_mode": "dask-cuda"}),
    ],
)
def test_a_standalone_scripts_workers_preload_the_files_it_writes(module, keywords, tmp_path):
    script = job_script_for("slurm", with_job_size({"gpus_per_node": 2, **keywords}), name="job-3", standalone=True)
    for preload in PRELOADS:  # what the script writes into its private folder
        (tmp_path / standalone_file_name(preload)).write_text(source(preload))
    args = worker_arguments(script, module, private_dir=str(tmp_path))
    params = python_m_command(module).make_context(module, args).params  # which imports the preload files
    assert params["preload"] == (str(tmp_path / "gpujobqueue_watchdog.py"),)
    if keywords.get("nic_affinity"):
        pinned = tuple(str(tmp_path / f"gpujobqueue_{name}.py") for name in ("pin_device", "nic_affinity"))
        assert params["preload_nanny"] == pinned
    assert not [word for word in args if word.startswith("gpujobqueue.")], "a preload by module name"


@pytest.mark.parametrize("standalone", [False, True])
def test_a_scheduler_jobs_scheduler_preloads_the_watchdog(standalone, tmp_path):
    plan = cluster_class("slurm").parse_keywords(with_job_size({"gpus_per_node": 1}))
    start = SchedulerStart(scheduler_file="/shared/.gpujobqueue-x/scheduler.json")
    script = render_job_script(plan, SchedulerInJob(start=start), name="job-0", standalone=standalone)
    (tmp_path / "gpujobqueue_watchdog.py").write_text(source("watchdog"))
    args = worker_arguments(script, SCHEDULER_MODULE, private_dir=str(tmp_path))
    params = python_m_command(SCHEDULER_MODULE).make_context(SCHEDULER_MODULE, args).params
    assert params["preload"] == ((str(tmp_path / "gpujobqueue_watchdog.py"),) if standalone else (WATCHDOG,))


# distributed starts every worker's and scheduler's HTTP server whatever --no-dashboard says;
# closed, it listens on the loopback and serves no route.
CLOSED_DASHBOARD = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}
WORKER_MODULES = {"dask-cuda": "dask_cuda.cli", "per-device": "distributed.cli.dask_worker"}
SCHEDULER_MODULE = "distributed.cli.dask_scheduler"


def command_environment(script: str, module: str) -> dict[str, str]:
    """The ``VAR=value`` words on the lines continued into the first ``python -m <module>`` line."""
    lines = script.split("\n")
    start = next(i for i, line in enumerate(lines) if f" -m {module} " in line)
    words = []
    for line in reversed(lines[:start]):
        if not line.endswith("\\"):
            break
        words = shlex.split(line.rstrip("\\")) + words
    return dict(word.split("=", 1) for word in words)


def dashboard_params(script: str, module: str) -> dict:
    command = python_m_command(module)
    params = command.make_context(module, worker_arguments(script, module)).params
    return {"dashboard": params["dashboard"], "dashboard_address": params["dashboard_address"]}


@pytest.mark.parametrize("batch", batch_names())
@pytest.mark.parametrize("mode, nanny", [("dask-cuda", True), ("per-device", True), ("per-device", False)])
def test_every_batch_systems_workers_serve_no_http_page(batch, mode, nanny):
    keywords = with_job_size({"gpus_per_node": 2, "worker_mode": mode, "nanny": nanny})
    script = job_script_for(batch, keywords, name="job-3", scheduler="tls://10.0.0.1:8786")
    assert dashboard_params(script, WORKER_MODULES[mode]) == CLOSED_DASHBOARD
    assert command_environment(script, WORKER_MODULES[mode])["DASK_DISTRIBUTED__WORKER__HTTP__ROUTES"] == "[]"


@pytest.mark.parametrize("batch", batch_names())
def test_every_batch_systems_cpu_workers_serve_no_http_page(batch):
    plan = make_plan(cluster_class(batch), with_job_size({"gpus_per_node": 1}), cpu_pool={"processes": 2})
    script = render_job_script(plan, name="job-cpu-0", pool="cpu")
    assert dashboard_params(script, "distributed.cli.dask_worker") == CLOSED_DASHBOARD
    assert command_environment(script, "distributed.cli.dask_worker")["DASK_DISTRIBUTED__WORKER__HTTP__ROUTES"] == "[]"


@pytest.mark.parametrize("batch", batch_names())
@pytest.mark.parametrize("started_by", ["scheduler='job'", "--run"])
def test_a_scheduler_started_in_a_job_serves_no_http_page(batch, started_by):
    keywords = with_job_size({"gpus_per_node": 1})
    if started_by == "--run":
        script = job_script_for(batch, keywords, name="job-0", run=ClientRun.from_command_line(__file__))
    else:
        plan = cluster_class(batch).parse_keywords(keywords)
        start = SchedulerStart(scheduler_file="/shared/.gpujobqueue-x/scheduler.json")
        script = render_job_script(plan, SchedulerInJob(start=start), name="job-0")
    assert dashboard_params(script, SCHEDULER_MODULE) == CLOSED_DASHBOARD
    # The scheduler of scheduler='job' keeps its watchdog's timeout: no comment cuts the command short.
    timeout = {"GPUJOBQUEUE_CLUSTER_TIMEOUT": "60"} if started_by == "scheduler='job'" else {}
    assert command_environment(script, SCHEDULER_MODULE) == {
        "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES": "[]",
        **timeout,
    }


def test_a_scheduler_jobs_dashboard_opened_on_purpose_is_served_where_asked():
    plan = cluster_class("slurm").parse_keywords(with_job_size({"gpus_per_node": 1}))
    start = SchedulerStart(scheduler_file="/shared/scheduler.json", dashboard_address="127.0.0.1:8787")
    script = render_job_script(plan, SchedulerInJob(start=start), name="job-0")
    assert dashboard_params(script, SCHEDULER_MODULE) == {"dashboard": True, "dashboard_address": "127.0.0.1:8787"}
    assert "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES" not in command_environment(script, SCHEDULER_MODULE)


@pytest.mark.parametrize(
    "extra_args, address, who",
    [
        (["--dashboard-address", ":8788"], ":8788", "everyone who can reach the job's nodes on the network"),
        (["--dashboard-address=127.0.0.1:0"], "127.0.0.1:0", "every user of the job's nodes"),
        (["--dashboard"], ":0", "everyone who can reach the job's nodes on the network"),
    ],
)
@pytest.mark.parametrize("mode", ["dask-cuda", "per-device"])
def test_workers_dashboard_opened_on_purpose_says_who_can_reach_it(extra_args, address, who, mode):
    keywords = with_job_size({"gpus_per_node": 2, "worker_mode": mode, "worker_extra_args": extra_args})
    with pytest.warns(OpenDashboardWarning, match=f"workers.*{address}.*{who}"):
        script = job_script_for("slurm", keywords, name="job-3", scheduler="tls://10.0.0.1:8786")
    assert dashboard_params(script, WORKER_MODULES[mode]) == {"dashboard": True, "dashboard_address": address}
    assert "DASK_DISTRIBUTED__WORKER__HTTP__ROUTES" not in command_environment(script, WORKER_MODULES[mode])
