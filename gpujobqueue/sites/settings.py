"""A site's facts as cluster keyword defaults, for one of its queues (:func:`site_settings`)."""

from __future__ import annotations

from typing import Any

from ..batch import batch_system
from .errors import value_at
from .facts import Site


def site_settings(site: Site, queue: str | None) -> dict[str, Any]:
    """Cluster keyword defaults from a site, for one of its queues (None: its ``default_queue``)."""
    data = site.data
    queue_name = queue or data["default_queue"]
    entry = site.queue(queue_name)
    node, worker = site.node(queue_name), site.worker(queue_name)
    gpu = {**data["gpu_request"], **entry.get("gpu_request", {})}
    directives = data.get("directives", {})
    system = batch_system(data["scheduler"])
    settings: dict[str, Any] = {
        "queue": entry["partition"] if "partition" in entry else queue_name,
        "gpus_per_node": entry.get("gpus_per_node", node["gpus"]),
        "gpu_request": gpu["style"],
        "gpu_type": gpu.get("type"),
        "job_extra_directives": [*directives.get("extra", []), *entry.get("extra", [])] or None,
    }
    # The keywords a site sets, each at its declared site_key (a worker key the queue's worker over the site's).
    for keyword in system.setting_names():
        if keyword.site_key is not None:
            first, *rest = keyword.site_key.split(".")
            settings[str(keyword)] = value_at(worker, rest) if first == "worker" else value_at(data, (first, *rest))
    # Unless the site says otherwise, each GPU gets its share of the node's cores.
    if settings["cpus_per_gpu"] is None:
        settings["cpus_per_gpu"] = max(1, node["cpus"] // node["gpus"])
    settings["environment"] = {k: str(v) for k, v in (settings["environment"] or {}).items()} or None
    # The launcher starts the workers of jobs of several nodes (of every job for jsrun); no args is none.
    settings["launcher_args"] = settings["launcher_args"] or None
    settings.update(system.site_settings(entry=entry, gpu=gpu, directives=directives))
    return {key: value for key, value in settings.items() if value is not None}
