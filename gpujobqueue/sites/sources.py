"""Where a site's facts come from (``sources``, ``unconfirmed``): their checks, and what ``show`` prints."""

from __future__ import annotations

import calendar
import datetime
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterator

from .charges import charges_text, within
from .errors import value_at
from .facts import Site
from .schema import unconfirmed_keys

# A site whose oldest source's version is older than this many months is stale: its facts are to be read again.
FRESH_MONTHS = 6

# A source's URL pins the version read: a commit (.../blob/<commit>/...), a pull request, a revision or a snapshot.
_PINNED = re.compile(
    r"/(?:blob|tree|raw|commit)/[0-9a-f]{7,40}(?:/|$)|/pull/[0-9]+$"
    r"|[?&](?:pageVersion|selectedPageVersions|originalId|originalVersion|oldid)=[0-9]+"
    r"|//web\.archive\.org/web/[0-9]{8,14}/"
)


@dataclass(frozen=True)
class OldestSource:
    """The site's source whose version is the oldest, and whether it is stale (:func:`oldest_source`)."""

    url: str
    version_date: datetime.date
    stale: bool

    def stale_text(self) -> str:
        """The words ``show`` and ``check`` say of a stale site."""
        return (
            f"the oldest source read is a version of {self.version_date.isoformat()}, more than {FRESH_MONTHS} "
            f"months old: {self.url}"
        )


def months_before(day: datetime.date, months: int) -> datetime.date:
    """The same day ``months`` calendar months earlier (the month's last day where it has fewer days)."""
    year, month = divmod(day.year * 12 + day.month - 1 - months, 12)
    return datetime.date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def oldest_source(data: dict, today: datetime.date | None = None) -> OldestSource | None:
    """The site's oldest source (by ``version_date``), stale as of ``today``; None where it cites none."""
    dated = []
    for source in data.get("sources") or []:
        try:
            dated.append((datetime.date.fromisoformat(str(source["version_date"])), str(source["url"])))
        except (KeyError, TypeError, ValueError):  # an override without dates; the file checks refuse bad ones
            continue
    if not dated:
        return None
    version_date, url = min(dated)
    cut_off = months_before(today or datetime.date.today(), FRESH_MONTHS)
    return OldestSource(url, version_date, version_date < cut_off)


def sources_text(site: Site, today: datetime.date | None = None, *, listed: bool = True) -> str:
    """The site's sources, one per paragraph (address, dates, the keys it confirms), then the key
    groups no source covers, each queue's charge, the queues the centre removed and the site's
    unconfirmed facts: what ``gpujobqueue show`` prints. A site whose oldest source is a version of more
    than :data:`FRESH_MONTHS` months before ``today`` (default: the real today) is said to be stale
    first. ``listed=False`` leaves out the sources and the unconfirmed facts, for ``gpujobqueue
    show``, whose YAML above lists them."""
    data = site.data
    out = []
    if data.get("status") == "retired":
        out.append(f"# retired: {data.get('retired', 'date not given')}")
    oldest = oldest_source(data, today)
    if oldest is not None and oldest.stale:
        out.append(f"# stale: {oldest.stale_text()}")
    if listed:
        out.append(f"# sources ({len(data.get('sources', []))}):")
    for source in data.get("sources", []) if listed else []:
        version = f" ({source['version']})" if source.get("version") else ""
        out.append(f"#   {source['url']}")
        out.append(
            f"#     version of {source['version_date']}{version}, read {source['checked']}; "
            f"covers {', '.join(source['covers'])}"
        )
        if source.get("note"):
            out.append(f"#     {source['note']}")
    missing = unsourced_groups(data)
    if missing:
        out.append(f"# no source for: {', '.join(missing)}")
    out.append("# charge per queue:")
    out += charges_text(data)
    if data.get("removed_queues"):
        out.append("# removed queues (refused when named):")
        out += [
            f"#   {name}: removed {gone['date']}, {gone['words']!r} ({gone['source']})"
            for name, gone in data["removed_queues"].items()
        ]
    if listed and data.get("unconfirmed"):
        out.append("# unconfirmed:")
        out += [f"#   - {line}" for line in data["unconfirmed"]]
    return "\n".join(out)


# The groups of keys a site's facts come in (each queue is a group of its own: queues.NAME).
FACT_GROUPS = (
    "hostnames",
    "node",
    "gpu_request",
    "account",
    "directives",
    "charge",
    "default_queue",
    "launcher",
    "worker",
    "network",
    "prologue",
    "environment",
)


def _has_key(data: Any, dotted: str) -> bool:
    """Whether a dotted key path (``queues.debug.max_walltime``) names a key of ``data``."""
    return value_at(data, dotted.split("."), _has_key) is not _has_key


def _iso_date_problem(text: Any) -> str | None:
    """Why ``text`` is not a YYYY-MM-DD date that has come, or None."""
    try:
        day = datetime.date.fromisoformat(str(text))
    except ValueError:
        return f"{text!r} is not a date; write YYYY-MM-DD"
    if len(str(text)) != 10:
        return f"{text!r}: write the date as YYYY-MM-DD"
    if day > datetime.date.today():
        return f"{text} is in the future"
    return None


def fact_groups(data: dict) -> list[str]:
    """The groups of keys a site file holds facts in: :data:`FACT_GROUPS` it has, and ``queues.NAME`` per queue."""
    return [key for key in FACT_GROUPS if key in data] + [f"queues.{name}" for name in data.get("queues", {})]


def unsourced_groups(data: dict) -> list[str]:
    """The fact groups of a site that no source covers and no ``unconfirmed`` line names.

    A source covers a group when its ``covers`` names the group or a key that holds it
    (``queues`` covers ``queues.debug``); naming one key inside a group (``node.cpus``) is
    precise but leaves the rest of the group to be sourced or listed.
    """
    named = {key for source in data.get("sources", []) for key in source.get("covers", [])}
    named |= {key for line in data.get("unconfirmed", []) for key in unconfirmed_keys(line)}
    return [group for group in fact_groups(data) if not any(within(group, key) for key in named)]


def source_problems(data: dict, whole: bool = True) -> Iterator[tuple[tuple, str]]:
    """Sources' URLs, pins, dates and covers, and dates of the site (some only ``whole``), as (key, problem)."""
    said = " ".join(str(line) for line in data.get("unconfirmed") or [])
    for i, source in enumerate(data.get("sources") or []):
        if not isinstance(source, dict):
            continue
        url = urllib.parse.urlsplit(str(source.get("url", "")))
        if url.scheme not in ("http", "https") or "." not in (url.hostname or ""):
            yield ("sources", i, "url"), f"{source.get('url')!r} is not the address of a page (https://host/...)"
        elif whole and not (_PINNED.search(str(source["url"])) or source.get("version") or source["url"] in said):
            yield (
                ("sources", i, "url"),
                "pins no version: cite the page at a commit (.../blob/<commit>/...), a revision or a dated snapshot, "
                "name the version read in version, or say in an unconfirmed line, naming this URL, that no "
                "versioned copy exists",
            )
        for field_name in ("checked", "version_date"):
            if field_name in source and (problem := _iso_date_problem(source[field_name])):
                yield ("sources", i, field_name), problem
        if str(source.get("version_date", "")) > str(source.get("checked", "9")):
            yield (
                ("sources", i, "version_date"),
                f"{source['version_date']} is after the day the page was read ({source['checked']})",
            )
        for j, key in enumerate(source.get("covers") or []):
            if whole and not _has_key(data, str(key)):
                yield (
                    ("sources", i, "covers", j),
                    f"{key!r} is not a key of this file; a source covers keys the file sets",
                )
    for name, removed in (data.get("removed_queues") or {}).items():
        if isinstance(removed, dict) and "date" in removed and (problem := _iso_date_problem(removed["date"])):
            yield ("removed_queues", name, "date"), problem
    if not whole:
        return
    for i, line in enumerate(data.get("unconfirmed") or []):
        for key in unconfirmed_keys(str(line)):
            if not _has_key(data, key):
                yield (
                    ("unconfirmed", i),
                    f"{key!r} is not a key of this file (an unconfirmed line starts with the keys it is about)",
                )
    retired = data.get("retired")
    if retired is not None:
        if problem := _iso_date_problem(retired):
            yield ("retired",), problem
        if data.get("status") != "retired":
            status = data.get("status", "production")
            yield ("retired",), f"a retirement date with status {status!r}; set status: retired"
    elif data.get("status") == "retired":
        yield ("status",), "a retired machine gives the date it stopped running jobs: retired: YYYY-MM-DD"
