"""A site's freshness (issue 33, point 2; issue 44, point 4): a machine whose oldest source read is a version of
more than six months before today (its ``version_date``, not the day it was read) is marked by ``gpujobqueue sites``
and ``show``, and ``gpujobqueue check`` warns, naming that source and its date."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpujobqueue.diagnostics import gather_facts, judge
from gpujobqueue.sites import load_site, oldest_source, site_table

MINDWELL = Path(__file__).parents[2] / "site-configs" / "mindwell.yaml"
OLD_URL = "https://github.com/hpcleuven/VscDocumentation/blob/0ad5c240971f6902cef78b19453b298321b7cc5a/source/leuven/slurm_specifics.rst"


def day(text: str) -> datetime.date:
    return datetime.date.fromisoformat(text)


def site_checked(tmp_path: Path, name: str, last_version: datetime.date) -> Path:
    """Mindwell's file as site ``name``, its last source a version of ``last_version``, every source read today.

    Its other sources' versions are set to 2026-11-27, whatever the shipped file says, so that the last source is
    the oldest one."""
    text = MINDWELL.read_text().replace("name: mindwell", f"name: {name}")
    text = re.sub(r'checked: "[0-9]{4}-[0-9]{2}-[0-9]{2}"', f'checked: "{datetime.date.today().isoformat()}"', text)
    text = re.sub(r'version_date: "[0-9]{4}-[0-9]{2}-[0-9]{2}"', 'version_date: "2026-11-27"', text)
    head, _, tail = text.rpartition('version_date: "2026-11-27"')
    path = tmp_path / f"{name}.yaml"
    path.write_text(f'{head}version_date: "{last_version.isoformat()}"{tail}')
    return path


def months_ago(months: int, today: datetime.date | None = None) -> datetime.date:
    today = today or datetime.date.today()
    return today - datetime.timedelta(days=round(months * 30.5))


def gpujobqueue(*args: str, folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPUJOBQUEUE_SITE_PATH": str(folder), "HOME": str(folder / "home"), "COLUMNS": "250"}
    return subprocess.run(
        [sys.executable, "-m", "gpujobqueue.cli", *args], capture_output=True, text=True, timeout=180, env=env
    )


@pytest.mark.parametrize(
    "version_date, today, stale",
    [
        ("2026-05-27", "2026-11-27", False),  # six months to the day: not more than six months
        ("2026-05-26", "2026-11-27", True),
        ("2026-02-28", "2026-08-31", False),  # six months before 31 August is 28 February
        ("2026-02-27", "2026-08-31", True),
        ("2025-11-27", "2026-11-27", True),
        ("2026-11-26", "2026-11-27", False),
    ],
)
def test_a_source_is_stale_when_its_version_is_of_more_than_six_calendar_months_before_today(
    tmp_path, version_date, today, stale
):
    data = load_site(site_checked(tmp_path, "mindwell-old", day(version_date))).data
    oldest = oldest_source(data, today=day(today))
    assert (oldest.url, oldest.version_date, oldest.stale) == (OLD_URL, day(version_date), stale)


def test_an_old_version_read_today_is_stale_and_the_day_read_does_not_count(tmp_path):
    # issue 44: `checked` said either the day read or the version's date, so a page of 2025 read in 2026 looked fresh
    data = load_site(site_checked(tmp_path, "mindwell-2025", day("2025-10-20"))).data
    assert all(source["checked"] == datetime.date.today().isoformat() for source in data["sources"])
    oldest = oldest_source(data, today=datetime.date.today())
    assert oldest.version_date == day("2025-10-20") and oldest.stale


def test_the_oldest_source_decides_and_a_site_without_sources_has_none():
    data = load_site("polaris").data
    dates = sorted(day(source["version_date"]) for source in data["sources"])
    assert oldest_source(data, today=dates[0] + datetime.timedelta(days=150)).version_date == dates[0]
    assert oldest_source(data, today=dates[0] + datetime.timedelta(days=150)).stale is False
    assert oldest_source(data, today=dates[0] + datetime.timedelta(days=200)).stale is True
    assert oldest_source(load_site("generic-slurm").data, today=dates[0]) is None


def test_the_sites_table_marks_a_machine_checked_more_than_six_months_ago(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUJOBQUEUE_SITE_PATH", str(tmp_path))
    site_checked(tmp_path, "mindwell-old", months_ago(7))
    site_checked(tmp_path, "mindwell-new", months_ago(1))
    rows = {row["name"]: row for row in site_table(today=datetime.date.today())}
    assert rows["mindwell-old"]["version_date"] == months_ago(7).isoformat() and rows["mindwell-old"]["stale"]
    assert rows["mindwell-new"]["version_date"] == months_ago(1).isoformat() and not rows["mindwell-new"]["stale"]
    result = gpujobqueue("sites", folder=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:] if line.strip()}
    assert "production, stale" in lines["mindwell-old"] and months_ago(7).isoformat() in lines["mindwell-old"]
    assert "production" in lines["mindwell-new"] and "stale" not in lines["mindwell-new"]
    assert "stale" not in lines["summit"]  # retired: its status is its date
    # what "stale" means goes to stderr, as the broken sites' errors do: stdout is the table alone
    assert "stale:" not in lines
    assert result.stderr.startswith("stale: the site's oldest source read is a version of more than 6 months ago")


def test_show_says_a_site_is_stale_naming_its_oldest_source(tmp_path):
    site_checked(tmp_path, "mindwell-old", months_ago(7))
    result = gpujobqueue("show", "mindwell-old", folder=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        f"# stale: the oldest source read is a version of {months_ago(7).isoformat()}, more than 6 months old: "
        f"{OLD_URL}" in result.stdout
    )
    site_checked(tmp_path, "mindwell-new", months_ago(1))
    assert "# stale" not in gpujobqueue("show", "mindwell-new", folder=tmp_path).stdout


def test_check_warns_naming_the_oldest_source_and_its_date(tmp_path):
    path = site_checked(tmp_path, "mindwell-old", months_ago(7))
    result = gpujobqueue("check", "--json", "--site", str(path), folder=tmp_path)
    found = {finding["topic"]: finding for finding in json.loads(result.stdout)["findings"]}
    assert found["site sources"]["status"] == "warn"
    assert months_ago(7).isoformat() in found["site sources"]["detail"]
    assert OLD_URL in found["site sources"]["detail"]
    text = gpujobqueue("check", "--site", str(path), folder=tmp_path).stdout
    assert "WARN  site sources" in text and months_ago(7).isoformat() in text
    fresh = site_checked(tmp_path, "mindwell-new", months_ago(1))
    result = gpujobqueue("check", "--json", "--site", str(fresh), folder=tmp_path)
    found = {finding["topic"]: finding for finding in json.loads(result.stdout)["findings"]}
    assert found["site sources"]["status"] == "ok"


def test_the_judgement_of_freshness_is_against_the_day_the_facts_give(tmp_path):
    facts = gather_facts(site=str(site_checked(tmp_path, "mindwell-old", day("2026-11-20"))))
    assert facts.site_oldest_source == {"url": OLD_URL, "version_date": "2026-11-20"}
    later = dataclasses.replace(facts, today="2027-05-21")
    finding = next(f for f in judge(later) if f.topic == "site sources")
    assert finding.status == "warn" and "2026-11-20" in finding.detail and finding.fix
    finding = next(f for f in judge(dataclasses.replace(facts, today="2027-05-20")) if f.topic == "site sources")
    assert finding.status == "ok"
