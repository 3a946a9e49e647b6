"""The Sphinx documentation builds without a warning, and its generated pages are complete."""

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import click
import pytest
import yaml
from fixtures.made_once import made_once

import gpujobqueue
from gpujobqueue.batch import names as batch_names
from gpujobqueue.cli import main
from gpujobqueue.sites import site_table

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def build_html(folder: Path) -> None:
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(DOCS), str(folder / "html")]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (
        f"{' '.join(command)} exited with {result.returncode}:\n{result.stderr}\n{result.stdout[-4000:]}"
    )
    assert "WARNING" not in result.stderr, result.stderr


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    """The HTML build of docs/, made once for the test session (whichever worker comes first), as CI builds it."""
    return made_once(tmp_path_factory, "docs-html", build_html) / "html"


def page(html: Path, name: str) -> str:
    path = html / f"{name}.html"
    assert path.is_file(), f"no page {name}.html in {sorted(p.name for p in html.rglob('*.html'))}"
    return path.read_text(encoding="utf-8")


def commands(group: click.Group, path: str) -> list[str]:
    """Every command under ``group``, nested ones too, as sphinx-click names their sections."""
    found = []
    for name, command in group.commands.items():
        found.append(f"{path}-{name}")
        if isinstance(command, click.Group):
            found += commands(command, f"{path}-{name}")
    return found


def test_the_cli_reference_documents_every_command(html):
    text = page(html, "cli")
    expected = commands(main, "gpujobqueue")
    assert len(expected) >= len(main.commands) >= 4
    for section in expected:
        assert f'id="{section}"' in text, f"the CLI reference has no section for {section.replace('-', ' ', 1)}"
    for option in ("--gpus-per-node", "--run", "--job-array"):  # the options come from the command itself
        assert option in text


def test_the_site_table_lists_every_site(html):
    text = page(html, "sites")
    names = [row["name"] for row in site_table()]
    shipped = sorted(path.stem for path in (ROOT / "site-configs").glob("*.yaml") if not path.name.startswith("_"))
    assert set(shipped) <= set(names) and len(shipped) >= 20
    table = text[text.index("<table") : text.index("</table>")]
    for name in names:
        assert re.search(rf'<span class="pre">{re.escape(name)}</span>', table), f"site {name} is not in the site table"
        assert f'id="site-{name}"' in text, f"site {name} has no section"
    assert 'id="site-_template"' not in text  # files named _*.yaml are not sites


def test_the_site_tables_unconfirmed_column_matches_the_site_files(html):
    text = page(html, "sites")
    table = text[text.index("<table") : text.index("</table>")]

    def texts(cells: list[str]) -> list[str]:
        return [unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells]

    headings = texts(re.findall(r"<th[^>]*>(.*?)</th>", table, re.S))
    column = headings.index("Unconfirmed facts")
    counts = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)[1:]:
        cells = texts(re.findall(r"<td[^>]*>(.*?)</td>", row, re.S))
        counts[cells[0]] = cells[column]
    for path in (ROOT / "site-configs").glob("[!_]*.yaml"):
        facts = yaml.safe_load(path.read_text()).get("unconfirmed") or []
        assert counts[path.stem] == str(len(facts)), (path.stem, counts[path.stem], len(facts))


def test_each_site_s_section_shows_its_sources_with_their_dates_and_its_queues_charges(html):
    from gpujobqueue.sites import load_site

    text = unescape(page(html, "sites"))
    for path in sorted((ROOT / "site-configs").glob("[!_]*.yaml")):
        site = load_site(path.stem)
        start = text.index(f'id="site-{path.stem}"')
        section = text[start : text.find('<section id="site-', start + 1)]
        for source in site.data.get("sources") or []:
            assert f'href="{source["url"]}"' in section, (path.stem, source["url"])
            assert f"version of {source['version_date']}" in section, (path.stem, source["url"])
            assert f"read {source['checked']}" in section, (path.stem, source["url"])
        for queue in site.data["queues"]:
            charge = site.charge(queue)
            if charge is not None:
                assert f"{charge.factor:g} per {charge.unit}" in section, (path.stem, queue)
    lonestar6 = text[text.index('id="site-lonestar6"') :]
    assert "6 per node-hour (TACC bills max(job duration, 15 minutes) x nodes)" in lonestar6
    casper = text[text.index('id="site-casper"') : text.find('<section id="site-', text.index('id="site-casper"') + 1)]
    # NCAR withdrew gpudev on 2025-11-04: listed as withdrawn, not among the queues
    assert '<code class="docutils literal notranslate"><span class="pre">gpudev</span></code>, 2025-11-04' in casper
    assert "Remove gpudev information as queue will be deleted" in casper


def test_there_is_a_page_per_batch_system_with_rendered_scripts(html):
    directives = {
        "slurm": "#SBATCH --gpus-per-node=4",
        "pbs": "#PBS -l select=1:ncpus=32:ngpus=4",
        "lsf": '#BSUB -gpu "num=4:mode=exclusive_process"',
        "sge": "#$ -l gpu=1",
        "local": "--preload-nanny",
    }
    assert set(directives) == set(batch_names())
    for batch, line in directives.items():
        text = page(html, f"batch/{batch}")
        assert "<h1>" in text
        # Unescaped: Pygments 2.20 writes &quot; in the highlighted script where 2.21 writes a quote.
        assert line in unescape(text), f"batch/{batch}.html lacks the rendered line {line!r}"


def test_the_api_reference_documents_the_public_names(html):
    text = page(html, "api")
    for name in gpujobqueue.__all__:
        assert f'id="gpujobqueue.{name}"' in text, f"{name} is not in the API reference"
    for method in ("scale", "adapt", "jobs"):
        assert f'id="gpujobqueue.runtime.cluster.GPUJobQueueCluster.{method}"' in text


def test_the_guides_and_the_existing_pages_are_built(html):
    for name in (
        "index",
        "quickstart",
        "migrating",
        "rendered-scripts",
        "networking",
        "troubleshooting",
        "configuration",
        "site-configs",
        "benchmarks",
        "reliability",
    ):
        page(html, name)
    assert "job-poll-interval" in page(html, "configuration")  # gpujobqueue.yaml, included


def test_the_check_and_examples_pages_are_built_and_complete(html):
    check = page(html, "check")
    for topic in (
        "GPUs",
        "dask-cuda",
        "distributed-ucxx",
        "UCX transports",
        "interfaces",
        "batch commands",
        "site files",
    ):
        assert topic in check
    assert "4 seen by NVML" in check and "no NVIDIA GPU here" in check  # the GPU node's output and this machine's
    examples = page(html, "examples")
    for script in sorted(p.name for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_")):
        assert script in examples, f"{script} is not on the examples page"
