"""``gpujobqueue sites`` (the known site configs as a table) and ``gpujobqueue show`` (one site's
resolved config, each value with the line it came from)."""

from __future__ import annotations

import os
import shutil
import sys

import click

from ..errors import GPUJobQueueError

# The `sites` table: each row's key -> its heading; the centre and GPU columns are shortened to fit the terminal.
_SITE_COLUMNS = {
    key: {"name": "SITE", "scheduler": "BATCH"}.get(key, key.upper())
    for key in ("name", "centre", "scheduler", "gpus", "gpu", "protocol", "status", "unconfirmed")
}
_SHORTENED = ("centre", "gpu")


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)].rstrip() + "…"


@click.command()
def sites() -> None:
    """List the known site configs: name, centre, batch system, GPUs per node, GPU model,
    protocol, status (`stale` where the site's oldest source was checked more than six months
    ago), and how many of the site's facts its centre's documentation did not confirm
    (`gpujobqueue show SITE` lists them, and the sources with their dates). A site file that does not load is listed as
    broken, and its error printed after the table."""
    from ..sites import site_table

    rows = site_table()
    broken = {row["name"]: row["status"].partition(": ")[2] for row in rows if str(row["status"]).startswith("broken")}
    cells = [{key: str(row[key]) for key in _SITE_COLUMNS} for row in rows]
    for cell, row in zip(cells, rows):
        if row["name"] in broken:
            cell["status"] = "broken"
        elif row.get("retired"):
            cell["status"] = f"retired {row['retired']}"
        elif row["stale"]:
            cell["status"] += ", stale"
    widths = {key: max([len(title)] + [len(cell[key]) for cell in cells]) for key, title in _SITE_COLUMNS.items()}
    # On a terminal (or COLUMNS wide), shorten the centre and GPU columns, the longer first, until
    # the table fits; into a pipe or a file, the whole table.
    fixed = sum(width for key, width in widths.items() if key not in _SHORTENED) + 2 * (len(widths) - 1)
    shorten = sys.stdout.isatty() or os.environ.get("COLUMNS")
    room = shutil.get_terminal_size().columns - fixed if shorten else sum(widths.values())
    while sum(widths[key] for key in _SHORTENED) > room and max(widths[key] for key in _SHORTENED) > 8:
        longest = max(_SHORTENED, key=lambda key: widths[key])
        widths[longest] -= 1
    click.echo("  ".join(title.ljust(widths[key]) for key, title in _SITE_COLUMNS.items()).rstrip())
    for cell in cells:
        click.echo("  ".join(_shorten(cell[key], widths[key]).ljust(widths[key]) for key in _SITE_COLUMNS).rstrip())
    if any(row["stale"] for row in rows):
        click.echo(
            "stale: the site's oldest source was checked more than 6 months ago; `gpujobqueue show SITE` names it",
            err=True,
        )
    for name, error in broken.items():
        click.echo(f"gpujobqueue: site {name} is broken: {error}", err=True)


@click.command()
@click.argument("site")
def show(site: str) -> None:
    """Print SITE's resolved config as YAML, each value with the line (and, for a site merged
    from several files, the file) it came from."""
    import yaml

    from ..sites import load_site, site_files, sources_text
    from ..sites.registry import names_a_file

    try:
        loaded = load_site(site)
    except GPUJobQueueError as error:
        if not names_a_file(site) and site not in site_files():
            raise click.BadParameter(str(error), param_hint="SITE") from None  # a typo: exit 2, as `render`
        raise click.ClickException(str(error)) from None
    files = {path: number for number, path in enumerate(loaded.files, 1)}
    click.echo(f"# site {loaded.name}")
    for path, number in files.items():
        click.echo(f"# {'file ' + str(number) + ': ' if len(files) > 1 else 'from '}{path}")

    def origin(path: tuple) -> str:
        file, line = loaded.location(*path)
        if line is None:
            return ""
        return f"line {line}" if len(files) == 1 else f"file {files.get(file, '?')}, line {line}"

    class ShowDumper(yaml.SafeDumper):
        """The safe dumper, writing text of several lines as a YAML block (``|``), as site files write notes."""

    ShowDumper.add_representer(
        str,
        lambda dumper, text: dumper.represent_scalar(
            "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
        ),
    )

    def walk(value: dict, path: tuple, indent: str) -> None:
        for key, item in value.items():
            if isinstance(item, dict) and item:
                click.echo(f"{indent}{key}:")
                walk(item, path + (key,), indent + "  ")
                continue
            text = yaml.dump(
                {key: item},
                Dumper=ShowDumper,
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
    click.echo(sources_text(loaded, listed=False))  # the sources and unconfirmed facts are in the YAML
