"""``gpujobqueue usage FILE``: a cluster's usage report, as written beside its job logs at close."""

from __future__ import annotations

import click


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of a table.")
def usage(file: str, as_json: bool) -> None:
    """Print a cluster's usage report: per job, GPUs held, time queued and held, GPU-hours
    charged and busy; then the summary. FILE is the ``<cluster>-usage-<date>.json`` that the
    cluster wrote beside its job logs when it closed."""
    from ..jobs.usage import read_usage

    report = read_usage(file)
    click.echo(report.to_json() if as_json else report.table())
