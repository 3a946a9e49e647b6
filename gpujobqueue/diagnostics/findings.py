""":class:`Finding`, one line of ``gpujobqueue check``, and the lines of ``--submit-test``: each job the batch
system was shown, and each difference of its queue listing with the site file."""

from __future__ import annotations

from dataclasses import dataclass

from ..batch import batch_system
from .facts import MachineFacts
from .queue_check import LOOSER, STRICTER


@dataclass
class Finding:
    """One line of the check: ``ok``, ``info``, ``warn`` or ``fail``, and the fix for a fail or warn."""

    status: str
    topic: str
    detail: str
    fix: str | None = None


TOPIC, LISTING = "submit test", "queue listing"


def submit_test_findings(facts: MachineFacts) -> list[Finding]:
    """One line per job of ``--submit-test`` (those not asked, one per reason), then the queue listing's lines."""
    if facts.submit_tests is None:
        return []
    if facts.site is None or facts.site_error:
        return [Finding("fail", TOPIC, "no site to test", "name one: gpujobqueue check --site NAME --submit-test")]
    findings, not_asked = [], {}
    for trial in facts.submit_tests:
        said = "; ".join(line.strip() for line in trial["said"].splitlines() if line.strip())
        if trial["accepted"] is None and trial["rendered"]:
            not_asked.setdefault(said, []).append(trial["label"])
        else:
            findings.append(_trial_finding(facts, trial, said))
    # Not asked: a batch system without a test mode, or one that does not answer (never a site file's fault).
    fix = "submit one job and cancel it"
    if batch_system(facts.batch).test_submit_options is not None:
        fix = f"run it on a login node where {facts.batch} answers (the batch system line says whether it does here)"
    findings += [
        Finding("warn", TOPIC, f"{len(labels)} job(s) not asked: {said}", fix) for said, labels in not_asked.items()
    ]
    return findings + _listing_findings(facts)


def _trial_finding(facts: MachineFacts, trial: dict, said: str) -> Finding:
    """A job's line: within the limits, accepted or refused (stricter); past a limit, refused or taken (looser)."""
    label, past = trial["label"], trial["past"]
    correct = f"correct {facts.site}'s file (`gpujobqueue show {facts.site}` gives each value's line)"
    if not trial["rendered"] and past:  # a job gpujobqueue cannot write (one host's parallel environment)
        return Finding("info", TOPIC, f"{label}: not asked, gpujobqueue does not write it: {said}")
    if not trial["rendered"]:
        fix = "give the keyword it names (--account where required)"
        return Finding("fail", TOPIC, f"{label}: not rendered: {said}", fix)
    if past and trial["accepted"]:
        fix = f"where the centre allows it, raise the limit in {facts.site}'s file (a limit enforced after submission"
        loose = f"{label}: accepted one step past {past}: {LOOSER}: {said}"
        return Finding("warn", TOPIC, loose, f"{fix}, by a QOS or the scheduler, does not show here)")
    if past:
        return Finding("ok", TOPIC, f"{label}: refused, as the file says: {said}")
    if trial["accepted"]:
        return Finding("ok", TOPIC, f"{label}: accepted: {said}")
    at = f"; at the file's {trial['limits']}: {STRICTER}" if trial["limits"] else ""
    return Finding("fail", TOPIC, f"{label}: refused: {said}{at}", f"where its limit is not the file's, {correct}")


def _listing_findings(facts: MachineFacts) -> list[Finding]:
    """The listing's differences with the file, each with its line, and a line on what was compared."""
    listing = facts.queue_listing
    if listing is None:
        return []
    if listing["error"]:
        return [Finding("info", LISTING, f"not compared: {listing['error']}")]
    fixes = {
        "fail": f"correct {facts.site}'s file at the line named, where the listing is the centre's limit",
        "warn": f"where the centre allows it, {facts.site}'s file may allow it too (the line named)",
    }
    findings = [
        Finding(line["status"], LISTING, f"{line['detail']} ({line['where']})", fixes.get(line["status"]))
        for line in listing["lines"]
    ]
    differing = {line["queue"] for line in listing["lines"] if line["status"] != "info"}
    same = listing["compared"] - len(differing)
    compared = f"{listing['compared']} queue(s) compared with `{listing['command']}`: {same} as the file says"
    findings.append(Finding("ok", LISTING, compared))
    return findings
