"""``gpujobqueue render`` (a job script from keywords, an option each) and ``gpujobqueue credentials``."""

from __future__ import annotations

import difflib
import re
import shlex
import warnings
from typing import Any, Callable

import click

from ..batch import command_line_keywords, names
from ..errors import GPUJobQueueError, JobSizeMissingError, UnknownKeywordError, ValidationError
from ..script.run import DEFAULT_WORKERS_TIMEOUT, ClientRun
from ..security.tls import InsecureScriptWarning
from ..settings.keywords import CHOICE, INT, LIST, PAIRS, SWITCH, Keyword
from ..settings.limits import MAX_WAIT_SECONDS
from ..settings.validation import parse_count, parse_duration


class Parsed(click.ParamType):
    """An option's value read by a :mod:`~gpujobqueue.settings.validation` parser, refused as click refuses bad
    usage (click's own ``int`` reads ``1_0`` as 10 and ``٤`` as 4)."""

    def __init__(self, name: str, parse: Callable[[str, Any], Any]):
        self.name, self.parse = name, parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.parse(param.name if param is not None else "value", value)
        except ValidationError as error:
            self.fail(error.message, param, ctx)


WHOLE_NUMBER = Parsed("integer", parse_count)
DURATION = Parsed("duration", lambda field, value: parse_duration(field, value, 1, MAX_WAIT_SECONDS))


def _starts(batch: str, keywords: dict[str, Any]) -> str:
    """``render --when``: a line per queue of the site that takes the job, with the batch system's estimate."""
    from ..batch import batch_system
    from ..jobs.usage import text_table
    from ..plan.scripts import job_script_for
    from ..plan.soonest import queue_starts, start_text
    from ..sites import load_site

    if batch in names():
        raise click.UsageError("--when asks a SITE's queues: give a site's name or file, not a batch system")
    try:
        site = load_site(batch)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            job_script_for(site.scheduler, {**keywords, "site": site}, name="when")  # the keywords refused first
        for warning in caught:
            click.echo(f"gpujobqueue: warning: {warning.message}", err=True)
        starts = queue_starts(
            site, lambda queue: job_script_for(site.scheduler, {**keywords, "site": site, "queue": queue}, name="when")
        )
    except (ValidationError, UnknownKeywordError) as error:
        raise RefusedInput(_in_option_terms(error, click.get_current_context().command)) from None
    except GPUJobQueueError as error:
        raise click.ClickException(str(error)) from None
    if not starts:
        return f"{site.name}: no queue takes the job"
    system = batch_system(site.scheduler)
    rows = [
        [start.queue + ("" if start.routed else " *"), start_text(start), start.said.splitlines()[-1][:100]]
        for start in starts
    ]
    source = system.start_estimates or system.no_start_estimates
    if all(start.accepted is None for start in starts):
        source = f"{system.name} could not be asked"
    head = f"When the job would start on {site.name}, if submitted now ({source}; nothing was submitted):"
    by_request = "\n* only by request (queue=...): not chosen by routing nor by queue='soonest'"
    foot = by_request if any(not start.routed for start in starts) else ""
    return f"{head}\n{text_table(['queue', 'start', 'batch system said'], rows)}{foot}"


def _keyword_option(keyword: Keyword) -> Callable:
    """The click option that mirrors one keyword (``gpus_per_node`` is ``--gpus-per-node``)."""
    if keyword.kind == SWITCH:
        return click.option(*keyword.options, str(keyword), default=None, help=keyword.help)
    decls = (*keyword.options, str(keyword))
    if keyword.kind in (LIST, PAIRS):
        return click.option(
            *decls, multiple=True, metavar="NAME=VALUE" if keyword.kind == PAIRS else None, help=keyword.help
        )
    if keyword.kind == CHOICE:
        choices = keyword.choices() if callable(keyword.choices) else keyword.choices
        return click.option(*decls, type=click.Choice(list(choices)), help=keyword.help)
    return click.option(*decls, type=WHOLE_NUMBER if keyword.kind == INT else str, help=keyword.help)


def keyword_options(command: Callable) -> Callable:
    """``command`` with an option for every keyword that has one (:func:`~gpujobqueue.batch.command_line_keywords`)."""
    for keyword in reversed(command_line_keywords()):  # in the registry's order in --help
        if keyword.command_line is None:
            command = _keyword_option(keyword)(command)
    return command


def _did_you_mean(name: str, known: list[str]) -> str:
    """'; did you mean 'x'?' for the known name closest to a mistyped one, or ''."""
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# A keyword written as a setting in a message: "(account=...)", "processes=4 but gpus_per_node=2".
_KEYWORD_SETTING = re.compile(r"(?:^|(?<=[\s(]))([a-z][a-z0-9_]*)=(?=[^\s=])")


class RefusedInput(click.ClickException):
    """A value the command refuses: one line naming the option, and click's exit status for bad usage, 2."""

    exit_code = 2


def _in_option_terms(error: GPUJobQueueError, command: click.Command) -> str:
    """The error's message as the command line speaks: ``--account``, not the keyword ``account=``."""
    options = {param.name: param.opts[0] for param in command.params if isinstance(param, click.Option) and param.name}
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


@click.command()
@click.argument("batch", metavar="BATCH|SITE")
@click.argument("client_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SCRIPT_ARGS...]")
@click.option(
    "--scheduler-address",
    "scheduler",
    help="Scheduler the workers connect to (without it or --scheduler-file: a placeholder, which the script "
    "refuses to run with until it is filled in).",
)
@click.option(
    "--scheduler-file",
    metavar="FILE",
    help="The workers find the scheduler through this file, as `dask scheduler --scheduler-file FILE` writes it "
    "(a path the compute nodes read).",
)
@click.option(
    "--name", default="gpujobqueue-worker", show_default=True, help="Worker name prefix; workers are NAME-<i>."
)
@click.option(
    "--run",
    metavar="SCRIPT.py",
    help="Write a self-contained script: it starts a scheduler and the GPU workers in the job, runs SCRIPT.py "
    "(with SCRIPT_ARGS) as the client once the workers are up, and ends the job with its exit code.",
)
@click.option(
    "--workers-timeout",
    type=DURATION,
    default=str(DEFAULT_WORKERS_TIMEOUT),
    show_default=True,
    help="With --run: how long to wait for the workers before the job fails (seconds, or '10m').",
)
@click.option(
    "--job-array",
    type=WHOLE_NUMBER,
    metavar="K",
    help="Write the job array of K jobs (NAME-0 .. NAME-<K-1>) that a cluster with job_array=True submits in one "
    "command.",
)
@click.option(
    "--no-tls",
    is_flag=True,
    help="Plain TCP instead of TLS (warns: anyone who reaches the scheduler's or workers' ports can run code as you).",
)
@click.option(
    "--tls-directory",
    metavar="DIR",
    help="Without --run: the folder of the TLS credentials that the workers and your scheduler share, as the "
    "job's shell writes it (default $HOME/.config/gpujobqueue/tls; `gpujobqueue credentials` makes them).",
)
@click.option(
    "--standalone",
    is_flag=True,
    help="For nodes without gpujobqueue installed: the script writes gpujobqueue's preloads into its private "
    "folder and the workers preload them by path (by default, by module name: the workers' python imports "
    "gpujobqueue).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Also say on stderr where each setting came from: a keyword (option), gpujobqueue's dask config, "
    "dask-jobqueue's (jobqueue.<batch>.*, a jobqueue.yaml), the site, or the default.",
)
@click.option(
    "--when",
    is_flag=True,
    help="Instead of the script: for each of SITE's queues that takes the job, when its batch system would start "
    "it if submitted now (SLURM's sbatch --test-only); nothing is submitted.",
)
@keyword_options
def render(
    batch: str,
    client_args: tuple[str, ...],
    scheduler: str | None,
    scheduler_file: str | None,
    name: str,
    run: str | None,
    workers_timeout: float,
    environment: tuple[str, ...],
    job_array: int | None,
    no_tls: bool,
    tls_directory: str | None,
    standalone: bool,
    explain: bool,
    when: bool,
    **options,
) -> None:
    """Print the job script for BATCH (slurm, pbs, lsf, sge, local) or SITE (a site config's
    name or file) that the cluster keywords describe.

    The workers connect to the scheduler at --scheduler-address, or through --scheduler-file;
    without either, the script holds a placeholder and refuses to run until it is filled in.

    With --run, the script is self-contained: submit it with sbatch, qsub or bsub and your
    script runs as the client of a cluster made of the job's GPUs; `Client()` in it finds the
    scheduler through DASK_SCHEDULER_ADDRESS. Arguments for your script go after `--`.

    Scripts use TLS over TCP, as clusters do: a --run script makes its own credentials in the
    job; the workers of other scripts read the ones `gpujobqueue credentials` made, which your
    scheduler uses too. --no-tls is plain TCP. UCX has no TLS.

    The workers preload gpujobqueue's modules by name, so their python must import gpujobqueue;
    --standalone writes those modules into the job instead, for nodes without it.
    """
    from ..plan.scripts import job_script_for
    from ..script.render import PLACEHOLDER_SCHEDULER

    _check_arguments(batch, client_args, run, scheduler, scheduler_file, name)
    keywords = _keywords(options, environment)
    if when:
        click.echo(_starts(batch, keywords))
        return
    try:
        client = None if run is None else ClientRun.from_command_line(run, client_args, workers_timeout=workers_timeout)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InsecureScriptWarning)
            text = job_script_for(
                batch,
                keywords,
                name=name,
                scheduler=scheduler or PLACEHOLDER_SCHEDULER,
                scheduler_file=scheduler_file,
                run=client,
                array_jobs=job_array,
                tls=not no_tls,
                tls_directory=tls_directory,
                standalone=standalone,
            )
    except (ValidationError, UnknownKeywordError) as error:
        raise RefusedInput(_in_option_terms(error, click.get_current_context().command)) from None
    except GPUJobQueueError as error:  # a site file that cannot be read
        raise click.ClickException(_in_option_terms(error, click.get_current_context().command)) from None
    for warning in caught:
        click.echo(f"gpujobqueue: warning: {warning.message}", err=True)
    _warn_of_missing_credentials(text, run is None and not no_tls, tls_directory)
    if explain:
        click.echo(_explained(batch, keywords), err=True, nl=False)
    if client is None and scheduler is None and scheduler_file is None:
        click.echo(
            "gpujobqueue: warning: no --scheduler-address or --scheduler-file: the script holds the placeholder "
            "<insert-scheduler-address-here> and ends at once, saying so, until you replace it",
            err=True,
        )
    click.echo(text, nl=False)


def _warn_of_missing_credentials(text: str, reads_credentials: bool, tls_directory: str | None) -> None:
    """Say now, not after the job's queue wait, where the script reads TLS credentials that this host lacks."""
    from ..security.tls import ScriptTLS, missing_credentials_here

    script_tls = ScriptTLS.for_script(run=False, directory=tls_directory)
    if not reads_credentials or f'export {script_tls.variable}="{script_tls.directory}"' not in text:
        return
    missing = missing_credentials_here(script_tls)
    if missing:
        click.echo(f"gpujobqueue: warning: {missing}", err=True)


def _explained(batch: str, keywords: dict[str, Any]) -> str:
    """One line per setting the plan has a value for: its value and where it came from."""
    from ..plan.scripts import plan_for

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # said once already, by the script's own plan
        plan = plan_for(batch, keywords)
    lines = [
        f"gpujobqueue: {name} = {value!r}  ({plan.sources.get(name, 'default or derived')})\n"
        for name, value in plan.settings.items()
        if value is not None and name != "site"
    ]
    return "".join(lines)


def _check_arguments(
    batch: str,
    client_args: tuple[str, ...],
    client_script: str | None,
    scheduler_address: str | None,
    scheduler_file: str | None,
    worker_name: str,
) -> None:
    """Refuse as bad usage (status 2) arguments that do not go together, a BATCH|SITE that is neither, a bad --name."""
    from ..settings.validation import parse_name
    from ..sites import site_files
    from ..sites.registry import names_a_file

    if client_args and client_script is None:
        raise click.UsageError(
            f"unexpected arguments {' '.join(client_args)!r}: arguments after -- are for the --run script"
        )
    for option, value in (("--scheduler-address", scheduler_address), ("--scheduler-file", scheduler_file)):
        if client_script is not None and value is not None:
            raise click.UsageError(f"--run starts its own scheduler in the job; leave out {option}")
    if scheduler_address is not None and scheduler_file is not None:
        raise click.UsageError("give --scheduler-address or --scheduler-file, not both")
    if batch not in names() and not names_a_file(batch) and batch not in site_files():
        raise click.BadParameter(
            f"{batch!r} is neither a batch system ({', '.join(names())}) nor a known site"
            f"{_did_you_mean(batch, [*names(), *sorted(site_files())])}"
            " (`gpujobqueue sites` lists the sites)",
            param_hint="BATCH|SITE",
        )
    try:
        parse_name("name", worker_name)
    except GPUJobQueueError as error:
        raise click.BadParameter(str(error), param_hint="--name") from None


def _keywords(options: dict[str, Any], environment: tuple[str, ...]) -> dict[str, Any]:
    """The cluster keywords of the options given; ``--env NAME=VALUE`` read as a mapping."""
    keywords = {key: value for key, value in options.items() if value not in (None, ())}
    env = {}
    for item in environment:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: use NAME=VALUE", param_hint="--env")
        env[key] = value
    if env:
        keywords["environment"] = env
    return keywords


@click.command()
@click.argument("directory", default="~/.config/gpujobqueue/tls", metavar="[DIR]")
def credentials(directory: str) -> None:
    """Make TLS credentials (a new CA, certificate and key, private to you) in DIR, default
    ~/.config/gpujobqueue/tls, for the workers of rendered scripts and the scheduler you run;
    a complete set already there is kept. Prints how to start that scheduler and its client."""
    from ..security.dashboard import CLOSED_HTTP_ADDRESS, DEFAULT_DASHBOARD_ADDRESS, who_can_reach
    from ..security.tls import make_credentials

    path, made = make_credentials(directory)
    click.echo(f"{'made' if made else 'kept'} TLS credentials in {path} (folder 0700, files 0600)")
    files = (
        f"{option} {shlex.quote(f'{path}/{name}.pem')}"
        for option, name in (("--tls-ca-file", "ca"), ("--tls-cert", "cert"), ("--tls-key", "key"))
    )
    # Closed as the package's own schedulers are: no dashboard, no route on its HTTP server, on the loopback.
    click.echo("start your scheduler with them (no dashboard: nothing on its HTTP server, on the loopback):")
    click.echo(
        f"  DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES='[]' dask scheduler --protocol tls {' '.join(files)} "
        f"--no-dashboard --dashboard-address {CLOSED_HTTP_ADDRESS}"
    )
    click.echo(
        f"for a dashboard, which {who_can_reach(DEFAULT_DASHBOARD_ADDRESS, 'this host')} can read with no password: "
        f"leave out DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES='[]' and --no-dashboard, and give "
        f"--dashboard-address {DEFAULT_DASHBOARD_ADDRESS}"
    )
    click.echo("and connect your client:")
    click.echo(
        f"  Client(address, security=Security(tls_ca_file='{path}/ca.pem', tls_client_cert='{path}/cert.pem', "
        f"tls_client_key='{path}/key.pem', require_encryption=True))"
    )
