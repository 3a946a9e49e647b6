"""A site's facts as cluster keyword defaults, for one of its queues (:func:`site_settings`)."""

from __future__ import annotations

from typing import Any

from ..batch import batch_system
from .facts import Site


def site_settings(site: Site, queue: str | None) -> dict[str, Any]:
    """Cluster keyword defaults from a site, for one of its queues.

    Parameters
    ----------
    site : Site
    queue : str or None
        The site's queue name (``debug``); None means the site's ``default_queue``.

    Returns
    -------
    dict
        Keyword name to value; the batch system's keyword names only.
    """
    data = site.data
    queue_name = queue or data["default_queue"]
    entry = site.queue(queue_name)
    node, worker = site.node(queue_name), site.worker(queue_name)
    gpu = {**data["gpu_request"], **entry.get("gpu_request", {})}
    directives, network = data.get("directives", {}), data.get("network", {})
    settings: dict[str, Any] = {
        "queue": entry["partition"] if "partition" in entry else queue_name,
        "gpus_per_node": entry.get("gpus_per_node", node["gpus"]),
        "gpu_request": gpu["style"],
        "gpu_type": gpu.get("type"),
        "exclusive": directives.get("exclusive"),
        "job_extra_directives": [*directives.get("extra", []), *entry.get("extra", [])] or None,
        "worker_mode": worker.get("mode"),
        "visibility_variable": worker.get("visibility_variable"),
        # Unless the site says otherwise, each GPU gets its share of the node's cores.
        "cpus_per_gpu": worker.get("cpus_per_gpu", max(1, node["cpus"] // node["gpus"])),
        "memory_per_gpu": worker.get("memory_per_gpu"),
        "local_directory": worker.get("local_directory"),
        "interface": network.get("interface"),
        "protocol": network.get("protocol"),
        "nic_affinity": network.get("nic_affinity"),
        "job_script_prologue": data.get("prologue"),
        "environment": {k: str(v) for k, v in data.get("environment", {}).items()} or None,
        # Used by jobs of several nodes (and by every job for jsrun); one-node jobs start their workers directly.
        "launcher": data["launcher"]["name"],
        "launcher_args": data["launcher"].get("args") or None,
    }
    for transport, on in network.get("ucx", {}).items():
        settings[f"enable_{transport}"] = on
    # The batch system's own keywords, read from the site by its module.
    settings.update(batch_system(data["scheduler"]).site_settings(entry=entry, gpu=gpu, directives=directives))
    return {key: value for key, value in settings.items() if value is not None}
