"""What a job costs on a site: each queue's ``charge`` (else the site's), its checks and the lines shown."""

from __future__ import annotations

import math
from typing import Iterator

from ..jobs.usage import Charge
from .errors import dotted_key, value_at
from .schema import unconfirmed_keys


def charge_key(data: dict, queue: str) -> tuple | None:
    """The key path of the charge that applies to ``queue``: the queue's own, else the site's, else None."""
    entry = (data.get("queues") or {}).get(queue) or {}
    if isinstance(entry, dict) and "charge" in entry:
        return ("queues", queue, "charge")
    if "charge" in data:
        return ("charge",)
    return None


def within(named: str, key: str) -> bool:
    """Whether a dotted key (one a source covers, or an unconfirmed line names) is ``key`` or a key inside it."""
    return named == key or named.startswith(key + ".")


def key_source(data: dict, key: tuple, held: bool = False) -> str:
    """Where the fact at ``key`` comes from: the sources that name it or a key inside it, or, with ``held`` where
    none does, the nearest key holding it (``queues.gpu``, then ``queues``); then its unconfirmed lines; or ``""``."""
    dotted = dotted_key(key)
    holders = [dotted_key(key[:n]) for n in range(len(key) - 1, 0, -1)] if held else []
    sources = [source for source in data.get("sources") or [] if isinstance(source, dict)]
    found: list[str] = []
    for level in [dotted, *holders]:
        found = [
            f"{source['url']} (version of {source['version_date']})"
            for source in sources
            if any(
                within(str(named), dotted) if level == dotted else named == level
                for named in source.get("covers") or []
            )
        ]
        if found:
            break
    for line in data.get("unconfirmed") or []:
        if any(within(named, dotted) for named in unconfirmed_keys(str(line))):
            found.append(f"unconfirmed: {line}")
    return "; ".join(found)


def queue_charge(data: dict, queue: str) -> Charge | None:
    """The :class:`~gpujobqueue.jobs.usage.Charge` of a job in ``queue`` (its own, else the site's), or None."""
    key = charge_key(data, queue)
    if key is None:
        return None
    value = value_at(data, key)
    return Charge(value["unit"], value["factor"], key_source(data, key))


def charge_problems(data: dict, whole: bool = True) -> Iterator[tuple[tuple, str]]:
    """A charge factor that is not finite, and (``whole``) a charge nothing names, as (key, problem)."""
    keys = [("charge",), *(("queues", name, "charge") for name in data.get("queues") or {})]
    for key in [key for key in keys if isinstance(value_at(data, key), dict)]:
        factor = value_at(data, key + ("factor",))
        if isinstance(factor, float) and not math.isfinite(factor):
            yield key + ("factor",), f"{factor} is not a finite number; give service units per unit (0 or more)"
        if whole and not key_source(data, key):
            yield (
                key,
                f"no source names {dotted_key(key)}; add it to the covers of the page that states the charge, "
                f"or start an unconfirmed line with it",
            )


def charges_text(data: dict) -> list[str]:
    """One line per queue: its charge and where it comes from, or that no charge is recorded."""
    out = []
    for queue in data.get("queues") or {}:
        charge = queue_charge(data, queue)
        if charge is None:
            out.append(f"#   {queue}: not recorded")
            continue
        note = value_at(data, (*(charge_key(data, queue) or ()), "note"))
        note = f" ({note})" if note else ""
        out.append(f"#   {queue}: {charge.factor:g} per {charge.unit}{note}; from {charge.source}")
    return out
