"""Whether a site takes a job (:func:`check_request`), and the queue it picks for one (:func:`route_queue`)."""

from __future__ import annotations

import re
from typing import Any, NoReturn

from ..settings.validation import parse_size
from . import routing
from .charges import key_source
from .errors import QueueRefusedError, SiteConfigError, dotted_key
from .facts import Site
from .patterns import pattern_matches


def node_memory_bytes(size: Any) -> int:
    """A node's ``memory`` in bytes, ``GB`` and ``TB`` read as GiB and TiB (nodes are built in those)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKMGTP])i?B\s*", str(size))
    if match is None:
        return parse_size("node.memory", size)
    return int(float(match.group(1)) * 1024 ** " KMGTP".index(match.group(2).upper()))


def _given_field(settings: Any, per_job: str, per_gpu: str) -> str | None:
    """Which keyword set an amount: the per-job one (``memory``) or the per-GPU one (``memory_per_gpu``)."""
    if not settings:
        return None
    return per_job if settings.get(per_job) is not None else per_gpu if settings.get(per_gpu) is not None else None


def _asked_per_node(settings: Any, per_job: str, per_gpu: str, request: Any, text: str) -> str:
    """A per-node amount as it was asked, in the user's words: ``memory_per_gpu='100GB' x 4 GPUs = 400 GB per node``."""
    field = _given_field(settings, per_job, per_gpu)
    if field == per_gpu:
        return f"{per_gpu}={settings[per_gpu]!r} x {request.gpus_per_node} GPUs = {text} per node"
    if field == per_job and request.nodes > 1:
        return f"{per_job}={settings[per_job]!r} over {request.nodes} nodes = {text} per node"
    if field == per_job:
        return f"{per_job}={settings[per_job]!r} per node"
    return f"{text} per node"


def check_request(site: Site, queue: str | None, request: Any, settings: Any = None) -> None:
    """Refuse, naming the site file and key, a request that ``queue`` (None: the default) cannot run: its GPUs,
    cores and memory per node, the account and the GPU request form (the job's nodes and walltime are
    :func:`check_queue_takes`'s). With the ``settings`` the request was parsed from, the error's ``field`` is the
    keyword that asked too much (``memory`` or ``memory_per_gpu``)."""
    data = site.data
    queue_name = queue or data["default_queue"]
    entry = site.queue(queue_name)

    def refuse(key: tuple, message: str, field: str | None = None):
        path, line = site.location(*key)
        error = SiteConfigError(path, dotted_key(key), line, f"{site.name}: {message}")
        error.field = field  # the keyword asking too much, where one does
        raise error

    node = site.node(queue_name)
    gpus_key = (
        ("queues", queue_name, "gpus_per_node") if "gpus_per_node" in entry else site.key_of(queue_name, "node", "gpus")
    )
    node_gpus = entry.get("gpus_per_node", node["gpus"])
    if request.gpus_per_node > node_gpus:
        refuse(
            gpus_key,
            f"gpus_per_node={request.gpus_per_node} but {queue_name} jobs get at most {node_gpus} GPUs per node",
        )
    if request.cpus_per_node > node["cpus"]:
        asked = _asked_per_node(settings, "cores", "cpus_per_gpu", request, f"{request.cpus_per_node} cores")
        refuse(
            site.key_of(queue_name, "node", "cpus"),
            f"{asked} asked but {queue_name} nodes have {node['cpus']}",
            field=_given_field(settings, "cores", "cpus_per_gpu"),
        )
    node_memory = node_memory_bytes(node["memory"]) if node.get("memory") is not None else None
    if node_memory is not None and request.memory_per_node is not None and request.memory_per_node > node_memory:
        amount = f"{request.memory_per_node / 2**30:.4g} GiB"
        asked = _asked_per_node(settings, "memory", "memory_per_gpu", request, amount)
        refuse(
            site.key_of(queue_name, "node", "memory"),
            f"{asked} asked but {queue_name} nodes have {node['memory']} (read as {node_memory / 2**30:.4g} GiB)",
            field=_given_field(settings, "memory", "memory_per_gpu"),
        )
    account = data.get("account", {})
    hint = ": " + account["hint"] if account.get("hint") else ""
    if account.get("required") and not request.account:
        refuse(("account", "required"), f"jobs need an account (account=...){hint}")
    if request.account and account.get("pattern") and not pattern_matches(account["pattern"], request.account):
        refuse(("account", "pattern"), f"account {request.account!r} does not match {account['pattern']!r}{hint}")
    if request.gpu_request in data["gpu_request"].get("rejects", []):
        refuse(
            ("gpu_request", "rejects"),
            f"the site refuses GPU requests of the {request.gpu_request!r} form; use {data['gpu_request']['style']!r}",
        )


def check_queue_takes(site: Site, queue: str, request: Any) -> None:
    """Refuse a job whose nodes or walltime ``queue`` does not take, naming the queue that does."""
    refused = routing.refusal(queue, site.queue(queue), request.nodes, request.walltime, request.walltime_text)
    if refused is not None:
        others = [name for name in _queues_taking(site, request, routed_only=False) if name != queue]
        if others:
            hint, field = f"; queue {others[0]!r} takes it (queue={others[0]!r})", "queue"
        else:
            hint = f"; no queue of {site.name} takes {routing.nodes_text(request.nodes)} for {request.walltime_text}"
            field = refused.field
        _refuse(site, refused.key, f"{refused.message}{hint}", field)


def _queues_taking(site: Site, request: Any, routed_only: bool = True) -> list[str]:
    """:func:`~gpujobqueue.sites.routing.queues_taking` of the site's open queues for the job's nodes and walltime."""
    return routing.queues_taking(
        site.open_queues,
        site.data["default_queue"],
        request.nodes,
        request.walltime,
        request.walltime_text,
        routed_only=routed_only,
    )


def _refuse(site: Site, key: tuple, message: str, field: str) -> NoReturn:
    """Raise the refusal naming the site ``key`` whose limit the job breaks, and where that limit comes from."""
    path, line = site.location(*key)
    found = key_source(site.data, key, held=True)
    limit = f"; {dotted_key(key)} from {found}" if found else ""
    raise QueueRefusedError(path, dotted_key(key), line, f"{site.name}: {message}{limit}", field)


def route_queue(site: Site, request: Any) -> tuple[str, str]:
    """The queue a site picks for a job that names none, and why (one line): the first of
    :func:`~gpujobqueue.sites.routing.routing_order` that takes the job's nodes and walltime. Where none does, a
    :class:`QueueRefusedError` naming a queue the user may name (a debug one) where one takes it."""
    data, queues = site.data, site.open_queues
    taking = _queues_taking(site, request)
    if taking:
        name = taking[0]
        return name, routing.fit_text(name, queues[name], request.nodes, request.walltime_text)
    order = routing.routing_order(queues, data["default_queue"])
    refusals = {
        name: routing.refusal(name, queues[name], request.nodes, request.walltime, request.walltime_text)
        for name in order
    }
    # Blame the first queue that takes the job's nodes but not its walltime, else the first one.
    blamed = next(
        (r for r in refusals.values() if r is not None and r.field == "walltime"), next(iter(refusals.values()), None)
    )
    if blamed is None:  # no queue with GPUs: the default queue's refusal says so
        check_queue_takes(site, data["default_queue"], request)
        raise AssertionError("the default queue takes the job it was found not to take")  # pragma: no cover
    others = _queues_taking(site, request, routed_only=False)
    hint = f"; name queue={others[0]!r}, which takes it" if others else ""
    why = "; ".join(f"{name}: {refused.message}" for name, refused in refusals.items() if refused is not None)
    _refuse(
        site,
        blamed.key,
        f"no queue it chooses takes {routing.nodes_text(request.nodes)} for {request.walltime_text} ({why}){hint}",
        "queue" if others else blamed.field,
    )
