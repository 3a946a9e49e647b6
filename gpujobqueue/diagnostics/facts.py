"""The facts of ``gpujobqueue check``: :class:`MachineFacts`, read by :func:`gather_facts`, judging nothing."""

from __future__ import annotations

import asyncio
import datetime
import os
import platform
import shutil
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import sites
from .._version import __version__
from ..batch import batch_system
from ..errors import GPUJobQueueError
from ..jobs.scheduler_job import parse_scheduler_placement
from ..machine.gpus import GPU, machine_gpus
from ..machine.install import probe_imports, worker_python_problems
from ..machine.interfaces import host_interfaces
from ..plan import site_problems
from ..preloads.nic_affinity import map_lines
from ..settings import config
from ..settings.worker_args import parse_python
from .probes import PACKAGES, Package, batch_versions, commands, job_of, package, submitting, ucx_resources
from .queue_check import compare_queues


@dataclass
class MachineFacts:
    """What :func:`gather_facts` read off this machine; no judgement in it."""

    hostname: str
    python: str
    gpujobqueue: str
    gpus: list[GPU]
    gpu_source: str | None
    gpu_error: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    cuda_visible_devices: str | None
    packages: dict[str, Package]
    ucx_source: str | None
    ucx_transports: list[str] | None
    interfaces: dict[str, list[str]]
    infiniband_devices: list[str]
    batch_commands: dict[str, str | None]
    batch_versions: dict[str, str]
    job_of: str | None
    batch: str
    site: str | None
    site_source: str
    site_file: str | None
    site_error: str | None
    interface: str | None
    protocol: str | None
    worker_mode: str | None
    site_gpu_vendor: str | None = None
    site_files_checked: int = 0
    # "local" where a cluster made here runs its scheduler here (and listens on the interface), else "job"
    scheduler_placement: str | None = None
    site_file_errors: list[str] = field(default_factory=list)
    nic_map: list[str] = field(default_factory=list)  # the GPU <-> network card map workers of nic_affinity=True use
    # The site's source whose version is the oldest ({"url", "version_date"}), and the day the check ran, which
    # judges its age.
    site_oldest_source: dict[str, str] | None = None
    today: str = field(default_factory=lambda: datetime.date.today().isoformat())
    # With --submit-test (else None): each TrialJob as a dict, and queue_check.compare_queues's listing.
    submit_tests: list[dict[str, Any]] | None = None
    queue_listing: dict[str, Any] | None = None
    # gpujobqueue.<batch>.python where it names another interpreter than this one, and what it lacks (None: not
    # probed); whether the batch system was asked a status query, and its error where it did not answer.
    worker_python: str | None = None
    worker_python_problems: list[str] | None = None
    batch_asked: bool = False
    batch_error: str | None = None


def gather_facts(
    site: str | None = None,
    batch: str | None = None,
    interface: str | None = None,
    protocol: str | None = None,
    submit_test: bool = False,
    account: str | None = None,
) -> MachineFacts:
    """Read what this machine has for GPU workers, against ``site`` (default: ``GPUCluster()``'s) or ``batch``;
    with ``submit_test``, the batch system's answers on the site's jobs, rendered with ``account``."""
    machine = machine_gpus()
    loaded, site_source, site_error = _the_site(site, batch)
    site_defaults = sites.site_settings(loaded, None) if loaded else {}  # the site's keywords, as a cluster reads them
    protocol = protocol or site_defaults.get("protocol")
    ucx_source, transports = ucx_resources()
    checked, file_errors = _check_site_files()
    target_batch = loaded.scheduler if loaded else batch or config.default_batch()
    oldest = sites.oldest_source(loaded.data) if loaded else None
    worker_python, worker_python_lacks = _configured_worker_python(target_batch)
    asked, batch_error = _batch_answer(target_batch)
    return MachineFacts(
        hostname=socket.gethostname(),
        python=platform.python_version(),
        gpujobqueue=__version__,
        gpus=list(machine.gpus),
        gpu_source=machine.source,
        gpu_error=machine.error,
        driver_version=machine.driver_version,
        cuda_driver_version=machine.cuda_driver_version,
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        packages={name: package(name) for name in PACKAGES},
        ucx_source=ucx_source,
        ucx_transports=transports,
        interfaces=host_interfaces(),
        infiniband_devices=sorted(p.name for p in Path("/sys/class/infiniband").glob("*")),
        batch_commands={
            command: shutil.which(command) for batch in submitting() for command in commands(batch, optional=True)
        },
        batch_versions=batch_versions(),
        job_of=job_of(),
        batch=target_batch,
        site=loaded.name if loaded else site,
        site_source=site_source,
        site_file=loaded.files[-1] if loaded else None,
        site_error=site_error,
        interface=interface or site_defaults.get("interface"),
        protocol=protocol,
        worker_mode=site_defaults.get("worker_mode"),
        site_gpu_vendor=loaded.data.get("node", {}).get("gpu_vendor") if loaded else None,
        site_files_checked=checked,
        site_file_errors=file_errors,
        scheduler_placement=_scheduler_placement(target_batch, protocol),
        nic_map=map_lines() if machine.gpus else [],
        site_oldest_source={"url": oldest.url, "version_date": oldest.version_date.isoformat()} if oldest else None,
        submit_tests=_submit_tests(loaded, account, batch_error) if submit_test else None,
        queue_listing=compare_queues(loaded, batch_error) if submit_test and loaded else None,
        worker_python=worker_python,
        worker_python_problems=worker_python_lacks,
        batch_asked=asked,
        batch_error=batch_error,
    )


def _configured_worker_python(batch: str) -> tuple[str | None, list[str] | None]:
    """``gpujobqueue.<batch>.python`` where it is another interpreter, and what it lacks (dask_cuda too)."""
    try:
        python = parse_python(config.configured(batch, "python"), "direct")[1]
    except GPUJobQueueError:  # unset, or a value the cluster refuses naming the key
        return None, None
    found = shutil.which(python)
    if found is not None and os.path.realpath(found) == os.path.realpath(sys.executable):
        return None, None
    if probe_imports(python, ("dask_cuda",)) is None:
        return python, None
    return python, worker_python_problems(python, dask_cuda=True, gpujobqueue=True, thorough=True)


def _batch_answer(batch: str) -> tuple[bool, str | None]:
    """Whether the batch system was asked about a job it never gave (where it has a server and its commands are
    on PATH), and its error where it did not answer."""
    system = batch_system(batch)
    if system.runs_jobs_here or not all(shutil.which(command) for command in commands(batch)):
        return False, None
    try:
        return True, asyncio.run(system.probe())
    except GPUJobQueueError as refused:  # a command gone since, or a query-timeout the cluster would refuse
        return True, str(refused)


def _submit_tests(loaded: sites.Site | None, account: str | None, silent: str | None) -> list[dict[str, Any]]:
    from .submit_test import submit_tests

    # A batch system that did not answer is not asked again, job after job.
    return [asdict(trial) for trial in submit_tests(loaded, account, does_not_answer=silent)] if loaded else []


def _scheduler_placement(batch: str, protocol: str | None) -> str | None:
    """Where a cluster made here would run its scheduler (``gpujobqueue.<batch>.scheduler``)."""
    try:
        placement = config.configured(batch, "scheduler")
        return parse_scheduler_placement(placement, batch_system(batch).runs_jobs_here, protocol)
    except GPUJobQueueError:
        return None


def _the_site(site: str | None, batch: str | None) -> tuple[sites.Site | None, str, str | None]:
    """(the site, how it was chosen, the error loading it), as GPUCluster() chooses."""
    try:
        return (*sites.choose_site(site, batch), None)
    except GPUJobQueueError as error:
        return None, "given" if site else "gpujobqueue.site in dask config", str(error)


def _check_site_files() -> tuple[int, list[str]]:
    names = sorted(sites.site_files())
    return len(names), [problem for name in names for problem in site_problems(name)]
