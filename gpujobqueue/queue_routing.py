"""Kept for imports of ``gpujobqueue.queue_routing``: the queue routing lives in :mod:`gpujobqueue.sites.routing`."""

from .sites.routing import (  # noqa: F401
    Refusal,
    WalltimeBin,
    bin_of,
    bin_problems,
    fit_text,
    has_gpus,
    nodes_text,
    parse_node_range,
    queues_taking,
    refusal,
    routable,
    routing_order,
    walltime_bins,
)
