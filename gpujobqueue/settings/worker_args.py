"""The worker arguments users write (``worker_extra_args``, dask-jobqueue's ``extra``), split as dask-jobqueue
joins them (``["--resources GPU=1"]`` is two words) and checked against the options of the worker command that
runs them; the worker lifetime options, which ``dask cuda worker`` does not take, become the lifetime config that
every job script sets, and ``--resources`` is merged with the GPU resource.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError, shown
from .keywords import LAUNCH, parse_keyword
from .limits import MAX_LIST_ITEMS, MAX_WALLTIME_SECONDS
from .validation import SAFE_PATH, matching, parse_lines, parse_seconds, path_text

DASK_CUDA_WORKER = "dask_cuda.cli"
DASK_WORKER = "distributed.cli.dask_worker"

_COMMON_VALUE_OPTIONS = (
    "--contact-address",
    "--dashboard-address",
    "--dashboard-prefix",
    "--death-timeout",
    "--host",
    "--interface",
    "--listen-address",
    "--local-directory",
    "--memory-limit",
    "--name",
    "--nthreads",
    "--pid-file",
    "--preload",
    "--protocol",
    "--resources",
    "--scheduler-file",
    "--tls-ca-file",
    "--tls-cert",
    "--tls-key",
    "--worker-class",
    "--worker-port",
)
_COMMON_SWITCHES = ("--dashboard", "--no-dashboard")
# The options of each worker CLI, True for one that takes a value (tests/script/test_worker_line_cli.py holds
# them equal to the installed CLIs' own click parameters).
WORKER_CLI_OPTIONS: dict[str, dict[str, bool]] = {
    DASK_CUDA_WORKER: {
        **dict.fromkeys(_COMMON_VALUE_OPTIONS, True),
        **dict.fromkeys(_COMMON_SWITCHES, False),
        **dict.fromkeys(
            (
                "--cudf-spill-stats",
                "--device-memory-limit",
                "--multiprocessing-method",
                "--pre-import",
                "--rmm-log-directory",
                "--rmm-maximum-pool-size",
                "--rmm-pool-size",
                "--rmm-release-threshold",
                "--set-rmm-allocator-for-libs",
            ),
            True,
        ),
        **dict.fromkeys(
            (
                f"--{on}-{name}"
                for name in ("cudf-spill", "infiniband", "nvlink", "rdmacm", "tcp-over-ucx")
                for on in ("enable", "disable")
            ),
            False,
        ),
        **dict.fromkeys(
            (f"--{no}rmm-{name}" for name in ("async", "managed-memory", "track-allocations") for no in ("", "no-")),
            False,
        ),
    },
    DASK_WORKER: {
        **dict.fromkeys(_COMMON_VALUE_OPTIONS, True),
        **dict.fromkeys(_COMMON_SWITCHES, False),
        **dict.fromkeys(
            ("--lifetime", "--lifetime-stagger", "--nanny-port", "--nworkers", "--preload-nanny", "--scheduler-sni"),
            True,
        ),
        **dict.fromkeys(("--lifetime-restart", "--no-lifetime-restart", "--nanny", "--no-nanny", "--version"), False),
    },
}
# dask-cuda's options that a keyword sets (its declared option, dask-cuda's spelling), for a dask worker told
# to take them.
_DASK_CUDA_KEYWORDS = {
    option: str(keyword)
    for keyword in LAUNCH
    for declared in keyword.options
    for option in declared.split("/")
    if option in WORKER_CLI_OPTIONS[DASK_CUDA_WORKER] and option not in WORKER_CLI_OPTIONS[DASK_WORKER]
}
# What to give instead of a dask worker option that dask cuda worker does not take (--nanny and --no-nanny never
# reach it: take_worker_spellings takes them out).
_INSTEAD_OF_DASK_WORKER_OPTIONS = {
    "--nworkers": "dask-cuda starts one worker per GPU: the GPUs per node (gpus_per_node, or processes) set them",
    "--preload-nanny": "dask cuda worker's nannies take their preloads from dask config: give "
    "environment={'DASK_DISTRIBUTED__NANNY__PRELOAD': ...}, or worker_mode='per-device'",
    "--nanny-port": "worker_mode='per-device' (distributed's dask worker) takes it",
    "--scheduler-sni": "worker_mode='per-device' (distributed's dask worker) takes it",
    "--version": "leave it out",
}
LIFETIME_OPTIONS = ("--lifetime", "--lifetime-stagger", "--lifetime-restart", "--no-lifetime-restart")
_RESOURCE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]{0,63})=([0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})")


@dataclass(frozen=True)
class WorkerArguments:
    """``worker_extra_args`` read as dask-jobqueue's worker line reads them; None where not given."""

    args: tuple[str, ...] = ()  # the words the worker line carries, one shell word each, in the user's order
    resources: tuple[tuple[str, str], ...] = ()  # the last --resources' name=amount pairs (the worker CLIs keep it)
    lifetime: int | None = None  # --lifetime and --lifetime-stagger in whole seconds, rounded up
    lifetime_stagger: int | None = None
    lifetime_restart: bool | None = None  # --lifetime-restart (True) or --no-lifetime-restart (False)


# The parts of shell words as shlex.split reads them (POSIX): blanks between words, a single-quoted
# part, a double-quoted one (where \ escapes only \ and "), an escaped character, bare characters; anything
# else is a quote left open or a \ at the end. shlex builds each word a character at a time, a new
# string each time: 170 s for a 1 MB word; this reads a part at a time.
_SHELL_PART = re.compile(
    r"""(?P<blank>[ \t\r\n]+)|'(?P<single>[^']*)'|"(?P<double>[^"\\]*(?:\\.[^"\\]*)*)"|\\(?P<escaped>.)"""
    r"""|(?P<bare>[^ \t\r\n'"\\]+)|(?P<open>.)""",
    re.DOTALL,
)
_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\([\\"])')


def _shell_words(text: str) -> list[str]:
    """``shlex.split(text)``, in time linear in the text; a ValueError for a quote left open."""
    words: list[str] = []
    word: list[str] | None = None
    for part in _SHELL_PART.finditer(text):
        kind = part.lastgroup
        if kind == "blank":
            if word is not None:
                words.append("".join(word))
            word = None
        elif kind == "open":
            raise ValueError("no closing quotation" if part[0] in "'\"" else "no escaped character")
        else:
            word = [] if word is None else word
            word.append(_DOUBLE_QUOTED_ESCAPE.sub(r"\1", part[kind]) if kind == "double" else part[kind])
    return words if word is None else [*words, "".join(word)]


def split_words(field_name: str, value: Any) -> list[str]:
    """The shell words of a list of arguments joined with spaces, as dask-jobqueue joins them; a ValidationError
    for a list that is not of one-line strings, a quote left open, more than ``MAX_LIST_ITEMS`` words."""
    words = []
    for item in parse_lines(field_name, value):
        try:
            words += _shell_words(item)
        except ValueError as error:
            raise ValidationError(field_name, f"{shown(item)} cannot be read as shell words ({error})") from None
        if len(words) > MAX_LIST_ITEMS:
            raise ValidationError(field_name, f"more than {MAX_LIST_ITEMS} words; gpujobqueue accepts at most that")
    return words


# Options of the batch systems' submit commands that users put among the worker arguments by mistake.
_BATCH_DIRECTIVE_OPTIONS = frozenset(
    "--gres --gpus --gpus-per-node --gpus-per-task --gpu --time --partition --account --qos --constraint --nodes "
    "--ntasks --ntasks-per-node --cpus-per-task --cpus-per-gpu --mem --mem-per-cpu --mem-per-gpu --exclusive "
    "--job-name --output --error --array --reservation --exclude --nodelist -l -q -A -P -W -R -pe -gpu -N".split()
)


def take_worker_spellings(settings: dict[str, Any], explicit: Any) -> None:
    """The worker CLI's spellings that have one meaning here, taken out of ``worker_extra_args`` (in place), as
    dask-jobqueue users write them: ``--no-nanny`` is ``nanny=False`` (refused beside ``nanny=True``), ``--nanny``
    what the workers do anyway, ``--nanny-port`` asks for the per-device mode (a nanny per worker: distributed's
    ``dask worker``); a batch directive there is refused, naming ``job_extra_directives``."""
    given = settings.get("worker_extra_args")
    if not given:
        return
    kept = []
    for word in split_words("worker_extra_args", given):
        name = word.partition("=")[0]
        if name in ("--nanny", "--no-nanny"):
            wanted = name == "--nanny"
            if explicit.get("nanny") is not None and parse_keyword("nanny", explicit["nanny"]) != wanted:
                raise ValidationError(
                    "worker_extra_args", f"{name} and nanny={explicit['nanny']!r} say two things; give one"
                )
            settings["nanny"] = wanted
            continue
        if name in _BATCH_DIRECTIVE_OPTIONS:
            raise ValidationError(
                "worker_extra_args",
                f"{shown(word)} is a batch directive, not a worker option: give it in job_extra_directives",
            )
        if name == "--nanny-port" and explicit.get("worker_mode") is None:
            settings["worker_mode"] = "per-device"
        kept.append(shlex.quote(word))
    settings["worker_extra_args"] = kept or None


def read_worker_args(field_name: str, value: Any, command: str | None = None) -> WorkerArguments:
    """Read ``worker_extra_args`` (``field_name``) for the worker ``command`` (``python -m`` module).

    With ``command`` one of :data:`WORKER_CLI_OPTIONS`, an option that command does not take, or a
    word that is no option's value, is refused (a ValidationError), saying what to give instead; with
    another command (a ``worker_command`` of the user's) the words are only split. An unknown option
    after a ``--preload`` is left to that preload, which the worker CLI hands them to.
    """
    words = split_words(field_name, value)
    options = WORKER_CLI_OPTIONS.get(command or "")
    args: list[str] = []
    shared: list[str] = []  # the words of options both worker CLIs take, whose values dask worker's parser reads
    found: dict[str, Any] = {}
    preloaded = any(word == "--preload" or word.startswith("--preload=") for word in words)
    i = 0
    while i < len(words):
        word = words[i]
        name, has_value, inline = word.partition("=")
        takes_value = name in ("--lifetime", "--lifetime-stagger", "--resources") or bool(options and options.get(name))
        if takes_value and not has_value:
            if i + 1 == len(words):
                raise ValidationError(field_name, f"{name} needs a value")
            inline, i = words[i + 1], i + 1
        i += 1
        if name in LIFETIME_OPTIONS or name == "--resources":
            found[name.removeprefix("--no-").removeprefix("--")] = (name, inline)
            continue
        if options is not None and not preloaded:
            _check_word(field_name, name, word, options, command)
        args += [word] if has_value or not takes_value else [word, inline]
        if options is not None and not preloaded and name in WORKER_CLI_OPTIONS[DASK_WORKER]:
            shared += [word] if has_value or not takes_value else [word, inline]
    _check_values(field_name, shared)
    return WorkerArguments(
        args=tuple(args),
        resources=_resources(field_name, found["resources"][1]) if "resources" in found else (),
        lifetime=_seconds(field_name, found.get("lifetime"), 1),
        lifetime_stagger=_seconds(field_name, found.get("lifetime-stagger"), 0),
        lifetime_restart=None
        if "lifetime-restart" not in found
        else found["lifetime-restart"][0] == "--lifetime-restart",
    )


def _check_values(field_name: str, words: list[str]) -> None:
    """Refuse a value that the worker would refuse, read by distributed's own ``dask worker`` parser
    (click's types: ``--nthreads 1;id``), and ``--death-timeout`` as the worker reads it (a dask
    duration); dask-cuda's worker declares these options alike. Nothing is started."""
    if not words:
        return
    import click
    from dask.utils import parse_timedelta
    from distributed.cli.dask_worker import main as dask_worker

    try:
        context = dask_worker.make_context("dask worker", ["tcp://127.0.0.1:1", *words])
        if context.params.get("death_timeout") is not None:
            parse_timedelta(context.params["death_timeout"])
    except click.ClickException as error:
        raise ValidationError(
            field_name, f"{shown(' '.join(words))}: dask worker says: {error.format_message()}"
        ) from None
    except (ValueError, KeyError, TypeError) as error:
        raise ValidationError(
            field_name, f"{shown(' '.join(words))}: --death-timeout is not a duration ({error})"
        ) from None


def _check_word(field_name: str, name: str, word: str, options: dict[str, bool], command: str | None) -> None:
    """Refuse a word of ``worker_extra_args`` that ``command``'s CLI would refuse, saying what to use."""
    if name in options and (name == word or options[name]):
        return
    cli = "dask cuda worker" if command == DASK_CUDA_WORKER else "dask worker"
    if name in options:  # a switch given a value
        raise ValidationError(field_name, f"{shown(word)}: {name} is a switch of {cli} and takes no value")
    if not word.startswith("-"):
        raise ValidationError(
            field_name,
            f"{shown(word)} is no option's value; {cli} would read it as its scheduler or a preload's argument",
        )
    if command == DASK_CUDA_WORKER:
        instead = _INSTEAD_OF_DASK_WORKER_OPTIONS.get(name)
    elif name in _DASK_CUDA_KEYWORDS:
        instead = f"it is dask-cuda's: give the keyword {_DASK_CUDA_KEYWORDS[name]} with worker_mode='dask-cuda'"
    elif name in WORKER_CLI_OPTIONS[DASK_CUDA_WORKER]:
        instead = "it is dask-cuda's: give worker_mode='dask-cuda'"
    else:
        instead = None
    raise ValidationError(
        field_name,
        f"{shown(word)}: {cli} (python -m {command}) has no option {name}; "
        + (instead or f"its options are {', '.join(sorted(options))}"),
    )


def _resources(field_name: str, text: str) -> tuple[tuple[str, str], ...]:
    """``--resources``' value (``GPU=1,ssdGB=200`` or ``"GPU=1 ssdGB=200"``) as pairs, each amount a
    decimal number in the digits 0-9 (the worker CLIs read them as floats)."""
    pairs, parts = {}, text.replace(",", " ").split()
    if len(parts) > MAX_LIST_ITEMS:
        raise ValidationError(field_name, f"--resources names more than {MAX_LIST_ITEMS} resources")
    for part in parts:
        match = _RESOURCE.fullmatch(part)
        if not match:
            raise ValidationError(
                field_name, f"--resources {shown(text)}: {shown(part)} is not name=amount (GPU=1, ssdGB=200)"
            )
        pairs[match[1]] = match[2]
    if not pairs:
        raise ValidationError(field_name, f"--resources {shown(text)} names no resource; give name=amount (GPU=1)")
    return tuple(pairs.items())


def _seconds(field_name: str, given: tuple[str, str] | None, fewest: int) -> int | None:
    """A lifetime option's value in whole seconds, rounded up; a switch's ``(name, "")`` as given."""
    if given is None:
        return None
    name, text = given
    try:
        return parse_seconds(field_name, text, fewest, MAX_WALLTIME_SECONDS)
    except ValidationError as error:
        raise ValidationError(field_name, f"{name} {error.message}") from None


# A word of the launcher prefix in ``python``: an option or its value, no shell character.
_PREFIX_WORD = re.compile(r"[A-Za-z0-9_./+@%=,:-]+")


def parse_python(value: Any, launcher: str) -> tuple[tuple[str, ...], str]:
    """dask-jobqueue's ``python``: the interpreter, after a launcher prefix (``srun -n 1 -c 8 python``); a
    ValidationError for shell characters, or a prefix beside a ``launcher`` that starts the workers already."""
    words = split_words("python", [path_text("python", value)])
    if not words:
        raise ValidationError("python", "no interpreter given")
    accepted = "an interpreter name or path, after launcher words, without shell characters"
    python = matching("python", words[-1], SAFE_PATH, accepted)
    prefix = tuple(matching("python", word, _PREFIX_WORD, accepted) for word in words[:-1])
    if prefix and launcher != "direct":
        raise ValidationError(
            "python",
            f"{' '.join(prefix)!r} before the interpreter would start the workers inside launcher {launcher!r}, "
            "which starts them on each of the job's nodes already; give python the interpreter alone",
        )
    return prefix, python
