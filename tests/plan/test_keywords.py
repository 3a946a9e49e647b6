"""dask-jobqueue's keywords keep their meaning; unknown keywords are refused by name."""

import inspect

import dask.config
import pytest
from dask_jobqueue import LSFCluster, PBSCluster, SGECluster, SLURMCluster
from dask_jobqueue.core import Job, JobQueueCluster
from dask_jobqueue.lsf import LSFJob
from dask_jobqueue.pbs import PBSJob
from dask_jobqueue.sge import SGEJob
from dask_jobqueue.slurm import SLURMJob
from fixtures.sizes import with_job_size

from gpujobqueue import (
    GPUCluster,
    LocalGPUCluster,
    LSFGPUCluster,
    PBSGPUCluster,
    SGEGPUCluster,
    SLURMGPUCluster,
    UnknownKeywordError,
    ValidationError,
)
from gpujobqueue.settings.keywords import LAUNCH_KEYWORDS, RENAMED_KEYWORDS, REQUEST_KEYWORDS


def _parameters(*callables):
    names = set()
    for fn in callables:
        names |= {
            p.name for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }
    return names - {"self", "scheduler"}


def accepted_keywords(cluster_cls):
    return (
        _parameters(cluster_cls.__init__)
        | set(REQUEST_KEYWORDS)
        | set(LAUNCH_KEYWORDS)
        | set(RENAMED_KEYWORDS)
        | set(cluster_cls.batch_system.keywords)
        | set(cluster_cls.batch_system.synonyms)
    )


@pytest.mark.parametrize(
    "theirs_cluster, theirs_job, ours_cluster",
    [
        (SLURMCluster, SLURMJob, SLURMGPUCluster),
        (PBSCluster, PBSJob, PBSGPUCluster),
        (LSFCluster, LSFJob, LSFGPUCluster),
        (SGECluster, SGEJob, SGEGPUCluster),
    ],
)
def test_every_dask_jobqueue_keyword_is_accepted(theirs_cluster, theirs_job, ours_cluster):
    theirs = _parameters(theirs_cluster.__init__, JobQueueCluster.__init__, theirs_job.__init__, Job.__init__)
    assert len(theirs) > 30
    missing = theirs - accepted_keywords(ours_cluster)
    assert not missing, f"{theirs_cluster.__name__} keywords {ours_cluster.__name__} does not take: {sorted(missing)}"


def test_dask_jobqueue_keywords_reach_the_script():
    plan = SLURMGPUCluster.parse_keywords(
        {
            "queue": "gpu",
            "account": "m1",
            "walltime": "00:10:00",
            "job_cpu": 6,
            "job_mem": "10G",
            "job_name": "mine",
            "job_extra_directives": ["--mail-type=END"],
            "job_script_prologue": ["module load cuda"],
            "death_timeout": 17,
            "local_directory": "/tmp/scratch",
            "worker_extra_args": ["--no-dashboard"],
            "cores": 4,
            "memory": "8GB",
            "processes": 2,
        }
    )
    request, launch = plan.request, plan.launch
    assert (
        request.queue,
        request.account,
        request.walltime,
        request.cpus_per_node,
        request.options.job_mem,
        request.job_name,
    ) == ("gpu", "m1", 600, 6, "10G", "mine")
    assert request.gpus_per_node == 2 and launch.gpus_per_node == 2  # processes: workers per job, one per GPU
    assert launch.memory_limit == 4 * 10**9  # memory is per job, shared by its workers
    assert (launch.death_timeout, launch.local_directory, launch.extra_args) == (
        17,
        "/tmp/scratch",
        ("--no-dashboard",),
    )


def test_renamed_keywords_warn_and_keep_meaning():
    with pytest.warns(FutureWarning, match="project has been renamed to account"):
        plan = SLURMGPUCluster.parse_keywords(with_job_size({"project": "m9"}))
        request = plan.request
    assert request.account == "m9"
    with pytest.warns(FutureWarning, match="env_extra"):
        plan = SLURMGPUCluster.parse_keywords(with_job_size({"env_extra": ["module load x"]}))
        request = plan.request
    assert request.job_script_prologue == ("module load x",)


# env= is distributed's name for the workers' environment (LocalCluster(env=...), the nanny's env), which
# the Jean Zay documentation gives SLURMCluster. dask-jobqueue refuses it since 0.7.2 (an unexpected keyword;
# before, it dropped it without a word); here it is environment's other name, on every batch system.
@pytest.mark.parametrize(
    "cluster_cls",
    [SLURMGPUCluster, PBSGPUCluster, LSFGPUCluster, SGEGPUCluster, LocalGPUCluster],
    ids=lambda cls: cls.__name__,
)
def test_env_is_distributeds_name_for_the_workers_environment(cluster_cls):
    plan = cluster_cls.parse_keywords(with_job_size({"env": {"HDF5_USE_FILE_LOCKING": "FALSE"}}))
    request = plan.request
    assert request.environment == (("HDF5_USE_FILE_LOCKING", "FALSE"),)


def test_env_is_checked_as_environment_and_both_given_must_agree():
    with pytest.raises(ValidationError) as refused:
        SLURMGPUCluster.parse_keywords(with_job_size({"env": {"BAD NAME": "x"}}))
    assert refused.value.field == "environment"
    with pytest.raises(ValidationError) as refused:
        SLURMGPUCluster.parse_keywords(with_job_size({"env": {"A": "1"}, "environment": {"A": "2"}}))
    assert refused.value.field == "env" and "give one" in str(refused.value)


def test_unknown_keyword_is_refused_with_a_suggestion():
    with pytest.raises(UnknownKeywordError, match="gpus_per_nodes: unknown keyword. Did you mean gpus_per_node"):
        SLURMGPUCluster(gpus_per_nodes=4)


def test_processes_contradicting_gpus_is_refused():
    with pytest.raises(ValidationError, match="processes=3 but gpus_per_node=2"):
        SLURMGPUCluster.parse_keywords({"processes": 3, "gpus_per_node": 2})


def test_gpucluster_picks_the_batch_system():
    with pytest.raises(ValidationError, match="batch: 'pbsx' is not a batch system"):
        GPUCluster(batch="pbsx")
    with GPUCluster(batch="local", gpus_per_node=1, worker_mode="per-device") as cluster:
        assert isinstance(cluster, LocalGPUCluster)


def test_dask_config_fills_what_keywords_leave_out():
    with dask.config.set(
        {
            "gpujobqueue.slurm.queue": "debug",
            "gpujobqueue.slurm.gpus-per-node": 4,
            "gpujobqueue.slurm.walltime": "00:20:00",
        }
    ):
        plan = SLURMGPUCluster.parse_keywords(with_job_size({"walltime": "00:05:00"}))
        request, launch = plan.request, plan.launch
    assert request.queue == "debug" and request.gpus_per_node == 4 and launch.gpus_per_node == 4
    assert request.walltime == 300  # the keyword wins over the config


def test_dask_config_values_are_validated_like_keywords():
    with dask.config.set({"gpujobqueue.slurm.walltime": "25:99"}):
        with pytest.raises(ValidationError, match="walltime: '25:99'"):
            SLURMGPUCluster.parse_keywords({})


def test_project_keeps_each_batch_systems_meaning():
    # dask-jobqueue renamed SLURM's and PBS's project to account (with a warning); LSF and SGE keep project as -P.
    for cluster_cls in (SLURMGPUCluster, PBSGPUCluster):
        with pytest.warns(FutureWarning, match="project has been renamed to account"):
            plan = cluster_cls.parse_keywords(with_job_size({"project": "p1"}))
            request = plan.request
        assert request.account == "p1"
    for cluster_cls in (LSFGPUCluster, SGEGPUCluster):
        plan = cluster_cls.parse_keywords(
            with_job_size({"project": "p1", "lsf_units": "mb"} if cluster_cls is LSFGPUCluster else {"project": "p1"})
        )
        request = plan.request
        assert request.account == "p1"


@pytest.mark.parametrize(
    "cluster_cls, keywords, field",
    [
        (PBSGPUCluster, {"gpu_request": "gres"}, "gpu_request"),
        (PBSGPUCluster, {"chunk_resources": {"ngpus": 8}}, "chunk_resources"),
        (PBSGPUCluster, {"chunk_resources": ["system=polaris:ngpus=8"]}, "chunk_resources[system]"),
        (PBSGPUCluster, {"place": "scatter excl"}, "place"),
        (PBSGPUCluster, {"gpu_request": "torque", "place": "scatter"}, "place"),
        (PBSGPUCluster, {"resource_spec": "select=1\n#PBS -A other"}, "resource_spec"),
        (LSFGPUCluster, {"gpu_mode": "exclusive"}, "gpu_mode"),
        (LSFGPUCluster, {"lsf_units": "parsecs"}, "lsf_units"),
        (LSFGPUCluster, {"gpu_request": "csm", "launcher": "direct"}, "launcher"),
        (LSFGPUCluster, {"launcher": "jsrun"}, "launcher"),
        (LSFGPUCluster, {"ncpus": 4, "cpus_per_gpu": 4}, "ncpus"),  # with cores it is -n beside the threads
        (SGEGPUCluster, {"gpu_request": "resource-type"}, "resource_type"),
        (SGEGPUCluster, {"gpu_complex": "gpu;rm"}, "gpu_complex"),
        (SGEGPUCluster, {"parallel_environment": "smp 4"}, "parallel_environment"),
        (SLURMGPUCluster, {"launcher": "jsrun"}, "launcher"),
        # jobs of several nodes
        # issue 19: SLURM's jobs of several nodes take srun when no launcher is given; the embedded batch
        # system has no launcher, and qrsh -inherit (Grid Engine's own) needs a parallel environment
        (LocalGPUCluster, {"nodes": 2}, "launcher"),
        (SGEGPUCluster, {"nodes": 2, "gpu_request": "none"}, "parallel_environment"),
        (SLURMGPUCluster, {"nodes": 2, "launcher": "mpiexec-pals"}, "launcher"),
        (PBSGPUCluster, {"nodes": 2, "launcher": "srun"}, "launcher"),
        (LSFGPUCluster, {"nodes": 2, "launcher": "ibrun", "lsf_units": "mb"}, "launcher"),
        # a GPU count given: since issue 31 a job asks for GPUs only where a count is given
        (SGEGPUCluster, {"nodes": 2, "launcher": "mpiexec-openmpi", "gpus_per_node": 1}, "nodes"),
        (LocalGPUCluster, {"nodes": 2, "launcher": "srun"}, "launcher"),
        (SLURMGPUCluster, {"nodes": 2, "launcher": "srun", "cores": 3}, "cores"),
        (SLURMGPUCluster, {"nodes": 2, "launcher": "srun", "memory": "3"}, "memory"),
        (SLURMGPUCluster, {"nodes": 2, "launcher": "nosuchrun"}, "launcher"),
        (
            SLURMGPUCluster,
            {"nodes": 2, "launcher": "srun", "launcher_args": ["--cpu-bind=none\n#SBATCH --qos=high"]},
            "launcher_args[0]",
        ),
    ],
)
def test_batch_keywords_are_validated(cluster_cls, keywords, field):
    with pytest.raises(ValidationError) as info:
        cluster_cls.parse_keywords(keywords)
    assert info.value.field == field


@pytest.mark.parametrize(
    "cluster_cls, keyword",
    [
        (PBSGPUCluster, "qos"),
        (PBSGPUCluster, "constraint"),
        (LSFGPUCluster, "place"),
        (SGEGPUCluster, "lsf_units"),
        (SLURMGPUCluster, "resource_spec"),
        (LocalGPUCluster, "qos"),
    ],
)
def test_another_batch_systems_keyword_is_refused(cluster_cls, keyword):
    with pytest.raises(UnknownKeywordError):
        cluster_cls.parse_keywords({keyword: "x"})


@pytest.mark.parametrize(
    "keywords, field, words",
    [
        ({"worker_mode": "per-device", "rmm_pool_size": "1GB"}, "rmm_pool_size", "needs worker_mode='dask-cuda'"),
        (
            {"worker_mode": "per-device", "enable_cudf_spill": True},
            "enable_cudf_spill",
            "needs worker_mode='dask-cuda'",
        ),
        ({"enable_nvlink": True}, "enable_nvlink", "needs protocol='ucx'"),
        ({"protocol": "tcp", "enable_infiniband": True}, "enable_infiniband", "needs protocol='ucx'"),
        ({"rmm_async": True, "rmm_managed_memory": True}, "rmm_managed_memory", "cannot be used with rmm_async"),
        ({"rmm_maximum_pool_size": "10GB"}, "rmm_maximum_pool_size", "set rmm_pool_size"),
        ({"rmm_pool_size": "1GB", "rmm_release_threshold": "0.5"}, "rmm_release_threshold", "needs rmm_async=True"),
        ({"set_rmm_allocator_for_libs": "cupy,jax"}, "set_rmm_allocator_for_libs", "'jax'"),
        ({"rmm_pool_size": "1.5"}, "rmm_pool_size", "fraction"),
        ({"protocol": "ucx", "enable_nvlink": "maybe"}, "enable_nvlink", "true or false"),
    ],
)
def test_gpu_memory_and_ucx_keywords_are_checked_like_dask_cuda(keywords, field, words):
    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster.parse_keywords({"gpus_per_node": 2, **keywords})
    assert info.value.field == field and words in str(info.value)


def test_ucx_without_distributed_ucxx_is_refused_before_anything_starts(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "distributed_ucxx" else real(name, *a)
    )
    with pytest.raises(ValidationError, match="needs distributed-ucxx"):
        SLURMGPUCluster(gpus_per_node=2, cpus_per_gpu=1, memory_per_gpu="512MiB", protocol="ucx")


def test_ucx_with_the_scheduler_on_a_host_without_gpus_is_refused(monkeypatch):
    import importlib.util

    from gpujobqueue.machine import gpus

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: object() if name == "distributed_ucxx" else real(name, *a)
    )
    monkeypatch.setattr(gpus, "nvidia_gpu_ids", lambda: [])
    with pytest.raises(ValidationError, match="needs a GPU where the scheduler runs"):
        SLURMGPUCluster(gpus_per_node=2, cpus_per_gpu=1, memory_per_gpu="512MiB", protocol="ucx", scheduler="local")


@pytest.mark.parametrize(
    "batch, protocol, given, placement",
    [
        ("slurm", "ucx", None, "job"),  # UCX has no TLS: the scheduler goes to the job, off the login node
        ("pbs", "ucx", None, "job"),
        ("slurm", "ucx", "local", "local"),  # asked for
        ("slurm", "tls", None, "local"),
        ("slurm", None, None, "local"),
        ("local", "ucx", None, "local"),  # one machine: no login node to keep it off
    ],
)
def test_the_scheduler_runs_in_the_job_by_default_with_ucx_on_a_batch_system(batch, protocol, given, placement):
    from gpujobqueue.batch import batch_system
    from gpujobqueue.jobs.scheduler_job import parse_scheduler_placement

    assert parse_scheduler_placement(given, batch_system(batch).runs_jobs_here, protocol) == placement


@pytest.mark.parametrize(
    "cpu_pool, field",
    [
        ({"procs": 2}, "cpu_pool.procs"),
        ({"processes": 0}, "cpu_pool.processes"),
        ({"processes": 4, "cores": 2, "nthreads": 1}, "cpu_pool.nthreads"),
        ({"memory": "lots"}, "cpu_pool.memory"),
        ({"queue": "cpu; rm -rf ~"}, "cpu_pool.queue"),
        ({"walltime": "1 hour"}, "cpu_pool.walltime"),
        ({"constraint": "cpu $(id)"}, "cpu_pool.constraint"),
        ("8 workers", "cpu_pool"),
    ],
)
def test_cpu_pool_is_checked_key_by_key(cpu_pool, field):
    from gpujobqueue import SLURMGPUCluster

    SLURMGPUCluster.parse_keywords(with_job_size({"gpus_per_node": 4}))  # the GPU part alone is fine
    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster(gpus_per_node=4, cpus_per_gpu=1, memory_per_gpu="512MiB", cpu_pool=cpu_pool)
    assert info.value.field == field


@pytest.mark.parametrize(
    "batch, gpu_words",
    [
        ("slurm", ("--gpus-per-node", "--gres")),
        ("pbs", ("ngpus",)),
        ("lsf", ("-gpu ",)),
        ("sge", ("-l gpu",)),
    ],
)
def test_cpu_pool_jobs_ask_for_no_gpu_and_start_plain_workers(batch, gpu_words):
    from gpujobqueue import GPUCluster

    with GPUCluster(
        batch,
        gpus_per_node=4,
        cpus_per_gpu=8,
        memory_per_gpu="60GiB",
        queue="gpu",
        account="abc",
        cpu_pool={"processes": 8, "cores": 64, "memory": "256GiB", "queue": "cpu"},
    ) as cluster:
        script = cluster.cpu_job_script()
        gpu_script = cluster.job_script()
    assert not any(word in script for word in gpu_words), script
    assert any(word in gpu_script for word in gpu_words)
    assert "cpu" in script and "abc" in script  # its own queue, the GPU jobs' account
    assert "-m distributed.cli.dask_worker" in script and "--nworkers 8" in script and "--nthreads 8" in script
    assert "GPU=1" not in script and 'CUDA_VISIBLE_DEVICES=""' in script
    assert f"--memory-limit {256 * 2**30 // 8}" in script


def test_cpu_pool_on_a_site_takes_the_sites_queue_table_and_its_own_constraint():
    from gpujobqueue import GPUCluster

    pool = {"processes": 16, "cores": 16, "queue": "regular", "constraint": "cpu", "account": "m1234"}
    with GPUCluster(
        site="perlmutter", account="m1234_g", walltime="00:30:00", interface="lo", cpu_pool=pool
    ) as cluster:
        script, gpu_script = cluster.cpu_job_script(), cluster.job_script()
    # Perlmutter's queues are QoSes without a partition; the CPU jobs go to the CPU nodes.
    assert "#SBATCH --qos=regular\n" in script and "--partition" not in script
    assert "#SBATCH --constraint=cpu\n" in script and "#SBATCH --account=m1234\n" in script
    assert "#SBATCH --constraint=gpu\n" in gpu_script and "#SBATCH --account=m1234_g\n" in gpu_script
    with GPUCluster(site="perlmutter", account="m1234_g", interface="lo", cpu_pool={"queue": "cpuq"}) as cluster:
        assert "#SBATCH --partition=cpuq\n" in cluster.cpu_job_script()  # not a site queue: the batch system's own
    with pytest.raises(ValidationError) as info:
        GPUCluster("pbs", gpus_per_node=4, cpus_per_gpu=1, memory_per_gpu="512MiB", cpu_pool={"constraint": "cpu"})
    assert info.value.field == "cpu_pool.constraint"


def test_cpu_workers_need_a_cpu_pool_and_adapt_refuses_two_pools():
    from gpujobqueue import LocalGPUCluster

    with LocalGPUCluster(gpus_per_node=1, devices=["0"]) as cluster:
        with pytest.raises(ValidationError, match="no CPU pool"):
            cluster.scale(cpu_workers=2)
    with LocalGPUCluster(gpus_per_node=1, devices=["0"], cpu_pool={"processes": 2}) as cluster:
        with pytest.raises(ValidationError) as info:
            cluster.adapt(maximum_gpus=2)
        assert info.value.field == "cpu_pool"
        assert not cluster.worker_spec


def test_several_nodes_count_every_gpu_and_name_every_worker():
    plan = SLURMGPUCluster.parse_keywords(
        {"nodes": 3, "gpus_per_node": 4, "cores": 96, "memory": "3GiB", "launcher": "srun"}
    )
    request, launch = plan.request, plan.launch
    assert (request.nodes, request.gpus_per_job, request.cpus_per_node, request.memory_per_node) == (3, 12, 32, 2**30)
    assert launch.name_suffixes == [f"-{node}-{gpu}" for node in range(3) for gpu in range(4)]
    assert launch.rank_expression == "${SLURM_PROCID:-0}"
    plan = SLURMGPUCluster.parse_keywords(
        with_job_size({"gpus_per_node": 4, "launcher": "srun", "launcher_args": ["--cpu-bind=none"]})
    )
    one_node = plan.launch
    assert (one_node.launcher, one_node.launcher_args) == ("direct", ()), "a one-node job starts its workers directly"
    plan = SLURMGPUCluster.parse_keywords(with_job_size({"nodes": 2, "gpus_per_node": 1, "launcher": "srun"}))
    single = plan.launch
    assert single.name_suffixes == ["-0", "-1"]


@pytest.mark.parametrize("walltime", ["01:30", "00:45", "12:00", "02:00:00"])
def test_lsf_walltime_of_two_fields_is_hours_and_minutes_as_in_dask_jobqueue(walltime):
    theirs = LSFJob(
        cores=1, memory="1GB", walltime=walltime, lsf_units="mb", scheduler="tcp://127.0.0.1:8786"
    ).job_script()
    ours = LSFGPUCluster.parse_keywords(with_job_size({"walltime": walltime, "lsf_units": "mb"})).request
    hours, minutes = map(int, walltime.split(":")[:2])
    assert ours.walltime == hours * 3600 + minutes * 60
    their_line = next(line for line in theirs.splitlines() if line.startswith("#BSUB -W"))
    assert their_line.split()[-1].startswith(walltime[:5]), their_line  # dask-jobqueue hands bsub HH:MM
    from gpujobqueue.plan.scripts import job_script_for

    ours_script = job_script_for(
        "lsf",
        {"cpus_per_gpu": 1, "memory_per_gpu": "512MiB", "walltime": walltime, "lsf_units": "mb"},
        name="w",
        scheduler="tls://127.0.0.1:8786",
    )
    assert f"#BSUB -W {walltime[:5]}\n" in ours_script


# dask-jobqueue's cores, processes and memory are per job: the threads, workers and memory of the whole job.
@pytest.mark.parametrize(
    "keywords, threads",
    [
        ({"cores": 24}, 24),  # one GPU: its worker gets every core (4 threads left 20 idle)
        ({"cores": 24, "gpus_per_node": 4}, 6),
        ({"cores": 24, "processes": 4, "memory": "100GB"}, 6),
        ({"cores": 8, "gpus_per_node": 2, "worker_mode": "per-device"}, 4),
        ({"cores": 48, "gpus_per_node": 4, "nodes": 2, "launcher": "srun"}, 6),
        ({"cores": 24, "gpus_per_node": 4, "nthreads": 2}, 2),  # nthreads chosen by hand stays
        ({"cores": 2, "gpus_per_node": 4}, 1),  # fewer cores than workers: none idle, one thread each
    ],
)
def test_cores_are_the_threads_of_all_the_jobs_workers(keywords, threads):
    plan = SLURMGPUCluster.parse_keywords(with_job_size(keywords))
    assert plan.launch.nthreads == threads
    script = SLURMGPUCluster.job_cls("tcp://127.0.0.1:8786", name="w", plan=plan).job_script()
    assert f"--nthreads {threads} \\" in script


def test_processes_and_memory_are_per_job_as_in_dask_jobqueue():
    plan = SLURMGPUCluster.parse_keywords({"cores": 24, "processes": 4, "memory": "100GB"})
    request, launch = plan.request, plan.launch
    assert (request.gpus_per_node, request.cpus_per_node, request.memory_per_node) == (4, 24, 100 * 10**9)
    assert (launch.gpus_per_node, launch.nthreads, launch.memory_limit) == (4, 6, 25 * 10**9)


@pytest.mark.parametrize(
    "cluster_cls, keywords",
    [
        (SLURMGPUCluster, {"cores": 10, "gpus_per_node": 4}),
        (PBSGPUCluster, {"cores": 30, "processes": 4}),
        (LSFGPUCluster, {"cores": 7, "gpus_per_node": 2}),
        (SGEGPUCluster, {"cores": 9, "gpus_per_node": 2, "gpu_consumable": "job", "parallel_environment": "smp"}),
    ],
)
def test_cores_that_would_leave_some_idle_are_refused_naming_cores_and_gpus(cluster_cls, keywords):
    with pytest.raises(ValidationError) as info:
        cluster_cls.parse_keywords(keywords)
    assert info.value.field == "cores"
    assert "gpus_per_node=" in str(info.value) and "idle" in str(info.value)
