"""Measure gpujobqueue against the corpus of published dask-jobqueue snippets (issue 31).

For each snippet (``tests/corpus/<batch>_*.py``), the cluster is built twice with nothing
submitted: with dask-jobqueue as the snippet was written, and with the import changed to
gpujobqueue (``SLURMCluster`` is ``SLURMGPUCluster``, and so on). The two job scripts' headers are
compared option by option (what each asks of the batch system), and every worker command line of
each script is parsed by the worker CLI it runs (distributed's ``dask worker``, dask-cuda's
``dask cuda worker``) with click's ``make_context``. It prints a table and, with ``--out``, writes
the report (docs/corpus-report.md).

A snippet is a module ``<batch>_<name>.py`` whose docstring gives the source (URL, or repository,
path and commit), the date shown, the batch system and what the author meant, and which defines
``SOURCE`` (the same, as data), ``BATCH`` (``slurm``, ``pbs``, ``lsf``, ``sge`` or ``local``),
``MEANT`` (``gpus_per_job``: 0 for CPU workers, None where the snippet leaves it to the queue; and a
``note``), optionally ``CONFIG_YAML`` (the jobqueue.yaml it relies on, as published), and
``make(module)``, which builds the cluster as published with ``module.SLURMCluster`` (and so on):
the harness passes dask-jobqueue's classes, then gpujobqueue's under the same names.

Run it with the checkout's venv:  .venv/bin/python tests/corpus/measure.py --out docs/corpus-report.md

Snippets that name a network interface (``ib0``) need that interface: as root, the script re-runs
itself in a private network namespace (``unshare --net``) that has them (a veth pair each), so the
host's network is not touched; ``--no-netns`` runs it as it is.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SNIPPET = re.compile(r"^(slurm|pbs|lsf|sge|local)_\w+\.py$")
INTERFACE = re.compile(r"""interface['"]?\s*[:=]\s*['"]?([A-Za-z][\w.-]*)""")
sys.path.insert(0, str(HERE))


def snippet_paths(only: list[str]) -> list[Path]:
    paths = sorted(path for path in HERE.iterdir() if SNIPPET.match(path.name))
    return [path for path in paths if not only or any(name in path.stem for name in only)]


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def interfaces_named(paths: list[Path]) -> list[str]:
    names = set()
    for path in paths:
        names.update(INTERFACE.findall(path.read_text()))
    return sorted(names - {"null", "None"})  # a jobqueue.yaml's `interface: null` names none


def missing_interfaces(names: list[str]) -> list[str]:
    present = set(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else set()
    return [name for name in names if name not in present]


def rerun_in_netns(names: list[str]) -> None:
    """Re-run this script in a private network namespace that has the interfaces the corpus names."""
    setup = ["ip link set lo up"]
    for index, name in enumerate(names, start=1):
        peer = f"corpus-peer{index}"
        setup += [
            f"ip link add {shlex.quote(name)} type veth peer name {peer}",
            f"ip addr add 10.231.{index}.1/24 dev {shlex.quote(name)}",
            f"ip link set {peer} up",
            f"ip link set {shlex.quote(name)} up",
        ]
    setup.append(f"ip route add default dev {shlex.quote(names[0])}")  # distributed's get_ip() asks for a route
    command = " && ".join(setup) + " && exec " + shlex.join([sys.executable, *sys.argv])
    env = dict(os.environ, CORPUS_NETNS=",".join(names))
    os.execvpe("unshare", ["unshare", "--net", "--", "sh", "-c", command], env)


def versions() -> dict[str, str]:
    found = {}
    for name in ("dask-jobqueue", "gpujobqueue", "dask", "distributed", "dask-cuda", "click"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    found["commit"] = git("rev-parse", "--short", "HEAD") or "unknown"
    main = git("rev-parse", "--short", "main")
    same_as_main = (
        main
        and subprocess.run(
            ["git", "-C", str(ROOT), "diff", "--quiet", "main", "--", "gpujobqueue", "templates", "setup.cfg"]
        ).returncode
        == 0
    )
    found["package"] = f"identical to main at `{main}`" if same_as_main else "not main's"
    return found


def git(*arguments: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *arguments], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def worker_verdict(built) -> str:
    """'ok' when every worker line parses under its CLI, else the first CLI error."""
    from _workers import launcher_problem

    if not built.ok:
        return "not built"
    if not built.workers:
        return "no worker line found"
    for worker in built.workers:
        if not worker["accepted"]:
            return f"`{worker['module']}`: {worker['error']}"
        problem = launcher_problem(worker["launcher"])
        if problem:
            return problem
    return "ok"


def measure_one(snippet, modules) -> dict[str, Any]:
    from _build import build
    from _requests import compare, read_request, requested_gpus
    from _workers import inspect_workers

    row: dict[str, Any] = {"name": snippet.__name__.removeprefix("corpus_"), "snippet": snippet}
    for flavour in ("dask-jobqueue", "gpujobqueue"):
        started = time.monotonic()
        built = build(snippet, modules[flavour], inspect_workers)
        built.facts["seconds"] = round(time.monotonic() - started, 1)
        row[flavour] = built
    djq, gjq = row["dask-jobqueue"], row["gpujobqueue"]
    if gjq.ok:
        row["gpus asked"] = requested_gpus(read_request(gjq.script, snippet.BATCH)[0], snippet.BATCH)
    if djq.ok and gjq.ok:
        (left, left_names), (right, right_names) = (read_request(b.script, snippet.BATCH) for b in (djq, gjq))
        row["requests"] = (left, right)
        row["differ"], row["rounded"] = compare(left, right)
        row["naming"] = compare(left_names, right_names)[0]
    return row


def outcome(row: dict[str, Any]) -> str:
    """One snippet's outcome in one line: ``refused: <error>`` (gpujobqueue does not build it),
    ``workers refused: <CLI error>``, ``dask-jobqueue fails: <error>``, else the request compared
    (``same`` or ``differs: <each difference>``) and, for a snippet meant for GPUs, whether the
    GPU workers work."""
    djq, gjq = row["dask-jobqueue"], row["gpujobqueue"]
    if not gjq.ok:  # the error's type and the field it names
        return "refused: " + ":".join((gjq.error or "").split(":")[:2])
    if worker_verdict(gjq) != "ok":
        return f"workers refused: {worker_verdict(gjq)}"
    if not djq.ok:
        return f"dask-jobqueue fails: {djq.error}"
    meant = row["snippet"].MEANT.get("gpus_per_job")
    gpus = "" if meant == 0 else (", GPU workers" if working_gpus(row) else ", no working GPU workers")
    return request_cell(row) + gpus


def request_cell(row: dict[str, Any]) -> str:
    if "differ" not in row:
        return "—"
    if row["snippet"].BATCH == "local":
        return "n/a (no batch system)"
    if not row["differ"]:
        return "same" + (" (memory rounded)" if row["rounded"] else "")
    return "differs: " + "; ".join(row["differ"])


def working_gpus(row: dict[str, Any]) -> bool:
    """gpujobqueue built the cluster, plans GPU workers, its job asks the batch system for as many GPUs
    (a local cluster asks no one), and every worker line parses."""
    built = row["gpujobqueue"]
    planned = built.facts.get("gpus_per_job") or 0 if built.ok else 0
    asked = planned if row["snippet"].BATCH == "local" else row.get("gpus asked")
    return planned > 0 and asked == planned and worker_verdict(built) == "ok"


def same_request(row: dict[str, Any]) -> bool:
    return "differ" in row and not row["differ"]


def gpu_cell(row: dict[str, Any]) -> str:
    built = row["gpujobqueue"]
    meant = row["snippet"].MEANT.get("gpus_per_job")
    if not built.ok:
        return "—"
    got = built.facts.get("gpus_per_job")
    asked = row.get("gpus asked")
    asked_text = "" if row["snippet"].BATCH == "local" or asked == got else f", {asked or 0:g} asked for"
    state = "working" if working_gpus(row) else "not working"
    return f"{got}{asked_text} ({state}; meant {meant if meant is not None else '?'})"


def built_cell(built, limit: int | None = 160) -> str:
    if built.ok:
        return "yes"
    text = built.error or ""
    return "no: " + (text if limit is None or len(text) <= limit else text[: limit - 1] + "…")


def escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| snippet | batch | dask-jobqueue builds | its worker line | gpujobqueue accepts | same request "
        "(what differs) | gpujobqueue worker line | GPU workers per job (gpujobqueue) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        djq, gjq = row["dask-jobqueue"], row["gpujobqueue"]
        cells = [
            f"`{row['name']}`",
            row["snippet"].BATCH,
            built_cell(djq),
            worker_verdict(djq),
            built_cell(gjq),
            request_cell(row),
            worker_verdict(gjq),
            gpu_cell(row),
        ]
        lines.append("| " + " | ".join(escape(cell) for cell in cells) + " |")
    return lines


def summary(rows: list[dict[str, Any]]) -> list[str]:
    def count(selected: list[dict[str, Any]]) -> list[str]:
        batch = [r for r in selected if r["snippet"].BATCH != "local"]
        return [
            f"dask-jobqueue builds the cluster and its worker lines parse: "
            f"{sum(r['dask-jobqueue'].ok and worker_verdict(r['dask-jobqueue']) == 'ok' for r in selected)}",
            "gpujobqueue accepts it, the import changed and nothing else: "
            f"{sum(r['gpujobqueue'].ok for r in selected)}",
            f"same request as dask-jobqueue's script (of {sum('differ' in r for r in batch)} where both built "
            f"a batch script): {sum(same_request(r) for r in batch)}",
            f"gpujobqueue's worker lines all parse under their CLI: "
            f"{sum(worker_verdict(r['gpujobqueue']) == 'ok' for r in selected)}",
            f"working GPU workers (planned, asked for, their lines parse): {sum(working_gpus(r) for r in selected)}",
            f"same request and working GPU workers (the issue's criterion): "
            f"{sum(same_request(r) and working_gpus(r) for r in batch)}",
        ]

    gpu = [r for r in rows if r["snippet"].MEANT.get("gpus_per_job") != 0]
    per_batch = ", ".join(
        f"{b}: {sum(r['snippet'].BATCH == b for r in rows)}" for b in ("slurm", "pbs", "lsf", "sge", "local")
    )
    lines = [f"All {len(rows)} snippets ({per_batch}):", ""]
    lines += [f"- {line}" for line in count(rows)]
    lines += ["", f"The {len(gpu)} snippets written for GPUs (all but those whose author meant CPU workers):", ""]
    lines += [f"- {line}" for line in count(gpu)]
    return lines


def reasons(rows: list[dict[str, Any]]) -> list[str]:
    """gpujobqueue's refusals and its worker lines' refusals, grouped by what they name."""
    refused: dict[str, list[str]] = {}
    for row in rows:
        built = row["gpujobqueue"]
        if not built.ok:
            kind = ":".join((built.error or "").split(":")[:2])
            refused.setdefault(f"refused, {kind}", []).append(row["name"])
        elif worker_verdict(built) != "ok":
            verdict = worker_verdict(built)
            hint = verdict[verdict.index(" (") + 2 : -1] if " (" in verdict else verdict
            kind = re.sub(r"'[^']*'", "'…'", hint.split(":")[0])
            refused.setdefault(f"worker line refused by its CLI, {kind}", []).append(row["name"])
        elif not working_gpus(row):
            planned, asked = built.facts.get("gpus_per_job"), row.get("gpus asked")
            kind = "no GPU worker planned" if not planned else f"GPU workers planned, the job asks for {asked or 0:g}"
            refused.setdefault(f"accepted, {kind}" if planned else kind, []).append(row["name"])
    lines = []
    for kind, names in sorted(refused.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"- {escape(kind)} ({len(names)}): " + ", ".join(f"`{name}`" for name in names))
    return lines or ["- none"]


def short_of_the_criterion(rows: list[dict[str, Any]]) -> list[str]:
    """The snippets written for GPUs that are not the same request with working GPU workers, each with why
    (_short.SHORT_OF_THE_CRITERION; a snippet without a reason there is said to have none)."""
    from _short import SHORT_OF_THE_CRITERION, meets_the_criterion

    lines = []
    for row in rows:
        if row["snippet"].MEANT.get("gpus_per_job") == 0 or meets_the_criterion(outcome(row)):
            continue
        why = SHORT_OF_THE_CRITERION.get(row["name"], "no reason recorded (tests/corpus/_short.py)")
        lines.append(f"- `{row['name']}`: {escape(why)}")
    return lines or ["- none"]


def details(row: dict[str, Any]) -> list[str]:
    from _requests import header_directives

    snippet = row["snippet"]
    source = snippet.SOURCE
    where = source.get("url") or f"{source['repo']} `{source['path']}` at {source['commit']}"
    lines = [f"### `{row['name']}`", "", f"Source: {where} ({source['date']}). Meant: {snippet.MEANT['note']}.", ""]
    for flavour in ("dask-jobqueue", "gpujobqueue"):
        built = row[flavour]
        lines.append(f"- {flavour}: {built_cell(built, None)}")
        if built.ok:
            header = header_directives(built.script, snippet.BATCH)
            if header:
                lines.append("  - header: " + " · ".join(f"`{escape(h)}`" for h in header))
            for worker in built.workers:
                verdict = "parses" if worker["accepted"] else f"refused: {worker['error']}"
                launcher = " ".join(shlex.quote(word) for word in worker["launcher"])
                lines.append(f"  - worker line: `{escape(launcher)} -m {worker['module']}` … {escape(verdict)}")
            facts = {k: v for k, v in built.facts.items() if k != "seconds"}
            if facts:
                lines.append("  - plan: " + ", ".join(f"{k} {v}" for k, v in facts.items()))
        for warning in sorted(set(built.warnings)):
            if not warning.startswith("ResourceWarning") and "is already in use" not in warning:
                lines.append(f"  - warning: {escape(warning if len(warning) <= 200 else warning[:199] + '…')}")
        submitted = [call for call in built.calls if call.split()[0] in ("sbatch", "qsub", "bsub")]
        if submitted:
            lines.append(f"  - submitted while built (to the harness's stand-in): {len(submitted)} job(s)")
    if row.get("rounded"):
        lines.append(f"- memory rounded: {'; '.join(row['rounded'])}")
    if row.get("naming"):
        lines.append(f"- names and files (not the request): {escape('; '.join(row['naming']))}")
    lines.append("")
    return lines


def report(rows: list[dict[str, Any]], found: dict[str, str], command: str) -> str:
    today = datetime.date.today().isoformat()
    netns = os.environ.get("CORPUS_NETNS")
    lines = [
        "---",
        "orphan: true",
        "---",
        "",
        "# The corpus of published dask-jobqueue snippets, measured against gpujobqueue",
        "",
        f"Measured on {today} at commit `{found['commit']}` (gpujobqueue/, templates/ and setup.cfg "
        f"{found['package']}) with `{command}` (the harness is",
        "`tests/corpus/measure.py`; the snippets, each with its source, are `tests/corpus/<batch>_*.py`).",
        f"Versions: dask-jobqueue {found['dask-jobqueue']}, gpujobqueue {found['gpujobqueue']}, dask "
        f"{found['dask']}, distributed {found['distributed']}, dask-cuda {found['dask-cuda']}, click {found['click']}.",
        "",
        "How: each snippet's cluster is built twice, submitting nothing (the batch commands on `PATH` are",
        "stand-ins that record each call and answer as a batch system that queued the job), with",
        "dask-jobqueue as published and with the import changed to gpujobqueue's classes. The two job",
        "scripts' headers are read option by option into what they ask for (times in seconds, memory in",
        "bytes, GPUs per node, nodes and tasks). Two memory figures count as one request, rounded",
        "differently, when within 2% or when one is the other rounded up to a whole MiB or GiB; job names",
        "and log files are listed apart and do not count. Every worker line of each script is parsed by",
        "the click command of the CLI it runs (`make_context`, which starts nothing). 'Working GPU",
        "workers' means: gpujobqueue plans at least one GPU worker per job, its job asks the batch system",
        "for that many GPUs, and every worker line parses. Each build runs in its own folder as working",
        "directory and `HOME`, under the snippet's jobqueue.yaml where it has one. Warnings are listed per",
        "snippet, less ResourceWarnings and distributed's 'Port 8787 is already in use' (the dashboard of",
        "the snippet built just before). The venv's interpreter is written `python` and each build's",
        "folder `<build folder>`.",
    ]
    if netns:
        lines.append(
            f"Run in a private network namespace with the interfaces the snippets name ({netns}), "
            "so that `interface=` resolves."
        )
    lines += [
        "",
        "## Summary",
        "",
        *summary(rows),
        "",
        "## Where gpujobqueue refused or its workers would not work",
        "",
        *reasons(rows),
        "",
        "## The GPU snippets short of the criterion, and why",
        "",
        *short_of_the_criterion(rows),
    ]
    lines += ["", "## Table", "", *table(rows), "", "## Each snippet", ""]
    for row in rows:
        lines += details(row)
    return scrub("\n".join(lines).rstrip() + "\n")


def scrub(text: str) -> str:
    """No path of this machine in the report: the venv's interpreter is `python`, each build's folder
    `<build folder>`, the checkout `<checkout>`."""
    text = text.replace(sys.executable, "python")
    text = re.sub(re.escape(tempfile.gettempdir()) + r"/corpus-build-\w+", "<build folder>", text)
    return text.replace(str(ROOT), "<checkout>")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the markdown report here")
    parser.add_argument("--json", help="write each snippet's outcome (outcome(), as test_corpus.py reads it) here")
    parser.add_argument("--only", nargs="*", default=[], help="snippets whose name contains one of these")
    parser.add_argument("--no-netns", action="store_true", help="do not re-run in a network namespace")
    args = parser.parse_args(argv)
    paths = snippet_paths(args.only)
    missing = missing_interfaces(interfaces_named(paths))
    if missing and not args.no_netns and not os.environ.get("CORPUS_NETNS"):
        if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ip"):
            rerun_in_netns(missing)
        print(f"note: interfaces {', '.join(missing)} are missing here; snippets naming them may fail", file=sys.stderr)

    import warnings

    warnings.simplefilter("ignore")  # the imports' own warnings; each build records its own
    from _build import namespaces, put_stand_ins_first, write_stand_ins

    modules = namespaces()
    stand_ins = Path(tempfile.mkdtemp(prefix="corpus-stand-ins-"))
    write_stand_ins(stand_ins)
    put_stand_ins_first(stand_ins)
    rows = []
    for path in paths:
        row = measure_one(load(path), modules)
        rows.append(row)
        print(f"{row['name']}: {request_cell(row)}", file=sys.stderr, flush=True)
    print("\n".join(table(rows)))
    print("\n".join(summary(rows)))
    if args.json:
        Path(args.json).write_text(json.dumps({row["name"]: outcome(row) for row in rows}, indent=1))
    if args.out:
        command = "python tests/corpus/measure.py" + "".join(f" {shlex.quote(a)}" for a in (argv or sys.argv[1:]))
        Path(args.out).write_text(report(rows, versions(), command))
    os.environ["PATH"] = str(stand_ins)  # from here on a batch command is found nowhere, not on the real PATH
    shutil.rmtree(stand_ins, ignore_errors=True)
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Every cluster was closed in its build; the exit hooks of dask-jobqueue, distributed and
    # gpujobqueue would cancel jobs left open with the real PATH's commands once the stand-ins
    # are gone. No job was ever submitted anywhere, so none is run.
    os._exit(status)
