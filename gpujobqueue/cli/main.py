"""The ``gpujobqueue`` command (also ``dask gpujobqueue``): the click group of the commands of :mod:`.render`,
:mod:`.sites`, :mod:`.machine` and :mod:`.usage`."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import GPUJobQueueError
from .machine import check, clean, demo
from .render import credentials, render
from .sites import show, sites
from .usage import usage


class _Commands(click.Group):
    """The commands: a GPUJobQueueError as click's one-line error (status 1), not a traceback; Ctrl-C as a line and
    status 130 (128 + SIGINT, as a shell reports it), not click's "Aborted!" and 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GPUJobQueueError as error:
            raise click.ClickException(str(error)) from None
        except KeyboardInterrupt:
            click.echo("gpujobqueue: interrupted (Ctrl-C)", err=True)
            sys.exit(130)


@click.group(name="gpujobqueue", cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpujobqueue")
def main() -> None:
    """Dask clusters of GPU workers on HPC batch systems (also run as: dask gpujobqueue)."""


for _command in (render, credentials, sites, show, check, clean, demo, usage):
    main.add_command(_command)
