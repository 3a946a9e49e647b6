"""Site configs: the YAML files of one machine's facts. Its modules import each other only in this order: errors,
routing, patterns, yaml_text, schema, charges, facts, sources, load, use_warnings, registry, settings, admission,
flags; every public name is re-exported here (``from gpujobqueue.sites import load_site``)."""

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
