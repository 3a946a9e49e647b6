"""What a notebook shows of a cluster: site, batch system, GPUs, its jobs and why they wait."""

from __future__ import annotations

import html

from ..jobs.usage import UsageReport
from .job_watch import JobTable


def cluster_status_html(
    rows: JobTable, *, site: str | None, batch: str, protocol: str | None, usage: UsageReport | None
) -> str:
    """The GPU part of a cluster's HTML repr: site, batch system, protocol, its jobs as last seen and the ``usage``
    so far (no batch command runs while a notebook draws it)."""
    requested = sum(row.gpus for row in rows)
    connected = sum(row.workers for row in rows if row.gpus)
    waiting = [row for row in rows if row.workers == 0 and row.reason]
    facts = [
        ("Site", "none" if site is None else site),
        ("Batch system", batch),
        ("GPUs", f"{connected} connected of {requested} requested ({len(rows)} job{'s' if len(rows) != 1 else ''})"),
        ("Protocol", protocol or "tcp"),
    ]
    if waiting:
        facts.append(("Waiting", "; ".join(row.waiting("submitted") for row in waiting)))
    if rows.notice:  # the batch system unreachable (states unknown), jobs to submit, replacing stopped
        facts.append(("Attention", rows.notice))
        rows.notice = None  # said once, above the table
    table = "".join(
        f"<tr><th style='text-align: left'>{html.escape(key)}</th>"
        f"<td style='text-align: left'>{html.escape(str(value))}</td></tr>"
        for key, value in facts
    )
    jobs = (
        rows._repr_html_()
        if rows
        else "<p>No jobs: <code>cluster.scale(gpus=N)</code> or <code>cluster.adapt()</code> submits them.</p>"
    )
    usage_html = f"<details><summary>Usage</summary>{usage._repr_html_()}</details>" if usage and usage.jobs else ""
    return f"<table>{table}</table><details open><summary>Jobs</summary>{jobs}</details>{usage_html}"
