"""Sphinx directives that build parts of gpujobqueue's documentation from the package itself.

``gpujobqueue-site-table``
    The table of the known sites, one row per site file, from
    :func:`gpujobqueue.sites.site_table`, and a section per site with its queues and notes
    (from :func:`gpujobqueue.sites.load_site`).

``gpujobqueue-render``
    Runs ``gpujobqueue render ARGS`` when the documentation is built and shows the command
    and the script it printed, so that the examples are always what the code renders. A
    command that fails (or succeeds where ``:returncode:`` says it should fail) is a build
    warning, which ``sphinx -W`` turns into an error.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

# Where the shown commands pretend to run (the build runs them in a temporary folder).
SHOWN_FOLDER = "/home/me/project"
# Columns a site table can show: key -> heading. The default columns are the first eight.
SITE_COLUMNS = {
    "name": "Site",
    "centre": "Centre",
    "scheduler": "Scheduler",
    "gpus": "GPUs/node",
    "gpu": "GPU model",
    "network": "Protocol / network",
    "status": "Status",
    "unconfirmed": "Unconfirmed facts",
    "ucx": "UCX transports",
    "launcher": "Launcher",
    "request": "GPU request",
    "worker": "Workers",
    "description": "Description",
}
DEFAULT_COLUMNS = ("name", "centre", "scheduler", "gpus", "gpu", "network", "status", "unconfirmed")


def _table(headings: list[str], rows: list[list[nodes.Node | str]], widths: list[int] | None = None) -> nodes.table:
    """A docutils table; a cell is a string (made a paragraph) or a node."""
    table = nodes.table(classes=["gpujobqueue-table"])
    group = nodes.tgroup(cols=len(headings))
    table += group
    if widths is None:  # from the text: what a text build needs, and harmless in HTML
        widths = [
            min(40, max([len(h)] + [len(c.astext() if isinstance(c, nodes.Node) else str(c)) for c in column]))
            for h, *column in zip(headings, *rows)
        ]
    for width in widths:
        group += nodes.colspec(colwidth=max(width, 3))
    head = nodes.thead()
    group += head
    head += _row(headings)
    body = nodes.tbody()
    group += body
    for row in rows:
        body += _row(row)
    return table


def _row(cells: list[nodes.Node | str]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=str(cell))
        row += entry
    return row


def _literal_paragraph(text: str) -> nodes.paragraph:
    return nodes.paragraph("", "", nodes.literal(text=text))


def _field_list(fields: list[tuple[str, nodes.Node | str]]) -> nodes.field_list:
    field_list = nodes.field_list()
    for name, body in fields:
        field = nodes.field()
        field += nodes.field_name(text=name)
        value = nodes.field_body()
        value += body if isinstance(body, nodes.Node) else nodes.paragraph(text=str(body))
        field += value
        field_list += field
    return field_list


def _walltime_text(name: str, queue: dict) -> str:
    """A queue's walltime limit, its limits by node count where it has them (``1-91 nodes: 02:00:00``), and
    whether the site may choose it for a job that names no queue."""
    from gpujobqueue.sites.routing import routable

    text = str(queue.get("max_walltime", ""))
    bins = queue.get("walltime_by_nodes") or []
    if bins:
        text += " (" + "; ".join(f"{b['nodes']} nodes: {b['max_walltime']}" for b in bins) + ")"
    if not routable(name, queue):
        text += "; used when named, never chosen"
    return text


def _charge_text(site, queue: str) -> str:
    """A queue's charge (``3 per node-hour``, with its note), or ``-`` where the site file records none."""
    from gpujobqueue.sites.charges import charge_key

    charge = site.charge(queue)
    if charge is None:
        return "-"
    entry = site.data
    for part in charge_key(site.data, queue):
        entry = entry[part]
    return f"{charge.factor:g} per {charge.unit}" + (f" ({entry['note']})" if entry.get("note") else "")


def _source_paragraph(source: dict) -> nodes.paragraph:
    """One source: its address, the date of the version read (and the version, where the address does not pin it),
    the day read, the keys it covers, its note."""
    text = nodes.paragraph()
    text += nodes.reference(source["url"], source["url"], refuri=source["url"])
    version = f" ({source['version']})" if source.get("version") else ""
    text += nodes.Text(f", version of {source['version_date']}{version}, read {source['checked']}")
    text += nodes.Text("; covers ")
    for i, key in enumerate(source["covers"]):
        text += nodes.Text(", " if i else "")
        text += nodes.literal(text=key)
    if source.get("note"):
        text += nodes.Text(f". {' '.join(str(source['note']).split())}")
    return text


class SiteTable(SphinxDirective):
    """``.. gpujobqueue-site-table::``: the known sites, from their YAML files, at build time.

    Options
    -------
    no-sections
        Only the table, without a section per site; the names link to the sections of the
        page that has them.
    columns
        Keys of :data:`SITE_COLUMNS`, separated by commas (default :data:`DEFAULT_COLUMNS`).
    """

    has_content = False
    option_spec = {"no-sections": directives.flag, "columns": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        from gpujobqueue.sites import load_site, site_table

        rows = site_table()
        sites = {row["name"]: load_site(row["name"]) for row in rows}
        for site in sites.values():
            for path in site.files:
                self.env.note_dependency(os.path.abspath(path))
        with_sections = "no-sections" not in self.options
        columns = [c.strip() for c in self.options.get("columns", ",".join(DEFAULT_COLUMNS)).split(",") if c.strip()]
        unknown = [c for c in columns if c not in SITE_COLUMNS]
        if unknown:
            raise self.error(f"unknown column(s) {', '.join(unknown)}; known: {', '.join(SITE_COLUMNS)}")
        table_rows = [
            [self._cell(column, row, sites[row["name"]].data, with_sections) for column in columns] for row in rows
        ]
        result: list[nodes.Node] = [_table([SITE_COLUMNS[column] for column in columns], table_rows)]
        if with_sections:
            result += [self._section(name, site) for name, site in sites.items()]
        return result

    def _cell(self, column: str, row: dict, data: dict, with_sections: bool) -> nodes.Node | str:
        """One cell: ``row`` is the site's site_table() row, ``data`` its merged config."""
        if column == "name":
            text = nodes.literal(text=row["name"])
            if with_sections:  # the site's section, on this page
                return nodes.paragraph(
                    "", "", nodes.reference("", "", text, internal=True, refid=self._section_id(row["name"]))
                )
            xref = addnodes.pending_xref(
                "", text, refdomain="std", reftype="ref", reftarget=self._section_id(row["name"]), refexplicit=True
            )
            return nodes.paragraph("", "", xref)
        network = data.get("network", {})
        if column == "network":
            return row["protocol"] + (f" ({network['interface']})" if network.get("interface") else "")
        if column == "ucx":
            return ", ".join(key for key, on in network.get("ucx", {}).items() if on) or "-"
        if column == "launcher":
            return data["launcher"]["name"]
        if column == "request":
            return data["gpu_request"]["style"]
        if column == "worker":
            return data["worker"]["mode"] + (
                f" ({data['worker']['visibility_variable']})" if data["worker"].get("visibility_variable") else ""
            )
        if column == "description":
            return data["description"]
        return str(row[column])

    def _section_id(self, name: str) -> str:
        return nodes.make_id(f"site-{name}")

    @staticmethod
    def _account_text(account: dict) -> nodes.paragraph:
        text = nodes.paragraph(text="required" if account.get("required") else "optional")
        if account.get("pattern"):
            text += nodes.Text("; it must match ")
            text += nodes.literal(text=account["pattern"])
        if account.get("hint"):
            text += nodes.Text(f". {account['hint']}")
        return text

    def _section(self, name: str, site) -> nodes.section:
        data = site.data
        section = nodes.section(ids=[self._section_id(name)], names=[self._section_id(name)])
        self.state.document.note_explicit_target(section)  # a label: {ref}`site-perlmutter` elsewhere
        section += nodes.title(text=name)
        section += nodes.paragraph(text=data["description"])
        documentation = nodes.paragraph()
        documentation += nodes.reference(data["documentation"], data["documentation"], refuri=data["documentation"])
        gpu_request = data["gpu_request"]
        request = gpu_request["style"] + (f" (type {gpu_request['type']})" if gpu_request.get("type") else "")
        if gpu_request.get("rejects"):
            request += "; refuses " + ", ".join(gpu_request["rejects"])
        network = data["network"]
        transports = ", ".join(f"{key}={'on' if on else 'off'}" for key, on in network.get("ucx", {}).items())
        worker = data["worker"]
        fields: list[tuple[str, nodes.Node | str]] = [
            ("Centre", data["centre"]),
            ("Documentation", documentation),
            ("Scheduler", data["scheduler"]),
            (
                "Node",
                f"{data['node']['gpus']} × {data['node']['gpu_model']}, {data['node']['cpus']} CPUs, "
                f"{data['node']['memory']}",
            ),
            ("GPU request", request),
            ("Launcher", data["launcher"]["name"] + "".join(f" {arg}" for arg in data["launcher"].get("args") or [])),
            (
                "Workers",
                worker["mode"] + (f", {worker['visibility_variable']}" if worker.get("visibility_variable") else ""),
            ),
            (
                "Network",
                network["protocol"]
                + (f" on {network['interface']}" if network.get("interface") else "")
                + (f" ({transports})" if transports else ""),
            ),
            ("Account", self._account_text(data.get("account", {}))),
            ("Default queue", data["default_queue"]),
            (
                "Render",
                _literal_paragraph(
                    f"gpujobqueue render {name} --walltime 00:30:00"
                    + (" --account ..." if data.get("account", {}).get("required") else "")
                ),
            ),
        ]
        section += _field_list(fields)
        queue_rows = []
        for queue_name, queue in data["queues"].items():
            queue_rows.append(
                [
                    nodes.paragraph("", "", nodes.literal(text=queue_name)),
                    queue.get("description", ""),
                    _walltime_text(queue_name, queue),
                    (
                        f"{queue['min_nodes']}-{queue.get('max_nodes', '')}"
                        if queue.get("min_nodes", 1) != 1
                        else str(queue.get("max_nodes", ""))
                    ),
                    _charge_text(site, queue_name),
                ]
            )
        section += _table(
            ["Queue", "Description", "Max walltime", "Nodes (max, or min-max)", "Charge"],
            queue_rows,
            [12, 36, 10, 8, 14],
        )
        if data.get("removed_queues"):
            section += nodes.paragraph(text="Queues the centre withdrew (naming one is refused with these words):")
            items = nodes.bullet_list()
            for queue_name, gone in data["removed_queues"].items():
                item = nodes.paragraph("", "", nodes.literal(text=queue_name))
                item += nodes.Text(f", {gone['date']}: \u201c{gone['words']}\u201d (")
                item += nodes.reference(gone["source"], gone["source"], refuri=gone["source"])
                item += nodes.Text(")")
                items += nodes.list_item("", item)
            section += items
        if data.get("notes"):
            notes = nodes.container(classes=["gpujobqueue-site-notes"])
            for paragraph in re.split(r"\n\s*\n", data["notes"].strip()):
                notes += nodes.paragraph(text=" ".join(paragraph.split()))
            section += notes
        if data.get("sources"):
            section += nodes.paragraph(
                text="Sources, each with the date of the version read (the day read where none is stored):"
            )
            items = nodes.bullet_list()
            for source in data["sources"]:
                items += nodes.list_item("", _source_paragraph(source))
            section += items
        if data.get("unconfirmed"):
            section += nodes.paragraph(text="Not confirmed from the centre's documentation:")
            items = nodes.bullet_list()
            for fact in data["unconfirmed"]:
                items += nodes.list_item("", nodes.paragraph(text=fact))
            section += items
        return section


def run_render(args: list[str], files: list[str]) -> tuple[int, str, str]:
    """``gpujobqueue render ARGS`` in this process, in a temporary folder holding ``files``
    (empty), with that folder's path shown as :data:`SHOWN_FOLDER`."""
    from click.testing import CliRunner

    from gpujobqueue.cli import main

    with tempfile.TemporaryDirectory(prefix="gpujobqueue-docs-") as folder:
        for name in files:
            Path(folder, name).parent.mkdir(parents=True, exist_ok=True)
            Path(folder, name).touch()
        previous = os.getcwd()
        os.chdir(folder)
        try:
            result = CliRunner().invoke(main, ["render", *args], catch_exceptions=True)
        finally:
            os.chdir(previous)
        real = os.path.realpath(folder)
        out = result.stdout.replace(real, SHOWN_FOLDER).replace(folder, SHOWN_FOLDER)
        err = result.stderr.replace(real, SHOWN_FOLDER).replace(folder, SHOWN_FOLDER)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            err += f"\n{type(result.exception).__name__}: {result.exception}"
        return result.exit_code, out, err


def _shell_line(args: list[str], width: int = 88) -> str:
    """The command as a user types it, broken with backslashes before options past ``width``."""
    words = ["gpujobqueue", "render", *(shlex.quote(arg) for arg in args)]
    lines, line = [], "$"
    for word in words:
        if len(line) + 1 + len(word) > width and word.startswith("-") and line not in ("$", "   "):
            lines.append(line + " \\")
            line = "   "
        line += " " + word
    lines.append(line)
    return "\n".join(lines)


class Render(SphinxDirective):
    """``.. gpujobqueue-render:: ARGS``: run ``gpujobqueue render ARGS`` at build time and
    show the command and its output.

    Options
    -------
    match : regular expression
        Show only the output lines it matches (``re.search``), such as the directive lines.
    returncode : int
        The exit status the command must end with (default 0); a failure is shown from
        its error output.
    files : names separated by spaces
        Empty files made in the folder the command runs in (``--run analysis.py`` needs one).
    caption : text
        A caption above the output.
    """

    required_arguments = 1
    final_argument_whitespace = True
    has_content = False
    option_spec = {
        "match": directives.unchanged_required,
        "returncode": directives.nonnegative_int,
        "files": directives.unchanged_required,
        "caption": directives.unchanged_required,
    }

    def run(self) -> list[nodes.Node]:
        args = shlex.split(self.arguments[0])
        files = self.options.get("files", "").split()
        expected = self.options.get("returncode", 0)
        code, out, err = run_render(args, files)
        location = self.get_location()
        if code != expected:
            logger.warning(
                "gpujobqueue render %s exited with %d, not %d:\n%s%s",
                " ".join(args),
                code,
                expected,
                out,
                err,
                location=location,
            )
        text = out if expected == 0 else err
        if "match" in self.options:
            pattern = re.compile(self.options["match"])
            text = "\n".join(line for line in text.splitlines() if pattern.search(line)) + "\n"
        command = nodes.literal_block(_shell_line(args), _shell_line(args), language="console")
        output = nodes.literal_block(text.rstrip("\n"), text.rstrip("\n"), language="bash" if expected == 0 else "text")
        self.set_source_info(command)
        self.set_source_info(output)
        for template in _template_files():
            self.env.note_dependency(template)
        if "caption" in self.options:
            container = nodes.container("", literal_block=True, classes=["literal-block-wrapper"])
            container += nodes.caption(self.options["caption"], self.options["caption"])
            container += output
            return [command, container]
        return [command, output]


def _template_files() -> list[str]:
    from gpujobqueue.machine.package_data import package_data_dir

    return [str(path) for path in package_data_dir("templates").rglob("*.j2")]


def setup(app):
    app.add_directive("gpujobqueue-site-table", SiteTable)
    app.add_directive("gpujobqueue-render", Render)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
