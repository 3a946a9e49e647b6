"""Hostile values in every keyword and every ``gpujobqueue render`` option, on every batch system.

Each cluster keyword (the keyword tables of gpujobqueue/settings/keywords.py, each batch system's
``keywords`` and synonyms, dask-jobqueue's renamed keywords, and the cluster's ``name``)
and each option of the ``render`` command (read from the click command, so a new keyword or
option is covered without editing this file) is given each value of ``HOSTILE``: line breaks of
every kind, command substitutions, a ``;`` command, quotes, a leading ``-``. Each try ends one
of two ways:

- refused: a ``GPUJobQueueError`` (or click's usage error) that names the keyword or option;
- accepted: the script has the lines of the script made with a harmless value of the same
  shape (same count, each of the same kind: shebang, directive, comment, blank, code), passes
  ``bash -n``, and every occurrence of the value sits in a single-quoted shell word, or in a
  word of characters that need no quoting (a validated form), or is the whole text of an
  extra directive (a comment to bash, one line for the batch system).

``job_script_prologue`` and ``job_script_epilogue`` are exempt from the quoting rule: they
are shell lines the user writes, run as written by design. They are still held to one line
each, like every other value.

A few accepted scripts then run for real (bash, and the local batch system) to show the
marker file is never created.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import subprocess
import time

import click
import pytest
from click.testing import CliRunner
from fixtures.sizes import with_job_size

from gpujobqueue import GPUJobQueueError, LocalGPUCluster, ValidationError, WorkersNotStartedError
from gpujobqueue.batch import command_line_keywords
from gpujobqueue.batch import names as batch_names
from gpujobqueue.cli.main import main, render
from gpujobqueue.plan.scripts import job_script_for
from gpujobqueue.runtime.cluster import GPUJobQueueCluster
from gpujobqueue.runtime.factory import cluster_class
from gpujobqueue.settings import keywords as cluster_module

MARKER = "GPUJQ_MARKER"
HOSTILE = {
    "newline": f"ok\ntouch {MARKER}",
    "carriage-return": f"ok\rtouch {MARKER}",
    "nul": f"ok\x00{MARKER}",
    "line-separator": f"ok\u2028touch {MARKER}",
    "paragraph-separator": f"ok\u2029touch {MARKER}",
    "escape": f"ok\x1b]0;{MARKER}\x07",
    "command-substitution": f"$(touch {MARKER})",
    "backticks": f"`touch {MARKER}`",
    "semicolon": f";touch {MARKER}",
    "quotes": f"' \"{MARKER}",
    "leading-dash": f"-{MARKER}",
}
# Shapes a keyword's value can take: a lone string, a list of strings, a mapping's value or key.
SHAPES = {
    "text": lambda v: v,
    "list": lambda v: [v],
    "mapping-value": lambda v: {"GPUJQ_X": v},
    "mapping-key": lambda v: {v: "1"},
}
USER_SHELL_LINES = {"job_script_prologue", "job_script_epilogue", "env_extra"}  # the user's own code, by design
FREE_DIRECTIVES = {"job_extra_directives", "job_extra"}  # free text of one directive line, by design
# Words that are options by design (worker and launcher arguments): one shell word each, quoted
# where needed, and free to start with a dash.
OPTION_WORDS = {"worker_extra_args", "extra", "launcher_args"}
DIRECTIVE_PREFIX = {"slurm": "#SBATCH", "pbs": "#PBS", "lsf": "#BSUB", "sge": "#$", "local": "# gpujobqueue local job"}
SAFE_WORD = re.compile(r"[A-Za-z0-9_.+/=:,@%&|*\[\]()-]+")
DOUBLE_QUOTED_PATH = re.compile(r"(?:[A-Za-z0-9_./+@%=,:-]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})+")


def cluster_keywords(batch: str) -> list[str]:
    cls = cluster_class(batch)
    names = (
        *cluster_module.REQUEST_KEYWORDS,
        *cluster_module.LAUNCH_KEYWORDS,
        *cls.batch_system.keywords,
        *cls.batch_system.synonyms,
        *cluster_module.RENAMED_KEYWORDS,
    )
    return sorted(set(names))


def line_kind(batch: str, i: int, line: str) -> str:
    if i == 0:
        return "shebang"
    if line.startswith(DIRECTIVE_PREFIX[batch]):
        return "directive"
    if not line.strip():
        return "blank"
    return "comment" if line.lstrip().startswith("#") else "code"


def quote_states(line: str) -> list[str]:
    """For each character of a shell line: 'single' inside '...', 'double' inside "...", else 'bare'."""
    states, state, i = [], "bare", 0
    while i < len(line):
        c = line[i]
        if state == "single":
            states.append("single" if c != "'" else "bare")
            state = "bare" if c == "'" else "single"
        elif state == "double":
            if c == "\\" and i + 1 < len(line):
                states += ["double", "double"]
                i += 2
                continue
            states.append("double")
            state = "bare" if c == '"' else "double"
        else:
            if c == "\\" and i + 1 < len(line):
                states += ["bare", "bare"]
                i += 2
                continue
            states.append("bare")
            state = {"'": "single", '"': "double"}.get(c, "bare")
        i += 1
    return states


def word_around(line: str, start: int, end: int) -> str:
    left = start
    while left > 0 and not line[left - 1].isspace():
        left -= 1
    right = end
    while right < len(line) and not line[right].isspace():
        right += 1
    return line[left:right]


def problems_with_accepted(batch: str, keyword: str, script: str, baseline: str) -> list[str]:
    """Why an accepted script is not the baseline's lines with the value quoted or safe; empty if it is."""
    lines, base = script.split("\n"), baseline.split("\n")
    if len(lines) != len(base):
        return [f"{len(lines)} lines where the harmless value gives {len(base)}"]
    problems = []
    for i, (line, base_line) in enumerate(zip(lines, base)):
        kind = line_kind(batch, i, line)
        if kind != line_kind(batch, i, base_line):
            problems.append(
                f"line {i + 1} is a {kind} line where the harmless value gives a "
                f"{line_kind(batch, i, base_line)}: {line!r}"
            )
            continue
        for match in re.finditer(MARKER, line):
            if keyword in USER_SHELL_LINES and kind == "code":
                continue
            if keyword in FREE_DIRECTIVES and kind in ("directive", "comment"):  # local jobs write them as comments
                continue
            states = quote_states(line)
            if kind == "code" and all(state == "single" for state in states[match.start() : match.end()]):
                continue
            if kind == "code" and all(state == "double" for state in states[match.start() : match.end()]):
                # A path the job's shell expands ("$HOME/..."): inside double quotes, only a variable
                # reference could do anything, and the value may hold nothing else of the shell's.
                opening = line.rindex('"', 0, match.start())
                if DOUBLE_QUOTED_PATH.fullmatch(line[opening + 1 : line.index('"', match.end())]):
                    continue
            word = word_around(line, match.start(), match.end()).strip('"')
            if word.startswith("-") and word.lstrip("-").startswith(MARKER) and keyword not in OPTION_WORDS:
                problems.append(
                    f"line {i + 1} ({kind}): the value is a word of its own that starts with '-', read as an "
                    f"option: {line!r}"
                )
            elif not SAFE_WORD.fullmatch(word):
                problems.append(f"line {i + 1} ({kind}) holds the value outside a quoted or safe word: {line!r}")
    return problems


def names_the_field(error: BaseException, *names: str) -> bool:
    field = str(getattr(error, "field", ""))
    text = str(error)
    return any(
        field == n or field.startswith((f"{n}[", f"{n}.")) or re.search(rf"(^|\W){re.escape(n)}(\W|$)", text)
        for n in names
        if n
    )


# The canonical keyword of a synonym or renamed keyword, which the error may name instead.
def canonical(batch: str, keyword: str) -> str:
    return cluster_class(batch).batch_system.synonyms.get(keyword) or cluster_module.RENAMED_KEYWORDS.get(
        keyword, keyword
    )


def bash_syntax_ok(script: str) -> bool:
    return (
        subprocess.run(["bash", "-n"], input=script.encode("utf-8", "surrogateescape"), capture_output=True).returncode
        == 0
    )


def render_or_error(batch: str, keywords: dict, name: str = "w"):
    try:
        return job_script_for(batch, with_job_size(keywords), name=name), None
    except Exception as error:  # anything but a GPUJobQueueError naming the field fails the test below
        return None, error


TRIES: dict[str, int] = {}


@pytest.mark.parametrize("batch", batch_names())
def test_every_keyword_refuses_or_quotes_every_hostile_value(batch):
    started = time.monotonic()
    refused, accepted, failures = 0, 0, []
    accepted_scripts = []
    for keyword in [*cluster_keywords(batch), "name"]:
        shapes = ["text"]
        for shape in ("list", "mapping-value", "mapping-key"):
            if keyword != "name" and render_or_error(batch, {keyword: SHAPES[shape]("ok")})[0] is not None:
                shapes.append(shape)
        for shape in shapes:
            harmless = SHAPES[shape]("ok")
            if keyword == "name":
                baseline = job_script_for(batch, with_job_size({}), name="ok")
            else:
                baseline = render_or_error(batch, {keyword: harmless})[0] or job_script_for(
                    batch, with_job_size({}), name="w"
                )
            for label, value in HOSTILE.items():
                if keyword == "name":
                    script, error = render_or_error(batch, {}, name=value)
                else:
                    script, error = render_or_error(batch, {keyword: SHAPES[shape](value)})
                what = f"{batch} {keyword}={shape}:{label}"
                if error is not None:
                    refused += 1
                    if not isinstance(error, GPUJobQueueError):
                        failures.append(f"{what}: raised {error!r}, not a GPUJobQueueError")
                    elif not names_the_field(error, keyword, canonical(batch, keyword)):
                        failures.append(f"{what}: refused without naming {keyword}: {error}")
                    continue
                accepted += 1
                # The user's shell lines may hold several lines, as dask-jobqueue writes them (issue 42).
                breaks = "\r\x00\u2028\u2029\x1b" if keyword in USER_SHELL_LINES else "\n\r\x00\u2028\u2029\x1b"
                if any(c in value for c in breaks):
                    failures.append(f"{what}: a control character or line break was accepted")
                    continue
                if keyword in USER_SHELL_LINES and "\n" in value:
                    continue  # the user's own code, its lines written as given
                failures += [f"{what}: {p}" for p in problems_with_accepted(batch, keyword, script, baseline)]
                if keyword not in USER_SHELL_LINES:  # the user's own lines need not be valid shell
                    accepted_scripts.append(script)
    # bash reads every accepted script as a script (a stray quote would break it).
    broken = [s for s in accepted_scripts if not bash_syntax_ok(s)]
    TRIES[batch] = refused + accepted
    print(
        f"{batch}: {len(cluster_keywords(batch)) + 1} keywords x {len(HOSTILE)} hostile values: {refused} refused "
        f"naming the field, {accepted} accepted quoted or in a safe form, in {time.monotonic() - started:.1f} s"
    )
    assert not failures, "\n".join(failures[:40])
    assert not broken, broken[0]
    assert refused + accepted >= len(cluster_keywords(batch)) * len(HOSTILE)


def render_options() -> list[click.Option]:
    """Every option of `gpujobqueue render` that takes a value (switches take none)."""
    return [p for p in render.params if isinstance(p, click.Option) and not p.is_flag and not p.is_bool_flag]


# Options whose value is NAME=VALUE: the hostile text goes in the value, then in the name.
def cli_values(option: click.Option, value: str) -> list[str]:
    if option.metavar and "=" in option.metavar:
        return [f"GPUJQ_X={value}", f"{value}=1"]
    return [value]


OPTION_FIELDS = {
    "scheduler_address": "scheduler",
    "client_script": "run",
    "array_jobs": "job_array",
    "environment": "environment",
    "chunk_resources": "chunk_resources",
    "worker_name": "name",
}


def size_options(flag: str) -> list[str]:
    """The smallest job size, leaving out the half that ``flag`` itself gives."""
    keyword = flag[2:].replace("-", "_")
    added = {name: value for name, value in with_job_size({keyword: 1}).items() if name != keyword}
    return [word for name, value in added.items() for word in (f"--{name.replace('_', '-')}", str(value))]


@pytest.mark.parametrize("batch", batch_names())
def test_every_render_option_refuses_or_quotes_every_hostile_value(batch):
    runner = CliRunner()
    started = time.monotonic()
    refused, accepted, failures = 0, 0, []
    for option in render_options():
        flag = option.opts[0]
        field = OPTION_FIELDS.get(option.name, option.name)
        for label, raw in HOSTILE.items():
            for value in cli_values(option, raw):
                harmless = value.replace(raw, "ok")
                size = size_options(flag)
                base = runner.invoke(main, ["render", batch, *size, flag, harmless])
                if base.exit_code != 0:
                    base = runner.invoke(main, ["render", batch, *size])
                result = runner.invoke(main, ["render", batch, *size, flag, value])
                what = f"{batch} {flag} {label}"
                if result.exit_code != 0:
                    refused += 1
                    if result.exception and not isinstance(result.exception, SystemExit):
                        failures.append(f"{what}: crashed with {result.exception!r}")
                    elif not (flag in result.output or names_the_field(Exception(result.output), field, option.name)):
                        failures.append(f"{what}: refused without naming {flag}: {result.output}")
                    continue
                accepted += 1
                # The user's shell lines may hold several lines (dask-jobqueue writes a prologue item as it is: issue
                # 42); every other value, and any other control character, must have been refused.
                breaks = "\r\x00\u2028\u2029\x1b" if field in USER_SHELL_LINES else "\n\r\x00\u2028\u2029\x1b"
                if any(c in raw for c in breaks):
                    failures.append(f"{what}: a control character or line break was accepted")
                    continue
                if field in USER_SHELL_LINES and "\n" in raw:
                    continue  # the user's own code, its lines written as given
                # The script is the standard output (a warning, such as of a job without a GPU count, goes to stderr).
                failures += [f"{what}: {p}" for p in problems_with_accepted(batch, field, result.stdout, base.stdout)]
                if field not in USER_SHELL_LINES and not bash_syntax_ok(result.stdout):
                    failures.append(f"{what}: bash -n refuses the script")
    print(
        f"{batch}: {len(render_options())} render options x {len(HOSTILE)} hostile values: {refused} refused "
        f"naming the option, {accepted} accepted quoted or in a safe form, in {time.monotonic() - started:.1f} s"
    )
    assert not failures, "\n".join(failures[:40])


def test_the_issue_s_injections_are_refused_naming_name():
    from gpujobqueue import SLURMGPUCluster, ValidationError

    with pytest.raises(ValidationError) as info:
        SLURMGPUCluster(name="x\ntouch /tmp/PWNED\n#")
    assert info.value.field == "name"
    result = CliRunner().invoke(
        main, ["render", "slurm", "--worker-mode", "per-device", "--name", "x\ntouch /tmp/x\n#SBATCH --qos=high"]
    )
    assert result.exit_code == 2 and "--name" in result.output and "#SBATCH --qos=high" not in result.output.split("\n")


@pytest.mark.parametrize(
    "keywords",
    [
        {
            "environment": {
                "GPUJQ_X": f"$(touch {MARKER})",
                "GPUJQ_Y": f"`touch {MARKER}`",
                "GPUJQ_Z": f"' \";touch {MARKER}",
            }
        },
        # worker_extra_args are shell words, as dask-jobqueue joins them: quoted, $(...) is one word (unquoted,
        # `$(touch` is no option's value and is refused: tests/test_worker_line_cli.py)
        {
            "worker_extra_args": [f"--preload '$(touch {MARKER})'"],
            "job_extra_directives": [f"--comment=$(touch {MARKER})"],
        },
        {"job_name": "ok", "interface": "lo", "local_directory": "/tmp/ok"},
    ],
    ids=["environment", "worker-args-and-directive", "safe-forms"],
)
@pytest.mark.parametrize("batch", batch_names())
def test_accepted_hostile_scripts_run_without_running_the_value(tmp_path, batch, keywords):
    """The script runs under bash (`false` stands in for python, so no worker starts): whatever
    the values, the marker file is never made, and the exported values arrive verbatim."""
    from gpujobqueue.security.tls import make_credentials

    script = job_script_for(
        batch, {**with_job_size(keywords), "python": "false"}, name="w", scheduler="tls://127.0.0.1:1"
    )
    path = tmp_path / "job.sh"
    path.write_text(script + 'printf "%s\\n" "${GPUJQ_X-}" "${GPUJQ_Z-}" > values\n')
    make_credentials(
        tmp_path / ".config" / "gpujobqueue" / "tls"
    )  # the workers' TLS credentials, so that the script goes on to them
    result = subprocess.run(
        ["bash", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "CUDA_VISIBLE_DEVICES": "0", "HOME": str(tmp_path)},
    )
    assert "credential" not in result.stderr, result.stderr
    assert not (tmp_path / MARKER).exists()
    if "environment" in keywords:
        # `exit` ends the script before the printf: read the values the way the job's shell reads the exports.
        exports = "\n".join(line for line in script.split("\n") if line.startswith("export GPUJQ_"))
        out = subprocess.run(
            ["bash", "-c", exports + '\nprintf "%s|" "$GPUJQ_X" "$GPUJQ_Y" "$GPUJQ_Z"'],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert out.stdout == "|".join(keywords["environment"].values()) + "|"
        assert not (tmp_path / MARKER).exists()


def test_a_local_cluster_job_with_hostile_values_never_runs_them(tmp_path, monkeypatch):
    """The local batch system runs the rendered script for real: a job whose environment and
    extra directive hold command substitutions runs its workers, and no marker appears."""
    from distributed import Client

    from gpujobqueue import LocalGPUCluster

    monkeypatch.chdir(tmp_path)
    hostile = {
        "GPUJQ_X": f"$(touch {tmp_path / MARKER})",
        "GPUJQ_Y": f"`touch {tmp_path / MARKER}`;touch {tmp_path / MARKER}",
    }
    with LocalGPUCluster(
        devices=[0],
        gpus_per_node=1,
        worker_mode="per-device",
        environment=hostile,
        job_extra_directives=[f"$(touch {tmp_path / MARKER})"],
        log_directory=str(tmp_path / "logs"),
    ) as cluster:
        cluster.scale(1)
        with Client(cluster) as client:
            client.wait_for_workers(1, timeout=60)
            seen = client.run(lambda: {k: os.environ.get(k) for k in ("GPUJQ_X", "GPUJQ_Y")})
    assert list(seen.values()) == [hostile]
    assert not (tmp_path / MARKER).exists()


# -- values of the wrong kind: types, numbers out of bounds, digits no one types -------------
#
# Each public keyword of every cluster class, each `render` option, each keyword of the
# cluster's constructor, each dask config setting read when a cluster is made, and the
# arguments of scale, scale_up, adapt and wait_for_workers are given each value of ``WRONG``.
# Each try is refused with a GPUJobQueueError that names the keyword (the command line: exit
# status 2 and the option's name), or is accepted with a value that means what was written:
# text that int() reads as a number though no one writes one so ("1_0" is 10, "٤" is 4) is
# never taken as that number; no None or list inside a mapping is written as its Python
# spelling; no nan, infinity, negative, huge or bytes value is accepted, nor a path longer than
# the system opens; a list or mapping only where the keyword takes one; True only by a switch.
# Never another exception.


def nested(depth: int) -> dict:
    """A mapping ``depth`` levels deep: {"GPUJQ_X": {"GPUJQ_X": ...}}."""
    value: dict = {}
    for _ in range(depth):
        value = {"GPUJQ_X": value}
    return value


WRONG = {
    "empty": "",
    "none-in-list": [None],
    "none-in-mapping": {"GPUJQ_X": None},
    "list-in-mapping": {"GPUJQ_X": []},
    "int": 5,
    "list": [],
    "mapping": {},
    "word": "x",
    "nan": math.nan,
    "inf": math.inf,
    "minus-one": -1,
    "huge": 10**30,
    "underscore": "1_0",
    "arabic-indic-digit": "\u0664",
    "fullwidth-digit": "\uff11",
    "directive": "1\n#SBATCH -A x",
    "substitution": "$(reboot)",
    "5000-characters": "x" * 5000,
    "bytes": b"5",
    "true": True,
    "minus-one-text": "-1",
    "nan-text": "nan",
    # Past Python's 4300 digits an int has no text (ValueError), and 1000 levels are past repr's recursion limit.
    "huge-int": 10**5000,
    "deep": nested(1000),
}
# Text that Python's int() or float() reads as a number, which no one writes for one.
NOT_NUMBERS = ("1_0", "\u0664", "\uff11", "-1", "nan", "inf", "1e400", "9" * 40)
NEVER_ACCEPTED = ("nan", "inf", "minus-one", "huge", "bytes", "none-in-list", "huge-int", "deep")
TAKES_A_LIST = {"set_rmm_allocator_for_libs"}  # a list, or its items joined by commas
TAKES_TRUE = {"walltime_margin"}  # True: the automatic margin
PATHS = {"log_directory", "local_directory", "python"}  # no path opens past 4096 bytes (PATH_MAX)


def read_as_a_number(value: str, script: str, render_with) -> object | None:
    """The number Python's int() makes of ``value`` (``"1_0"`` is 10), where the script ``value``
    gave is that number's and another number's differs (so the keyword reads numbers), and a word
    gives another (so ``value`` was not taken as text that matches nothing); else None."""
    try:
        number = int(value)
    except ValueError:
        return None
    if str(number) == value or render_with("x") == script:  # that number as Python writes it; text
        return None
    for shown, following in ((number, number + 1), (str(number), str(number + 1))):
        same = render_with(shown)
        if same is not None and same == script and render_with(following) != same:
            return shown
    return None


def keyword_kind(batch: str, keyword: str) -> str:
    """The registry's kind of a keyword, of a synonym's or renamed keyword's canonical one."""
    name = canonical(batch, keyword)
    known = {str(k): k.kind for k in command_line_keywords()}
    return known.get(name, cluster_module.TEXT)


def a_yaml_set(value) -> bool:
    """YAML's set (``{'-C h20'}``), a mapping of null values, which a list keyword takes as its keys in order,
    as dask-jobqueue writes what it iterates over."""
    return isinstance(value, dict) and bool(value) and all(item is None for item in value.values())


def holds_none_or_list(value) -> bool:
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(item is None or isinstance(item, list) for item in items)


def why_wrongly_accepted(batch: str, keyword: str, label: str, value, script: str) -> str | None:
    """Why an accepted value does not mean what was written, or None when it does."""
    kind = keyword_kind(batch, keyword)
    if label in NEVER_ACCEPTED:
        return "accepted"
    number = (
        read_as_a_number(value, script, lambda v: render_or_error(batch, {keyword: v})[0])
        if label
        in (
            "underscore",
            "arabic-indic-digit",
            "fullwidth-digit",
            "minus-one-text",
        )
        else None
    )
    if number is not None:
        return f"read {value!r} as {number!r} (the script is the one {number!r} gives)"
    if kind == cluster_module.LIST and a_yaml_set(value):
        return "a YAML set of lines written as its Python spelling" if repr(value) in script else None
    if holds_none_or_list(value):
        return "a None or list inside a mapping was accepted (written as its Python spelling)"
    if isinstance(value, (list, dict)) and kind not in (cluster_module.LIST, cluster_module.PAIRS):
        if keyword not in TAKES_A_LIST:
            return f"a {type(value).__name__} accepted by a keyword of kind {kind}"
    if value is True and kind != cluster_module.SWITCH and keyword not in TAKES_TRUE:
        return f"True accepted by a keyword of kind {kind}"
    if label == "5000-characters" and keyword in PATHS:
        return "a path longer than the system opens was accepted"
    return None


@pytest.mark.parametrize("batch", batch_names())
def test_every_keyword_refuses_a_wrong_value_by_name_or_takes_it_as_written(batch):
    failures, tries = [], 0
    for keyword in cluster_keywords(batch) + ["processes"]:
        for label, value in WRONG.items():
            tries += 1
            script, error = render_or_error(batch, {keyword: value})
            what = f"{batch} {keyword}={label}"
            if error is None:
                why = why_wrongly_accepted(batch, keyword, label, value, script)
                if why:
                    failures.append(f"{what}: {why}")
            elif not isinstance(error, GPUJobQueueError):
                failures.append(f"{what}: raised {error!r}, not a GPUJobQueueError")
            elif not names_the_field(error, keyword, canonical(batch, keyword)):
                failures.append(f"{what}: refused without naming {keyword}: {error}")
    assert not failures, f"{len(failures)} of {tries}:\n" + "\n".join(failures[:60])


RENDER_WRONG_TEXT = ("", "x", "0", "-1", "nan", "inf", "1e400", "9" * 40, "1_0", "\u0664", "\uff11", "x" * 5000)


@pytest.mark.parametrize("batch", batch_names())
def test_every_render_option_refuses_wrong_text_with_status_2_or_takes_it_as_written(batch):
    runner, failures = CliRunner(), []
    for option in render_options():
        flag = option.opts[0]
        for raw in RENDER_WRONG_TEXT:
            for value in cli_values(option, raw):
                result = runner.invoke(main, ["render", batch, *size_options(flag), flag, value])
                what = f"{batch} {flag} {value[:20]!r}"
                if result.exception is not None and not isinstance(result.exception, SystemExit):
                    failures.append(f"{what}: crashed with {result.exception!r}")
                elif result.exit_code == 0:

                    def render_with(number, value=value, raw=raw, flag=flag):
                        written = value.replace(raw, str(number))
                        again = runner.invoke(main, ["render", batch, *size_options(flag), flag, written])
                        return again.output if again.exit_code == 0 else None

                    number = read_as_a_number(raw, result.output, render_with)
                    if number is not None:
                        failures.append(f"{what}: read {raw!r} as {number!r}")
                elif result.exit_code != 2 or flag not in result.output:
                    failures.append(f"{what}: exit status {result.exit_code}, {result.output.strip()[-200:]!r}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:60])


def test_render_refuses_a_run_script_path_longer_than_the_system_takes(tmp_path):
    result = CliRunner().invoke(main, ["render", "slurm", "--cores", "1", "--memory", "1GB", "--run", "/x" * 2500])
    assert result.exit_code == 2 and "--run: " in result.output, (result.exception, result.output)


def constructor_keywords() -> list[str]:
    """The cluster constructor's own keywords; processes, a plan keyword, is tried with the others on
    every batch system."""
    parameters = inspect.signature(GPUJobQueueCluster.__init__).parameters.values()
    return [p.name for p in parameters if (p.kind == p.KEYWORD_ONLY or p.name == "n_workers") and p.name != "processes"]


def make_local_cluster(**keywords):
    """A local cluster (its scheduler in this process, no job submitted) closed at once; None when
    it was made, else what it raised."""
    keywords = {"devices": [0], "worker_mode": "per-device", **keywords}
    try:
        LocalGPUCluster(**keywords).close()
    except Exception as error:
        return error
    return None


def test_every_constructor_keyword_refuses_a_wrong_value_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    failures = []
    for keyword in constructor_keywords():
        for label, value in WRONG.items():
            if keyword == "n_workers" and label in ("int",):
                continue  # a count of workers is accepted and starts them; refusals are what is tried
            error = make_local_cluster(**{keyword: value})
            what = f"{keyword}={label}"
            if error is None:
                if label in NEVER_ACCEPTED or holds_none_or_list(value):
                    failures.append(f"{what}: accepted")
            elif not isinstance(error, GPUJobQueueError):
                failures.append(f"{what}: raised {error!r}, not a GPUJobQueueError")
            elif not names_the_field(error, keyword):
                failures.append(f"{what}: refused without naming {keyword}: {error}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:60])


# dask config read when a cluster is made: each is refused naming its key, before anything starts.
CONFIG_SETTINGS = (
    "job-poll-interval",
    "query-timeout",
    "usage.sample-interval",
    "replace.max-failures",
    "worker-saturation",
    "local.scheduler-options",
    "local.shared-temp-directory",
    "local.max-jobs-per-user",
    "local.job-array",
    "local.scheduler",
    "local.cpu-pool",
)


# Values wrong elsewhere that mean something here: a worker saturation of inf is distributed's "no queuing".
MEANT_HERE = {("worker-saturation", "inf")}


def test_every_setting_read_when_a_cluster_is_made_refuses_a_wrong_value_by_name(tmp_path, monkeypatch):
    import dask

    monkeypatch.chdir(tmp_path)
    failures = []
    for key in CONFIG_SETTINGS:
        for label, value in WRONG.items():
            with dask.config.set({f"gpujobqueue.{key}": value}):
                error = make_local_cluster()
            what = f"gpujobqueue.{key}={label}"
            keyword = key.rpartition(".")[2].replace("-", "_")
            if error is None:
                if (key, label) in MEANT_HERE:
                    continue
                if label in NEVER_ACCEPTED or holds_none_or_list(value) or value in NOT_NUMBERS:
                    failures.append(f"{what}: accepted")
            elif not isinstance(error, GPUJobQueueError):
                failures.append(f"{what}: raised {error!r}, not a GPUJobQueueError")
            elif not names_the_field(error, f"gpujobqueue.{key}", keyword):
                failures.append(f"{what}: refused without naming it: {error}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:60])


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory):
    """One local cluster for the method calls; every value tried is refused before a job is submitted,
    and adapt's looks are an hour apart, so none submits one."""
    folder = tmp_path_factory.mktemp("methods")
    with LocalGPUCluster(
        devices=[0],
        worker_mode="per-device",
        shared_temp_directory=str(folder),
        log_directory=str(folder / "logs"),
    ) as cluster:
        yield cluster


def call_adapt(cluster, **arguments):
    cluster.adapt(**{"interval": "1h", **arguments})
    adaptive = cluster._adaptive
    adaptive.stop()
    return adaptive


# Each method argument, and how to call the method with a value for it.
METHOD_ARGUMENTS = {
    "scale.n": lambda c, v: c.scale(v),
    "scale.jobs": lambda c, v: c.scale(jobs=v),
    "scale.memory": lambda c, v: c.scale(memory=v),
    "scale.cores": lambda c, v: c.scale(cores=v),
    "scale.gpus": lambda c, v: c.scale(gpus=v),
    "scale.cpu_workers": lambda c, v: c.scale(cpu_workers=v),
    "scale_up.n": lambda c, v: c.scale_up(v),
    "scale_up.memory": lambda c, v: c.scale_up(memory=v),
    "scale_up.cores": lambda c, v: c.scale_up(cores=v),
    "adapt.minimum": lambda c, v: call_adapt(c, minimum=v),
    "adapt.maximum": lambda c, v: call_adapt(c, maximum=v),
    "adapt.minimum_jobs": lambda c, v: call_adapt(c, minimum_jobs=v),
    "adapt.maximum_jobs": lambda c, v: call_adapt(c, maximum_jobs=v),
    "adapt.minimum_gpus": lambda c, v: call_adapt(c, minimum_gpus=v),
    "adapt.maximum_gpus": lambda c, v: call_adapt(c, maximum_gpus=v),
    "adapt.interval": lambda c, v: call_adapt(c, interval=v),
    "adapt.wait_count": lambda c, v: call_adapt(c, wait_count=v),
    "adapt.target_duration": lambda c, v: call_adapt(c, target_duration=v),
    "wait_for_workers.n_workers": lambda c, v: c.wait_for_workers(v, timeout=0.2),
    "wait_for_workers.timeout": lambda c, v: c.wait_for_workers(1, timeout=v),
}
# Accepted, these wait or submit: the methods' own tests try them.
METHOD_SKIPS = {
    ("scale.n", "int"),
    ("scale.jobs", "int"),
    ("scale.memory", "int"),
    ("scale.cores", "int"),
    ("scale.gpus", "int"),
    ("scale_up.n", "int"),
    ("scale_up.memory", "int"),
    ("scale_up.cores", "int"),
    ("wait_for_workers.timeout", "int"),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("method", METHOD_ARGUMENTS)
def test_every_method_argument_refuses_a_wrong_value_by_name(local_cluster, method):
    call, argument = METHOD_ARGUMENTS[method], method.partition(".")[2]
    failures = []
    for label, value in WRONG.items():
        if (method, label) in METHOD_SKIPS:
            continue
        what = f"{method}({label})"
        try:
            outcome = call(local_cluster, value)
        except WorkersNotStartedError:
            outcome = None  # accepted, and waited for the timeout
        except GPUJobQueueError as error:
            if not names_the_field(error, argument):
                failures.append(f"{what}: refused without naming {argument}: {error}")
            continue
        except Exception as error:  # at once: scale_up(inf) of distributed's SpecCluster never returns
            pytest.fail(f"{what}: raised {error!r}, not a GPUJobQueueError")
        if method.startswith("adapt.maximum") and label == "inf":  # no most
            if outcome.maximum != math.inf:
                failures.append(f"{what}: accepted as maximum={outcome.maximum}")
        elif label in NEVER_ACCEPTED or holds_none_or_list(value) or value in NOT_NUMBERS:
            failures.append(f"{what}: accepted")
        elif method.startswith("adapt.m"):  # only a count, taken as written
            bound = outcome.minimum if "minimum" in method else outcome.maximum
            if value != 5 or bound != 5 * (local_cluster.workers_per_job if method.endswith("_jobs") else 1):
                failures.append(f"{what}: accepted as minimum={outcome.minimum}, maximum={outcome.maximum}")
        assert not local_cluster.worker_spec, f"{what} submitted a job"
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"minimum": 5, "maximum": 1}, "maximum"),
        ({"minimum_jobs": 3, "maximum_jobs": 2}, "maximum_jobs"),
        ({"minimum": -1}, "minimum"),
        ({"maximum": -1}, "maximum"),
        ({"maximum_jobs": -1}, "maximum_jobs"),
        ({"maximum": math.nan}, "maximum"),
    ],
)
def test_adapt_refuses_a_maximum_below_its_minimum_and_negative_counts(local_cluster, arguments, field):
    with pytest.raises(ValidationError) as info:
        call_adapt(local_cluster, **arguments)
    assert info.value.field == field


def test_adapt_takes_its_bounds_as_written(local_cluster):
    assert (call_adapt(local_cluster, minimum=2, maximum=4).minimum, local_cluster._adaptive.maximum) == (2, 4)
    assert call_adapt(local_cluster, maximum=math.inf).maximum == math.inf
    assert (call_adapt(local_cluster, minimum_jobs=1, maximum_jobs=3).maximum, local_cluster._adaptive.minimum) == (
        3,
        1,
    )


def test_scale_up_counts_gpu_workers_as_scale_does(local_cluster):
    """distributed's scale_up (SpecCluster.scale under another name) skipped gpujobqueue's
    scale: its counts unchecked, a count past the bound never returned."""
    with pytest.raises(ValidationError) as info:
        local_cluster.scale_up(10**5)
    assert info.value.field == "n"
    assert not local_cluster.worker_spec


@pytest.mark.parametrize("value", [-1, 0, math.nan, "1_0", "\u0664"])
def test_wait_for_workers_refuses_a_count_that_is_not_one_naming_n_workers(local_cluster, value):
    with pytest.raises(ValidationError) as info:
        local_cluster.wait_for_workers(value, timeout=1)
    assert info.value.field == "n_workers"


@pytest.mark.parametrize(
    "setting, value",
    [("adapt.interval", ""), ("adapt.interval", "1_0s"), ("adapt.wait-count", "\u0664"), ("progress", "sometimes")],
)
def test_a_wrong_setting_read_by_a_method_is_refused_naming_it(local_cluster, setting, value):
    import dask

    with dask.config.set({f"gpujobqueue.{setting}": value}), pytest.raises(ValidationError) as info:
        if setting == "progress":
            local_cluster.wait_for_workers(1, timeout=0.2)
        else:
            call_adapt(local_cluster, interval=None)  # the configured interval
    assert info.value.field == f"gpujobqueue.{setting}"


# -- values accepted but read wrong (issue 29, point 11) --------------------------------------


@pytest.mark.parametrize(
    "keywords, field",
    [
        ({"nodes": "1_0", "launcher": "srun"}, "nodes"),
        ({"gpus_per_node": "\u0664"}, "gpus_per_node"),
        ({"cpus_per_gpu": "\uff11"}, "cpus_per_gpu"),
        ({"walltime": "\u0664"}, "walltime"),
        ({"walltime": "1_0:00:00"}, "walltime"),
        ({"memory_per_gpu": "1_0GB"}, "memory_per_gpu"),
        ({"memory_per_gpu": ""}, "memory_per_gpu"),
        ({"death_timeout": ""}, "death_timeout"),
        ({"death_timeout": "\u0664"}, "death_timeout"),
        ({"walltime_margin": "1_0"}, "walltime_margin"),
        ({"job_mem": "\u0664G"}, "job_mem"),
        ({"environment": {"A": None}}, "environment[A]"),
        ({"environment": {"A": ["x"]}}, "environment[A]"),
        ({"protocol": "inproc"}, "protocol"),
        ({"protocol": "ws"}, "protocol"),
        ({"protocol": "wss://"}, "protocol"),
        ({"gpu_request": ""}, "gpu_request"),
        ({"job_extra_directives": 5}, "job_extra_directives"),
    ],
    ids=lambda v: "-".join(f"{k}={v!r}"[:24] for k, v in v.items()) if isinstance(v, dict) else v,
)
def test_a_value_python_would_misread_is_refused_naming_the_field(keywords, field):
    with pytest.raises(ValidationError) as info:
        job_script_for("slurm", with_job_size(keywords), name="w")
    assert info.value.field == field, info.value


@pytest.mark.parametrize("protocol, written", [("tcp", "tcp"), ("tcp://", "tcp"), ("ucx", "ucx"), ("ucxx", "ucx")])
def test_the_protocols_a_batch_job_can_use_are_accepted(protocol, written):
    script = job_script_for("slurm", with_job_size({"protocol": protocol}), name="w", tls=False)
    assert f"--protocol {written}" in script


def test_numbers_written_as_users_write_them_are_accepted():
    script = job_script_for(
        "slurm",
        {"nodes": "2", "gpus_per_node": 4, "cpus_per_gpu": "8", "memory_per_gpu": " 60 GiB ", "launcher": "srun"}
        | {"walltime": "01:30:00", "death_timeout": "2m", "environment": {"OMP_NUM_THREADS": 8}},
        name="w",
    )
    lines = script.split("\n")
    assert {"#SBATCH --nodes=2", "#SBATCH --gpus-per-node=4", "#SBATCH --time=01:30:00"} <= set(lines)
    assert "export OMP_NUM_THREADS=8" in lines and "--death-timeout 120" in script
