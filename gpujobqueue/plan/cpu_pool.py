"""A CPU-only pool beside the GPU workers: its own job shape, the same scheduler."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import UnknownKeywordError, ValidationError
from ..jobs.request import JobRequest
from ..jobs.workers import CPU_WORKER_MODE, WorkerLaunch
from ..settings.config import check_keywords
from ..settings.declaration import INT, LIST, TEXT, Computed, Keyword, read_declared
from ..settings.keywords import count, size
from ..settings.limits import MAX_CPUS_PER_NODE, MAX_MEMORY_BYTES, MAX_THREADS_PER_WORKER
from ..settings.naming import cpu_batch_job_name
from ..settings.validation import parse_constraint, parse_lines, parse_name, parse_positive_int, parse_word
from ..settings.walltimes import parse_walltime, parse_walltime_margin
from ..settings.worker_options import NO_DASK_CUDA_MEMORY

# The keys of ``cpu_pool``, each read by its declaration alone
# (:func:`~gpujobqueue.settings.declaration.read_declared`): the shared keywords' parsers, with a one-node CPU job's
# bounds; the walltime in the batch system's unit, by a rule.
CPU_POOL_KEYWORDS = (
    Keyword("processes", INT, count(MAX_CPUS_PER_NODE), 1, "CPU workers per job."),
    Keyword("cores", INT, count(MAX_CPUS_PER_NODE), Computed("one per worker thread"), "CPU cores per job."),
    Keyword("nthreads", INT, count(MAX_THREADS_PER_WORKER),
            Computed("the job's cores shared among its workers, else 1"), "Threads per CPU worker."),
    Keyword("memory", TEXT, size(MAX_MEMORY_BYTES), None, "Host memory per job, shared among its workers."),
    Keyword("queue", TEXT, parse_word, None, "The CPU jobs' queue (a site's queue name, or the batch system's)."),
    Keyword("account", TEXT, parse_word, None, "The CPU jobs' account."),
    Keyword("walltime", TEXT, None, None, "The CPU jobs' walltime, in the batch system's unit where a bare number."),
    Keyword("qos", TEXT, parse_word, None, "SLURM's QoS of the CPU jobs."),
    Keyword("constraint", TEXT, parse_constraint, None, "SLURM's --constraint of the CPU jobs."),
    Keyword("job_name", TEXT, parse_name, None, "The CPU jobs' name in the queue."),
    Keyword("job_extra_directives", LIST, parse_lines, None, "The CPU jobs' directives, instead of the GPU jobs'."),
)  # fmt: skip
CPU_POOL_KEYS = tuple(str(keyword) for keyword in CPU_POOL_KEYWORDS)


@dataclass(frozen=True)
class CPUPool:
    """The shape of the cluster's CPU-only jobs (``cpu_pool={...}``), each field as :data:`CPU_POOL_KEYWORDS`
    declares it (``memory`` in bytes, ``walltime`` in seconds). Anything not given is the GPU jobs' setting:
    account, walltime, queue, python, environment, prologue, log directory, protocol, interface, death timeout.
    With a site, a ``queue`` the site lists is its partition and QoS, as for the GPU jobs; another name is the
    batch system's own queue (partition)."""

    processes: int
    cores: int | None
    nthreads: int | None
    memory: int | None
    queue: str | None
    account: str | None
    walltime: int | None
    qos: str | None
    constraint: str | None
    job_name: str | None
    job_extra_directives: tuple[str, ...] | None
    # A site queue without a partition (Perlmutter's QoS-only queues): the job names none.
    no_partition: bool = False
    # The site's name of the queue, where ``queue`` was one of the site's queues (``queue`` is then its partition).
    site_queue: str | None = None

    @classmethod
    def from_keyword(cls, value: Any, system: Any, site: Any = None) -> "CPUPool | None":
        """Parse ``cpu_pool``: a mapping of :data:`CPU_POOL_KEYS`, or None for no CPU pool; ``constraint`` where
        the batch ``system``'s keywords have one (SLURM's), ``queue`` mapped by the ``site``'s queue table. A
        ValidationError names ``cpu_pool.<key>``."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ValidationError(
                "cpu_pool",
                f"expected a mapping such as {{'processes': 8, 'cores': 8, 'memory': '32GiB'}}, got {value!r}",
            )
        try:
            check_keywords(value, CPU_POOL_KEYS)
        except UnknownKeywordError as error:
            raise ValidationError(
                f"cpu_pool.{error.field}", f"{error}; a CPU pool takes {', '.join(CPU_POOL_KEYS)}"
            ) from error

        read = read_declared(CPU_POOL_KEYWORDS, value, within="cpu_pool")
        if value.get("walltime") is not None:
            read["walltime"] = parse_walltime("cpu_pool.walltime", value["walltime"], system.walltime_number_unit)
        if value.get("job_extra_directives") is None:
            read["job_extra_directives"] = None  # the GPU jobs' directives
        pool = cls(**read)
        if pool.cores is not None and pool.nthreads is not None and pool.nthreads * pool.processes > pool.cores:
            raise ValidationError(
                "cpu_pool.nthreads",
                f"{pool.processes} workers of {pool.nthreads} threads need {pool.processes * pool.nthreads} "
                f"cores; the job asks for {pool.cores}",
            )
        if pool.constraint is not None and "constraint" not in system.keywords:
            raise ValidationError(
                "cpu_pool.constraint", f"constraint is SLURM's --constraint; {system.name} jobs have none"
            )
        if site is not None and pool.queue in site.data["queues"]:
            entry = site.queue(pool.queue)
            partition = entry["partition"] if "partition" in entry else pool.queue
            pool = dataclasses.replace(
                pool,
                queue=partition,
                no_partition=partition is None,
                qos=pool.qos or entry.get("qos"),
                site_queue=pool.queue,
            )
        if pool.nthreads is None:
            pool = dataclasses.replace(pool, nthreads=max(1, (pool.cores or pool.processes) // pool.processes))
        return pool

    def job_shape(
        self, gpu_request: JobRequest, gpu_launch: WorkerLaunch, system: Any
    ) -> tuple[JobRequest, WorkerLaunch]:
        """The CPU jobs' request and worker launch, derived from the GPU jobs' ones (the options by the batch
        ``system``); what the pool changes is validated again by the GPU jobs' parsers (a ValidationError names
        ``cpu_pool.<key>``, or ``walltime_margin``, too long for the pool's walltime)."""

        if gpu_launch.launcher != "direct":
            raise ValidationError(
                "cpu_pool",
                f"CPU jobs start their workers directly; launcher {gpu_launch.launcher!r} is for whole GPU nodes",
            )
        options = system.cpu_job_options(gpu_request.options, qos=self.qos, constraint=self.constraint)
        walltime = self.walltime or gpu_request.walltime
        cpus = self.cores or self.processes * self.nthreads
        parse_positive_int("cpu_pool.cores" if self.cores else "cpu_pool.nthreads", cpus, MAX_CPUS_PER_NODE)
        if gpu_request.walltime_margin and walltime is not None:
            parse_walltime_margin("walltime_margin", gpu_request.walltime_margin, walltime)
        request = dataclasses.replace(
            gpu_request,
            nodes=1,
            gpus_per_node=0,
            gpu_request="none",
            gpu_type=None,
            cpus_per_node=cpus,
            memory_per_node=self.memory,
            exclusive=False,
            queue=None if self.no_partition else self.queue or gpu_request.queue,
            account=self.account or gpu_request.account,
            job_name=self.job_name or cpu_batch_job_name(gpu_request.job_name),
            walltime=walltime,
            job_extra_directives=self.job_extra_directives
            if self.job_extra_directives is not None
            else gpu_request.job_extra_directives,
            options=options,
        )
        launch = dataclasses.replace(
            gpu_launch,
            mode=CPU_WORKER_MODE,
            gpus_per_node=0,
            workers_per_node=self.processes,
            worker_command="distributed.cli.dask_worker",
            nthreads=self.nthreads,
            memory_limit=None if self.memory is None else self.memory // self.processes,
            nanny=True,
            **NO_DASK_CUDA_MEMORY,
            nic_affinity=False,  # no GPU to be near
        )
        return request, launch
