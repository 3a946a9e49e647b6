"""The judgement of ``gpujobqueue check``: :func:`judge` turns :class:`~.facts.MachineFacts` into
:class:`Finding` lines, ``fail`` where something the workers need is missing, and :func:`report` writes them."""

from __future__ import annotations

import datetime
import os
import re

from ..batch import batch_system
from ..jobs.scheduler_job import SCHEDULER_HERE
from ..machine.install import cuda_major, install_line
from ..sites import FRESH_MONTHS, oldest_source
from .facts import MachineFacts
from .findings import Finding, submit_test_findings
from .probes import commands, submitting

NVLINK_TRANSPORTS = {"cuda_ipc"}
INFINIBAND_TRANSPORTS = {"rc", "rc_verbs", "rc_mlx5", "ud", "ud_verbs", "ud_mlx5", "dc", "dc_mlx5"}


def judge(facts: MachineFacts) -> list[Finding]:
    """The findings of a check, in the order they are printed."""
    findings = [_site_finding(facts), *_freshness_findings(facts)]
    findings.append(Finding("ok", "python", f"{facts.python}; gpujobqueue {facts.gpujobqueue}"))
    findings += _gpu_findings(facts)
    findings += _package_findings(facts)
    findings += _worker_python_findings(facts)
    findings += _ucx_findings(facts)
    findings += _network_findings(facts)
    if facts.nic_map:  # a diagnosis: the workers' cards are UCX's to choose unless nic_affinity=True
        findings.append(Finding("info", "network cards", "UCX chooses the workers' cards; with nic_affinity=True:"))
    findings += [Finding("info", "network cards", line) for line in facts.nic_map]
    findings += _batch_findings(facts)
    # Each problem on its own line: one bad file among many is named alone, the others' checks stand.
    fix = "correct the file and key named (gpujobqueue check FILE shows each problem)"
    findings += [Finding("fail", "site files", problem, fix) for problem in facts.site_file_errors]
    if not facts.site_file_errors:
        findings.append(Finding("ok", "site files", f"{facts.site_files_checked} known site files valid"))
    return findings + submit_test_findings(facts)


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


def _site_finding(facts: MachineFacts) -> Finding:
    if facts.site_error:
        fix = "name a site that `gpujobqueue sites` lists, or a valid site file"
        return Finding("fail", "site", facts.site_error, fix)
    if facts.site is None:
        return Finding("info", "site", f"none ({facts.site_source}); batch system {facts.batch}")
    return Finding("ok", "site", f"{facts.site} ({facts.site_source}, {facts.site_file}); batch system {facts.batch}")


def _freshness_findings(facts: MachineFacts) -> list[Finding]:
    """A warning where the site's oldest source is a version of more than six months before the check's day."""
    if facts.site_oldest_source is None:
        return []
    oldest = oldest_source({"sources": [facts.site_oldest_source]}, datetime.date.fromisoformat(facts.today))
    if not oldest.stale:
        return [
            Finding("ok", "site sources", f"oldest version read of {oldest.version_date.isoformat()} ({oldest.url})")
        ]
    fix = (
        f"the centre may have changed a queue or limit since: compare its pages now with `gpujobqueue show "
        f"{facts.site}` and correct the site file (its facts are more than {FRESH_MONTHS} months old)"
    )
    return [Finding("warn", "site sources", f"{facts.site}: {oldest.stale_text()}", fix)]


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
            stack = f"its stack: {install_line(facts.cuda_driver_version)}"
            driver = f"CUDA {facts.cuda_driver_version}, driver {facts.driver_version}; {stack}"
            findings.append(Finding("ok", "CUDA driver", driver))
        else:
            unread = "version not readable (NVML missing)"
            findings.append(Finding("warn", "CUDA driver", unread, "pip install nvidia-ml-py"))
        findings += _cuda_major_findings(facts)
        return findings
    why = f" ({facts.gpu_error})" if facts.gpu_error else ""
    if facts.site_gpu_vendor not in (None, "nvidia"):
        other = f"{facts.site}'s GPUs are {facts.site_gpu_vendor}, which this check does not count"
        return [Finding("info", "GPUs", f"no NVIDIA GPU{why}; {other}")]
    if facts.job_of:
        fix = "ask the job for GPUs (gpus_per_node=, or the site's GPU queue) and check CUDA_VISIBLE_DEVICES"
        return [Finding("fail", "GPUs", f"none seen inside this {facts.job_of} job{why}", f"{fix} is not empty")]
    if batch_system(facts.batch).runs_jobs_here:
        cpu = f"no NVIDIA GPU here{why}; the local batch system will start CPU workers in their place"
        fix = "run on a GPU node, or pass site= / batch= to submit to the machine's batch system"
        return [Finding("warn", "GPUs", cpu, fix)]
    elsewhere = f"the workers run on {facts.batch} compute nodes (run `gpujobqueue check` in a job to check those)"
    return [Finding("info", "GPUs", f"none here{why}: usual on a login node; {elsewhere}")]


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
    detail = f"{', '.join(newer)} built for a newer CUDA than the driver's {facts.cuda_driver_version}"
    return [Finding("fail", "CUDA versions", detail, f"uninstall them, then {install_line(facts.cuda_driver_version)}")]


def _built_for(distribution: str | None) -> int | None:
    found = re.search(r"-(?:cu|cuda)(\d+)x?$", distribution or "")
    return int(found.group(1)) if found else None


def _workers_run_dask_cuda(facts: MachineFacts) -> bool:
    # worker_mode's default: dask-cuda, but CPU workers where the local batch system finds no GPU.
    return facts.worker_mode == "dask-cuda" or (
        facts.worker_mode is None and (bool(facts.gpus) or not batch_system(facts.batch).runs_jobs_here)
    )


def _worker_python_findings(facts: MachineFacts) -> list[Finding]:
    """The interpreter ``gpujobqueue.<batch>.python`` names, where it is not this one: what it lacks."""
    python, key = facts.worker_python, f"gpujobqueue.{facts.batch}.python"
    if python is None:
        return []
    if facts.worker_python_problems is None:
        return [Finding("info", "workers' python", f"{python} ({key}) is not a python on this host; not probed")]
    wanted = [p for p in facts.worker_python_problems if "dask_cuda" not in p or _workers_run_dask_cuda(facts)]
    if not wanted:
        return [Finding("ok", "workers' python", f"{python} ({key})")]
    gpujobqueue = f"{python} -m pip install 'gpujobqueue=={facts.gpujobqueue}'"
    fix = install_line(facts.cuda_driver_version, python=python) if "dask_cuda" in wanted[0] else gpujobqueue
    return [Finding("fail", "workers' python", f"{python} ({key}) {' and '.join(wanted)}", fix)]


def _package_findings(facts: MachineFacts) -> list[Finding]:
    packages = facts.packages
    dask = ", ".join(f"{name} {packages[name].version}" for name in ("dask", "distributed", "dask-jobqueue"))
    findings = [Finding("ok", "dask", dask)]
    needs_cuda = _workers_run_dask_cuda(facts)
    cuda = packages["dask-cuda"]
    stack = install_line(facts.cuda_driver_version)
    if cuda.missing is None:
        findings.append(Finding("ok", "dask-cuda", cuda.version))
    elif needs_cuda:
        bindings = " (it brings the cuda-bindings dask-cuda imports)" if "bindings" in str(cuda.import_error) else ""
        findings.append(
            Finding("fail", "dask-cuda", f"{cuda.missing}; the workers here run dask-cuda", stack + bindings)
        )
    else:
        findings.append(Finding("info", "dask-cuda", f"{cuda.missing} (needed for worker_mode='dask-cuda')"))
    ucx = packages["distributed-ucxx"]
    if ucx.missing is None:
        findings.append(Finding("ok", "distributed-ucxx", f"{ucx.version} (ucxx {packages['ucxx'].version})"))
    elif facts.protocol == "ucx":
        fix = install_line(facts.cuda_driver_version, ucx=True)
        findings.append(Finding("fail", "distributed-ucxx", f"{ucx.missing}; protocol is ucx", fix))
    else:
        findings.append(Finding("info", "distributed-ucxx", f"{ucx.missing} (needed for protocol='ucx' only)"))
    others = ", ".join(f"{name} {packages[name].version or 'not installed'}" for name in ("cupy", "cudf", "rmm"))
    if packages["cupy"].version:
        findings.append(Finding("ok", "GPU libraries", others))
    elif facts.gpus:
        findings.append(Finding("warn", "GPU libraries", others, f"{stack} for cupy arrays on the GPUs"))
    else:
        findings.append(Finding("info", "GPU libraries", others))
    return findings


def _ucx_findings(facts: MachineFacts) -> list[Finding]:
    none = "no UCX here (neither ucxx nor ucx_info)"
    if facts.ucx_transports is None and facts.protocol == "ucx":
        fix = f"{install_line(facts.cuda_driver_version, ucx=True)}, or module load ucx"
        return [Finding("fail", "UCX transports", none, fix)]
    if facts.ucx_transports is None:
        return [Finding("info", "UCX transports", f"{none}; UCX is not used")]
    transports = set(facts.ucx_transports)
    found = f"{', '.join(facts.ucx_transports) or 'none'} (from {facts.ucx_source})"
    findings = [Finding("ok", "UCX transports", found)]
    if facts.protocol != "ucx":
        return findings
    if any(gpu.active_nvlinks for gpu in facts.gpus) and not transports & NVLINK_TRANSPORTS:
        detail = "this machine's GPUs have NVLink but UCX has no cuda_ipc transport"
        fix = "use a UCX built with CUDA (the libucx-cu13 wheel is); check UCX_TLS does not leave cuda_ipc out"
        findings.append(Finding("warn", "UCX over NVLink", detail, fix))
    if facts.infiniband_devices and not transports & INFINIBAND_TRANSPORTS:
        detail = f"InfiniBand devices {', '.join(facts.infiniband_devices)} but no rc/ud/dc transport in UCX"
        fix = "use a UCX built with verbs (rdma-core); check UCX_TLS"
        findings.append(Finding("warn", "UCX over InfiniBand", detail, fix))
    return findings


def _network_findings(facts: MachineFacts) -> list[Finding]:
    addresses = "; ".join(f"{name} {' '.join(addrs) or '(no IPv4)'}" for name, addrs in facts.interfaces.items())
    infiniband = f"; InfiniBand: {', '.join(facts.infiniband_devices)}" if facts.infiniband_devices else ""
    findings = [Finding("ok", "interfaces", addresses + infiniband)]
    if facts.interface is None:
        return findings
    own = facts.interfaces.get(facts.interface)
    if own:
        return [*findings, Finding("ok", "site interface", f"{facts.interface} is here ({' '.join(own)})")]
    if own is not None:
        no_ipv4 = f"{facts.interface} is here but has no IPv4 address for dask to listen on"
        usable = ", ".join(name for name, addrs in facts.interfaces.items() if addrs)
        return [*findings, Finding("fail", "site interface", no_ipv4, f"pass interface= one of {usable}")]
    choices = ", ".join(name for name, addrs in facts.interfaces.items() if addrs and name != "lo") or "lo"
    fix = f"pass interface= one of {choices} (or correct the site's network.interface)"
    if facts.job_of or batch_system(facts.batch).runs_jobs_here:
        missing = f"{facts.interface} is not an interface of this host, where the workers run"
        findings.append(Finding("fail", "site interface", missing, fix))
    elif facts.scheduler_placement == SCHEDULER_HERE:
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
        detail = f"{facts.interface} is not on this host (a login node?); the workers need it on the compute nodes"
        findings.append(Finding("warn", "site interface", f"{detail}, where `gpujobqueue check` in a job tells", fix))
    return findings


def _batch_findings(facts: MachineFacts) -> list[Finding]:
    present = [
        batch
        for batch in submitting()
        if all(facts.batch_commands.get(c) for c in commands(batch)) and batch in facts.batch_versions
    ]
    if batch_system(facts.batch).runs_jobs_here:
        on_path = ", ".join(facts.batch_versions[b] for b in present)
        also = f"; on PATH: {on_path} (pass site= or batch= to use it)" if present else ""
        return [Finding("ok", "batch commands", f"none needed for the {facts.batch} batch system{also}")]
    missing = [c for c in commands(facts.batch) if not facts.batch_commands.get(c)]
    if missing:
        detail = f"{', '.join(missing)} not on PATH; {facts.batch} clusters submit, watch and cancel with them"
        fix = f"run on a login node of the {facts.batch} machine, or load the module that puts {missing[0]} on PATH"
        return [Finding("fail", "batch commands", detail, fix)]
    # Batch systems whose commands have the same names (PBS's and Grid Engine's qsub, qstat, qdel).
    namesakes = [b for b in submitting() if b != facts.batch and commands(b) == commands(facts.batch)]
    if namesakes and facts.batch_versions and facts.batch not in facts.batch_versions:
        other = next((facts.batch_versions[b] for b in namesakes if b in facts.batch_versions), "another batch system")
        *named, last = commands(facts.batch)
        detail = f"{', '.join(named)} and {last} here are {other}'s, not {facts.batch}'s"
        fix = f"put {facts.batch}'s commands first on PATH, or pass the site or batch= this machine runs"
        return [Finding("fail", "batch commands", detail, fix)]
    found = [
        f"{c} {facts.batch_commands[c]}" for c in commands(facts.batch, optional=True) if facts.batch_commands.get(c)
    ]
    version = f"{facts.batch_versions[facts.batch]}: " if facts.batch in facts.batch_versions else ""
    job_id = os.environ.get(batch_system(facts.job_of).job_id_variable, "") if facts.job_of else ""
    inside = f"; inside {facts.job_of} job {job_id}" if facts.job_of else ""
    return [Finding("ok", "batch commands", version + "; ".join(found) + inside), *_answer_findings(facts)]


def _answer_findings(facts: MachineFacts) -> list[Finding]:
    """Whether the batch system answered check's one status query: its commands alone submit nothing."""
    query = batch_system(facts.batch).status_command
    if not facts.batch_asked:
        return []
    if facts.batch_error is None:
        return [Finding("ok", "batch system", f"{facts.batch} answers ({query} about a job it never gave)")]
    fix = (
        f"run on a login node of the {facts.batch} machine: this host is not its client (its commands find no "
        "configuration or no controller), or the controller is down there (ask the centre)"
    )
    return [Finding("fail", "batch system", f"{facts.batch} does not answer ({query}): {facts.batch_error}", fix)]
