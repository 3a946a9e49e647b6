"""A one-line display, on a terminal, of GPUs connected and why the jobs wait, in ``wait_for_workers``."""

from __future__ import annotations

import sys
from typing import Any

from ..settings import config
from ..settings.validation import parse_bool


def progress_wanted() -> bool:
    """``gpujobqueue.progress``: ``auto`` (on when standard error is a terminal), true or false."""
    setting = config.setting("progress")
    if isinstance(setting, str) and setting.strip().lower() == "auto":
        return sys.stderr.isatty()
    return setting is not None and parse_bool("gpujobqueue.progress", setting)


class WaitProgress:
    """GPUs connected / ``requested``, and why the jobs wait; shown where ``enabled`` (default: a terminal)."""

    def __init__(self, requested: int, enabled: bool | None = None):
        self.bar: Any = None
        if requested and (progress_wanted() if enabled is None else enabled):
            from tqdm import tqdm

            self.bar = tqdm(
                total=requested,
                unit="GPU",
                desc="GPUs connected",
                file=sys.stderr,
                leave=False,
                dynamic_ncols=True,
                bar_format="{desc}: {n}/{total} {bar} {elapsed}{postfix}",
            )

    @property
    def shown(self) -> bool:
        """Whether there is a display to update."""
        return self.bar is not None

    def show(self, connected: int, rows: list, cause: str | None = None, estimates: str | None = None) -> None:
        """Show ``connected`` GPUs, and why the jobs wait: ``cause``, else the oldest waiting job of ``rows``."""
        if self.bar is None:
            return
        # the oldest waiting job first, so that the line does not flit from job to job
        waiting = sorted((row for row in rows if row.workers == 0), key=lambda row: (len(row.name), row.name))
        note = waiting[0].waiting("submitted") if waiting else ""
        if len(waiting) > 1:
            note += f" and {len(waiting) - 1} more"
        note = cause or "; ".join(filter(None, [note, estimates]))
        self.bar.n = min(connected, self.bar.total)
        self.bar.set_postfix_str(note, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
