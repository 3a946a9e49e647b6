"""Job scripts from keywords alone, without starting a cluster (for ``gpujobqueue render``)."""

from __future__ import annotations

import re
from typing import Any, Mapping

from .batch import batch_system, names
from .batch.base import BatchSystem
from .errors import ValidationError
from .job_commands import SHORTEST_ARRAY, ArrayElements
from .plan import make_plan
from .render import PLACEHOLDER_SCHEDULER
from .request import JobRequest, parse_name, parse_positive_int
from .run import ClientRun
from .security import resolve_script_security
from .sites import load_site, warn_unconfirmed
from .validation import matching
from .workers import WorkerLaunch


def render_job_script(
    batch: "str | type[BatchSystem]", request: JobRequest, launch: WorkerLaunch, **options: Any
) -> str:
    """Render one job script.

    Parameters
    ----------
    batch : str or BatchSystem subclass
        The batch system (``"slurm"``, ``"pbs"``, ``"lsf"``, ``"sge"``, ``"local"``, or another
        registered one), by name or as its :class:`~gpujobqueue.batch.base.BatchSystem` class.
    request : JobRequest
        What the job asks of the batch system.
    launch : WorkerLaunch
        How the job starts its workers.
    **options
        ``name`` (the job's worker-name prefix), ``scheduler``, ``tls_args``, ``run``,
        ``scheduler_file``, ``start_scheduler``, ``array``, ``script_tls``, ``plain_tcp``,
        ``standalone``: as :func:`gpujobqueue.render.render_job_script` takes them.

    Returns
    -------
    str
        The script text (the batch system's :meth:`~gpujobqueue.batch.base.BatchSystem.job_script`).
    """
    system = batch_system(batch) if isinstance(batch, str) else batch
    return system.job_script(request, launch, **options)


# protocol://host:port; the placeholder's <...> too. It is shell-quoted into the script.
_SCHEDULER_ADDRESS = re.compile(r"[a-z]+://[A-Za-z0-9_.:\[\]<>%-]{1,256}")


def job_script_for(
    batch: str,
    keywords: Mapping[str, Any],
    *,
    name: str,
    scheduler: str = PLACEHOLDER_SCHEDULER,
    run: ClientRun | None = None,
    array_jobs: int | None = None,
    tls: bool = True,
    tls_directory: str | None = None,
    standalone: bool = False,
) -> str:
    """Render the script a cluster of ``batch`` would submit for ``keywords``.

    Parameters
    ----------
    batch : str
        A batch system's name (``slurm``, ``pbs``, ``lsf``, ``sge``, ``local``, or another registered one);
        or a site's name or YAML file, whose facts fill in the keywords not given.
    keywords : mapping
        Cluster keywords (as :class:`~gpujobqueue.cluster.GPUJobQueueCluster` takes them).
    name : str
        Worker name prefix.
    scheduler : str
        Scheduler address the workers connect to.
    run : ClientRun, optional
        A self-contained script instead: its own scheduler, the workers, then this client.
    array_jobs : int, optional
        The script of ``array_jobs`` jobs ``<name>-0 .. <name>-<K-1>`` submitted as one job
        array, as a cluster with ``job_array=True`` submits them.
    tls : bool
        TLS, the default over TCP, as Python clusters have it: a ``run`` script makes its
        credentials in the job; other scripts read the set that ``gpujobqueue credentials``
        made in ``tls_directory``, which the scheduler you run uses too. False: plain TCP,
        with an :class:`~gpujobqueue.security.InsecureScriptWarning`. UCX has no TLS.
    tls_directory : str, optional
        The credentials' folder as the job's shell writes it (default
        ``$HOME/.config/gpujobqueue/tls``).
    standalone : bool
        For nodes without gpujobqueue: the script writes :mod:`gpujobqueue.preloads` into its
        private folder and the workers preload them by path (by default they preload them by
        module name, from the gpujobqueue their python imports).

    Raises
    ------
    UnknownKeywordError, ValidationError, SiteConfigError
    """
    keywords = dict(keywords)
    name = parse_name("name", name)
    if batch not in names():  # a site's name or file
        site = load_site(batch)
        batch, keywords["site"] = site.scheduler, site
    system = batch_system(batch)
    plan = make_plan(system, keywords, standalone=standalone)
    request, launch = plan.request, plan.launch
    warn_unconfirmed(plan.site)
    script_tls, launch = resolve_script_security(launch, run=run is not None, tls=tls, tls_directory=tls_directory)
    if scheduler == PLACEHOLDER_SCHEDULER:
        scheduler = scheduler.replace("tcp://", f"{launch.protocol or 'tcp'}://", 1)
    elif script_tls is not None and not scheduler.startswith("tls://"):
        if "://" in scheduler:
            raise ValidationError(
                "scheduler",
                f"{scheduler!r} is not TLS: the workers use TLS, so your scheduler must listen on tls:// "
                f"with the credentials of {script_tls.directory} (or give --no-tls for plain TCP)",
            )
        scheduler = f"tls://{scheduler}"
    scheduler = matching("scheduler", scheduler, _SCHEDULER_ADDRESS, "a scheduler address such as tls://10.0.0.1:8786")
    array = None
    if array_jobs is not None:
        if run is not None:
            raise ValidationError("job_array", "--run writes one self-contained job, not a job array")
        array_jobs = parse_positive_int("job_array", array_jobs, system.array_size_limit)
        system.check_job_array(request)
        if array_jobs < SHORTEST_ARRAY:
            name = f"{name}-0"  # a single job goes as a plain job
        else:
            array = ArrayElements(name, -1, array_jobs, system.array_task_variable)
    return system.job_script(
        request,
        launch,
        name=name,
        scheduler=scheduler,
        run=run,
        array=array,
        script_tls=script_tls,
        plain_tcp=not tls and launch.protocol != "ucx",
        standalone=standalone,
    )
