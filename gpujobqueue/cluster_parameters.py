"""The keywords every gpujobqueue cluster class takes, documented once (as dask-jobqueue keeps
``cluster_parameters``): :class:`~gpujobqueue.cluster.GPUJobQueueCluster`'s docstring and each
batch system's class's are composed from it (:func:`gpujobqueue.docstrings.with_shared_parameters`)."""

CLUSTER_PARAMETERS = """
    Parameters
    ----------
    n_workers : int
        GPU workers to start at once (default 0; see :meth:`scale`). Every count here is a whole
        number, given as an integer or in the digits 0-9 (``"4"``; not ``"1_0"`` or ``"٤"``,
        which Python's ``int()`` reads as 10 and 4), within the bounds of
        :mod:`gpujobqueue.limits`; every size and duration the same, with a unit.
    site : str or Site, optional
        A site config (``"perlmutter"``, or a path to a YAML file) whose facts fill in
        every keyword not given; ``queue`` then names one of the site's queues, and the
        request is checked against the site's limits before anything is submitted.
    gpus_per_node : int
        GPUs each job asks for on its node; one worker per GPU.
    cpus_per_gpu, cores : int
        CPU cores per GPU, or per job (dask-jobqueue's ``cores``). With a site, the site's
        share of the node by default; without one, one of them is required (with memory),
        as dask-jobqueue requires ``cores`` and ``memory``.
    memory_per_gpu, memory : str
        Host memory per GPU, or per job (dask-jobqueue's ``memory``), e.g. ``"60GiB"``;
        each worker's memory limit is its share. Required without a site, as above.
    walltime : str
        ``HH:MM:SS``, ``D-HH:MM:SS`` or minutes.
    walltime_margin : str, int or False
        How long before the walltime the workers retire gracefully (their data moved to
        other workers, their job then ending on its own), staggered by a quarter of the
        margin either way so they do not all leave at once. Default ``"auto"``: 5 % of the
        walltime, at least 20 s and at most 10 minutes, and never more than a quarter of
        the walltime (a 2-minute job works 100 s, a 1-hour job 57 minutes);
        ``False`` lets the walltime end them. Passed to the workers as dask config
        (``distributed.worker.lifetime``), since ``dask cuda worker`` takes no ``--lifetime``;
        dask-jobqueue's ``--lifetime``, ``--lifetime-stagger`` and ``--lifetime-restart`` in
        ``worker_extra_args`` set the same config instead (give one or the other).
    queue, account, qos, constraint : str
        Where the job runs and who pays (``partition`` is a synonym of ``queue``).
    exclusive : bool
        Whole nodes.
    job_name : str
        The batch job's name.
    gpu_request : {"gpus-per-node", "gres", "gpus", "none"}
        How the job asks for GPUs (``gpus``: ``--gpus=N``, a one-node job's count, as Kestrel documents it);
        ``gpu_type`` adds a model (``--gres=gpu:a100:4``, ``--gpus=a100:4``).
    gpu_type : str
        The GPU model asked for, in the batch system's spelling.
    worker_mode : {"dask-cuda", "per-device"}
        ``dask cuda worker`` per node, or one ``dask worker`` per allocated device.
    nthreads : int
        Threads per worker. Default: with ``cores`` (dask-jobqueue's threads of the whole
        job), the job's cores shared evenly by its workers (``cores=24`` with 4 GPUs: 6 each;
        cores that would be left idle are refused); otherwise, for dask-cuda workers, up to 4
        of each GPU's share of the job's cores (more threads overlap one task's Python and kernel launches with
        another's GPU work: the 2 TB sum ran 28 % faster with 4 than with 1 on an H200);
        for per-device workers, 1.
    device_memory_limit, rmm_pool_size, rmm_maximum_pool_size, rmm_release_threshold : str
        Passed to dask-cuda with its names and defaults (sizes such as ``"20GB"`` or
        fractions of the device's memory). With ``protocol="ucx"`` and no RMM keyword, each
        worker gets a 1 GB RMM pool that grows on demand; ``rmm_pool_size=False`` turns it off.
    rmm_async, rmm_managed_memory, enable_cudf_spill : bool
        dask-cuda's switches (``cudaMallocAsync``, managed memory, cuDF spilling).
    set_rmm_allocator_for_libs : str or list of str
        ``"cupy"``, ``"torch"``: those libraries allocate through RMM on the workers.
    enable_nvlink, enable_infiniband, enable_rdmacm, enable_tcp_over_ucx : bool
        UCX transports (``protocol="ucx"`` only); those not given are left to UCX. A site
        with UCX sets them from its ``network.ucx``.
    nic_affinity : bool
        Each NVIDIA GPU worker's nanny sets its ``UCX_NET_DEVICES`` to the network card nearest its
        GPU, for sites that document one card per GPU (a site's ``network.nic_affinity``). Default
        false: UCX chooses the cards itself; ``gpujobqueue check`` shows the map as a diagnosis.
    visibility_variable : str
        ``CUDA_VISIBLE_DEVICES`` (default), ``ROCR_VISIBLE_DEVICES`` or ``ZE_AFFINITY_MASK``.
    log_directory : str
        Where the batch system writes the job's output.
    job_extra_directives, job_directives_skip, job_script_prologue, job_script_epilogue : list of str
        Extra directive lines, generated lines to leave out, and shell lines before and
        after the workers. A GPU request written among the extra directives (or in
        ``resource_spec``), as dask-jobqueue users write it, is read: its count is the
        GPUs per node unless ``gpus_per_node`` says otherwise, which is refused
        (:mod:`gpujobqueue.hand_written_gpus`).
    environment : dict
        Variables exported in the job, each value a string or a number (None, True/False,
        lists and mappings are refused, not written as Python spells them).
    protocol : str
        ``tcp``, ``tls`` or ``ucx`` (``ucxx``, distributed-ucxx's name for it, is ``ucx``).
        distributed's ``inproc`` (within one process) and ``ws``/``wss`` (websockets, which
        gpujobqueue's scripts and TLS do not set up) are refused.
    cpu_pool : dict, optional
        A CPU-only pool beside the GPU workers, on the same scheduler, scaled with
        ``scale(cpu_workers=N)``. Its jobs ask for no GPU and its workers carry no ``GPU``
        resource, so ``dask.annotate(resources={"GPU": 1})`` keeps tasks off them. Keys:
        ``processes`` (workers per job, default 1), ``cores``, ``nthreads``, ``memory``
        (per job), ``queue`` (a site's queue name maps to its partition and QoS),
        ``account``, ``qos``, ``constraint`` (SLURM), ``walltime``, ``job_name``,
        ``job_extra_directives``; the rest is the GPU jobs' settings.
    job_array : bool
        Submit the jobs that ``scale()`` and ``adapt()`` start together as one job array
        (SLURM ``--array=1-K``, PBS Pro ``-J 1-K``, LSF ``-J "name[1-K]"``, Grid Engine
        ``-t 1-K``): one submission for many one-node jobs. Each element is one of the
        cluster's jobs, and scaling down cancels single elements. Default false
        (``gpujobqueue.<batch>.job-array``).
    scheduler : {"local", "job"}
        Where the scheduler runs. ``"local"`` (default, except with UCX): in this process, as in
        dask-jobqueue. ``"job"``: in the cluster's first job, on a compute node, beside
        that job's GPU workers; it writes a scheduler file in a private folder of
        ``shared_temp_directory`` (default: the current directory), where this process
        and the other jobs' workers find it. That job lives as long as the cluster, so
        its GPUs are the cluster's minimum, and closing the cluster ends it last. The
        default with ``protocol="ucx"`` on a batch system: UCX has no TLS, so the scheduler
        is kept off the shared login node, on the job's own network (``interface``).
    nodes : int
        Nodes per job (default 1); each node runs ``gpus_per_node`` GPU workers, started
        through ``launcher``.
    processes : int
        dask-jobqueue's workers per job. One worker runs per GPU, so ``processes`` is
        ``gpus_per_node`` (giving both with different values is refused).
    launcher : str
        How a job of several nodes starts one task per node: ``srun``, ``ibrun``,
        ``mpiexec-pals``, ``mpiexec-openmpi``, ``mpiexec-mpich`` or ``jsrun``.
    launcher_args : list of str
        More launcher options, after gpujobqueue's own.
    allocation_variable : str
        The variable from which a job reads the devices the batch system allocated
        (default: ``visibility_variable``); where it is unset, devices ``0 .. G-1``.
    memory_limit : str
        Each worker's host memory limit, instead of its share of the job's memory.
    dashboard_address : str
        Refused, as in dask-jobqueue: give it in ``scheduler_options``, which opens the
        scheduler's dashboard there (``dashboard=True`` alone: ``127.0.0.1:8787``) with an
        ``OpenDashboardWarning`` saying who can read it. By default the cluster serves no web
        page: no dashboard, and no route on the scheduler's and workers' HTTP servers, which
        listen on the loopback; ``--dashboard-address`` in ``worker_extra_args`` opens the workers'.
    host : str
        Refused, as in dask-jobqueue: give the scheduler's host in ``scheduler_options``.
    job_cls : type
        The job class; each batch system's cluster class sets its own.
    worker_extra_args : list of str
        As in :class:`dask_jobqueue.SLURMCluster`: joined with spaces and read as shell words
        (``["--resources GPU=1"]`` is two words). ``--resources`` is merged with each worker's
        ``GPU=1``; an option the worker command does not take is refused, saying what to give.
    python : str
        As in :class:`dask_jobqueue.SLURMCluster`: the workers' interpreter, after a launcher
        that starts them if given (``"srun -n 1 -c 8 python"``).
    nanny : bool
        As in :class:`dask_jobqueue.SLURMCluster`: ``False`` starts one ``dask worker --no-nanny``
        per GPU (dask-cuda's workers always have nannies).
    death_timeout, local_directory, interface, security, worker_command
        As in :class:`dask_jobqueue.SLURMCluster`.
    scheduler_options, scheduler_cls, shared_temp_directory, silence_logs, asynchronous, loop, name
        As in :class:`dask_jobqueue.SLURMCluster`.
    config_name, shebang
        As in :class:`dask_jobqueue.SLURMCluster`. On PBS and Grid Engine, whose ``-S``
        names the shell that runs the script whatever its first line, ``-S`` follows
        ``shebang``'s interpreter.
"""
