"""Job scripts from keywords alone, without starting a cluster (for ``gpujobqueue render``)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

from ..batch import batch_system, names
from ..errors import ValidationError
from ..jobs.job_commands import SHORTEST_ARRAY, ArrayElements
from ..machine.install import warn_if_worker_python_lacks
from ..script.render import (
    PLACEHOLDER_SCHEDULER,
    Connection,
    SchedulerAddress,
    SchedulerFile,
    SchedulerInJob,
)
from ..script.run import ClientRun
from ..security.tls import resolve_script_security
from ..settings.validation import matching, parse_name, parse_positive_int, path_text
from ..sites import load_site, warn_unconfirmed
from .plan import Plan, make_plan


def render_job_script(
    plan: Plan, connection: Connection | None = None, *, name: str, pool: str = "gpu", **options: Any
) -> str:
    """Render one job script of a plan.

    Parameters
    ----------
    plan : Plan
        The plan (:func:`~gpujobqueue.plan.make_plan`, or a cluster's ``plan``): its batch system, request and launch.
    connection : SchedulerAddress, SchedulerFile or SchedulerInJob, optional
        How the workers reach the scheduler (default: an address placeholder the script refuses to run with).
    name : str
        The job's worker-name prefix.
    pool : {"gpu", "cpu"}
        The jobs of the GPU workers, or of the plan's CPU pool.
    **options
        ``tls_args``, ``script_tls``, ``plain_tcp``, ``array``, ``standalone``, ``cluster_folder``: as
        :func:`gpujobqueue.script.render.render` takes them.

    Returns
    -------
    str
        The script text, as the batch system submits it (:meth:`~gpujobqueue.batch.base.BatchSystem.job_script`).
    """
    return plan.system.job_script(plan, connection or SchedulerAddress(), name=name, pool=pool, **options)


# protocol://host:port; the placeholder's <...> too. It is shell-quoted into the script.
_SCHEDULER_ADDRESS = re.compile(r"[a-z]+://[A-Za-z0-9_.:\[\]<>%-]{1,256}")


def job_script_for(
    batch: str,
    keywords: Mapping[str, Any],
    *,
    name: str,
    scheduler: str = PLACEHOLDER_SCHEDULER,
    scheduler_file: str | None = None,
    run: ClientRun | None = None,
    array_jobs: int | None = None,
    tls: bool = True,
    tls_directory: str | None = None,
    standalone: bool = False,
) -> str:
    """Render the script a cluster of ``batch`` (as :func:`plan_for` takes it) would submit for ``keywords``
    (``gpujobqueue render``): its plan made, the workers' python probed (a warning names what it lacks), then its
    batch system's :meth:`~gpujobqueue.batch.base.BatchSystem.job_script`, its workers named after ``name``.

    The workers connect through ``scheduler`` (an address) or ``scheduler_file``; neither: a placeholder the script
    refuses to run with. ``run``: a self-contained script instead (its own scheduler, the workers, then this
    client). ``array_jobs``: the script of that many jobs ``<name>-0 .. <name>-<K-1>`` as one job array. ``tls``
    (default): a ``run`` script makes its credentials in the job, other scripts read those ``gpujobqueue
    credentials`` made in ``tls_directory`` (default ``$HOME/.config/gpujobqueue/tls``, as the job's shell writes
    it); False: plain TCP, with an ``InsecureScriptWarning``; UCX has no TLS. ``standalone``: for nodes without
    gpujobqueue, the script writes :mod:`gpujobqueue.preloads` into its private folder and the workers preload
    them by path. Raises UnknownKeywordError, ValidationError, SiteConfigError.
    """
    name = parse_name("name", name)
    plan = plan_for(batch, keywords)
    warn_unconfirmed(plan.site)
    script_tls, launch = resolve_script_security(plan.launch, run=run is not None, tls=tls, tls_directory=tls_directory)
    plan = dataclasses.replace(plan, launch=launch)
    # At once, not after the jobs' queue wait; after the plan, so that a wrong keyword is named first.
    warn_if_worker_python_lacks(launch.python, **plan.worker_python_needs(standalone))
    connection = _connection(scheduler, scheduler_file, run, launch.protocol, script_tls)
    array = None
    if array_jobs is not None:
        array, name = _array(plan, name, array_jobs, run)
    return plan.system.job_script(
        plan,
        connection,
        name=name,
        array=array,
        script_tls=script_tls,
        plain_tcp=not tls and launch.protocol != "ucx",
        standalone=standalone,
    )


def plan_for(batch: str, keywords: Mapping[str, Any]) -> Plan:
    """The plan of a cluster of ``batch`` (a batch system's name, or a site's name or file, whose facts fill in
    the keywords not given) for ``keywords``, as :func:`job_script_for` renders it (UnknownKeywordError,
    ValidationError, SiteConfigError for keywords refused)."""

    keywords = dict(keywords)
    if batch not in names():  # a site's name or file
        site = load_site(batch)
        batch, keywords["site"] = site.scheduler, site
    return make_plan(batch_system(batch), keywords)


def _connection(
    scheduler: str, scheduler_file: str | None, run: ClientRun | None, protocol: str | None, script_tls: Any
) -> Connection:
    """How a rendered script's workers reach their scheduler: the job's own (``run``), the scheduler
    file, or the address (TLS unless the script is not; the placeholder in the workers' protocol)."""
    if run is not None:
        return SchedulerInJob(run=run)
    if scheduler_file is not None:
        if scheduler != PLACEHOLDER_SCHEDULER:
            raise ValidationError("scheduler_file", "give the scheduler's address or its scheduler file, not both")
        return SchedulerFile(path_text("scheduler_file", scheduler_file))
    if scheduler == PLACEHOLDER_SCHEDULER:
        scheduler = scheduler.replace("tcp://", f"{protocol or 'tcp'}://", 1)
    elif script_tls is not None and not scheduler.startswith("tls://"):
        if "://" in scheduler:
            raise ValidationError(
                "scheduler",
                f"{scheduler!r} is not TLS: the workers use TLS, so your scheduler must listen on tls:// "
                f"with the credentials of {script_tls.directory} (or give --no-tls for plain TCP)",
            )
        scheduler = f"tls://{scheduler}"
    return SchedulerAddress(
        matching("scheduler", scheduler, _SCHEDULER_ADDRESS, "a scheduler address such as tls://10.0.0.1:8786")
    )


def _array(plan: Plan, name: str, array_jobs: int, run: ClientRun | None) -> tuple[ArrayElements | None, str]:
    """The job array of ``array_jobs`` jobs (None for a single job, which goes as a plain job named
    ``<name>-0``), and the name the script is rendered with."""
    if run is not None:
        raise ValidationError("job_array", "--run writes one self-contained job, not a job array")
    system = plan.system
    array_jobs = parse_positive_int("job_array", array_jobs, system.array_size_limit)
    system.check_job_array(plan.request)
    if array_jobs < SHORTEST_ARRAY:
        return None, f"{name}-0"
    return ArrayElements(name, -1, array_jobs, system.array_task_variable), name
