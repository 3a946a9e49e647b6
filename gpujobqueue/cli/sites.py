"""``gpujobqueue sites`` (the known site configs as a table) and ``gpujobqueue show`` (one site's config)."""

from __future__ import annotations

import os
import re
import shutil
import sys

import click

from ..errors import GPUJobQueueError

# The `sites` table: each row's key -> its heading. On a terminal, the centre and GPU are short (_SHORT) and the
# columns of _LEFT_OUT_FIRST go, in that order, until the table fits with the centre and GPU cut to 8 characters at
# most; --wide and a pipe get every column whole.
_SITE_COLUMNS = {
    key: {"name": "SITE", "scheduler": "BATCH", "version_date": "VERSION"}.get(key, key.upper())
    for key in ("name", "centre", "scheduler", "gpus", "gpu", "protocol", "status", "version_date", "unconfirmed")
}
_LEFT_OUT_FIRST = ("protocol", "unconfirmed", "centre")
_SHORTENED = ("centre", "gpu")


def _short_centre(centre: str) -> str:
    """A centre's acronym: the first word in its brackets with two capitals (``... (NERSC)`` -> ``CSCS``), else
    its first word (``NERSC (National ...)`` -> ``NERSC``, ``Pawsey Supercomputing ...`` -> ``Pawsey``)."""
    inside = re.findall(r"\(([^,;)\s]+)", centre)
    acronyms = [word for word in inside if sum(c.isupper() for c in word) >= 2]
    return acronyms[0] if acronyms else (centre.split() or ["-"])[0].rstrip(",")


def _short_gpu(gpu: str) -> str:
    """The GPU model alone: no remark in brackets, and its last two words where longer (``Quadro RTX 5000`` ->
    ``RTX 5000``, ``Data Center GPU Max 1550 (one tile)`` -> ``Max 1550``)."""
    model = gpu.partition(" (")[0]
    return model if len(model) <= 12 else " ".join(model.split()[-2:])


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)].rstrip() + "…"


def _fitted(cells: list[dict[str, str]], room: int) -> tuple[dict[str, int], list[str]]:
    """The columns' widths within ``room`` characters (the centre and GPU cut where needed) and those left out."""
    widths = {key: max([len(title)] + [len(cell[key]) for cell in cells]) for key, title in _SITE_COLUMNS.items()}
    left_out: list[str] = []
    for key in _LEFT_OUT_FIRST:  # a column goes only where cutting the centre and GPU to 8 would not make room
        if sum(min(w, 8) if k in _SHORTENED else w for k, w in widths.items()) + 2 * (len(widths) - 1) <= room:
            break
        left_out.append(key)
        del widths[key]
    shortened = [key for key in _SHORTENED if key in widths]
    fixed = sum(width for key, width in widths.items() if key not in shortened) + 2 * (len(widths) - 1)
    while shortened and sum(widths[key] for key in shortened) > room - fixed and max(map(widths.get, shortened)) > 8:
        longest = max(shortened, key=lambda key: widths[key])
        widths[longest] -= 1
    return widths, left_out


@click.command()
@click.option("--wide", is_flag=True, help="Every column, each value whole, whatever the terminal's width.")
def sites(wide: bool) -> None:
    """List the known site configs: name, centre, batch system, GPUs per node, GPU model,
    protocol, status (`stale` where the site's oldest source read is a version of more than six
    months ago), the date of that oldest version (VERSION), and how many of the site's facts its
    centre's documentation did not confirm
    (`gpujobqueue show SITE` lists them, and the sources with their dates). A site file that does not load is listed as
    broken, and its error printed after the table. On a terminal the table fits its width (the
    centre's acronym, the GPU model alone, the protocol and the unconfirmed count left out where
    needed); --wide, and a pipe or a file, get every column whole."""
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
    columns, left_out = {key: max(len(c[key]) for c in cells) for key in _SITE_COLUMNS}, []
    if not wide and (sys.stdout.isatty() or os.environ.get("COLUMNS")):
        for cell in cells:
            cell.update(centre=_short_centre(cell["centre"]), gpu=_short_gpu(cell["gpu"]))
        columns, left_out = _fitted(cells, shutil.get_terminal_size().columns)
    widths = {key: max(len(_SITE_COLUMNS[key]), columns[key]) for key in columns}
    click.echo("  ".join(_SITE_COLUMNS[key].ljust(width) for key, width in widths.items()).rstrip())
    for cell in cells:
        click.echo("  ".join(_shorten(cell[key], width).ljust(width) for key, width in widths.items()).rstrip())
    if left_out:
        names = ", ".join(_SITE_COLUMNS[key] for key in left_out)
        click.echo(f"{names} left out to fit the terminal: `gpujobqueue sites --wide` lists every column", err=True)
    if any(row["stale"] for row in rows):
        click.echo(
            "stale: the site's oldest source read is a version of more than 6 months ago; `gpujobqueue show SITE` "
            "names it",
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
            text = yaml.dump({key: item}, Dumper=ShowDumper, sort_keys=False, allow_unicode=True, width=10**6)
            first, *rest = text.rstrip("\n").split("\n")
            where = origin(path + (key,))
            click.echo(f"{indent}{first}".ljust(60) + f"  # {where}" if where else f"{indent}{first}")
            for line in rest:
                click.echo(f"{indent}{line}")

    walk(loaded.data, (), "")
    click.echo(sources_text(loaded, listed=False))  # the sources and unconfirmed facts are in the YAML
