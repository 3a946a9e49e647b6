"""The plan: a cluster's keywords made, once, into the frozen :class:`Plan` that the cluster, its
jobs, ``render`` and ``check`` take.

- :mod:`.route`: which site queue a job goes to (a pure function of the site and the request);
- :mod:`.resolve`: keyword > ``gpujobqueue.<batch>.*`` config > site > default, validated into the
  settings, the job's request and its workers' launch;
- :mod:`.plan`: the frozen :class:`Plan` and :func:`make_plan`, which adds the cluster's own decisions
  (security, the scheduler's placement, job arrays, the CPU pool, the limits on one user's jobs);
- :mod:`.site_check`: a whole site checked as ``gpujobqueue check`` does, each GPU queue planned.

Making a plan starts no process and writes no file.
"""

from .plan import NO_CLUSTER_SECURITY, Plan, batch_system_of, make_plan
from .resolve import CORE_KEYWORDS, MEMORY_KEYWORDS, require_job_size
from .route import Route, route
from .site_check import site_problems

__all__ = [
    "CORE_KEYWORDS",
    "MEMORY_KEYWORDS",
    "NO_CLUSTER_SECURITY",
    "Plan",
    "Route",
    "batch_system_of",
    "make_plan",
    "require_job_size",
    "route",
    "site_problems",
]
