"""Worker arguments mean what they mean in dask-jobqueue, and every worker line gpujobqueue renders,
for every keyword that reaches it, parses under the worker CLI that runs it (issue 31)."""

import re

import click
import pytest
from fixtures.sizes import with_job_size
from test_worker_command_line import command_environment, python_m_command, worker_arguments

from gpujobqueue.batch import names as batch_names
from gpujobqueue.errors import ValidationError
from gpujobqueue.plan import make_plan
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.settings.worker_args import DASK_CUDA_WORKER, DASK_WORKER, WORKER_CLI_OPTIONS

MODULES = {"dask-cuda": DASK_CUDA_WORKER, "per-device": DASK_WORKER}


def parsed(script: str, module: str) -> dict:
    """The worker line's parameters as the worker CLI's click command reads them (starting nothing)."""
    return python_m_command(module).make_context(module, worker_arguments(script, module)).params


def resources(text: str) -> dict[str, float]:
    """``--resources``' value as distributed's and dask-cuda's CLIs read it."""
    return {name: float(amount) for name, amount in (pair.split("=") for pair in text.replace(",", " ").split())}


def script_for(batch: str = "slurm", **keywords) -> str:
    return job_script_for(batch, with_job_size(keywords), name="job-7", scheduler="tls://10.0.0.1:8786")


def test_the_option_tables_are_the_worker_clis_own():
    for module, options in WORKER_CLI_OPTIONS.items():
        command = python_m_command(module)
        real = {
            spelling: not parameter.is_flag
            for parameter in command.params
            if isinstance(parameter, click.Option)
            for spelling in parameter.opts + parameter.secondary_opts
        }
        assert options == real, module


@pytest.mark.parametrize("keyword", ["worker_extra_args", "extra"])
@pytest.mark.parametrize("mode", ["dask-cuda", "per-device"])
def test_an_argument_with_a_space_is_split_as_dask_jobqueue_joins_it(keyword, mode):
    # dask-jobqueue's docs: worker_extra_args=["--resources GPU=1"]; it joins the list with spaces.
    args = ["--resources ssdGB=200", "--local-directory '/scratch/my dir'"]
    with pytest.warns(FutureWarning) if keyword == "extra" else _no_warning():
        script = script_for(gpus_per_node=2, worker_mode=mode, **{keyword: args})
    params = parsed(script, MODULES[mode])
    assert resources(params["resources"]) == {"ssdGB": 200.0, "GPU": 1.0}
    assert params["local_directory"] == "/scratch/my dir"


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("mode", ["dask-cuda", "per-device"])
def test_the_lifetime_options_become_the_lifetime_config(mode):
    # dask-jobqueue's recipe for walltimes; dask cuda worker has no --lifetime.
    args = ["--lifetime", "55m", "--lifetime-stagger", "4m", "--lifetime-restart"]
    keywords = {"walltime": "01:00:00", "worker_mode": mode, "worker_extra_args": args}
    script = script_for("pbs", **keywords)
    params = parsed(script, MODULES[mode])
    assert not {"lifetime", "lifetime_stagger"} & {name for name, value in params.items() if value}
    assert "export DASK_DISTRIBUTED__WORKER__LIFETIME__DURATION=3300s" in script
    assert "export DASK_DISTRIBUTED__WORKER__LIFETIME__STAGGER=240s" in script
    assert "export DASK_DISTRIBUTED__WORKER__LIFETIME__RESTART=True" in script
    request = make_plan(cluster_class("pbs"), with_job_size(keywords)).request
    assert (request.worker_lifetime, request.lifetime_stagger) == (3300, 240)  # what the cluster's handover reads


def test_a_lifetime_and_a_walltime_margin_that_both_say_when_are_refused():
    keywords = with_job_size(
        {"walltime": "01:00:00", "walltime_margin": "10m", "worker_extra_args": ["--lifetime=55m"]}
    )
    with pytest.raises(ValidationError, match="--lifetime.*walltime_margin") as refused:
        make_plan(cluster_class("slurm"), keywords)
    assert refused.value.field == "worker_extra_args"


@pytest.mark.parametrize("mode", ["dask-cuda", "per-device"])
def test_the_users_resources_are_merged_with_the_gpu_resource(mode):
    params = parsed(script_for(worker_mode=mode, worker_extra_args=["--resources", "ssdGB=200,MEM=4"]), MODULES[mode])
    assert resources(params["resources"]) == {"ssdGB": 200.0, "MEM": 4.0, "GPU": 1.0}
    # Beside a GPU count, the user's own GPU amount is kept (alone, it is the GPUs per worker: test_their_values.py).
    script = script_for(worker_mode=mode, gpus_per_node=1, worker_extra_args=["--resources=GPU=2,ssdGB=200"])
    assert resources(parsed(script, MODULES[mode])["resources"]) == {"GPU": 2.0, "ssdGB": 200.0}


@pytest.mark.parametrize(
    "args, instead",
    [
        (["--nworkers", "2"], "gpus_per_node"),
        (["--preload-nanny", "mymodule"], "DASK_DISTRIBUTED__NANNY__PRELOAD"),
        (["--scheduler-sni", "x"], "worker_mode='per-device'"),
        (["--resoures GPU=1"], "its options are"),
        (["--nthreads"], "--nthreads needs a value"),
        (["--resources", "GPU"], "not name=amount"),
        (["--dashboard=yes"], "takes no value"),
        (["$(touch /tmp/owned)"], "is no option's value"),
    ],
)
def test_an_option_dask_cuda_worker_lacks_is_refused_at_construction(args, instead):
    with pytest.raises(ValidationError, match=re.escape(instead)) as refused:
        make_plan(cluster_class("slurm"), with_job_size({"worker_extra_args": args}))
    assert refused.value.field == "worker_extra_args"


@pytest.mark.parametrize(
    "args, instead",
    [
        (["--rmm-pool-size", "1GB"], "rmm_pool_size with worker_mode='dask-cuda'"),
        (["--pre-import", "cudf"], "dask-cuda's"),
    ],
)
def test_a_dask_cuda_option_is_refused_for_dask_worker_naming_the_keyword(args, instead):
    with pytest.raises(ValidationError, match=re.escape(instead)) as refused:
        make_plan(cluster_class("slurm"), with_job_size({"worker_mode": "per-device", "worker_extra_args": args}))
    assert refused.value.field == "worker_extra_args"


@pytest.mark.parametrize("mode", ["dask-cuda", "per-device"])
@pytest.mark.parametrize(
    "args, said",
    [
        (["--nthreads 1;id"], "'1;id' is not a valid integer"),
        (["--death-timeout", "soon"], "--death-timeout"),
    ],
)
def test_a_value_the_worker_cli_refuses_is_refused_at_construction(args, said, mode):
    # Before: the option was known, so the line was rendered, and every worker refused it on the compute node.
    with pytest.raises(ValidationError, match=re.escape(said)) as refused:
        make_plan(cluster_class("slurm"), with_job_size({"worker_mode": mode, "worker_extra_args": args}))
    assert refused.value.field == "worker_extra_args"


def test_values_the_worker_cli_takes_are_kept():
    plan = make_plan(
        cluster_class("slurm"), with_job_size({"worker_extra_args": ["--nthreads 2", "--death-timeout=90s"]})
    )
    assert ("--nthreads", "2", "--death-timeout=90s") == plan.launch.extra_args[-3:]


# Each keyword that reaches the worker line, with values users give; the first line is the default.
WORKER_LINE_KEYWORDS = {
    "python": ["python3", "/opt/conda/envs/rapids/bin/python", "srun -n 1 -c 2 python3"],
    "worker_command": ["distributed.cli.dask_worker", "dask_cuda.cli"],
    "nthreads": [3],
    "cores": [8],
    "memory": ["16GB"],
    "memory_limit": ["4GB"],
    "death_timeout": [30, "2m"],
    "local_directory": ["/tmp/dask", "$TMPDIR"],
    "protocol": ["tcp", "tls", "ucx"],
    "interface": ["ib0"],
    "nanny": [True, False],
    "nic_affinity": [True],
    "device_memory_limit": ["0.8", "20GB"],
    "rmm_pool_size": ["20GB", False],
    "rmm_async": [True],
    "rmm_managed_memory": [True],
    "enable_cudf_spill": [True, False],
    "set_rmm_allocator_for_libs": ["cupy,torch"],
    "enable_nvlink": [True],
    "enable_infiniband": [False],
    "nodes": [2],
    "worker_extra_args": [
        ["--resources GPU=1"],
        ["--resources", "ssdGB=200,GPU=2"],
        ["--lifetime", "50m", "--lifetime-stagger", "4m", "--no-lifetime-restart"],
        ["--worker-port", "40000:40100", "--nthreads=2"],
        ["--preload", "gpujobqueue.preloads.watchdog"],
        ["--memory-limit 0"],
    ],
}


def _combinations():
    for name, values in WORKER_LINE_KEYWORDS.items():
        for value in values:
            for mode in ("dask-cuda", "per-device"):
                yield pytest.param(name, value, mode, id=f"{name}={value!r}-{mode}")


@pytest.mark.parametrize("batch", batch_names())
@pytest.mark.parametrize("name, value, mode", list(_combinations()))
def test_every_rendered_worker_line_parses_under_its_cli(batch, name, value, mode):
    keywords = {"gpus_per_node": 2, "worker_mode": mode, name: value}
    if name.startswith("enable_") or name == "nic_affinity":
        keywords["protocol"] = "ucx"
    if name == "worker_extra_args" and "--lifetime" in value:
        keywords["walltime"] = "01:00:00"  # a lifetime of 3000 s fits in it (one past the walltime is left out)
    try:
        script = job_script_for(batch, with_job_size(keywords), name="job-7", scheduler="tls://10.0.0.1:8786")
    except ValidationError as refused:  # refused at construction, naming a keyword: no script to parse
        assert refused.field in (name, "nanny", "worker_mode", "protocol", "launcher"), refused
        return
    module = MODULES[mode] if name != "nanny" or value else DASK_WORKER
    assert "-m " + module in script
    params = parsed(script, module)
    assert "GPU" in resources(params["resources"])
    if name == "worker_extra_args" and "--lifetime" in value:
        assert command_environment(script, module) is not None and "LIFETIME__DURATION=3000s" in script


@pytest.mark.parametrize("batch", batch_names())
@pytest.mark.parametrize("nanny", [True, False])
def test_a_worker_line_of_processes_sharing_the_gpus_parses_under_dask_worker(batch, nanny):
    # Issue 31 point 6: processes=2 on 4 GPUs per node, each worker with GPU=2.
    try:
        script = script_for(batch, processes=2, gpus_per_node=4, nanny=nanny)
    except ValidationError as refused:  # the local machine's pool, where it has fewer devices
        assert refused.field == "gpus_per_node", refused
        return
    params = parsed(script, DASK_WORKER)
    assert resources(params["resources"]) == {"GPU": 2.0}
    assert params["n_workers"] == ("2" if nanny else None) and params["nanny"] is nanny
