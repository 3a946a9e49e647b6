"""Issue 40, point 9: the usage report is written to a file made for it, never into one that was there.

The report went to the first of 99 predictable names not taken, opened with ``O_TRUNC``: a file
another user put at a name between the look and the open (or at all 99) was truncated and written
over, and kept its owner and mode.
"""

from __future__ import annotations

import os
import stat
import time

from test_usage import Clock, run_two_jobs

from gpujobqueue.jobs.usage import read_usage
from gpujobqueue.runtime.usage_watch import UsageWatch


class _NoJobs:
    """A job book with nothing new in it: the report is the meter's."""

    connected: set = set()
    statuses: dict = {}

    def started(self) -> list:
        return []


def _watch(folder) -> UsageWatch:
    async def identity():
        return {}

    watch = UsageWatch(_NoJobs(), identity=identity, batch="slurm", site=None, log_directory=lambda: str(folder))
    watch.meter = run_two_jobs(Clock())
    return watch


def test_the_report_never_goes_into_a_file_that_was_there(tmp_path):
    watch = _watch(tmp_path)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(watch.meter.report(cluster="c", batch="slurm").at))
    theirs = [tmp_path / f"c-usage-{stamp}.json"] + [tmp_path / f"c-usage-{stamp}-{n}.json" for n in range(2, 100)]
    for path in theirs:
        path.write_text("theirs\n")
        path.chmod(0o666)
    report = watch.close(cluster="c", adaptive=False)
    assert all(path.read_text() == "theirs\n" for path in theirs), "a file that was there was written over"
    assert watch.path is not None and watch.path not in {str(path) for path in theirs}
    assert stat.S_IMODE(os.stat(watch.path).st_mode) == 0o600
    assert read_usage(watch.path) == report
    assert os.path.basename(watch.path).startswith(f"c-usage-{stamp}")  # found as the others are: *-usage-*.json


def test_a_link_planted_at_the_report_s_name_is_not_followed(tmp_path):
    watch = _watch(tmp_path)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(watch.meter.report(cluster="c", batch="slurm").at))
    target = tmp_path / "target"
    target.write_text("theirs\n")
    (tmp_path / f"c-usage-{stamp}.json").symlink_to(target)
    watch.close(cluster="c", adaptive=False)
    assert target.read_text() == "theirs\n" and not os.path.islink(watch.path)
    assert stat.S_IMODE(os.stat(watch.path).st_mode) == 0o600
