"""Job scripts from keywords alone, without starting a cluster (for ``gpujobqueue render``)."""

from __future__ import annotations

import re
from typing import Any, Mapping

from .batch import BATCH_SYSTEMS, cluster_class
from .errors import ValidationError
from .job_commands import SHORTEST_ARRAY, ArrayElements
from .render import PLACEHOLDER_SCHEDULER, render_job_script
from .request import _matching, parse_name, parse_positive_int

# protocol://host:port; the placeholder's <...> too. It is shell-quoted into the script.
_SCHEDULER_ADDRESS = re.compile(r"[a-z]+://[A-Za-z0-9_.:\[\]<>%-]{1,256}")
from .run import ClientRun
from .sites import load_site


def job_script_for(batch: str, keywords: Mapping[str, Any], *, name: str, scheduler: str = PLACEHOLDER_SCHEDULER, run: ClientRun | None = None,
                   array_jobs: int | None = None) -> str:
    """Render the script a cluster of ``batch`` would submit for ``keywords``.

    Parameters
    ----------
    batch : str
        ``slurm``, ``pbs``, ``lsf``, ``sge`` or ``local``; or a site's name or YAML file,
        whose facts fill in the keywords not given.
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

    Raises
    ------
    UnknownKeywordError, ValidationError, SiteConfigError
    """
    keywords = dict(keywords)
    name = parse_name("name", name)
    scheduler = _matching("scheduler", scheduler, _SCHEDULER_ADDRESS, "a scheduler address such as tcp://10.0.0.1:8786")
    if batch not in BATCH_SYSTEMS:  # a site's name or file
        site = load_site(batch)
        batch, keywords["site"] = site.scheduler, site
    cluster_cls = cluster_class(batch)
    _, request, launch = cluster_cls.parse_keywords(keywords)
    if scheduler == PLACEHOLDER_SCHEDULER and launch.protocol not in (None, "tcp"):
        scheduler = scheduler.replace("tcp://", f"{launch.protocol}://", 1)
    array = None
    if array_jobs is not None:
        if run is not None:
            raise ValidationError("job_array", "--run writes one self-contained job, not a job array")
        array_jobs = parse_positive_int("job_array", array_jobs, cluster_cls.job_cls.array_size_limit)
        cluster_cls._check_job_array(request)
        if array_jobs < SHORTEST_ARRAY:
            name = f"{name}-0"  # a single job goes as a plain job
        else:
            array = ArrayElements(name, -1, array_jobs, cluster_cls.job_cls.array_task_variable)
    return render_job_script(batch, request, launch, name=name, scheduler=scheduler, directive_prefix=cluster_cls.job_cls.directive_prefix, run=run,
                             array=array)
