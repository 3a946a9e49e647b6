"""The plan: a cluster's keywords made, once, into the frozen :class:`Plan` that the cluster, its
jobs, ``render`` and ``check`` take (:mod:`.route`, :mod:`.resolve`, :mod:`.plan`, :mod:`.site_check`).
Making a plan starts no process and writes no file."""

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
