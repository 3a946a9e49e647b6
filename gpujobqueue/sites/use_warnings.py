"""The warnings a site gives when used: a retired machine, and facts its centre did not confirm (once per site)."""

from __future__ import annotations

import re
import warnings

from .facts import Site
from .sources import unconfirmed_keys


class RetiredSiteWarning(UserWarning):
    """The site is a machine that has been retired: its scripts are kept as examples, no job will run there."""


def warn_if_retired(site: Site) -> None:
    """Warn (:class:`RetiredSiteWarning`), naming the date, when ``site`` is a retired machine."""
    if site.data.get("status") == "retired":
        since = f" on {site.data['retired']}" if site.data.get("retired") else ""
        warnings.warn(
            f"site {site.name} is a retired machine (it stopped running jobs{since}); the script is an "
            f"example of its form, no job will run there ({site.files[0]})",
            RetiredSiteWarning,
            stacklevel=3,
        )


class UnconfirmedSiteFactsWarning(UserWarning):
    """A site in use states facts that its centre's documentation did not confirm (its
    ``unconfirmed`` list): they may be wrong on the machine."""


_warned_unconfirmed: set[str] = set()


def unconfirmed_facts(data: dict) -> list[str]:
    """The facts a site's merged config (:attr:`Site.data`) lists as not confirmed by the centre's documentation."""
    return [str(fact) for fact in data.get("unconfirmed") or []]


def _fact_head(fact: str, width: int = 40) -> str:
    """A fact's leading words (its keys, where it starts with them), before its explanation."""
    keys = unconfirmed_keys(fact)
    if keys:
        shown = [keys[0]]
        for key in keys[1:]:
            if len("/".join(shown + [key])) > width - 1:
                return "/".join(shown) + "/…"
            shown.append(key)
        return "/".join(shown)
    head = re.split(r" \(|[;,:] | - ", " ".join(fact.split()), maxsplit=1)[0].rstrip(" ,.:")
    return head if len(head) <= width else head[: width - 1].rstrip() + "…"


def unconfirmed_warning(site: Site, width: int = 120) -> str | None:
    """The one-line warning naming the site's unconfirmed facts (as many as fit in ``width``), or None."""
    facts = unconfirmed_facts(site.data)
    if not facts:
        return None
    heads: list[str] = []
    for fact in facts:
        head = _fact_head(fact)
        if heads and len("; ".join(heads + [head])) > width:
            break
        heads.append(head)
    named = "; ".join(heads) + (f"; and {len(facts) - len(heads)} more" if len(heads) < len(facts) else "")
    plural = "s" if len(facts) > 1 else ""
    return (
        f"{site.name}: {len(facts)} fact{plural} unconfirmed by the centre's documentation: {named}; "
        f"see gpujobqueue show {site.name}"
    )


def warn_unconfirmed(site: Site | None) -> None:
    """Warn (:class:`UnconfirmedSiteFactsWarning`, once per site per process) that a site has unconfirmed facts."""
    if site is None or site.name in _warned_unconfirmed:
        return
    message = unconfirmed_warning(site)
    if message is not None:
        _warned_unconfirmed.add(site.name)
        warnings.warn(message, UnconfirmedSiteFactsWarning, stacklevel=3)
