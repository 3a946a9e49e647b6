"""What one batch job asks of the batch system, parsed and validated (no I/O)."""

from __future__ import annotations

import datetime
import math
import os
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from dask.utils import parse_bytes, parse_timedelta

from .errors import ValidationError
from .limits import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_MEMORY_BYTES, MAX_NODES, MAX_WALLTIME_SECONDS
from .nic_affinity import MAP_VARIABLE as NIC_MAP_VARIABLE
from .nic_affinity import parse_pinned_map

GPU_REQUEST_STYLES = ("gpus-per-node", "gres", "none")  # SLURM's; each batch system names its own

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")
_SAFE_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}")
# SLURM constraint expressions: features joined by & | , with counts and brackets.
_CONSTRAINT = re.compile(r"(?!-)[A-Za-z0-9_.&|,:*\[\]()-]{1,256}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(r"(?!-)[A-Za-z0-9_./+@%=,:-]+")
DEFAULT_SHEBANG = "#!/usr/bin/env bash"
DEFAULT_WALLTIME = "01:00:00"  # every job ends: an allocation nobody closes burns hours at most
_WALLTIME_FORMS = "HH:MM:SS, D-HH:MM:SS, D-HH:MM, D-HH, MM:SS or MM"


def given_or(value: Any, default: Any) -> Any:
    """``value`` unless it was not given (None): ``0`` and ``""`` are given, and checked."""
    return default if value is None else value


def _one_line(field_name: str, value: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(field_name, f"expected a string, got {type(value).__name__} {value!r}")
    if any(c in value for c in "\n\r\0"):
        raise ValidationError(field_name, f"{value!r} must be a single line (no newline, carriage return or NUL)")
    # Other control characters and Unicode's line separators: some readers of the script
    # (Python's splitlines, editors) break lines there, and no value needs them.
    if any((unicodedata.category(c) == "Cc" and c != "\t") or c in "\u2028\u2029" for c in value):
        raise ValidationError(field_name, f"{value!r} holds a control character or line separator; give printable text")
    return value


def _matching(field_name: str, value: Any, pattern: re.Pattern, accepted: str) -> str:
    value = _one_line(field_name, value)
    if not pattern.fullmatch(value):
        raise ValidationError(field_name, f"{value!r} is not accepted; use {accepted}")
    return value


def parse_constraint(field_name: str, value: Any) -> str:
    """A SLURM ``--constraint``: feature names joined by ``& | ,``, with counts and brackets."""
    return _matching(
        field_name, value, _CONSTRAINT, "SLURM feature names joined by & | , (no spaces or shell characters)"
    )


def parse_name(field_name: str, value: Any) -> str:
    """A job or worker name: letters, digits and ``_ . + -``, starting with a letter or digit."""
    return _matching(
        field_name, value, _SAFE_NAME, "letters, digits and _ . + - (at most 128, no spaces or shell characters)"
    )


def parse_word(field_name: str, value: Any) -> str:
    """An account, partition or QoS name."""
    return _matching(field_name, value, _SAFE_WORD, "letters, digits and _ . + - (no spaces or shell characters)")


def parse_positive_int(field_name: str, value: Any, maximum: int | None = None) -> int:
    """A strictly positive integer (``True``/``False`` refused), at most ``maximum`` when given."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValidationError(field_name, f"expected a positive integer, got {value!r}")
    if (
        isinstance(value, str) and len(value.strip()) > 20
    ):  # int() of a long digit string is slow, and no count needs it
        raise ValidationError(field_name, f"expected a positive integer, got {value[:40]!r}...")
    try:
        number = int(value)
    except ValueError:
        raise ValidationError(field_name, f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise ValidationError(field_name, f"expected a positive integer (1 or more), got {value!r}")
    if maximum is not None and number > maximum:
        raise ValidationError(
            field_name, f"{number} is more than the {maximum} gpujobqueue accepts (gpujobqueue.limits)"
        )
    return number


def parse_bool(field_name: str, value: Any) -> bool:
    """``True``/``False``, or their spellings in config files and environment variables."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise ValidationError(field_name, f"expected true or false, got {value!r}")


# The automatic walltime margin: 5 % of the walltime, within these bounds (seconds), and
# never more than a quarter of the walltime, so short jobs spend most of it working.
MARGIN_FRACTION = 20  # 1/20 = 5 %
MARGIN_FEWEST_SECONDS = 20
MARGIN_MOST_SECONDS = 600


def default_walltime_margin(walltime: int) -> int:
    """Seconds before the walltime at which workers retire: 5 % of the walltime, at least 20 s
    and at most 10 minutes, and never more than a quarter of the walltime.

    Examples
    --------
    >>> [default_walltime_margin(w) for w in (60, 120, 600, 3600, 86400)]
    [15, 20, 30, 180, 600]
    """
    share = min(max(walltime // MARGIN_FRACTION, MARGIN_FEWEST_SECONDS), MARGIN_MOST_SECONDS)
    return min(share, walltime // 4)


def parse_walltime_margin(field_name: str, value: Any, walltime: int | None) -> int | None:
    """``walltime_margin``: ``"auto"``/None (the default), False or 0 (off), or a duration
    (``"5m"``, ``"00:05:00"``, seconds) shorter than the walltime; a job without a walltime
    (``walltime`` None) takes none but the default or off."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
        return None
    if (
        value is False
        or value == 0
        or (isinstance(value, str) and value.strip().lower() in ("false", "off", "0", "no"))
    ):
        return 0
    if isinstance(value, bool):  # True: the default
        return None
    if walltime is None:
        raise ValidationError(
            field_name, f"{value!r}: these jobs have no walltime for the workers to retire before; give walltime too"
        )
    try:
        if isinstance(value, str) and len(value) > 40:
            raise ValueError(value)
        seconds = (
            int(value)
            if isinstance(value, (int, float)) or str(value).strip().isdigit()
            else int(parse_timedelta(str(value).strip()))
        )
    except (ValueError, KeyError, TypeError, OverflowError):
        try:
            seconds = parse_walltime(field_name, value)
        except ValidationError:
            raise ValidationError(
                field_name, f"{value!r} is not a duration; use 'auto', False, seconds, '5m' or 'HH:MM:SS'"
            ) from None
    if not 0 <= seconds < walltime:
        raise ValidationError(
            field_name,
            f"{value!r}: the workers must retire after they start and before the walltime "
            f"({format_walltime(walltime)}) ends the job",
        )
    return seconds


def parse_walltime(field_name: str, value: Any) -> int:
    """Parse a batch walltime into seconds.

    Accepts SLURM's forms: ``HH:MM:SS``, ``D-HH:MM:SS``, ``D-HH:MM``, ``D-HH``, ``MM:SS``
    and ``MM`` (minutes), or a :class:`datetime.timedelta`.

    Examples
    --------
    >>> parse_walltime("walltime", "01:30:00")
    5400
    >>> parse_walltime("walltime", "1-00:00:00")
    86400
    >>> parse_walltime("walltime", "45")
    2700
    """
    if isinstance(value, datetime.timedelta):
        seconds = int(value.total_seconds())
        if seconds < 1:
            raise ValidationError(field_name, f"{value!r} is not a positive duration")
        return _bounded_walltime(field_name, value, seconds)
    text = _one_line(field_name, value).strip()
    match = re.fullmatch(r"(?:(\d{1,12})-)?(\d{1,12})(?::(\d{1,12}))?(?::(\d{1,12}))?", text)
    if not match:
        raise ValidationError(field_name, f"{value!r} is not a walltime; use {_WALLTIME_FORMS}")
    days, first, second, third = match.groups()
    numbers = [int(x) for x in (first, second, third) if x is not None]
    if days is not None:  # D-HH[:MM[:SS]]
        hours, minutes, seconds = (numbers + [0, 0])[:3]
        bounds_ok = hours < 24 and minutes < 60 and seconds < 60
        total = int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    elif len(numbers) == 3:  # HH:MM:SS
        hours, minutes, seconds = numbers
        bounds_ok = minutes < 60 and seconds < 60
        total = hours * 3600 + minutes * 60 + seconds
    elif len(numbers) == 2:  # MM:SS
        minutes, seconds = numbers
        bounds_ok = seconds < 60
        total = minutes * 60 + seconds
    else:  # MM
        bounds_ok = True
        total = numbers[0] * 60
    if not bounds_ok:
        raise ValidationError(
            field_name, f"{value!r} has a field out of range; use {_WALLTIME_FORMS} with minutes and seconds below 60"
        )
    if total < 1:
        raise ValidationError(field_name, f"{value!r} is not a positive duration")
    return _bounded_walltime(field_name, value, total)


def _bounded_walltime(field_name: str, value: Any, seconds: int) -> int:
    if seconds > MAX_WALLTIME_SECONDS:
        raise ValidationError(
            field_name,
            f"{value!r} is longer than {MAX_WALLTIME_SECONDS // 86400} days, the longest walltime gpujobqueue accepts",
        )
    return seconds


def format_walltime(seconds: int) -> str:
    """Seconds as ``HH:MM:SS``, or ``D-HH:MM:SS`` from one day on."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def format_hours_walltime(seconds: int) -> str:
    """Seconds as ``HH:MM:SS`` with hours past 24 (PBS ``walltime``, Grid Engine ``h_rt``)."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


def parse_size(field_name: str, value: Any, maximum: int = MAX_MEMORY_BYTES) -> int:
    """Parse a memory size such as ``60GiB``, ``60 GB`` or a number of bytes into bytes (at most ``maximum``)."""
    if isinstance(value, bool):
        raise ValidationError(field_name, f"expected a size such as '60GiB', got {value!r}")
    if isinstance(value, (int, float)):
        number = value
    else:
        text = _one_line(field_name, value)
        try:
            if len(text) > 40:
                raise ValueError(text)
            number = parse_bytes(text)
        except (ValueError, TypeError, OverflowError):
            raise ValidationError(
                field_name, f"{value!r} is not a size; use a number with a unit such as '60GiB', '512 MB' or '2TB'"
            ) from None
    if not math.isfinite(number):  # nan and inf, given or parsed from '1e400'
        raise ValidationError(
            field_name, f"{value!r} is not a size; give a finite number of bytes or a size such as '60GiB'"
        )
    number = int(number)
    if number < 1:
        raise ValidationError(field_name, f"{value!r} is not a positive size")
    if number > maximum:
        raise ValidationError(
            field_name, f"{value!r} is more than {maximum // 2**40} TiB, the largest size gpujobqueue accepts here"
        )
    return number


def parse_path(field_name: str, value: Any) -> str:
    """A directory path, made absolute after ``~`` expansion; no spaces or shell characters."""
    text = _one_line(field_name, os.fspath(value) if isinstance(value, os.PathLike) else value)
    text = os.path.abspath(os.path.expanduser(text))
    return _matching(
        field_name, text, _PATH, "a path of letters, digits and _ . / + @ % = , : - (no spaces or shell characters)"
    )


_JOB_PATH = re.compile(r"(?!-)(?:\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z0-9_./+@%=,:-])+")


def parse_job_path(field_name: str, value: Any) -> str:
    """A path the job's shell expands, such as ``$TMPDIR/dask`` or ``/scratch/${USER}``.

    Variable references (``$NAME``, ``${NAME}``) are kept for the compute node to expand;
    a path without them is made absolute as :func:`parse_path` does. No other shell
    character is accepted, so the value is safe inside double quotes.
    """
    text = _one_line(field_name, os.fspath(value) if isinstance(value, os.PathLike) else value)
    if "$" not in text:
        return parse_path(field_name, text)
    return _matching(
        field_name, text, _JOB_PATH, "a path of letters, digits, _ . / + @ % = , : - and $NAME or ${NAME} references"
    )


def parse_lines(field_name: str, value: Any) -> tuple[str, ...]:
    """A list of single-line strings (a lone string is one line)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence):
        raise ValidationError(field_name, f"expected a list of strings, got {value!r}")
    if len(value) > MAX_LIST_ITEMS:
        raise ValidationError(field_name, f"{len(value)} items; gpujobqueue accepts at most {MAX_LIST_ITEMS}")
    return tuple(_one_line(f"{field_name}[{i}]", line) for i, line in enumerate(value))


MAX_LIST_ITEMS = 1000  # lines of a prologue, extra directives, worker arguments


def parse_needles(field_name: str, value: Any) -> tuple[str, ...]:
    """``job_directives_skip``: strings to look for in directive lines; an empty or blank one
    would match every line, so it is refused."""
    needles = parse_lines(field_name, value)
    for i, needle in enumerate(needles):
        if not needle.strip():
            raise ValidationError(
                f"{field_name}[{i}]",
                f"{needle!r} would match every directive; give the text of the directives to leave out",
            )
    return needles


def parse_environment(field_name: str, value: Any) -> tuple[tuple[str, str], ...]:
    """A mapping of environment variable names to single-line values."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(field_name, f"expected a mapping of NAME to value, got {value!r}")
    out = []
    for name, raw in value.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise ValidationError(field_name, f"{name!r} is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
        out.append((name, _one_line(f"{field_name}[{name}]", str(raw))))
        if name == NIC_MAP_VARIABLE:  # read by each GPU worker (nic_affinity.py): refuse a bad map before submitting
            try:
                parse_pinned_map(out[-1][1])
            except ValueError as error:
                raise ValidationError(f"{field_name}[{name}]", str(error)) from None
    return tuple(out)


def parse_slurm_memory_text(field_name: str, value: Any) -> str:
    """A raw SLURM memory value such as ``10G`` or ``4000`` (MB), as ``job_mem`` takes it."""
    return _matching(
        field_name, value, re.compile(r"\d+[KMGT]?"), "a SLURM memory value such as '4000', '512M' or '60G'"
    )


def per_node(field_name: str, per_job: int, nodes: int) -> int:
    """A per-job amount (dask-jobqueue's ``cores``, ``memory``) shared evenly by the job's nodes."""
    if per_job % nodes:
        raise ValidationError(
            field_name,
            f"{per_job} per job cannot be shared evenly by {nodes} nodes; give a multiple of {nodes}, or the "
            "per-GPU keyword",
        )
    return per_job // nodes


@dataclass(frozen=True)
class JobRequest:
    """What one batch job asks of the batch system.

    Build it with :meth:`JobRequest.from_settings`, which parses and validates every field;
    the fields below are already parsed.

    Parameters
    ----------
    job_name : str
        The batch job's name (``#SBATCH --job-name``).
    nodes : int
        Nodes per job.
    gpus_per_node : int
        GPUs asked for on each node; one Dask worker runs per GPU.
    cpus_per_node : int
        CPU cores asked for on each node.
    memory_per_node : int or None
        Bytes of host memory per node, or None to leave it to the batch system's default.
    walltime : int or None
        Seconds; one hour unless given. None (the local batch system, unless one is given):
        no walltime, and the workers live until the cluster stops them.
    account, queue, qos, constraint : str or None
        Where the job is charged and placed; ``queue`` is SLURM's partition.
    exclusive : bool
        Ask for whole nodes.
    gpu_request : str
        How GPUs are asked for, in the batch system's vocabulary (SLURM:
        ``"gpus-per-node"``, ``"gres"``; PBS: ``"select"``, ``"torque"``; LSF: ``"gpu"``,
        ``"csm"``; Grid Engine: ``"complex"``, ``"resource-type"``), or ``"none"`` (the
        queue implies them).
    gpu_type : str or None
        GPU model for typed requests, e.g. ``a100`` in ``--gres=gpu:a100:4``.
    log_directory : str or None
        Directory for the job's output and error files.
    extra_directives : tuple of str
        Extra batch directives, without the ``#SBATCH`` prefix.
    directives_skip : tuple of str
        Generated directive lines containing any of these strings are left out.
    prologue, epilogue : tuple of str
        Shell lines run before the workers start and after they stop.
    environment : tuple of (str, str)
        Variables exported in the job.
    shebang : str
        First line of the script.
    job_mem : str or None
        SLURM's raw ``--mem`` value, when given instead of ``memory``.
    walltime_margin : int or None
        Seconds before the walltime at which the workers start to retire gracefully; None
        for the default (:func:`default_walltime_margin`), 0 to let the walltime end them.
    options : object
        The batch system's own settings (for example :class:`~gpujobqueue.batch.pbs.PBSOptions`),
        or None.
    queue_choice : str or None
        Why the site chose the queue, for a job that named none (a comment line in the script).
    """

    job_name: str = "gpujobqueue"
    nodes: int = 1
    gpus_per_node: int = 1
    cpus_per_node: int = 1
    memory_per_node: int | None = None
    walltime: int | None = 3600
    account: str | None = None
    queue: str | None = None
    qos: str | None = None
    constraint: str | None = None
    exclusive: bool = False
    gpu_request: str = "gpus-per-node"
    gpu_type: str | None = None
    log_directory: str | None = None
    extra_directives: tuple[str, ...] = ()
    directives_skip: tuple[str, ...] = ()
    prologue: tuple[str, ...] = ()
    epilogue: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    shebang: str = DEFAULT_SHEBANG
    job_mem: str | None = None
    walltime_margin: int | None = None
    options: Any = None
    queue_choice: str | None = None

    @property
    def shell(self) -> str | None:
        """The shell that PBS's and Grid Engine's ``-S`` name, which run the script with it
        whatever its first line: the shebang's interpreter (``/bin/bash`` for the default
        ``#!/usr/bin/env bash``); None for another ``#!/usr/bin/env NAME``, which names no path."""
        if self.shebang == DEFAULT_SHEBANG:
            return "/bin/bash"
        interpreter = self.shebang[2:].split(maxsplit=1)[0] if self.shebang[2:].strip() else ""
        if interpreter == "/usr/bin/env" or not re.fullmatch(r"/[\w./+-]+", interpreter):
            return None
        return interpreter

    @classmethod
    def from_settings(
        cls,
        settings: Mapping[str, Any],
        *,
        gpu_request_styles: Sequence[str] = GPU_REQUEST_STYLES,
        default_walltime: str | None = DEFAULT_WALLTIME,
    ) -> "JobRequest":
        """Parse and validate the request part of resolved settings.

        Parameters
        ----------
        settings : mapping
            Keyword names (as the cluster classes take them) to values; missing or None
            values take the defaults.
        gpu_request_styles : sequence of str
            The batch system's GPU request styles; the first is the default.
        default_walltime : str or None
            The walltime when none is given; None for none (jobs that no batch system ends).

        Raises
        ------
        ValidationError
            Naming the field and the accepted form.
        """
        get = settings.get
        nodes = parse_positive_int("nodes", given_or(get("nodes"), 1), MAX_NODES)
        gpus = parse_positive_int(
            "gpus_per_node", get("gpus_per_node") if get("gpus_per_node") is not None else 1, MAX_GPUS_PER_NODE
        )

        cores, cpus_per_gpu = get("cores"), get("cpus_per_gpu")
        if cores is not None and cpus_per_gpu is not None:
            raise ValidationError("cores", "give cores (per job) or cpus_per_gpu, not both")
        if get("job_cpu") is not None:
            cpus = parse_positive_int("job_cpu", get("job_cpu"), MAX_CPUS_PER_NODE)
        elif cores is not None:
            cpus = per_node("cores", parse_positive_int("cores", cores, MAX_CPUS_PER_NODE * nodes), nodes)
        else:
            cpus = gpus * parse_positive_int(
                "cpus_per_gpu", cpus_per_gpu if cpus_per_gpu is not None else 1, MAX_CPUS_PER_NODE
            )
        if cpus > MAX_CPUS_PER_NODE:
            raise ValidationError(
                "cpus_per_gpu", f"{cpus} cores per node is more than the {MAX_CPUS_PER_NODE} gpujobqueue accepts"
            )

        memory, memory_per_gpu = get("memory"), get("memory_per_gpu")
        if memory is not None and memory_per_gpu is not None:
            raise ValidationError("memory", "give memory (per job) or memory_per_gpu, not both")
        if memory is not None:
            memory_bytes = per_node("memory", parse_size("memory", memory, MAX_MEMORY_BYTES * nodes), nodes)
        elif memory_per_gpu is not None:
            memory_bytes = gpus * parse_size("memory_per_gpu", memory_per_gpu)
            if memory_bytes > MAX_MEMORY_BYTES:
                raise ValidationError(
                    "memory_per_gpu",
                    f"{memory_per_gpu!r} for each of {gpus} GPUs is more than {MAX_MEMORY_BYTES // 2**40} TiB per node",
                )
        else:
            memory_bytes = None

        style = get("gpu_request") or gpu_request_styles[0]
        if style not in gpu_request_styles:
            raise ValidationError(
                "gpu_request",
                f"{style!r} is not a GPU request style of this batch system; use one of "
                f"{', '.join(gpu_request_styles)}",
            )

        def optional(name, parser):
            value = get(name)
            return None if value is None else parser(name, value)

        walltime = get("walltime")
        walltime = default_walltime if walltime is None else walltime
        walltime = None if walltime is None else parse_walltime("walltime", walltime)
        return cls(
            job_name=parse_name("job_name", given_or(get("job_name"), "gpujobqueue")),
            nodes=nodes,
            gpus_per_node=gpus,
            cpus_per_node=cpus,
            memory_per_node=memory_bytes,
            walltime=walltime,
            account=optional("account", parse_word),
            queue=optional("queue", parse_word),
            qos=optional("qos", parse_word),
            constraint=optional("constraint", parse_constraint),
            exclusive=parse_bool("exclusive", get("exclusive") if get("exclusive") is not None else False),
            gpu_request=style,
            gpu_type=optional("gpu_type", parse_word),
            log_directory=optional("log_directory", parse_path),
            extra_directives=parse_lines("job_extra_directives", get("job_extra_directives")),
            directives_skip=parse_needles("job_directives_skip", get("job_directives_skip")),
            prologue=parse_lines("job_script_prologue", get("job_script_prologue")),
            epilogue=parse_lines("job_script_epilogue", get("job_script_epilogue")),
            environment=parse_environment("environment", get("environment")),
            shebang=_matching(
                "shebang", given_or(get("shebang"), DEFAULT_SHEBANG), re.compile(r"#![^\n]+"), "a line starting with #!"
            ),
            job_mem=optional("job_mem", parse_slurm_memory_text),
            walltime_margin=parse_walltime_margin("walltime_margin", get("walltime_margin"), walltime),
        )

    @property
    def gpus_per_job(self) -> int:
        """GPUs in one job, over all its nodes."""
        return self.nodes * self.gpus_per_node

    @property
    def worker_lifetime(self) -> int | None:
        """Seconds a worker lives before it retires (dask's ``lifetime``), None for no limit."""
        if self.walltime is None:
            return None
        margin = default_walltime_margin(self.walltime) if self.walltime_margin is None else self.walltime_margin
        return self.walltime - margin if margin else None

    @property
    def lifetime_stagger(self) -> int:
        """Seconds by which each worker's lifetime is moved, at random, either way."""
        lifetime = self.worker_lifetime
        return (self.walltime - lifetime) // 4 if lifetime else 0

    @property
    def walltime_text(self) -> str:
        """The walltime as SLURM writes it; ``"none"`` for a job without one."""
        return "none" if self.walltime is None else format_walltime(self.walltime)
