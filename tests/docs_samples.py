"""The docs' sample outputs, made by running what they show: ``python tests/docs_samples.py [--check] [PAGE ...]``
rewrites each sample of the pages (README.md, docs/, examples/README.md; or those named); ``--check`` rewrites
nothing and exits 1 naming each sample that is not what its command prints now.

A sample is the fenced block after a marker line (tests/docs_pages.py):

- ``<!-- output of: COMMAND -->``: what the bash line COMMAND prints, standard output and error as a terminal shows
  them, run in a sandbox (below); a block that begins with ``$ COMMAND`` keeps that line;
- ``<!-- output of: >>> -->``: a python session: each ``>>>`` line runs (an expression's value is shown, as python's
  prompt shows it; an exception as its last line, ``Name: message``), followed by what it printed;
- ``<!-- output of: >>> on a made-up cluster -->``: the same, with ``cluster`` a cluster of a made-up history
  (:func:`made_up_cluster`): its ``jobs`` and ``usage()`` are the package's own tables of it.

The sandbox is a new folder, the commands' working folder, HOME and TMPDIR. Its PATH is this python's bin folder
and a folder of links to this machine's commands, the batch systems' left out (sbatch, qsub, bsub ... whatever is
installed here): ``check`` sees a machine with no batch system. The terminal is 100 columns wide.

What varies from run to run or machine to machine is written on the page as a placeholder (:func:`variable`,
:data:`CELLS`): the host name ``<host>``, the user ``<user>``, versions ``<version>``, the sandbox's folders ``<tmp>``
and ``<home>``, the checkout ``<checkout>``, this host's interfaces ``<interface> <address>`` (however many), process
ids ``<pid>``, dates and times ``<date>`` ``<time>``, durations ``<s>`` and ``<h>``, a random name's end
``<random>``, the tasks each worker ran ``<n>`` (a table keeps its columns); trailing blanks and distributed's log
lines (its timing warnings on a busy machine) are dropped.
"""

from __future__ import annotations

import contextlib
import difflib
import getpass
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_pages import PAGES, ROOT, blocks  # noqa: E402

SAMPLE_PAGES = [*PAGES, "examples/README.md"]
BASH = shutil.which("bash") or "/bin/bash"
# Left out of the sandbox's PATH: the batch systems' commands (SLURM, PBS, LSF, Grid Engine).
BATCH_COMMAND = re.compile(
    r"s(batch|queue|cancel|acct|acctmgr|control|info|run|alloc|stat|prio|share|report|attach|bcast|diag|trigger)"
    r"|q[a-z]+|pbsnodes|pbs_[a-z]+|b(sub|jobs|kill|queues|hosts|hist|mod|stop|resume|peek)|ls(id|load|hosts)|jsrun"
)
# Where the page's commands take a value the reader would give: a site file, a folder.
PLACEHOLDERS = {"--site NAME": "--site my-site.yaml", " [DIRECTORY]": ""}
SHARED_FOLDERS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")


def sandbox(folder: Path) -> dict[str, str]:
    """The environment of the commands, in ``folder`` (made): see the module's docstring. The files the pages'
    commands name are there: ``my-site.yaml`` (a shipped site file, named so), ``analysis.py``, ``examples/``;
    ``mysite.yaml``, the shipped file with an unknown key under ``node``."""
    (folder / "tmp").mkdir(parents=True, exist_ok=True)
    links = folder / "bin"
    links.mkdir(exist_ok=True)
    for shared in SHARED_FOLDERS:
        for command in Path(shared).iterdir() if Path(shared).is_dir() else ():
            target = links / command.name
            if not BATCH_COMMAND.fullmatch(command.name) and not target.exists() and os.access(command, os.X_OK):
                target.symlink_to(command)
    generic = (ROOT / "site-configs" / "generic-slurm.yaml").read_text()
    (folder / "my-site.yaml").write_text(generic.replace("\nname: generic-slurm\n", "\nname: my-site\n"))
    lines = generic.splitlines(keepends=True)
    node = next(i for i, line in enumerate(lines) if line.startswith("node:"))
    mysite = lines[: node + 1] + ["  gpu_count: 4\n"] + lines[node + 1 :]
    (folder / "mysite.yaml").write_text("".join(mysite))
    (folder / "analysis.py").write_text("print('analysis')\n")
    if not (folder / "examples").exists():
        (folder / "examples").symlink_to(ROOT / "examples")  # python examples/X.py, as from the checkout
    kept = {
        key: value
        for key, value in os.environ.items()
        if not re.match(r"(DASK|GPUJOBQUEUE|SLURM|PBS|LSB|LSF|SGE|CORPUS|CUDA)_", key) and key != "COLUMNS"
    }
    return {
        **kept,
        "HOME": str(folder),
        "TMPDIR": str(folder / "tmp"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{links}",
        "PYTHONUNBUFFERED": "1",  # standard output and error in the order a terminal shows them
        "COLUMNS": "100",
    }


def run_line(line: str, folder: Path, env: dict[str, str], timeout: float = 300) -> tuple[int, str]:
    """Run one bash line as a reader types it (placeholders given their values): its exit status and output."""
    for placeholder, value in PLACEHOLDERS.items():
        line = line.replace(placeholder, value)
    done = subprocess.run(
        [BASH, "-c", line], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=timeout,
    )  # fmt: skip
    return done.returncode, done.stdout


def interfaces() -> list[tuple[str, str]]:
    """This host's interfaces with an IPv4 address other than the loopback's, as ``check`` lists them."""
    import psutil

    return [
        (name, address.address)
        for name, addresses in psutil.net_if_addrs().items()
        for address in addresses
        if address.family == socket.AF_INET and not address.address.startswith("127.")
    ]


def variable(home: Path, tmp: Path) -> list[tuple[str, str]]:
    """The normalisations (pattern, placeholder), in order: what varies between runs and machines."""
    names = sorted({name for name, _ in interfaces()}, key=len, reverse=True)
    addresses = sorted({address for _, address in interfaces()}, key=len, reverse=True)
    return [
        (re.escape(str(tmp)), "<tmp>"),
        (re.escape(str(home)), "<home>"),
        (rf"(?<=gpujobqueue-){re.escape(getpass.getuser())}\b", "<user>"),
        (re.escape(str(ROOT)), "<checkout>"),
        (rf"(?<=check on ){re.escape(socket.gethostname())}\b", "<host>"),
        (rf"(?<=this host \(){re.escape(socket.gethostname())}(?=\))", "<host>"),
        # this host's interfaces other than the loopback, however many: one placeholder
        *((rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "<interface>") for name in names),
        *((rf"(?<![\w.]){re.escape(address)}(?![\w.])", "<address>") for address in addresses),
        (r"(<interface> <address>; )+", "<interface> <address>; "),
        (r"(<interface>, )+<interface>\b", "<interface>"),
        # versions: python's and the packages'
        (
            r"\b(python|dask|distributed|dask-jobqueue|gpujobqueue|ucxx|cupy|rmm|SGE|slurm) \d+(\.\d+)+\w*",
            r"\1 <version>",
        ),
        (r"(?<=  dask-cuda)( +)\d+(\.\d+)+\w*", r"\1<version>"),
        (r"(?<=  python)( +)\d+(\.\d+)+\w*", r"\1<version>"),
        # dates, times, durations, process ids, random ends of names
        (r"\d{8}-\d{6}(?=-\w{8}\b)", "<date>-<time>"),
        (r"(?<=<date>-<time>-)\w{8}\b", "<random>"),
        (r"\d{8}-\d{6}(-\w{8})?(?=\.json)", "<date>-<time>"),
        (r"\(process \d+", "(process <pid>"),
        (r"\bin \d+(\.\d+)? s\b", "in <s> s"),
        (r"\b\d+ s queued at most", "<s> s queued at most"),
        (r"\b\d+\.\d\d core-h", "<h> core-h"),
    ]


# Table cells that vary: a table's column keeps its width, so the placeholder is padded to the value's width.
CELLS = [
    (r"\d x \d+ +(?P<value>\d+\.\d\d)(?=  |$)", "<s>"),  # the demo's and the examples' seconds, after the chunks
    (r"^  \S+-\d+-\d+ +(?P<value>\d+)$", "<n>"),  # a count per worker: how the scheduler spread the tasks
]


# distributed's own log lines, which come with timing (an event loop unresponsive on a busy machine): dropped.
DISTRIBUTED_LOG = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - distributed\.\S+ - \w+ - .*\n", re.M)


def normalise(text: str, home: Path, tmp: Path | None = None) -> str:
    """``text`` with what varies (:data:`CELLS`, :func:`variable`) as placeholders, distributed's log lines
    (:data:`DISTRIBUTED_LOG`) left out; ``home`` the sandbox and HOME, ``tmp`` the TMPDIR (default: the sandbox's)."""
    text = DISTRIBUTED_LOG.sub("", text)
    for pattern, placeholder in CELLS:
        text = re.sub(pattern, lambda match: pad(match, placeholder), text, flags=re.M)
    for pattern, placeholder in variable(home, home / "tmp" if tmp is None else tmp):
        text = re.sub(pattern, placeholder, text)
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


def pad(match: re.Match, placeholder: str) -> str:
    """The match with its group ``value`` replaced by ``placeholder`` as wide as the value."""
    start, end = match.span("value")
    text, offset = match.group(), match.start()
    return text[: start - offset] + placeholder.ljust(end - start) + text[end - offset :]


def made_up_cluster(now: float = 1_780_000_000.0):
    """A SLURM cluster's history, made up: two 4-GPU jobs queued 9 minutes, held 30, busy for 20 (the first at 75 %
    of its GPUs, the second at 62.5 %); the second waits behind higher priorities in the table of jobs."""
    from types import SimpleNamespace

    from gpujobqueue.jobs.usage import JobUsage, UsageReport
    from gpujobqueue.runtime.job_watch import JobRow, JobTable

    submitted, started, busy = now - 39 * 60, now - 30 * 60, 20 * 60
    jobs = tuple(
        JobUsage(
            name=f"SLURMGPUCluster-{index}",
            job_id=str(4021 + index),
            pool="gpu",
            nodes=1,
            gpus=4,
            cores=32,
            submitted=submitted,
            started=started,
            ended=now,
            busy_gpu_seconds=4 * busy * share,
            last_busy=started + busy,
            measured_by="nvml",
        )
        for index, share in enumerate((0.75, 0.625))
    )
    report = UsageReport(cluster="SLURMGPUCluster", batch="slurm", site=None, jobs=jobs, at=now)
    table = JobTable(
        [
            JobRow("SLURMGPUCluster-0", "4021", "RUNNING", None, None, "nid01", 4, 4),
            JobRow("SLURMGPUCluster-1", "4022", "PENDING", "Priority", "expected 14:32, in 11 min", None, 4, 0),
        ]
    )
    return SimpleNamespace(jobs=table, usage=lambda: report)


def run_session(text: str, namespace: dict) -> str:
    """The ``>>>`` lines of ``text`` run in ``namespace``, each followed by what it shows."""
    shown = []
    for line in text.splitlines():
        if not line.startswith(">>> "):
            continue
        shown.append(line)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(line[4:], "<session>", "single"), namespace)
            except Exception as error:
                print(f"{type(error).__name__}: {error}")
        shown.append(out.getvalue().rstrip("\n"))
    return "\n".join(shown) + "\n"


def sample(block, folder: Path, env: dict[str, str]) -> str:
    """The block's text as its marker makes it."""
    what = block.marker[1]
    if what.startswith(">>>"):
        namespace: dict = {}
        exec("from gpujobqueue import GPUCluster", namespace)
        if what == ">>> on a made-up cluster":
            namespace["cluster"] = made_up_cluster()
        return normalise(run_session(block.text, namespace), folder)
    status, output = run_line(what, folder, env)
    if "Traceback" in output:
        raise AssertionError(f"{block.where}: {what} exited with status {status}:\n{output[-3000:]}")
    shown = f"$ {what}\n" if block.text.startswith("$ ") else ""
    return shown + normalise(output, folder)


def samples(page: str, text: str | None = None) -> list:
    """The page's sample blocks (marked ``output of``)."""
    return [block for block in blocks(page, text) if block.marker and block.marker[0] == "output of"]


def regenerate(page: str, folder: Path, skip=lambda block: False) -> str:
    """The page's text with every sample made again (those ``skip`` names kept as they are)."""
    text = (ROOT / page).read_text()
    lines = text.splitlines(keepends=True)
    env = sandbox(folder)
    for block in reversed(samples(page, text)):  # from the end: the lines before keep their numbers
        if skip(block):
            continue
        body = sample(block, folder, env).splitlines(keepends=True)
        end = block.line + len(block.text.splitlines())
        lines[block.line : end] = body
    return "".join(lines)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    pages = [arg for arg in argv if arg != "--check"] or [page for page in SAMPLE_PAGES if samples(page)]
    stale = []
    for page in pages:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="docs-samples-") as folder:
            try:
                new = regenerate(page, Path(folder))
            except Exception:
                traceback.print_exc()
                return 2
        old = (ROOT / page).read_text()
        print(f"{page}: {len(samples(page))} sample(s), {time.perf_counter() - started:.1f} s", file=sys.stderr)
        if new != old:
            stale.append(page)
            if check:
                sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), page, page))
            else:
                (ROOT / page).write_text(new)
    if check and stale:
        print(f"stale samples in {', '.join(stale)}: python tests/docs_samples.py rewrites them", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
