"""``gpujobqueue check``: what this machine has for GPU workers, and what is missing.

:func:`gather_facts` reads the machine (NVML, packages, UCX, network, batch commands, the
site) without judging; :func:`judge` turns the facts into findings, each with the fix where
something needed is missing. Keeping the two apart lets the judgement be tested on any facts.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import config, sites
from .batch import BATCH_SYSTEMS, cluster_class
from .errors import GPUJobQueueError
from .gpus import GPU, machine_gpus
from .install import cuda_major, install_line
from .nic_affinity import map_lines

PACKAGES = (
    "dask",
    "distributed",
    "dask-jobqueue",
    "dask-cuda",
    "distributed-ucxx",
    "ucxx",
    "cupy",
    "cudf",
    "rmm",
    "pynvml",
)
# Distribution names differ by CUDA major version; the first one installed is reported.
DISTRIBUTIONS = {
    "distributed-ucxx": ("distributed-ucxx-cu13", "distributed-ucxx-cu12", "distributed-ucxx"),
    "ucxx": ("ucxx-cu13", "ucxx-cu12", "ucxx"),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy"),
    "cudf": ("cudf-cu13", "cudf-cu12", "cudf"),
    "rmm": ("rmm-cu13", "rmm-cu12", "rmm"),
    "pynvml": ("nvidia-ml-py", "pynvml"),
}
MODULES = {"dask-jobqueue": "dask_jobqueue", "dask-cuda": "dask_cuda", "distributed-ucxx": "distributed_ucxx"}
# Importing these proves more than their metadata does (dask-cuda without cuda-bindings
# installs but does not import), and they are cheap enough to import here.
IMPORT_CHECKED = ("dask-cuda", "distributed-ucxx")
NVLINK_TRANSPORTS = {"cuda_ipc"}
INFINIBAND_TRANSPORTS = {"rc", "rc_verbs", "rc_mlx5", "ud", "ud_verbs", "ud_mlx5", "dc", "dc_mlx5"}


@dataclass
class Package:
    """An installed distribution: its version, and the import error where it was import-checked."""

    name: str
    version: str | None
    import_error: str | None = None
    distribution: str | None = None  # the distribution found, e.g. cupy-cuda12x


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
    nic_map: list[str] = field(default_factory=list)  # the GPU <-> network card map the workers would use

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Finding:
    """One line of the check: ``ok``, ``info``, ``warn`` or ``fail``, and the fix for a fail or warn."""

    status: str
    topic: str
    detail: str
    fix: str | None = None


def gather_facts(
    site: str | None = None, batch: str | None = None, interface: str | None = None, protocol: str | None = None
) -> MachineFacts:
    """Read what this machine has for GPU workers.

    Parameters
    ----------
    site : str, optional
        The site to check against (a name or a file); default the one ``GPUCluster()``
        would pick: ``gpujobqueue.site`` in dask config, else the site the host name matches.
    batch : {"slurm", "pbs", "lsf", "sge", "local"}, optional
        The batch system when no site is used (default ``gpujobqueue.batch``, ``local``).
    interface, protocol : str, optional
        The network interface and protocol the workers will use, if not the site's.

    Returns
    -------
    MachineFacts
    """
    from . import __version__

    machine = machine_gpus()
    loaded, site_source, site_error = _the_site(site, batch)
    network = loaded.data.get("network", {}) if loaded else {}
    worker = loaded.worker(loaded.data["default_queue"]) if loaded else {}
    ucx_source, transports = _ucx_resources()
    checked, file_errors = _check_site_files()
    target_batch = loaded.scheduler if loaded else batch or config.default_batch()
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
        packages={name: _package(name) for name in PACKAGES},
        ucx_source=ucx_source,
        ucx_transports=transports,
        interfaces=_interfaces(),
        infiniband_devices=sorted(p.name for p in Path("/sys/class/infiniband").glob("*")),
        batch_commands={
            command: shutil.which(command)
            for batch in _submitting()
            for command in (*_commands(batch), *_optional_commands(batch))
        },
        batch_versions=_batch_versions(),
        job_of=_job_of(),
        batch=target_batch,
        site=loaded.name if loaded else site,
        site_source=site_source,
        site_file=loaded.files[-1] if loaded else None,
        site_error=site_error,
        interface=interface or network.get("interface"),
        protocol=protocol or network.get("protocol"),
        worker_mode=worker.get("mode"),
        site_gpu_vendor=loaded.data.get("node", {}).get("gpu_vendor") if loaded else None,
        site_files_checked=checked,
        site_file_errors=file_errors,
        scheduler_placement=_scheduler_placement(target_batch, protocol or network.get("protocol")),
        nic_map=map_lines() if machine.gpus else [],
    )


def _scheduler_placement(batch: str, protocol: str | None) -> str | None:
    """Where a cluster made here would run its scheduler (``gpujobqueue.<batch>.scheduler``)."""
    from .config import configured
    from .scheduler_job import parse_scheduler_placement

    try:
        return parse_scheduler_placement(configured(batch, "scheduler"), batch, protocol)
    except GPUJobQueueError:
        return None


def judge(facts: MachineFacts) -> list[Finding]:
    """The findings of a check, in the order they are printed.

    Parameters
    ----------
    facts : MachineFacts

    Returns
    -------
    list of Finding
        ``fail`` where something the workers need is missing, each with its fix.
    """
    findings = [_site_finding(facts), Finding("ok", "python", f"{facts.python}; gpujobqueue {facts.gpujobqueue}")]
    findings += _gpu_findings(facts)
    findings += _package_findings(facts)
    findings += _ucx_findings(facts)
    findings += _network_findings(facts)
    findings += [Finding("info", "network cards", line) for line in facts.nic_map]
    findings += _batch_findings(facts)
    if facts.site_file_errors:
        findings.append(
            Finding(
                "fail",
                "site files",
                "; ".join(facts.site_file_errors),
                "correct the file and key named (gpujobqueue check FILE shows each problem)",
            )
        )
    else:
        findings.append(Finding("ok", "site files", f"{facts.site_files_checked} known site files valid"))
    return findings


def _site_finding(facts: MachineFacts) -> Finding:
    if facts.site_error:
        return Finding(
            "fail", "site", facts.site_error, "name a site that `gpujobqueue sites` lists, or a valid site file"
        )
    if facts.site is None:
        return Finding("info", "site", f"none ({facts.site_source}); batch system {facts.batch}")
    return Finding("ok", "site", f"{facts.site} ({facts.site_source}, {facts.site_file}); batch system {facts.batch}")


def _gpu_findings(facts: MachineFacts) -> list[Finding]:
    if facts.gpus:
        names = ", ".join(
            f"{gpu.index}: {gpu.name}"
            + (f" {gpu.memory_bytes / 2**30:.0f} GiB" if gpu.memory_bytes else "")
            + (f", {gpu.active_nvlinks} NVLinks" if gpu.active_nvlinks else "")
            for gpu in facts.gpus
        )
        visible = "" if facts.cuda_visible_devices is None else f"; CUDA_VISIBLE_DEVICES={facts.cuda_visible_devices}"
        findings = [Finding("ok", "GPUs", f"{len(facts.gpus)} seen by {facts.gpu_source} ({names}){visible}")]
        if facts.cuda_driver_version:
            findings.append(
                Finding(
                    "ok",
                    "CUDA driver",
                    f"CUDA {facts.cuda_driver_version}, driver {facts.driver_version}; "
                    f"its stack: {install_line(facts.cuda_driver_version)}",
                )
            )
        else:
            findings.append(
                Finding("warn", "CUDA driver", "version not readable (NVML missing)", "pip install nvidia-ml-py")
            )
        findings += _cuda_major_findings(facts)
        return findings
    why = f" ({facts.gpu_error})" if facts.gpu_error else ""
    if facts.site_gpu_vendor not in (None, "nvidia"):
        return [
            Finding(
                "info",
                "GPUs",
                f"no NVIDIA GPU{why}; {facts.site}'s GPUs are {facts.site_gpu_vendor}, which this check does not count",
            )
        ]
    if facts.job_of:
        return [
            Finding(
                "fail",
                "GPUs",
                f"none seen inside this {facts.job_of} job{why}",
                "ask the job for GPUs (gpus_per_node=, or the site's GPU queue) and check CUDA_VISIBLE_DEVICES is "
                "not empty",
            )
        ]
    if _runs_jobs_here(facts.batch):
        return [
            Finding(
                "warn",
                "GPUs",
                f"no NVIDIA GPU here{why}; the local batch system will start CPU workers in their place",
                "run on a GPU node, or pass site= / batch= to submit to the machine's batch system",
            )
        ]
    return [
        Finding(
            "info",
            "GPUs",
            f"none here{why}: usual on a login node; the workers run on {facts.batch} compute nodes (run "
            "`gpujobqueue check` in a job to check those)",
        )
    ]


def _cuda_major_findings(facts: MachineFacts) -> list[Finding]:
    """A CUDA library built for a newer CUDA than the driver's fails at its first kernel."""
    driver = cuda_major(facts.cuda_driver_version)
    if driver is None:
        return []
    newer = [
        f"{name} {package.version} ({package.distribution})"
        for name, package in facts.packages.items()
        if package.version and (major := _built_for(package.distribution)) is not None and major > driver
    ]
    if not newer:
        return []
    return [
        Finding(
            "fail",
            "CUDA versions",
            f"{', '.join(newer)} built for a newer CUDA than the driver's {facts.cuda_driver_version}",
            f"uninstall them, then {install_line(facts.cuda_driver_version)}",
        )
    ]


def _built_for(distribution: str | None) -> int | None:
    found = re.search(r"-(?:cu|cuda)(\d+)x?$", distribution or "")
    return int(found.group(1)) if found else None


def _package_findings(facts: MachineFacts) -> list[Finding]:
    packages = facts.packages
    findings = [
        Finding(
            "ok",
            "dask",
            ", ".join(f"{name} {packages[name].version}" for name in ("dask", "distributed", "dask-jobqueue")),
        )
    ]
    needs_cuda = facts.worker_mode == "dask-cuda" or (facts.worker_mode is None and bool(facts.gpus))
    cuda = packages["dask-cuda"]
    stack = install_line(facts.cuda_driver_version)
    if cuda.version and not cuda.import_error:
        findings.append(Finding("ok", "dask-cuda", cuda.version))
    elif needs_cuda:
        broken = cuda.version and cuda.import_error
        fix = (
            f"{stack} (it brings the cuda-bindings dask-cuda imports)"
            if broken and "bindings" in cuda.import_error
            else stack
        )
        detail = f"{cuda.version} installed but does not import: {cuda.import_error}" if broken else "not installed"
        findings.append(Finding("fail", "dask-cuda", f"{detail}; the workers here run dask-cuda", fix))
    else:
        findings.append(Finding("info", "dask-cuda", "not installed (needed for worker_mode='dask-cuda')"))
    ucx = packages["distributed-ucxx"]
    if ucx.version and not ucx.import_error:
        findings.append(Finding("ok", "distributed-ucxx", f"{ucx.version} (ucxx {packages['ucxx'].version})"))
    elif facts.protocol == "ucx":
        detail = f"{ucx.version} installed but does not import: {ucx.import_error}" if ucx.version else "not installed"
        findings.append(
            Finding(
                "fail",
                "distributed-ucxx",
                f"{detail}; protocol is ucx",
                install_line(facts.cuda_driver_version, ucx=True),
            )
        )
    else:
        findings.append(Finding("info", "distributed-ucxx", "not installed (needed for protocol='ucx' only)"))
    others = ", ".join(f"{name} {packages[name].version or 'not installed'}" for name in ("cupy", "cudf", "rmm"))
    if packages["cupy"].version:
        findings.append(Finding("ok", "GPU libraries", others))
    elif facts.gpus:
        findings.append(Finding("warn", "GPU libraries", others, f"{stack} for cupy arrays on the GPUs"))
    else:
        findings.append(Finding("info", "GPU libraries", others))
    return findings


def _ucx_findings(facts: MachineFacts) -> list[Finding]:
    if facts.ucx_transports is None:
        if facts.protocol == "ucx":
            return [
                Finding(
                    "fail",
                    "UCX transports",
                    "no UCX here (neither ucxx nor ucx_info)",
                    f"{install_line(facts.cuda_driver_version, ucx=True)}, or module load ucx",
                )
            ]
        return [Finding("info", "UCX transports", "no UCX here (neither ucxx nor ucx_info); UCX is not used")]
    transports = set(facts.ucx_transports)
    findings = [
        Finding("ok", "UCX transports", f"{', '.join(facts.ucx_transports) or 'none'} (from {facts.ucx_source})")
    ]
    if facts.protocol == "ucx":
        nvlinked = any(gpu.active_nvlinks for gpu in facts.gpus)
        if nvlinked and not transports & NVLINK_TRANSPORTS:
            findings.append(
                Finding(
                    "warn",
                    "UCX over NVLink",
                    "this machine's GPUs have NVLink but UCX has no cuda_ipc transport",
                    "use a UCX built with CUDA (the libucx-cu13 wheel is); check UCX_TLS does not leave cuda_ipc out",
                )
            )
        if facts.infiniband_devices and not transports & INFINIBAND_TRANSPORTS:
            findings.append(
                Finding(
                    "warn",
                    "UCX over InfiniBand",
                    f"InfiniBand devices {', '.join(facts.infiniband_devices)} but no rc/ud/dc transport in UCX",
                    "use a UCX built with verbs (rdma-core); check UCX_TLS",
                )
            )
    return findings


def _network_findings(facts: MachineFacts) -> list[Finding]:
    addresses = "; ".join(f"{name} {' '.join(addrs) or '(no IPv4)'}" for name, addrs in facts.interfaces.items())
    findings = [
        Finding(
            "ok",
            "interfaces",
            addresses + (f"; InfiniBand: {', '.join(facts.infiniband_devices)}" if facts.infiniband_devices else ""),
        )
    ]
    if facts.interface is None:
        return findings
    if facts.interface in facts.interfaces:
        if facts.interfaces[facts.interface]:
            findings.append(
                Finding(
                    "ok", "site interface", f"{facts.interface} is here ({' '.join(facts.interfaces[facts.interface])})"
                )
            )
        else:
            findings.append(
                Finding(
                    "fail",
                    "site interface",
                    f"{facts.interface} is here but has no IPv4 address for dask to listen on",
                    f"pass interface= one of {', '.join(n for n, a in facts.interfaces.items() if a)}",
                )
            )
        return findings
    choices = ", ".join(name for name, addrs in facts.interfaces.items() if addrs and name != "lo") or "lo"
    fix = f"pass interface= one of {choices} (or correct the site's network.interface)"
    if facts.job_of or _runs_jobs_here(facts.batch):
        findings.append(
            Finding(
                "fail",
                "site interface",
                f"{facts.interface} is not an interface of this host, where the workers run",
                fix,
            )
        )
    elif facts.scheduler_placement == "local":
        # The workers' interface is on the compute nodes; the scheduler's is here, on the login node.
        first = choices.split(", ")[0]
        where = f"a {facts.site} login node" if facts.site else "the site's login node"
        detail = (
            f"{facts.interface} is not on this host ({facts.hostname}), and the scheduler of a cluster made here "
            "runs here (scheduler='local') and listens on it: the cluster cannot start"
        )
        fix = (
            f"run on {where}, where {facts.interface} is; or give the scheduler one of this host's interfaces "
            f"({choices}): scheduler_options={{'interface': '{first}'}} (the workers keep {facts.interface} on "
            f"the compute nodes), or interface='{first}' for the scheduler and the workers"
        )
        findings.append(Finding("fail", "site interface", detail, fix))
    else:
        findings.append(
            Finding(
                "warn",
                "site interface",
                f"{facts.interface} is not on this host (a login node?); the workers need it on the compute nodes, "
                "where `gpujobqueue check` in a job tells",
                fix,
            )
        )
    return findings


def _batch_findings(facts: MachineFacts) -> list[Finding]:
    present = [
        batch
        for batch in _submitting()
        if all(facts.batch_commands.get(c) for c in _commands(batch)) and batch in facts.batch_versions
    ]
    if _runs_jobs_here(facts.batch):
        also = (
            "; on PATH: " + ", ".join(facts.batch_versions[b] for b in present) + " (pass site= or batch= to use it)"
            if present
            else ""
        )
        return [Finding("ok", "batch commands", f"none needed for the {facts.batch} batch system{also}")]
    missing = [c for c in _commands(facts.batch) if not facts.batch_commands.get(c)]
    if missing:
        return [
            Finding(
                "fail",
                "batch commands",
                f"{', '.join(missing)} not on PATH; {facts.batch} clusters submit, watch and cancel with them",
                f"run on a login node of the {facts.batch} machine, or load the module that puts {missing[0]} on PATH",
            )
        ]
    # Batch systems whose commands have the same names (PBS's and Grid Engine's qsub, qstat, qdel).
    namesakes = [b for b in _submitting() if b != facts.batch and _commands(b) == _commands(facts.batch)]
    if namesakes and facts.batch_versions and facts.batch not in facts.batch_versions:
        other = next((facts.batch_versions[b] for b in namesakes if b in facts.batch_versions), "another batch system")
        *named, last = _commands(facts.batch)
        return [
            Finding(
                "fail",
                "batch commands",
                f"{', '.join(named)} and {last} here are {other}'s, not {facts.batch}'s",
                f"put {facts.batch}'s commands first on PATH, or pass the site or batch= this machine runs",
            )
        ]
    found = [
        f"{c} {facts.batch_commands[c]}"
        for c in (*_commands(facts.batch), *_optional_commands(facts.batch))
        if facts.batch_commands.get(c)
    ]
    version = f"{facts.batch_versions[facts.batch]}: " if facts.batch in facts.batch_versions else ""
    job_id = os.environ.get(cluster_class(facts.job_of).job_cls.job_id_variable, "") if facts.job_of else ""
    inside = f"; inside {facts.job_of} job {job_id}" if facts.job_of else ""
    return [Finding("ok", "batch commands", version + "; ".join(found) + inside)]


def _runs_jobs_here(batch: str) -> bool:
    """Whether the batch system runs its jobs on this host, needing no batch commands (the local one)."""
    return getattr(cluster_class(batch).job_cls, "runs_jobs_here", False)


def _submitting() -> list[str]:
    """The batch systems that submit to a batch server, in the registry's order."""
    return [batch for batch in BATCH_SYSTEMS if not _runs_jobs_here(batch)]


def _commands(batch: str) -> tuple[str, ...]:
    """The commands a batch system's clusters submit, watch and cancel with."""
    job = cluster_class(batch).job_cls
    return (job.submit_command, job.status_command, job.cancel_command)


def _optional_commands(batch: str) -> tuple[str, ...]:
    """Commands its clusters use where present (a finished job's exit code)."""
    return getattr(cluster_class(batch).job_cls, "optional_commands", ())


def _package(name: str) -> Package:
    version = found = None
    for distribution in DISTRIBUTIONS.get(name, (name,)):
        try:
            version, found = importlib.metadata.version(distribution), distribution
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    import_error = None
    if version and name in IMPORT_CHECKED:
        try:
            importlib.import_module(MODULES[name])
        except Exception as error:  # an installed package that fails to import, for any reason
            import_error = f"{type(error).__name__}: {error}"
    return Package(name, version, import_error, found)


def _ucx_info_path() -> str | None:
    on_path = shutil.which("ucx_info")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("libucx")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "bin" / "ucx_info"
        if candidate.is_file():
            return str(candidate)
    return None


# What distributed-ucxx will use: the transports of a UCX context made by ucxx itself.
_UCXX_TRANSPORTS = "import ucxx; ucxx.init(); print('transports:', *sorted(ucxx.get_active_transports()))"


def _ucx_resources() -> tuple[str | None, list[str] | None]:
    """(where the transports were read, the transports), or (None, None) without UCX.

    ucxx is asked first, in a child process: it loads UCX as the workers will. The libucx
    wheel's ``ucx_info`` cannot find the wheel's transport modules (it lists ``self``
    alone), so ``ucx_info -d`` is read only where ucxx is missing.
    """
    if importlib.util.find_spec("ucxx") is not None:
        try:
            done = subprocess.run([sys.executable, "-c", _UCXX_TRANSPORTS], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            done = None
        found = [line for line in (done.stdout.splitlines() if done else []) if line.startswith("transports:")]
        if found:
            return "ucxx", found[-1].split()[1:]
    ucx_info = _ucx_info_path()
    if ucx_info is None:
        return None, None
    try:
        out = subprocess.run([ucx_info, "-d"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return ucx_info, list(dict.fromkeys(re.findall(r"^#\s+Transport:\s+(\S+)", out, re.MULTILINE)))


def _batch_versions() -> dict[str, str]:
    """Which batch systems' commands these are: PBS and Grid Engine share qsub, qstat and qdel."""
    answers: dict[tuple[str, ...], str | None] = {}

    def first_line(command: list[str]) -> str | None:  # each command run once, whichever modules ask
        if tuple(command) not in answers:
            answers[tuple(command)] = _first_line(command)
        return answers[tuple(command)]

    versions = {batch: cluster_class(batch).job_cls.installed_version(first_line) for batch in _submitting()}
    return {batch: version for batch, version in versions.items() if version is not None}


def _first_line(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        return None
    # Grid Engine prints its usage on stdout; sbatch's DNS complaints go to stderr.
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def _interfaces() -> dict[str, list[str]]:
    from .interfaces import host_interfaces

    return host_interfaces()


def _job_of() -> str | None:
    for batch in _submitting():
        job = cluster_class(batch).job_cls
        if all(os.environ.get(variable) for variable in (job.job_id_variable, *getattr(job, "job_also_sets", ()))):
            return batch
    return None


def _the_site(site: str | None, batch: str | None) -> tuple[sites.Site | None, str, str | None]:
    """(the site, how it was chosen, the error loading it), as GPUCluster() chooses."""
    try:
        return (*sites.choose_site(site, batch), None)
    except GPUJobQueueError as error:
        return None, "given" if site else "gpujobqueue.site in dask config", str(error)


def _check_site_files() -> tuple[int, list[str]]:
    names = sorted(sites.site_files())
    return len(names), [problem for name in names for problem in sites.site_problems(name)]


def report(findings: list[Finding], facts: MachineFacts) -> str:
    """The check as text: one line per finding, its fix under it, and a last line that sums up."""
    width = max(len(f.topic) for f in findings)
    lines = [f"gpujobqueue check on {facts.hostname}"]
    for finding in findings:
        lines.append(f"  {finding.status.upper():<5} {finding.topic:<{width}}  {finding.detail}")
        if finding.fix:
            lines.append(f"  {'':<5} {'':<{width}}  fix: {finding.fix}")
    failed = sum(f.status == "fail" for f in findings)
    warned = sum(f.status == "warn" for f in findings)
    if failed:
        lines.append(f"{failed} problem(s) stop GPU workers here; each fix is named above")
    else:
        lines.append("nothing missing" + (f" ({warned} warning(s))" if warned else ""))
    return "\n".join(lines)
