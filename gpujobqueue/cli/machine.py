"""The commands about this machine: ``gpujobqueue check``, ``gpujobqueue clean`` and ``gpujobqueue demo``."""

from __future__ import annotations

import sys

import click

from ..batch import names
from ..settings.worker_options import PROTOCOLS
from .demo_sizes import SIZE_NAMES


@click.command()
@click.argument("files", nargs=-1, type=click.Path())
@click.option("--site", help="Check against this site (name or file) instead of the one GPUCluster() would pick.")
@click.option("--batch", type=click.Choice(list(names())), help="The batch system, where no site is used.")
@click.option("--interface", help="The interface keyword: check it exists here (default: the site's).")
@click.option("--protocol", type=click.Choice(PROTOCOLS), help="The protocol keyword (default: the site's).")
@click.option("--json", "as_json", is_flag=True, help="Print the facts and findings as JSON.")
@click.option(
    "--submit-test",
    is_flag=True,
    help="Ask the site's batch system whether it would take the site's default job and one job per routing bin "
    "(sbatch --test-only, qsub -w v), and one job past each limit, which it should refuse; compare its queue "
    "listing with the site file. Nothing is submitted. Exit 1 where it refuses one or is stricter than the file.",
)
@click.option("--account", help="The account the --submit-test jobs are rendered with.")
def check(
    files: tuple[str, ...],
    site: str | None,
    batch: str | None,
    interface: str | None,
    protocol: str | None,
    as_json: bool,
    submit_test: bool,
    account: str | None,
) -> None:
    """Diagnose this machine for GPU workers: GPUs (NVML), CUDA driver, dask-cuda,
    distributed-ucxx, cupy and cudf, UCX transports, network interfaces against the site's,
    batch commands on PATH, the site detected. Exit 1 naming the fix where something needed
    is missing.

    With --submit-test, render the site's default job and one job per routing bin (each queue's
    node and walltime limits) and ask the batch system whether it would take each, submitting
    nothing: accepted, or its own refusal (a failure). One job more per limit asks one step past it: taken,
    the machine is looser than the file (a warning). The batch system's queue listing (sinfo, qstat -Qf,
    bqueues -l, qconf -sq) is compared with the file, each difference with its line. Batch systems without a
    test mode say so.

    With FILES, validate those site config files instead; exit 1 listing file:line: key: problem.
    """
    if files:
        if site or batch or interface or protocol or as_json or submit_test or account:
            raise click.UsageError("FILES are validated on their own; leave out the machine options")
        sys.exit(_check_site_files(files))
    import json
    from dataclasses import asdict

    from ..diagnostics import gather_facts, judge, report

    if account and not submit_test:
        raise click.UsageError("--account is the account of the --submit-test jobs; give --submit-test")
    facts = gather_facts(
        site=site, batch=batch, interface=interface, protocol=protocol, submit_test=submit_test, account=account
    )
    findings = judge(facts)
    if as_json:
        click.echo(json.dumps({"facts": asdict(facts), "findings": [asdict(f) for f in findings]}, indent=2))
    else:
        click.echo(report(findings, facts))
    if any(f.status == "fail" for f in findings):
        sys.exit(1)


def _check_site_files(files: tuple[str, ...]) -> int:
    from ..plan import site_problems

    failed = 0
    for target in files:
        problems = site_problems(target)
        for problem in problems:
            click.echo(problem, err=True)
        if not problems:
            click.echo(f"ok: {target}")
        failed += bool(problems)
    return 1 if failed else 0


@click.command()
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False))
def clean(directory: str) -> None:
    """Remove your clusters' private folders (scheduler file, TLS key) in DIRECTORY (default:
    the current one, the default shared_temp_directory) whose owner process on this host has
    ended, as a SIGKILLed client leaves them. Folders of live processes and of other hosts stay."""
    import os

    from ..security.owned_folders import remove_stale_private_directories

    if not os.path.isdir(directory):
        raise click.ClickException(f"{directory} is not a directory")
    removed, left = remove_stale_private_directories(directory)
    for folder in removed:
        click.echo(f"removed {folder.path}: {folder.reason}")
    for folder in left:
        click.echo(f"left {folder.path}: {folder.reason}")
    if not removed:
        click.echo(f"nothing to remove in {os.path.abspath(directory)}")


@click.command()
@click.option("--size", type=click.Choice(SIZE_NAMES), default="medium", show_default=True, help="Problem sizes.")
@click.option(
    "--gpus",
    type=click.IntRange(min=1),
    help="Workers to start, 1 or more: one per GPU (default: every GPU here), or CPU workers where there is "
    "no GPU (default 2).",
)
@click.option(
    "--dashboard",
    is_flag=True,
    help="Open the scheduler's dashboard on 127.0.0.1 (every user of this host can read it; default: none).",
)
def demo(size: str, gpus: int | None, dashboard: bool) -> None:
    """Start a LocalGPUCluster here, run the seed workloads, print sizes and timings."""
    from .demo import run_demo

    sys.exit(run_demo(size=size, gpus=gpus, dashboard=dashboard))
