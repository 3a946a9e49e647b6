"""The text of ``gpujobqueue check``: one line per finding, its fix under it, and a sum."""

from __future__ import annotations

from .facts import MachineFacts
from .judge import Finding


def report(findings: list[Finding], facts: MachineFacts) -> str:
    """The check as text: one line per finding, its fix under it, and a last line that sums up."""
    width = max(len(f.topic) for f in findings)
    lines = [f"gpujobqueue check on {facts.hostname}"]
    for finding in findings:
        lines.append(f"  {finding.status.upper():<5} {finding.topic:<{width}}  {finding.detail}")
        if finding.fix:
            lines.append(f"  {'':<5} {'':<{width}}  fix: {finding.fix}")
    failed = sum(f.status == "fail" for f in findings)
    warned = sum(f.status == "warn" for f in findings)
    if failed:
        lines.append(f"{failed} problem(s) stop GPU workers here; each fix is named above")
    else:
        lines.append("nothing missing" + (f" ({warned} warning(s))" if warned else ""))
    return "\n".join(lines)
