"""What a job costs per queue: a site's ``charge`` (per site, or per queue over it) is validated
naming the key, must be named by a source or an unconfirmed line, and ``Site.charge(queue)``
and ``gpujobqueue show`` give it with where it comes from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpujobqueue.jobs.usage import Charge
from gpujobqueue.sites import SiteConfigError, load_site, read_site_file

SITE_CONFIGS = Path(__file__).resolve().parents[2] / "site-configs"
TACC = "https://github.com/TACC/TACC-Docs/blob/"


@pytest.fixture(autouse=True)
def _shipped_sites_only(monkeypatch):
    monkeypatch.delenv("GPUJOBQUEUE_SITE_PATH", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")


def frontier_with(tmp_path: Path, change) -> Path:
    """Frontier's shipped file with ``change(data)`` applied, written as tmp_path/frontier.yaml."""
    data = yaml.safe_load((SITE_CONFIGS / "frontier.yaml").read_text())
    change(data)
    path = tmp_path / "frontier.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_frontier_s_shipped_file_with_its_charge_loads(tmp_path):
    data, _ = read_site_file(frontier_with(tmp_path, lambda data: None))
    assert data["charge"] == {"unit": "node-hour", "factor": 1}


@pytest.mark.parametrize(
    ("charge", "key", "message"),
    [
        ({"unit": "core-hour", "factor": 1}, "queues.extended.charge.unit", "is not one of"),
        ({"unit": "node-hour", "factor": -1}, "queues.extended.charge.factor", "less than the minimum of 0"),
        ({"unit": "node-hour", "factor": "3 SUs"}, "queues.extended.charge.factor", "is not of type 'number'"),
        ({"unit": "node-hour", "factor": True}, "queues.extended.charge.factor", "is not of type 'number'"),
        ({"unit": "node-hour", "factor": float("inf")}, "queues.extended.charge.factor", "inf is not a finite number"),
        ({"unit": "node-hour", "factor": float("nan")}, "queues.extended.charge.factor", "nan is not a finite number"),
        ({"factor": 2}, "queues.extended.charge.unit", "required key missing"),
        ({"unit": "gpu-hour", "factor": 2, "rate": 3}, "queues.extended.charge.rate", "unknown key"),
    ],
)
def test_a_bad_charge_is_refused_naming_its_key(tmp_path, charge, key, message):
    def change(data):
        data["queues"]["extended"]["charge"] = charge
        data["sources"][-1]["covers"].append("queues.extended.charge")

    with pytest.raises(SiteConfigError) as info:
        read_site_file(frontier_with(tmp_path, change))
    assert [(error.key, message in str(error)) for error in info.value.errors] == [(key, True)], info.value.errors


def test_a_charge_no_source_names_is_refused_and_an_unconfirmed_line_may_name_it(tmp_path):
    def unsourced(data):
        data["queues"]["extended"]["charge"] = {"unit": "node-hour", "factor": 2}

    with pytest.raises(SiteConfigError, match=r"queues.extended.charge: no source names queues.extended.charge"):
        read_site_file(frontier_with(tmp_path, unsourced))

    def queues_only(data):  # a source of the queues' limits does not confirm their price
        unsourced(data)
        data["sources"].append(
            {
                "url": "https://github.com/olcf/olcf-user-docs/blob/000387a901a5/index.rst",
                "checked": "2026-11-24",
                "version_date": "2026-11-24",
                "covers": ["queues"],
            }
        )

    with pytest.raises(SiteConfigError, match=r"no source names queues.extended.charge"):
        read_site_file(frontier_with(tmp_path, queues_only))

    def listed(data):
        unsourced(data)
        data["unconfirmed"].append("queues.extended.charge: twice the batch rate, as a user reported")

    data, _ = read_site_file(frontier_with(tmp_path, listed))
    assert data["queues"]["extended"]["charge"]["factor"] == 2


def test_an_override_may_change_a_charge_but_not_to_infinity(tmp_path, monkeypatch):
    folder = tmp_path / "sites"
    folder.mkdir()
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(folder))
    (folder / "lonestar6.yaml").write_text("queues:\n  gpu-h100:\n    charge: {factor: 7}\n")
    charge = load_site("lonestar6").charge("gpu-h100")
    assert (charge.unit, charge.factor) == ("node-hour", 7)
    (folder / "lonestar6.yaml").write_text("queues:\n  gpu-h100:\n    charge: {factor: .inf}\n")
    with pytest.raises(SiteConfigError, match=r"lonestar6.yaml:3: queues.gpu-h100.charge.factor: inf is not a finite"):
        load_site("lonestar6")


@pytest.mark.parametrize(
    ("site", "queue", "unit", "factor", "source"),
    [
        # TACC's tables: Frontera's of 01/20/2026, Lonestar6's, Stampede3's and Vista's of 10/20/2025
        ("frontera", "rtx", "node-hour", 3, TACC + "f0f51004bd9f/docs/hpc/frontera/running.md (version of 2026-01-20)"),
        (
            "lonestar6",
            "gpu-a100",
            "node-hour",
            3,
            TACC + "becee80a75b3/docs/hpc/6lonestar/running.md (version of 2025-10-20)",
        ),
        ("lonestar6", "gpu-a100-dev", "node-hour", 3, TACC + "becee80a75b3/docs/hpc/6lonestar/running.md"),
        (
            "lonestar6",
            "gpu-a100-small",
            "node-hour",
            1.5,
            TACC + "becee80a75b3/docs/hpc/6lonestar/running.md (version of 2025-10-20)",
        ),
        ("lonestar6", "gpu-h100", "node-hour", 6, TACC + "becee80a75b3/docs/hpc/6lonestar/running.md"),
        (
            "stampede3",
            "h100",
            "node-hour",
            4,
            TACC + "7d81a41a6aeb/docs/hpc/3stampede/running.md (version of 2025-10-20)",
        ),
        ("stampede3", "pvc", "node-hour", 3, TACC + "7d81a41a6aeb/docs/hpc/3stampede/running.md"),
        # TACC's Vista User Guide, "Last update: January 7, 2026" (Table 4 unchanged since October 2025)
        ("vista", "gh-dev", "node-hour", 1, TACC + "9f3f2eb8327b/docs/hpc/vista.md (version of 2026-01-07)"),
        ("frontier", "debug", "node-hour", 1, "olcf-user-docs/blob/000387a901a5/systems/frontier_user_guide.rst"),
        ("polaris", "prod", "node-hour", 1, "unconfirmed: charge: the factor 1 is ours"),
        ("derecho", "preempt", "gpu-hour", 0.2, "NCAR/HPC-Docs/blob/64e422cd665a/docs/pbs/charging.md"),
        # NCAR: shared Casper nodes, "wall-clock hours x cores or GPUs requested" (gpudev removed 2025-11-04)
        ("casper", "casper-h100", "gpu-hour", 1, "NCAR/HPC-Docs/blob/64e422cd665a/docs/pbs/charging.md"),
        ("delta", "gpuA40x4-preempt", "gpu-hour", 0.25, "Delta_doc/blob/0acc04b44107"),
        ("lumi-g", "standard-g", "node-hour", 4, "lumi_env/billing.md"),
        ("lumi-g", "dev-g", "gpu-hour", 0.5, "lumi_env/billing.md"),
    ],
)
def test_site_charge_gives_the_queue_s_charge_with_its_source(site, queue, unit, factor, source):
    charge = load_site(site).charge(queue)
    assert isinstance(charge, Charge)
    assert (charge.unit, charge.factor) == (unit, factor)
    assert source in charge.source


def test_a_queue_s_own_charge_wins_over_the_site_s_and_a_site_without_one_gives_none():
    site = load_site("frontier")
    site.data["queues"]["extended"]["charge"] = {"unit": "gpu-hour", "factor": 9}
    assert site.charge("extended").factor == 9 and site.charge("batch").factor == 1
    assert load_site("aurora").charge("prod") is None
    with pytest.raises(SiteConfigError, match="frontier has no queue 'nope'"):
        site.charge("nope")


def test_show_prints_each_queue_s_charge_and_where_it_comes_from():
    result = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "show", "stampede3"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    block = result.stdout[result.stdout.index("# charge per queue:") :]
    note = "TACC bills max(job duration, 15 minutes) x nodes"
    assert f"#   h100: 4 per node-hour ({note}); from {TACC}7d81a41a6aeb/docs/hpc/3stampede" in block
    assert "#   pvc: 3 per node-hour" in block
    aurora = subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", "show", "aurora"], capture_output=True, text=True, timeout=120
    )
    assert "#   prod: not recorded" in aurora.stdout
