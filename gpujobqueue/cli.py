"""The ``gpujobqueue`` command: ``render`` a job script, run the ``demo``."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import sys
import warnings
from typing import Callable

import click

from .batch import BATCH_SYSTEMS
from .errors import GPUJobQueueError, JobSizeMissingError, UnknownKeywordError
from .keywords import CHOICE, INT, LIST, PAIRS, SWITCH, Keyword, command_line_keywords
from .security import InsecureScriptWarning


def _keyword_option(keyword: Keyword) -> Callable:
    """The click option that mirrors one keyword (``gpus_per_node`` is ``--gpus-per-node``)."""
    if keyword.kind == SWITCH:
        return click.option(*keyword.options, str(keyword), default=None, help=keyword.help)
    decls = (*(keyword.options or (keyword.option,)), str(keyword))
    if keyword.kind in (LIST, PAIRS):
        return click.option(
            *decls, multiple=True, metavar="NAME=VALUE" if keyword.kind == PAIRS else None, help=keyword.help
        )
    if keyword.kind == CHOICE:
        choices = keyword.choices() if callable(keyword.choices) else keyword.choices
        return click.option(*decls, type=click.Choice(list(choices)), default=None, help=keyword.help)
    return click.option(*decls, type=int if keyword.kind == INT else str, default=None, help=keyword.help)


def _keyword_options(command: Callable) -> Callable:
    """Every keyword's option (from the keyword registry), in the registry's order in --help."""
    for keyword in reversed(command_line_keywords()):
        if keyword.command_line is None:
            command = _keyword_option(keyword)(command)
    return command


def _did_you_mean(name: str, known: list[str]) -> str:
    """'; did you mean 'x'?' for the known name closest to a mistyped one, or ''."""
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# A keyword written as a setting in a message: "(account=...)", "processes=4 but gpus_per_node=2".
_KEYWORD_SETTING = re.compile(r"(?:^|(?<=[\s(]))([a-z][a-z0-9_]*)=(?=[^\s=])")
# Fields whose render option is not named after them.
_FIELD_PARAMS = {"name": "worker_name", "job_array": "array_jobs", "scheduler": "scheduler_address"}


def _in_option_terms(error: GPUJobQueueError, command: click.Command) -> str:
    """The error's message as the command line speaks: ``--account``, not the keyword ``account=``."""
    options = {param.name: param.opts[0] for param in command.params if isinstance(param, click.Option) and param.name}
    options.update({field: options[param] for field, param in _FIELD_PARAMS.items() if param in options})
    text = str(error)
    field = str(getattr(error, "field", ""))
    # job_extra_directives[0], environment.NAME: one value of a list or mapping
    base = re.split(r"[\[.]", field, maxsplit=1)[0]
    if isinstance(error, JobSizeMissingError):
        return error.command_line_text()
    if isinstance(error, UnknownKeywordError) and field in options:  # a keyword of another batch system
        names = [options.get(name, name) for name in error.suggestions]
        hint = f"; did you mean {', '.join(names)}?" if names else ""
        return f"{options[field]} is not an option for this batch system{hint}"
    if base in options and text.startswith(f"{field}: "):
        text = options[base] + text[len(base) :]
    return _KEYWORD_SETTING.sub(lambda match: f"{options[match[1]]} " if match[1] in options else match[0], text)


@click.group(name="gpujobqueue", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpujobqueue")
def main() -> None:
    """Dask clusters of GPU workers on HPC batch systems (also ``dask gpujobqueue``)."""


@main.command()
@click.argument("batch", metavar="BATCH|SITE")
@click.argument("client_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SCRIPT_ARGS...]")
@click.option(
    "--scheduler-address", default=None, help="Scheduler the workers connect to (default: a placeholder to fill in)."
)
@click.option(
    "--name",
    "worker_name",
    default="gpujobqueue-worker",
    show_default=True,
    help="Worker name prefix; workers are NAME-<i>.",
)
@click.option(
    "--run",
    "client_script",
    default=None,
    metavar="SCRIPT.py",
    help="Write a self-contained script: it starts a scheduler and the GPU workers in the job, runs SCRIPT.py "
    "(with SCRIPT_ARGS) as the client once the workers are up, and ends the job with its exit code.",
)
@click.option(
    "--workers-timeout",
    default=300,
    show_default=True,
    help="With --run: seconds to wait for the workers before the job fails.",
)
@click.option(
    "--job-array",
    "array_jobs",
    type=int,
    default=None,
    metavar="K",
    help=(
        "Write the job array of K jobs (NAME-0 .. NAME-<K-1>) that a cluster with job_array=True submits in one "
        "command."
    ),
)
@click.option(
    "--no-tls",
    "no_tls",
    is_flag=True,
    default=False,
    help="Plain TCP instead of TLS (warns: anyone who reaches the scheduler's or workers' ports can run code as you).",
)
@click.option(
    "--tls-directory",
    default=None,
    metavar="DIR",
    help="Without --run: the folder of the TLS credentials that the workers and your scheduler share, as the "
    "job's shell writes it (default $HOME/.config/gpujobqueue/tls; `gpujobqueue credentials` makes them).",
)
@_keyword_options
def render(
    batch: str,
    client_args: tuple[str, ...],
    scheduler_address: str | None,
    worker_name: str,
    client_script: str | None,
    workers_timeout: int,
    environment: tuple[str, ...],
    array_jobs: int | None,
    no_tls: bool,
    tls_directory: str | None,
    **options,
) -> None:
    """Print the job script for BATCH (slurm, pbs, lsf, sge, local) or SITE (a site config's
    name or file) that the cluster keywords describe.

    With --run, the script is self-contained: submit it with sbatch, qsub or bsub and your
    script runs as the client of a cluster made of the job's GPUs; `Client()` in it finds the
    scheduler through DASK_SCHEDULER_ADDRESS. Arguments for your script go after `--`.

    Scripts use TLS over TCP, as clusters do: a --run script makes its own credentials in the
    job; the workers of other scripts read the ones `gpujobqueue credentials` made, which your
    scheduler uses too. --no-tls is plain TCP. UCX has no TLS.
    """
    from .render import PLACEHOLDER_SCHEDULER
    from .request import parse_name
    from .run import ClientRun
    from .scripts import job_script_for
    from .sites import site_files

    if client_args and client_script is None:
        raise click.UsageError(
            f"unexpected arguments {' '.join(client_args)!r}: arguments after -- are for the --run script"
        )
    if client_script is not None and scheduler_address is not None:
        raise click.UsageError("--run starts its own scheduler in the job; leave out --scheduler-address")

    a_file = batch.endswith((".yaml", ".yml")) or os.sep in batch
    if batch not in BATCH_SYSTEMS and not a_file and batch not in site_files():
        raise click.BadParameter(
            f"{batch!r} is neither a batch system ({', '.join(BATCH_SYSTEMS)}) nor a known site"
            f"{_did_you_mean(batch, [*BATCH_SYSTEMS, *sorted(site_files())])}"
            " (`gpujobqueue sites` lists the sites)",
            param_hint="BATCH|SITE",
        )
    try:
        parse_name("name", worker_name)
    except GPUJobQueueError as error:
        raise click.BadParameter(str(error), param_hint="--name") from None
    keywords = {key: value for key, value in options.items() if value not in (None, ())}
    for item in keywords.get("chunk_resources", ()):
        if "=" not in item:
            raise click.BadParameter(f"{item!r}: use NAME=VALUE", param_hint="--chunk-resource")
    env = {}
    for item in environment:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: use NAME=VALUE", param_hint="--env")
        env[key] = value
    if env:
        keywords["environment"] = env
    try:
        run = (
            None
            if client_script is None
            else ClientRun.from_command_line(client_script, client_args, workers_timeout=workers_timeout)
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InsecureScriptWarning)
            text = job_script_for(
                batch,
                keywords,
                name=worker_name,
                scheduler=scheduler_address or PLACEHOLDER_SCHEDULER,
                run=run,
                array_jobs=array_jobs,
                tls=not no_tls,
                tls_directory=tls_directory,
            )
    except GPUJobQueueError as error:
        raise click.ClickException(_in_option_terms(error, click.get_current_context().command)) from None
    for warning in caught:
        click.echo(f"gpujobqueue: warning: {warning.message}", err=True)
    click.echo(text, nl=False)


@main.command()
@click.argument("directory", default="~/.config/gpujobqueue/tls", metavar="[DIR]")
def credentials(directory: str) -> None:
    """Make TLS credentials (a new CA, certificate and key, private to you) in DIR, default
    ~/.config/gpujobqueue/tls, for the workers of rendered scripts and the scheduler you run;
    a complete set already there is kept. Prints how to start that scheduler and its client."""
    from .security import make_credentials

    try:
        path, made = make_credentials(directory)
    except GPUJobQueueError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"{'made' if made else 'kept'} TLS credentials in {path} (folder 0700, files 0600)")
    click.echo("start your scheduler with them:")
    click.echo(
        f"  dask scheduler --protocol tls --tls-ca-file {path}/ca.pem --tls-cert {path}/cert.pem --tls-key "
        f"{path}/key.pem"
    )
    click.echo("and connect your client:")
    click.echo(
        f"  Client(address, security=Security(tls_ca_file='{path}/ca.pem', tls_client_cert='{path}/cert.pem', "
        f"tls_client_key='{path}/key.pem', require_encryption=True))"
    )


# The `sites` table: key -> heading; the centre and GPU columns are shortened to fit the terminal.
_SITE_COLUMNS = {
    "name": "SITE",
    "centre": "CENTRE",
    "scheduler": "BATCH",
    "gpus": "GPUS",
    "gpu": "GPU",
    "protocol": "PROTOCOL",
    "status": "STATUS",
    "unconfirmed": "UNCONFIRMED",
}
_SHORTENED = ("centre", "gpu")


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)].rstrip() + "…"


@main.command()
def sites() -> None:
    """List the known site configs: name, centre, batch system, GPUs per node, GPU model,
    protocol, status, and how many of the site's facts its centre's documentation did not
    confirm (`gpujobqueue show SITE` lists them). A site file that does not load is listed as
    broken, and its error printed after the table."""
    from .sites import site_table

    try:
        rows = site_table()
    except GPUJobQueueError as error:
        raise click.ClickException(str(error)) from None
    broken = {row["name"]: row["status"].partition(": ")[2] for row in rows if str(row["status"]).startswith("broken")}
    cells = [{key: str(row[key]) for key in _SITE_COLUMNS} for row in rows]
    for cell, row in zip(cells, rows):
        if row["name"] in broken:
            cell["status"] = "broken"
        elif row.get("retired"):
            cell["status"] = f"retired {row['retired']}"
    widths = {key: max([len(title)] + [len(cell[key]) for cell in cells]) for key, title in _SITE_COLUMNS.items()}
    # Shorten the centre and GPU columns, the longer first, until the table fits the terminal.
    fixed = sum(width for key, width in widths.items() if key not in _SHORTENED) + 2 * (len(widths) - 1)
    room = shutil.get_terminal_size((100, 24)).columns - fixed
    while sum(widths[key] for key in _SHORTENED) > room and max(widths[key] for key in _SHORTENED) > 8:
        longest = max(_SHORTENED, key=lambda key: widths[key])
        widths[longest] -= 1
    click.echo("  ".join(title.ljust(widths[key]) for key, title in _SITE_COLUMNS.items()).rstrip())
    for cell in cells:
        click.echo("  ".join(_shorten(cell[key], widths[key]).ljust(widths[key]) for key in _SITE_COLUMNS).rstrip())
    for name, error in broken.items():
        click.echo(f"gpujobqueue: site {name} is broken: {error}", err=True)


@main.command()
@click.argument("site")
def show(site: str) -> None:
    """Print SITE's resolved config as YAML, each value with the line (and, for a site merged
    from several files, the file) it came from."""
    import yaml

    from .sites import load_site, sources_text

    try:
        loaded = load_site(site)
    except GPUJobQueueError as error:
        raise click.ClickException(str(error)) from None
    files = {path: number for number, path in enumerate(loaded.files, 1)}
    click.echo(f"# site {loaded.name}")
    for path, number in files.items():
        click.echo(f"# {'file ' + str(number) + ': ' if len(files) > 1 else 'from '}{path}")

    def origin(path: tuple) -> str:
        file, _, line = loaded.where(*path).rpartition(":")
        if not line.isdigit():
            return ""
        return f"line {line}" if len(files) == 1 else f"file {files.get(file, '?')}, line {line}"

    def walk(value: dict, path: tuple, indent: str) -> None:
        for key, item in value.items():
            if isinstance(item, dict) and item:
                click.echo(f"{indent}{key}:")
                walk(item, path + (key,), indent + "  ")
                continue
            text = yaml.dump(
                {key: item},
                Dumper=_show_dumper(),
                sort_keys=False,
                allow_unicode=True,
                default_flow_style=False,
                width=10**6,
            )
            first, *rest = text.rstrip("\n").split("\n")
            where = origin(path + (key,))
            click.echo(f"{indent}{first}".ljust(60) + f"  # {where}" if where else f"{indent}{first}")
            for line in rest:
                click.echo(f"{indent}{line}")

    walk(loaded.data, (), "")
    click.echo(sources_text(loaded))


def _block_text(dumper, text: str):
    """Text of several lines as a YAML block (``|``), as site files write notes."""
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def _show_dumper():
    import yaml

    class ShowDumper(yaml.SafeDumper):
        """The safe dumper, writing text of several lines as a block."""

    ShowDumper.add_representer(str, _block_text)
    return ShowDumper


@main.command()
@click.argument("files", nargs=-1, type=click.Path())
@click.option(
    "--site", default=None, help="Check against this site (name or file) instead of the one GPUCluster() would pick."
)
@click.option(
    "--batch", type=click.Choice(list(BATCH_SYSTEMS)), default=None, help="The batch system, where no site is used."
)
@click.option("--interface", default=None, help="The interface keyword: check it exists here (default: the site's).")
@click.option(
    "--protocol",
    type=click.Choice(["tcp", "tls", "ucx"]),
    default=None,
    help="The protocol keyword (default: the site's).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the facts and findings as JSON.")
def check(
    files: tuple[str, ...],
    site: str | None,
    batch: str | None,
    interface: str | None,
    protocol: str | None,
    as_json: bool,
) -> None:
    """Diagnose this machine for GPU workers: GPUs (NVML), CUDA driver, dask-cuda,
    distributed-ucxx, cupy and cudf, UCX transports, network interfaces against the site's,
    batch commands on PATH, the site detected. Exit 1 naming the fix where something needed
    is missing.

    With FILES, validate those site config files instead; exit 1 listing file:line: key: problem.
    """
    if files:
        if site or batch or interface or protocol or as_json:
            raise click.UsageError("FILES are validated on their own; leave out the machine options")
        sys.exit(_check_site_files(files))
    import json

    from .diagnostics import gather_facts, judge, report

    facts = gather_facts(site=site, batch=batch, interface=interface, protocol=protocol)
    findings = judge(facts)
    if as_json:
        click.echo(json.dumps({"facts": facts.as_dict(), "findings": [vars(f) for f in findings]}, indent=2))
    else:
        click.echo(report(findings, facts))
    if any(f.status == "fail" for f in findings):
        sys.exit(1)


def _check_site_files(files: tuple[str, ...]) -> int:
    from .sites import site_problems

    failed = 0
    for target in files:
        problems = site_problems(target)
        for problem in problems:
            click.echo(problem, err=True)
        if not problems:
            click.echo(f"ok: {target}")
        failed += bool(problems)
    return 1 if failed else 0


@main.command()
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False))
def clean(directory: str) -> None:
    """Remove your clusters' private folders (scheduler file, TLS key) in DIRECTORY (default:
    the current one, the default shared_temp_directory) whose owner process on this host has
    ended, as a SIGKILLed client leaves them. Folders of live processes and of other hosts stay."""
    import os

    from .security import remove_stale_private_directories

    if not os.path.isdir(directory):
        raise click.ClickException(f"{directory} is not a directory")
    removed, left = remove_stale_private_directories(directory)
    for folder in removed:
        click.echo(f"removed {folder.path}: {folder.reason}")
    for folder in left:
        click.echo(f"left {folder.path}: {folder.reason}")
    if not removed:
        click.echo(f"nothing to remove in {os.path.abspath(directory)}")


@main.command()
@click.option(
    "--size",
    type=click.Choice(["small", "medium", "large"]),
    default="medium",
    show_default=True,
    help="Problem sizes.",
)
@click.option(
    "--gpus", type=int, default=None, help="GPU workers to start (default: every GPU, or 2 CPU workers without GPUs)."
)
def demo(size: str, gpus: int | None) -> None:
    """Start a LocalGPUCluster here, run the seed workloads, print sizes and timings."""
    from .demo import run_demo

    try:
        sys.exit(run_demo(size=size, gpus=gpus))
    except GPUJobQueueError as error:
        raise click.ClickException(str(error)) from None


if __name__ == "__main__":
    main()
