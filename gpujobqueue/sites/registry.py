"""Finding sites: the folders searched, each site's files, loading, listing, detecting and choosing one."""

from __future__ import annotations

import datetime
import difflib
import logging
import os
import socket
from pathlib import Path
from typing import Any, Iterable

from ..machine.package_data import package_data_dir
from ..settings.limits import MAX_SITE_FILES
from .errors import SiteConfigError
from .facts import Site
from .load import load_files
from .patterns import pattern_matches
from .sources import oldest_source
from .use_warnings import unconfirmed_facts

logger = logging.getLogger(__package__)
SYSTEM_SITE_DIR = Path("/etc/gpujobqueue/sites")
USER_SITE_DIR = Path("~/.config/gpujobqueue/sites")
SITE_PATH_VARIABLE = "GPUJOBQUEUE_SITE_PATH"


def site_directories() -> list[Path]:
    """Where site files are looked for, lowest precedence first."""
    directories = [package_data_dir("site-configs"), SYSTEM_SITE_DIR, USER_SITE_DIR.expanduser()]
    extra = os.environ.get(SITE_PATH_VARIABLE, "")
    directories += [Path(p).expanduser() for p in extra.split(os.pathsep) if p]
    return directories


def site_files() -> dict[str, list[Path]]:
    """Site name -> its files, lowest precedence first; a SiteConfigError for a folder of too many."""
    found: dict[str, list[Path]] = {}
    for directory in site_directories():
        try:
            with os.scandir(directory) as entries:
                names = sorted(e.name for e in entries if e.name.endswith(".yaml") and not e.name.startswith("_"))
        except OSError:  # not there, not a folder, not ours to read: no sites from it, as before
            continue
        if len(names) > MAX_SITE_FILES:
            raise SiteConfigError(
                directory,
                "",
                None,
                f"{len(names)} site files; a site folder holds at most {MAX_SITE_FILES} (gpujobqueue.settings.limits), "
                "each read whenever sites are listed or detected",
            )
        for name in names:
            found.setdefault(name[: -len(".yaml")], []).append(directory / name)
    return found


def names_a_file(text: str) -> bool:
    """Whether a site argument names a file (``x.yaml``, ``dir/x``) rather than a site by name."""
    return text.endswith((".yaml", ".yml")) or os.sep in text


def load_site(name_or_path: str | os.PathLike[str]) -> Site:
    """Load a site by name (every file of that name) or from one file; a SiteConfigError where it fails."""
    text = os.fspath(name_or_path)
    if names_a_file(text):
        paths = [Path(text)]
        name = Path(text).stem
    else:
        name = text
        paths = site_files().get(name)
        if not paths:
            known = sorted(site_files())
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise SiteConfigError(
                name, "", None, f"no site called {name!r}; {hint}known sites: {', '.join(known) or 'none'}"
            )
    return load_files(name, paths)


def detect_site(names: Iterable[str] | None = None) -> Site | None:
    """The site whose ``hostnames`` match this machine's host name or FQDN, or None."""
    if names is None:
        names = {socket.gethostname(), socket.getfqdn()}
    names = [n for n in names if n]
    for site_name, paths in sorted(site_files().items()):
        try:
            site = load_files(site_name, paths)
        except SiteConfigError as error:  # one broken file must not keep the others from being found
            logger.warning("gpujobqueue: site %s is skipped: %s", site_name, error)
            continue
        for pattern in site.data.get("hostnames", []):
            if any(pattern_matches(pattern, host) for host in names):
                return site
    return None


DETECTED = "matched by the host name"


def choose_site(site: "str | os.PathLike[str] | Site | None", batch: str | None) -> tuple[Site | None, str]:
    """The site a cluster uses (given, configured, else matching this host), and how it was chosen."""
    from ..settings import config

    how = "given"
    if site is None and batch is None:
        site, how = config.default_site(), "gpujobqueue.site in dask config"
    if site is None and batch is None:
        detected = detect_site()
        return (detected, DETECTED) if detected is not None else (None, "no site matches this host name")
    if site is None:
        return None, f"batch={batch} given"
    return (site if isinstance(site, Site) else load_site(site)), how


def site_table(today: datetime.date | None = None) -> list[dict[str, Any]]:
    """One row per known site (a site whose files do not load: a row saying why)."""
    rows = []
    for name, paths in sorted(site_files().items()):  # the folders listed once, each file read once
        try:
            data = load_files(name, paths).data
        except SiteConfigError as error:
            unknown = dict.fromkeys(
                ("centre", "scheduler", "gpus", "gpu", "protocol", "unconfirmed", "version_date"), "-"
            )
            rows.append({"name": name, **unknown, "status": f"broken: {error}", "retired": "", "stale": False})
            continue
        oldest = oldest_source(data, today)
        rows.append(
            {
                "name": name,
                "centre": data["centre"],
                "scheduler": data["scheduler"],
                "gpus": data["node"]["gpus"],
                "gpu": data["node"]["gpu_model"],
                "protocol": data["network"]["protocol"],
                "status": data.get("status", "production"),
                "retired": data.get("retired", ""),
                "unconfirmed": len(unconfirmed_facts(data)),
                "version_date": oldest.version_date.isoformat() if oldest else "-",
                "stale": bool(oldest and oldest.stale),
            }
        )
    return rows
