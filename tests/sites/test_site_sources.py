"""Site facts with their sources: every shipped site's key groups are covered by a dated source
or listed as unconfirmed, ``show`` prints them, and a retired machine warns with its date."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from site_samples import SHIPPED

from gpujobqueue import GPUCluster
from gpujobqueue.errors import ValidationError
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.sites import RetiredSiteWarning, SiteConfigError, fact_groups, load_site, site_table, unsourced_groups


@pytest.fixture(autouse=True)
def _shipped_sites_only(monkeypatch):
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")


def gpujobqueue(*args):
    return subprocess.run([sys.executable, "-m", "gpujobqueue.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_key_group_of_a_shipped_site_has_a_source_or_is_listed_unconfirmed(name):
    data = load_site(name).data
    assert len(fact_groups(data)) >= 8 + len(data["queues"]) - 1
    assert unsourced_groups(data) == [], f"{name}: no source covers these and no unconfirmed line names them"
    # Generic sites describe no machine, so no centre's page confirms them. JUWELS Booster cites JSC's
    # batch-system page and JSC's own course environment (2026-11-27); its partitions stay unconfirmed.
    if data["status"] != "generic":
        assert data.get("sources"), f"{name} cites no source"


def test_a_group_is_covered_by_a_source_of_it_or_of_a_key_holding_it():
    data = {
        "node": {"gpus": 4},
        "queues": {"a": {}, "b": {}},
        "launcher": {"name": "srun"},
        "sources": [{"url": "https://x.org/", "checked": "2026-11-24", "covers": ["queues", "node.gpus"]}],
        "unconfirmed": ["launcher: the centre shows no multi-node example", "node is thought to be 4 GPUs"],
    }
    # node.gpus is only part of node; the second unconfirmed line names no key before a colon
    assert unsourced_groups(data) == ["node"]


def test_an_override_file_s_source_dates_are_checked(tmp_path, monkeypatch):
    folder = tmp_path / "sites"
    folder.mkdir()
    (folder / "polaris.yaml").write_text(
        'sources:\n  - url: https://docs.alcf.anl.gov/polaris/\n    checked: "2026-02-30"\n    covers: [node]\n'
    )
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(folder))
    with pytest.raises(SiteConfigError, match=r"polaris.yaml:3: sources.0.checked: '2026-02-30' is not a date"):
        load_site("polaris")


def test_show_prints_the_sources_with_their_dates(tmp_path):
    result = gpujobqueue("show", "aurora")
    assert result.returncode == 0, result.stderr
    sources = load_site("aurora").data["sources"]
    for source in sources:  # once, in the YAML (issue 32: the summary listed them again)
        assert result.stdout.count(f"- url: {source['url']}\n") == 1, result.stdout
        assert f"#   {source['url']}" not in result.stdout, result.stdout
    checked = re.findall(r"^ +checked: '?([0-9-]+)'?", result.stdout, re.M)
    assert checked == [str(source["checked"]) for source in sources], result.stdout


def test_a_retired_site_warns_with_its_date_when_rendered_and_when_a_cluster_is_made():
    with pytest.warns(RetiredSiteWarning, match=r"summit is a retired machine .*on 2024-11-15"):
        job_script_for("summit", {"account": "ABC123", "python": "python3"}, name="w", scheduler="tls://10.0.0.1:8786")
    with pytest.warns(RetiredSiteWarning, match="2024-11-15"):
        GPUCluster(site="summit", account="ABC123").close()
    result = gpujobqueue("render", "summit", "--account", "ABC123", "--no-tls")
    assert result.returncode == 0, result.stderr
    assert "summit is a retired machine (it stopped running jobs on 2024-11-15)" in result.stderr
    assert result.stdout.startswith("#!")


def test_a_retired_site_warns_once_even_for_a_job_it_refuses_or_routes():
    with pytest.warns(RetiredSiteWarning) as caught, pytest.raises(ValidationError):
        job_script_for("summit", {"account": "ABC123", "python": "python3", "nodes": 100_000}, name="w")
    assert len([w for w in caught if issubclass(w.category, RetiredSiteWarning)]) == 1


def test_a_retired_site_warns_once_when_it_routes_a_job_to_another_queue(tmp_path):
    text = Path(load_site("generic-sge").files[0]).read_text()
    retired = text.replace("name: generic-sge", "name: old-sge").replace(
        "status: generic", 'status: retired\nretired: "2020-01-31"'
    )
    path = tmp_path / "old-sge.yaml"
    path.write_text(retired)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        script = job_script_for(str(path), {"nodes": 2, "python": "python3"}, name="w")
    assert "#$ -pe mpi 8" in script  # routed to gpu.q-nodes
    said = [str(w.message) for w in caught if issubclass(w.category, RetiredSiteWarning)]
    assert len(said) == 1 and said[0].startswith("site old-sge is a retired machine (it stopped running jobs on 2020")


def test_a_production_site_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RetiredSiteWarning)
        job_script_for(
            "frontier", {"account": "abc123", "python": "python3"}, name="w", scheduler="tls://10.0.0.1:8786"
        )


def test_checking_a_retired_site_file_is_not_using_it():
    result = gpujobqueue("check", "summit")
    assert result.returncode == 0 and "retired" not in result.stderr, result.stderr


def test_the_sites_table_marks_a_retired_machine_with_its_date():
    rows = {row["name"]: row for row in site_table()}
    assert rows["summit"]["status"] == "retired" and rows["summit"]["retired"] == "2024-11-15"
    assert rows["frontier"]["retired"] == ""
    result = gpujobqueue("sites")
    line = next(line for line in result.stdout.splitlines() if line.startswith("summit "))
    assert "retired" in line and "2024-11-15" in line


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda text: text.replace('    version_date: "2026-11-27"\n', "", 1), "required key missing"),
        (lambda text: text.replace('version_date: "2026-11-27"', 'version_date: "2026-11-28"', 1), "is after the day"),
        (lambda text: text.replace('checked: "2026-11-27"', 'checked: "2999-01-01"', 1), "in the future"),
        (lambda text: text.replace('version_date: "2026-11-27"', 'version_date: "2999-01-01"', 1), "in the future"),
        (
            lambda text: text.replace(
                'version_date: "2026-11-27"\n', 'version_date: "2026-11-27"\n    shows: "2026-11-27"\n', 1
            ),
            "unknown key",
        ),
    ],
)
def test_a_source_gives_the_date_of_the_version_read_and_not_after_the_day_read(tmp_path, change, words):
    # issue 44: `checked` is the day read, `version_date` the date of the content read (`shows` is folded into it)
    text = (Path(__file__).parents[2] / "site-configs" / "gautschi.yaml").read_text()
    assert 'checked: "2026-11-27"\n    version_date: "2026-11-27"' in text
    path = tmp_path / "gautschi.yaml"
    path.write_text(change(text))
    with pytest.raises(SiteConfigError, match=rf"gautschi.yaml:\d+: sources\.0\.(version_date|checked|shows).*{words}"):
        load_site(path)


def test_show_prints_each_source_s_version_date_and_the_day_read():
    result = gpujobqueue("show", "lonestar6")
    assert result.returncode == 0, result.stderr
    sources = load_site("lonestar6").data["sources"]
    dates = re.findall(r"^ +version_date: '?([0-9-]+)'?", result.stdout, re.M)
    assert dates == [str(source["version_date"]) for source in sources] and "2025-10-20" in dates, result.stdout


def test_a_source_pins_the_version_read_or_says_that_none_exists(tmp_path):
    # issue 44: bridges2, deltaai, perlmutter and tsubame4 cited pages as served, with no version
    text = (Path(__file__).parents[2] / "site-configs" / "gautschi.yaml").read_text()
    pinned = "https://github.com/PurdueRCAC/RCAC-Docs/blob/062d438f02ff3d164dee45715a6522ec8603620c/docs/userguides/gautschi/run_jobs/queues.md"
    unpinned = "https://www.rcac.purdue.edu/knowledge/gautschi/run/"
    assert pinned in text
    path = tmp_path / "gautschi.yaml"
    path.write_text(text.replace(pinned, unpinned, 1))
    with pytest.raises(SiteConfigError, match=r"gautschi.yaml:\d+: sources\.0\.url: pins no version"):
        load_site(path)
    path.write_text(
        text.replace(pinned, unpinned, 1).replace("    version_date:", "    version: revision 7\n    version_date:", 1)
    )
    assert load_site(path).data["sources"][0]["version"] == "revision 7"
    said = f'  - "sources: {unpinned} was read as served; no versioned copy exists"\nsources:\n'
    path.write_text(text.replace(pinned, unpinned, 1).replace("\nsources:\n", f"\n{said}", 1))
    assert load_site(path).data["sources"][0]["url"] == unpinned


@pytest.mark.parametrize("name", ["bridges2", "deltaai", "perlmutter", "tsubame4"])
def test_every_source_of_the_four_unpinned_sites_is_pinned_or_listed_unconfirmed(name):
    data = load_site(name).data
    said = " ".join(data["unconfirmed"])
    for source in data["sources"]:
        assert "/blob/" in source["url"] or source.get("version") or source["url"] in said, source["url"]
    assert any(line.startswith("sources: ") for line in data["unconfirmed"])
