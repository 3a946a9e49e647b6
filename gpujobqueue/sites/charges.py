"""What a job costs on a site: each queue's ``charge`` (service units per node-hour or GPU-hour), or the
site's own ``charge`` for queues that give none, with the page that states it; the checks of these
that the schema cannot make, and the lines ``gpujobqueue show`` prints."""

from __future__ import annotations

import math
from typing import Any

from ..usage import Charge
from .errors import SiteConfigError, dotted_key
from .schema import unconfirmed_keys


def charge_key(data: dict, queue: str) -> tuple | None:
    """The key path of the charge that applies to ``queue``: the queue's own, else the site's, else None."""
    entry = (data.get("queues") or {}).get(queue) or {}
    if isinstance(entry, dict) and "charge" in entry:
        return ("queues", queue, "charge")
    if "charge" in data:
        return ("charge",)
    return None


def _names(named: str, key: str) -> bool:
    """Whether a dotted key a source covers (or an unconfirmed line names) is ``key`` or a key inside it."""
    return named == key or named.startswith(key + ".")


def charge_source(data: dict, key: tuple) -> str:
    """Where the charge at ``key`` comes from: the sources that name it or a key inside it (address and
    day checked), then the unconfirmed lines about it (``unconfirmed: ...``); ``""`` where there is none."""
    dotted = dotted_key(key)
    found = [
        f"{source['url']} (checked {source['checked']})"
        for source in data.get("sources") or []
        if isinstance(source, dict) and any(_names(str(named), dotted) for named in source.get("covers") or [])
    ]
    for line in data.get("unconfirmed") or []:
        if any(_names(named, dotted) for named in unconfirmed_keys(str(line))):
            found.append(f"unconfirmed: {line}")
    return "; ".join(found)


def queue_charge(data: dict, queue: str) -> Charge | None:
    """The :class:`~gpujobqueue.usage.Charge` of a job in ``queue`` (the queue's charge, else the site's), or None."""
    key = charge_key(data, queue)
    if key is None:
        return None
    value = data
    for part in key:
        value = value[part]
    return Charge(value["unit"], value["factor"], charge_source(data, key))


def _charge_keys(data: dict) -> list[tuple]:
    keys = [("charge",)] if isinstance(data.get("charge"), dict) else []
    for name, entry in (data.get("queues") or {}).items():
        if isinstance(entry, dict) and isinstance(entry.get("charge"), dict):
            keys.append(("queues", name, "charge"))
    return keys


def charge_errors(data: dict, path: str, lines: dict[tuple, int], whole: bool = True) -> list[SiteConfigError]:
    """A charge factor that is not a finite number (the schema lets ``.inf`` and ``.nan`` through), and, in a
    ``whole`` site file, a charge that no source names and no unconfirmed line lists."""
    errors = []
    for key in _charge_keys(data):
        factor: Any = data
        for part in key:
            factor = factor[part]
        factor = factor.get("factor")
        if isinstance(factor, float) and not math.isfinite(factor):
            errors.append(
                SiteConfigError(
                    path,
                    dotted_key(key + ("factor",)),
                    lines.get(key + ("factor",)),
                    f"{factor} is not a finite number; give service units per unit (0 or more)",
                )
            )
        if whole and not charge_source(data, key):
            errors.append(
                SiteConfigError(
                    path,
                    dotted_key(key),
                    lines.get(key),
                    f"no source names {dotted_key(key)}; add it to the covers of the page that states the charge, "
                    f"or start an unconfirmed line with it",
                )
            )
    return errors


def charges_text(data: dict) -> list[str]:
    """One line per queue: its charge and where it comes from, or that no charge is recorded."""
    out = []
    for queue in data.get("queues") or {}:
        charge = queue_charge(data, queue)
        if charge is None:
            out.append(f"#   {queue}: not recorded")
            continue
        key = charge_key(data, queue)
        value = data
        for part in key or ():
            value = value[part]
        note = f" ({value['note']})" if value.get("note") else ""
        out.append(f"#   {queue}: {charge.factor:g} per {charge.unit}{note}; from {charge.source}")
    return out
