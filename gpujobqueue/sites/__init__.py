"""Site configs: the YAML files that hold one machine's facts, as a package.

The modules, each importing only those above it in this list:

- :mod:`~gpujobqueue.sites.errors`: :class:`SiteConfigError`, :class:`QueueRefusedError`, key paths.
- :mod:`~gpujobqueue.sites.routing`: which of a site's queues takes a job (walltime bins, routing order).
- :mod:`~gpujobqueue.sites.patterns`: the site's regular expressions, bounded.
- :mod:`~gpujobqueue.sites.yaml_text`: reading a file's YAML safely, with line numbers.
- :mod:`~gpujobqueue.sites.schema`: the site schema and its errors.
- :mod:`~gpujobqueue.sites.charges`: what a job in a queue costs (service units per node- or GPU-hour).
- :mod:`~gpujobqueue.sites.facts`: :class:`Site`, one machine's merged facts.
- :mod:`~gpujobqueue.sites.sources`: where the facts come from, and the checks of that.
- :mod:`~gpujobqueue.sites.load`: reading and validating files, merging overrides.
- :mod:`~gpujobqueue.sites.use_warnings`: retired machines, unconfirmed facts.
- :mod:`~gpujobqueue.sites.registry`: finding, loading by name, listing and detecting sites.
- :mod:`~gpujobqueue.sites.settings`: a site as cluster keyword defaults.
- :mod:`~gpujobqueue.sites.admission`: whether a site's queue takes a job, and which queue it picks.

Every public name is re-exported here: ``from gpujobqueue.sites import load_site`` and the like.
"""

from .admission import check_queue_takes, check_request, node_memory_bytes, route_queue
from .errors import QueueRefusedError, SiteConfigError
from .facts import Site
from .flags import apply_site_flags
from .load import read_site_file
from .patterns import pattern_matches, pattern_problem
from .registry import (
    DETECTED,
    SITE_PATH_VARIABLE,
    SYSTEM_SITE_DIR,
    USER_SITE_DIR,
    choose_site,
    detect_site,
    load_site,
    site_directories,
    site_files,
    site_table,
)
from .schema import SCHEMA_FILE
from .settings import site_settings
from .sources import (
    FACT_GROUPS,
    FRESH_MONTHS,
    OldestSource,
    fact_groups,
    oldest_source,
    sources_text,
    unconfirmed_keys,
    unsourced_groups,
)
from .use_warnings import (
    RetiredSiteWarning,
    UnconfirmedSiteFactsWarning,
    unconfirmed_facts,
    unconfirmed_warning,
    warn_if_retired,
    warn_unconfirmed,
)

__all__ = [
    "DETECTED",
    "FACT_GROUPS",
    "FRESH_MONTHS",
    "SCHEMA_FILE",
    "SITE_PATH_VARIABLE",
    "SYSTEM_SITE_DIR",
    "USER_SITE_DIR",
    "OldestSource",
    "QueueRefusedError",
    "RetiredSiteWarning",
    "Site",
    "SiteConfigError",
    "UnconfirmedSiteFactsWarning",
    "apply_site_flags",
    "check_queue_takes",
    "check_request",
    "choose_site",
    "detect_site",
    "fact_groups",
    "load_site",
    "node_memory_bytes",
    "oldest_source",
    "pattern_matches",
    "pattern_problem",
    "read_site_file",
    "route_queue",
    "site_directories",
    "site_files",
    "site_settings",
    "site_table",
    "sources_text",
    "unconfirmed_facts",
    "unconfirmed_keys",
    "unconfirmed_warning",
    "unsourced_groups",
    "warn_if_retired",
    "warn_unconfirmed",
]
