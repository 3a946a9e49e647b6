"""A strict PBS Pro emulator (flavour ``pbspro``) with a small Torque flavour (``torque``).

Built on :mod:`emulators.common`.  Entry points: ``qsub_main``, ``qstat_main``, ``qdel_main``
(the scripts in ``tests/emulators/bin/pbs`` call them) and :func:`parse_submission`, which
raises :class:`~emulators.common.Rejected` exactly when qsub would refuse (qsub uses it).

Where the messages come from
----------------------------
[openpbs] the OpenPBS source (github.com/openpbs/openpbs), read for this emulator:

* ``src/cmds/qsub.c``: option handling (``process_opts``: ``qsub: illegal -l value``,
  ``qsub: illegal -r value``, ``qsub: illegal -W value``, ``qsub: illegal -J value`` via the
  ECL, ``qsub: directive error: <args>``, ``qsub: mail option 'j' can not be used without
  array job``, ``qsub: interactive and array job submission cannot be used together``),
  ``handle_attribute_errors`` (``qsub: illegal -<opt> value`` + usage, exit 2; ``qsub: Job
  name is too long ``, exit 2; resource errors ``qsub: <ECL message>``, exit = PBS error
  code), ``main`` (a server refusal prints ``qsub: <server message>`` and exits with
  ``pbs_errno``, i.e. the PBSE_* code modulo 256: ``exit(15035)`` is status 187),
  ``print_usage`` (usage + ``       qsub --version``, exit 2), ``interactive_port`` (the
  ``-I`` refusal without a terminal), ``do_submit`` (``qsub: cannot send environment with
  the job``).
* ``src/cmds/qsub_sup.c``: the usage text and ``GETOPT_ARGS``; ``get_script`` (directives
  are read until the first executable line, a trailing ``\\`` continues a directive).
* ``src/lib/Libcmds/check_job_script.c``: ``pbs_isexecutable`` / ``pbs_ispbsdir`` (leading
  blanks allowed before ``#PBS``; a line starting ``#!`` or ``:`` or ``#`` is not
  executable).
* ``src/lib/Libcmds/ck_job_name.c``: job names: at most ``PBS_MAXJOBNAME`` = 230 characters
  (``src/include/pbs_ifl.h``), letters, digits and ``- _ + .`` only; ``-N`` needs a leading
  letter on the client side but qsub's ECL check lets a digit through for a new job.
* ``src/lib/Libattr/attr_fn_size.c`` (``to_size``: ``<int>[kmgtp][bw]``, case-insensitive)
  and ``attr_fn_time.c`` (``decode_time``: ``[[H:]M:]S[.frac]``).
* ``src/lib/Libecl/ecl_verify_values.c``: a bad built-in resource value reads
  ``Illegal attribute or resource value Resource_List.<res>``; ``-j`` takes oe/eo/n.
* ``src/lib/Liblog/pbs_messages.c``: the server messages (``Unknown Job Id``, ``Unknown
  queue``, ``Unknown resource``, ``Job violates queue and/or server resource limits``,
  ``Resource invalid in "select" specification``, ``"-lresource=" cannot be used with
  "select" or "place", resource is``, ``Cannot have "place" without "select"``,
  ``duplicated resource within a section of a select specification, resource is``,
  ``Job has finished``, ``Array job exceeds server or queue size limit``, ``Undefined
  attribute ``) and ``src/include/pbs_error.h`` (their numbers).
* ``src/cmds/qdel.c``: ``qdel: <message> <jobid>`` per failed id, exit = last PBSE code
  modulo 256; usage, exit 2.

[seen] transcripts in public repositories and site documentation (search corpus):
``qsub: invalid option -- '-'`` + usage; ``qsub: Unknown resource Resource_List.filesystems``
(an ALCF filesystems request on a site without that resource); ``qsub: "-lresource=" cannot
be used with "select" or "place", resource is: ngpus`` (NCAR); ``qsub: Resource invalid in
"select" specification: ngpus`` (Miyabi); ``qsub: Job violates queue and/or server resource
limits`` (ALCF troubleshooting page, NCAR, others); ``qsub: Unknown resource: AMD`` (a
chunk-level unknown resource, aidenlab/juicer#162); ``qsub: Illegal attribute or resource
value Resource_List.select``; exit code 241 for ``qsub: node(s) specification error``
(= 15089 % 256, equinor/ert#7355, which confirms the exit-code rule); the qstat table
layout and ``qstat: Unknown Job Id 2315.pbs``, ``qstat: <id> Job has finished, use -x or
-H to obtain historical job information``; ``Exit_status = 271`` with ``=>> PBS: job
killed: walltime 152 exceeded limit 120`` (UTS HPC docs); the ``qstat -f -F json`` layout
(``timestamp``, ``pbs_version``, ``pbs_server``, ``Jobs``; no ``Jobs`` key when nothing
matched) from several sites; ``exec_host = host/0*2``.  The MoM's signal rule
(``WTERMSIG + 0x100``, hence 256 + signal) is quoted in mpiexec's PBS support code.

[unconfirmed] noted at each place: exit statuses derived from the PBSE code where no
transcript showed them; the ``-u`` / ``-a`` column widths beyond the one transcript; the
Torque texts (``qsub: submit error (...)`` is seen; what is inside for a ``select``
request, and the exit statuses, are not).
"""

from __future__ import annotations

import getpass
import json
import os
import pwd
import re
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulators.common import (
    EmulatorConfig,
    Flavor,
    JobRecord,
    JobStore,
    Rejected,
    default_argv,
    emulator_home,
    format_hms,
    format_size,
    main_wrapper,
    parse_size,
)

PBS_VERSION = "2022.1.0"  # what qstat -F json reports as pbs_version (a PBS Pro 2022 layout)

# -- PBS error numbers (src/include/pbs_error.h) and the exit status they give -------------
PBSE_UNKJOBID = 15001
PBSE_NOATTR = 15002
PBSE_BADATVAL = 15014
PBSE_UNKQUE = 15018
PBSE_UNKRESC = 15035
PBSE_EXCQRESC = 15036
PBSE_MAXARRAYSIZE = 15107
PBSE_INVALSELECTRESC = 15108
PBSE_INVALJOBRESC = 15109
PBSE_PLACENOSELECT = 15111
PBSE_DUPRESC = 15116
PBSE_HISTJOBID = 15139
PBSE_ENTLIMCT = 15142  # an entity limit on job counts (max_queued): qsub exits 38, as ALCF's users report


def _status(pbse: int) -> int:
    """The exit status a command gets from ``exit(pbs_errno)``: the code modulo 256."""
    return pbse & 0xFF


# src/cmds/qsub_sup.c (``usage``) + qsub.c (``print_usage`` adds the --version line)
QSUB_USAGE = (
    "usage: qsub [-a date_time] [-A account_string] [-c interval]\n"
    "\t[-C directive_prefix] [-e path] [-f ] [-h ] [-I [-X]] [-j oe|eo] [-J X-Y[:Z]]\n"
    "\t[-k keep] [-l resource_list] [-m mail_options] [-M user_list]\n"
    "\t[-N jobname] [-o path] [-p priority] [-P project] [-q queue] [-r y|n]\n"
    "\t[-R o|e|oe] [-S path] [-u user_list] [-W otherattributes=value...]\n"
    "\t[-v variable_list] [-V ] [-z] [script | -- command [arg1 ...]]\n"
    "       qsub --version"
)
QSUB_OPTS_PBSPRO = "a:A:c:C:e:fhIj:J:k:l:m:M:N:o:p:q:r:R:S:u:v:VW:XzP:"

# Torque's qsub (adaptivecomputing/torque src/cmds/qsub_functions.c): the option set of
# Torque 6; the usage text is Torque's man page synopsis [unconfirmed as printed text].
TORQUE_USAGE = (
    "usage: qsub [-a date_time] [-A account_string] [-b secs]\n"
    "      [-c [ none | { enabled | periodic | shutdown |\n"
    "      depth=<int> | dir=<path> | interval=<minutes>}... ]\n"
    "      [-C directive_prefix] [-d path] [-D path]\n"
    "      [-e path] [-h] [-I] [-j oe|eo|n] [-k {oe}] [-K interval] [-l resource_list]\n"
    "      [-m n|{abe}] [-M user_list] [-N jobname] [-o path]\n"
    "      [-p priority] [-P proxy_user [-J <jobid]] [-q queue] [-r y|n] [-S path]\n"
    "      [-t number_to_submit] [-T type]  [-u user_list] [-w] path\n"
    "      [-W otherattributes=value...] [-v variable_list] [-V] [-x] [-X] [-z] [script]"
)
QSUB_OPTS_TORQUE = "a:A:b:c:C:d:D:e:fhIj:k:K:l:m:M:nN:o:p:P:q:r:S:t:T:u:v:Vw:W:xXz"

MAX_JOB_NAME = 230  # PBS_MAXJOBNAME, src/include/pbs_ifl.h
MAX_ARRAY_SIZE = 10000  # server max_array_size default (PBS Pro Reference Guide)

DEFAULT_QUEUES: dict[str, dict[str, Any]] = {
    "workq": {"resources_max": {"walltime": "24:00:00"}},
    "debug": {"resources_max": {"walltime": "01:00:00", "ngpus": 4}},
    "preemptable": {"resources_max": {"walltime": "72:00:00"}},
}


def default_config(flavor: str = "pbspro", **overrides: Any) -> EmulatorConfig:
    """The emulated machine a fixture starts with: 8 cpus, 4 GPUs, 32gb, three queues."""
    config = EmulatorConfig(
        flavor=flavor,
        queues=json.loads(json.dumps(DEFAULT_QUEUES)),
        default_queue="workq",
        custom_resources=[
            {"name": "filesystems", "type": "string_array", "level": "job"},  # ALCF Polaris: -l filesystems=home:eagle
            {"name": "system", "type": "string", "level": "chunk"},  # ALCF: select=...:system=polaris
            {"name": "gpu_type", "type": "string", "level": "chunk"},  # NCAR Casper: select=...:gpu_type=v100
        ],
    )
    if flavor == "torque":
        config.queues = {
            "batch": {"resources_max": {"walltime": "24:00:00"}},
            "debug": {"resources_max": {"walltime": "01:00:00"}},
        }
        config.default_queue = "batch"
        config.custom_resources = []
    for key, value in overrides.items():
        if hasattr(config, key) and key != "extra":
            setattr(config, key, value)
        else:
            config.extra[key] = value
    return config


# -- resources ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceDef:
    name: str
    type: str  # long | size | time | string | string_array | boolean | float
    level: str  # job (job-wide only) | chunk (host-level, also job-wide without select)
    read_only: bool = False


# Built-in PBS Pro resources (PBS Professional Reference Guide, "Built-in Resources");
# "ngpus" is defined by every GPU site (Polaris, Derecho, Casper) as a host-level
# consumable long, so the emulated machine defines it too.
_BUILTIN = [
    ResourceDef("walltime", "time", "job"),
    ResourceDef("cput", "time", "job"),
    ResourceDef("pcput", "time", "job"),
    ResourceDef("soft_walltime", "time", "job"),
    ResourceDef("min_walltime", "time", "job"),
    ResourceDef("max_walltime", "time", "job"),
    ResourceDef("select", "string", "job"),
    ResourceDef("place", "string", "job"),
    ResourceDef("nodes", "string", "job"),
    ResourceDef("software", "string", "job"),
    ResourceDef("file", "size", "job"),
    ResourceDef("pmem", "size", "job"),
    ResourceDef("pvmem", "size", "job"),
    ResourceDef("site", "string", "job"),
    ResourceDef("preempt_targets", "string", "job"),
    ResourceDef("nodect", "long", "job", read_only=True),
    ResourceDef("ncpus", "long", "chunk"),
    ResourceDef("mem", "size", "chunk"),
    ResourceDef("vmem", "size", "chunk"),
    ResourceDef("mpiprocs", "long", "chunk"),
    ResourceDef("ompthreads", "long", "chunk"),
    ResourceDef("host", "string", "chunk"),
    ResourceDef("vnode", "string", "chunk"),
    ResourceDef("arch", "string", "chunk"),
    ResourceDef("naccelerators", "long", "chunk"),
    ResourceDef("accelerator", "boolean", "chunk"),
    ResourceDef("accelerator_model", "string", "chunk"),
    ResourceDef("accelerator_memory", "size", "chunk"),
    ResourceDef("aoe", "string", "chunk"),
    ResourceDef("ngpus", "long", "chunk"),
]

# Torque 6 resources (Torque Administrator Guide, "Requesting resources")
_TORQUE = [
    ResourceDef("walltime", "time", "job"),
    ResourceDef("cput", "time", "job"),
    ResourceDef("pcput", "time", "job"),
    ResourceDef("nodes", "string", "job"),
    ResourceDef("mem", "size", "job"),
    ResourceDef("pmem", "size", "job"),
    ResourceDef("vmem", "size", "job"),
    ResourceDef("pvmem", "size", "job"),
    ResourceDef("ncpus", "long", "job"),
    ResourceDef("procs", "long", "job"),
    ResourceDef("file", "size", "job"),
    ResourceDef("host", "string", "job"),
    ResourceDef("nice", "long", "job"),
    ResourceDef("software", "string", "job"),
    ResourceDef("gres", "string", "job"),
    ResourceDef("feature", "string", "job"),
    ResourceDef("naccesspolicy", "string", "job"),
    ResourceDef("epilogue", "string", "job"),
    ResourceDef("prologue", "string", "job"),
    ResourceDef("qos", "string", "job"),
    ResourceDef("nodect", "long", "job", read_only=True),
]


def resource_defs(config: EmulatorConfig) -> dict[str, ResourceDef]:
    if config.flavor == "torque":
        return {r.name: r for r in _TORQUE}
    defs = {r.name: r for r in _BUILTIN}
    for custom in config.custom_resources:
        if isinstance(custom, str):
            custom = {"name": custom}
        defs[custom["name"]] = ResourceDef(custom["name"], custom.get("type", "string"), custom.get("level", "job"))
    return defs


_TIME_RE = re.compile(r"\d+(?::\d+){0,2}(?:\.\d*)?")


def parse_time(text: str) -> int:
    """PBS ``decode_time`` (attr_fn_time.c): ``[[H:]M:]S[.frac]``, fields unbounded."""
    if not _TIME_RE.fullmatch(text):
        raise ValueError(text)
    whole, _, frac = text.partition(".")
    seconds = 0
    for part in whole.split(":"):
        seconds = seconds * 60 + int(part)
    if frac and int((frac + "000")[:3]) >= 500:
        seconds += 1
    return seconds


def parse_pbs_size(text: str) -> int:
    """PBS ``to_size`` (attr_fn_size.c): ``<int>[k|m|g|t|p][b|w]``, case-insensitive."""
    if not re.fullmatch(r"\d+([kmgtpKMGTP]?[bwBW]?)", text):
        raise ValueError(text)
    return parse_size(text)


def check_value(rdef: ResourceDef, value: str) -> None:
    """Raise ValueError if ``value`` is not a valid value of the resource's type."""
    if rdef.type == "time":
        parse_time(value)
    elif rdef.type == "size":
        parse_pbs_size(value)
    elif rdef.type == "long":
        if not re.fullmatch(r"[+-]?\d+", value):
            raise ValueError(value)
    elif rdef.type == "float":
        float(value)
    elif rdef.type == "boolean":
        if value.lower() not in ("true", "false", "t", "f", "y", "n", "1", "0"):
            raise ValueError(value)
    elif not value:
        raise ValueError(value)


def _illegal_resource(name: str) -> Rejected:
    # ECL / server: "Illegal attribute or resource value" + " Resource_List.<res>"
    # (pbs_messages.c msg_badatval; ecl_verify_values.c verify_value_resc) [seen]
    return Rejected(f"qsub: Illegal attribute or resource value Resource_List.{name}", _status(PBSE_BADATVAL))


# -- the parsed submission ------------------------------------------------------------------


@dataclass
class ParsedJob:
    """What qsub understood; ``resources`` is the final Resource_List (strings)."""

    flavor: str
    name: str
    queue: str
    server: str
    script_text: str
    resources: dict[str, str]
    chunks: list[tuple[int, dict[str, str]]]
    place: dict[str, str]
    ncpus: int
    ngpus: int
    mem_bytes: int
    nodect: int
    walltime_s: int | None
    account: str | None = None
    project: str | None = None
    join: str = "n"
    keep: str = "n"
    output_path: str | None = None
    error_path: str | None = None
    export_all: bool = False
    variables: dict[str, str] = field(default_factory=dict)
    hold: bool = False
    depend: list[tuple[str, str]] = field(default_factory=list)
    array: tuple[int, int, int] | None = None
    rerunable: bool = True
    mail_points: str = "a"
    mail_users: str | None = None
    shell: str | None = None
    group_list: str | None = None
    priority: int = 0
    block: bool = False
    quiet: bool = False
    command: list[str] | None = None
    submit_args: list[str] = field(default_factory=list)
    workdir: str = ""
    exclusive: bool = False
    never_runs: str | None = None  # scheduler comment for a job that can never run here
    gpus_per_node: int = 0  # Torque: nodes=...:gpus=G
    ppn: int = 0  # Torque: nodes=...:ppn=C

    @property
    def select(self) -> str:
        return self.resources.get("select", "")

    def array_indices(self) -> list[int]:
        if self.array is None:
            return []
        start, end, step = self.array
        return list(range(start, end + 1, step))

    def default_path(self, kind: str, seq: int) -> str:
        """``<name>.o<seq>`` / ``<name>.e<seq>`` in the submit directory (PBS default)."""
        return os.path.join(self.workdir, f"{self.name}.{kind}{seq}")

    def output_paths(self, seq: int) -> tuple[str, str]:
        """Final stdout/stderr paths for job sequence number ``seq`` (``-o``/``-e`` may be
        a directory, then the default file name is used inside it)."""
        paths = []
        for kind, given in (("o", self.output_path), ("e", self.error_path)):
            if given is None:
                paths.append(self.default_path(kind, seq))
            elif given.endswith("/") or os.path.isdir(given):
                paths.append(os.path.join(given.rstrip("/") or "/", f"{self.name}.{kind}{seq}"))
            else:
                paths.append(given)
        return paths[0], paths[1]


# -- option parsing (a glibc-getopt work-alike) ---------------------------------------------


class _OptError(Exception):
    """An option error; ``message`` has already the 'qsub: ...' text."""


def _getopt(argv: list[str], optstring: str, prog: str) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """POSIX getopt as qsub uses it: returns (options, errors, remaining operands).

    Options stop at the first operand or at ``--`` (the ``--`` stays in the operands, as
    qsub's ``process_opts`` steps back to it).  Unknown options and missing arguments
    produce glibc's messages.
    """
    takes_arg = {c: optstring[i + 1 : i + 2] == ":" for i, c in enumerate(optstring) if c != ":"}
    opts: list[tuple[str, str]] = []
    errors: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            break
        j = 1
        while j < len(arg):
            ch = arg[j]
            if ch not in takes_arg:
                errors.append(f"{prog}: invalid option -- '{ch}'")
                j += 1
                continue
            if takes_arg[ch]:
                if j + 1 < len(arg):
                    value = arg[j + 1 :]
                elif i + 1 < len(argv):
                    i += 1
                    value = argv[i]
                else:
                    errors.append(f"{prog}: option requires an argument -- '{ch}'")
                    break
                opts.append((ch, value))
                break
            opts.append((ch, ""))
            j += 1
        i += 1
    return opts, errors, argv[i:]


def _make_argv(line: str) -> list[str]:
    """qsub.c ``make_argv``: split a directive like the shell would (quotes, backslash)."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    k = 0
    while k < len(line):
        c = line[k]
        if c in "\"'":
            end = line.find(c, k + 1)
            if end < 0:
                raise Rejected("qsub: unmatched " + c, 1)
            current.append(line[k + 1 : end])
            in_word = True
            k = end + 1
        elif c == "\\" and k + 1 < len(line):
            current.append(line[k + 1])
            in_word = True
            k += 2
        elif c.isspace():
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            k += 1
        else:
            current.append(c)
            in_word = True
            k += 1
    if in_word:
        words.append("".join(current))
    return words


def _directives(script_text: str, prefix: str) -> list[str]:
    """qsub_sup.c ``get_script``: the directive lines before the first executable line."""
    found = []
    lines = script_text.split("\n")
    k = 0
    while k < len(lines):
        line = lines[k]
        stripped = line.lstrip()
        if prefix and stripped.startswith(prefix):
            text = stripped[len(prefix) :]
            while text.endswith("\\") and k + 1 < len(lines):  # pbs_extendable_line
                k += 1
                text = text[:-1] + lines[k]
            found.append(text)
        elif _is_executable(line):
            break
        k += 1
    return found


def _is_executable(line: str) -> bool:
    """check_job_script.c ``pbs_isexecutable``."""
    if line.startswith(":") or line.startswith("#!"):
        return False
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


class _Options:
    """Option values with qsub's precedence: the command line beats directives."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[int, str]] = {}
        self.resources: dict[str, tuple[int, str]] = {}
        self.w_attrs: dict[str, tuple[int, str]] = {}
        self.flags: dict[str, int] = {}

    def set(self, key: str, value: str, level: int) -> None:
        old = self.values.get(key)
        if old is None or old[0] <= level:  # if_cmd_line(x): x <= passet
            self.values[key] = (level, value)

    def get(self, key: str) -> str | None:
        found = self.values.get(key)
        return None if found is None else found[1]


# -- the parser -----------------------------------------------------------------------------


def _split_resource_list(text: str) -> list[tuple[str, str]]:
    """set_resource.c: ``name[=value][,name[=value]...]``; quotes protect commas."""
    items = []
    for raw in _comma_split(text):
        name, eq, value = raw.partition("=")
        if not name or not re.fullmatch(r"[A-Za-z][\w.-]*", name) or not eq or value == "":
            raise _OptError("qsub: illegal -l value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        items.append((name, value))
    return items


def _comma_split(text: str) -> list[str]:
    parts, current, quote = [], [], ""
    for c in text:
        if c in "\"'" and (not quote or quote == c):
            quote = "" if quote else c
        if c == "," and not quote:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
    parts.append("".join(current))
    return parts


_W_KEYWORDS = {
    "depend",
    "stagein",
    "stageout",
    "sandbox",
    "group_list",
    "block",
    "interactive",
    "umask",
    "run_count",
    "tolerate_node_failures",
    "max_run_subjobs",
    "release_nodes_on_stageout",
    "cred",
    "Output_Path",
    "Error_Path",
    "Account_Name",
    "project",
    "Job_Name",
    "Rerunable",
}


def _process_opts(
    opts: list[tuple[str, str]], level: int, store: _Options, flavor: str, environ: dict[str, str]
) -> list[str]:
    """qsub.c ``process_opts`` for one batch (command line or one directive)."""
    errors: list[str] = []
    for ch, value in opts:
        if ch == "l":
            try:
                items = _split_resource_list(value)
            except _OptError as error:
                errors.append(str(error))
                continue
            for name, val in items:
                old = store.resources.get(name)
                # set_resources(..., add = passet == CMDLINE): a directive does not replace
                # a resource already given on the command line or by an earlier directive
                if old is None or level == 3:
                    store.resources[name] = (level, val)
        elif ch == "W":
            value = value.lstrip()
            if not value:
                errors.append("qsub: illegal -W value")
                continue
            for raw in _comma_split(value):
                key, eq, val = raw.partition("=")
                if not eq or not key or not val:
                    errors.append("qsub: illegal -W value")
                    break
                old = store.w_attrs.get(key)
                if old is None or old[0] <= level:
                    store.w_attrs[key] = (level, val)
        elif ch == "r":
            if value not in ("y", "n"):
                errors.append("qsub: illegal -r value")
                continue
            if value == "n" and store.get("J") is not None:
                errors.append("qsub:  cannot submit non-rerunable Array Job")
                continue
            store.set("r", value, level)
        elif ch == "J":
            if store.get("r") == "n":
                errors.append("qsub:  cannot submit non-rerunable Array Job")
                continue
            store.set("J", value, level)
        elif ch == "v":
            store.set("v", value, level)
        elif ch in "hVzfIX":
            old = store.flags.get(ch)
            if old is None or old <= level:
                store.flags[ch] = level
        else:
            store.set(ch, value, level)
    return errors


def _parse_select(text: str, defs: dict[str, ResourceDef], flavor: str) -> list[tuple[int, dict[str, str]]]:
    """``select=[N:]res=val[:res=val...][+[N:]...]`` with the server's checks."""
    chunks = []
    for part in text.split("+"):
        if not part:
            raise _illegal_resource("select")
        pieces = part.split(":")
        count = 1
        if re.fullmatch(r"\d+", pieces[0]):
            count = int(pieces[0])
            pieces = pieces[1:]
            if count < 1:
                raise _illegal_resource("select")
        chunk: dict[str, str] = {}
        for piece in pieces:
            name, eq, value = piece.partition("=")
            if not eq or not name or value == "":
                raise _illegal_resource("select")
            rdef = defs.get(name)
            if rdef is None:
                # a chunk-level unknown resource: "qsub: Unknown resource: AMD" [seen]
                raise Rejected(f"qsub: Unknown resource: {name}", _status(PBSE_UNKRESC))
            if rdef.level != "chunk":
                # pbs_messages.c msg_invalselectresc; "...specification: ngpus" [seen]
                raise Rejected(
                    f'qsub: Resource invalid in "select" specification: {name}', _status(PBSE_INVALSELECTRESC)
                )
            if name in chunk:
                # pbs_messages.c msg_dupresc + ": <res>" [format unconfirmed]
                raise Rejected(
                    f"qsub: duplicated resource within a section of a select specification, resource is: {name}",
                    _status(PBSE_DUPRESC),
                )
            try:
                check_value(rdef, value)
            except ValueError:
                raise _illegal_resource("select") from None
            chunk[name] = value
        chunks.append((count, chunk))
    return chunks


_PLACE_ARRANGEMENT = ("free", "pack", "scatter", "vscatter")
_PLACE_SHARING = ("excl", "shared", "exclhost")


def _parse_place(text: str, defs: dict[str, ResourceDef]) -> dict[str, str]:
    """``place=[arrangement][:sharing][:group=res]`` (PBS Pro Reference Guide, place)."""
    place: dict[str, str] = {}
    for piece in text.split(":"):
        if piece in _PLACE_ARRANGEMENT and "arrangement" not in place:
            place["arrangement"] = piece
        elif piece in _PLACE_SHARING and "sharing" not in place:
            place["sharing"] = piece
        elif piece.startswith("group=") and "group" not in place and piece[6:] in defs:
            place["group"] = piece[6:]
        else:
            raise _illegal_resource("place")
    return place


def _parse_depend(value: str) -> list[tuple[str, str]]:
    """parse_depend.c: ``type:jobid[:jobid...][,type:...]``."""
    found = []
    for item in value.split(","):
        kind, _, ids = item.partition(":")
        if (
            kind
            not in (
                "after",
                "afterok",
                "afternotok",
                "afterany",
                "before",
                "beforeok",
                "beforenotok",
                "beforeany",
                "on",
                "runone",
            )
            or not ids
        ):
            raise _OptError("qsub: illegal -W value")
        for job_id in ids.split(":"):
            if not job_id:
                raise _OptError("qsub: illegal -W value")
            found.append((kind, job_id))
    return found


def _check_job_name(name: str, from_option: bool) -> str | None:
    """ck_job_name.c ``check_job_name`` -> None or the qsub message."""
    if len(name) > MAX_JOB_NAME:
        return "qsub: Job name is too long "  # handle_attribute_errors, PBSE_JOBNBIG
    if not name or not all(c.isalnum() or c in "-_+." for c in name) or not name.isascii():
        return "qsub: illegal -N value"
    return None


def parse_submission(
    script_text: str,
    argv: Sequence[str] = (),
    config: EmulatorConfig | None = None,
    *,
    cwd: str | None = None,
    environ: dict[str, str] | None = None,
    script_name: str | None = None,
) -> ParsedJob:
    """Parse a qsub submission as PBS Pro (or Torque) would; raise Rejected on refusal.

    ``argv`` are the qsub options (the script operand excluded, unless it is the ``--``
    command form); ``script_name`` is the script file's name (the default job name; STDIN
    when None).  Checks that need the job store (dependencies on existing jobs) are made
    by qsub itself.
    """
    config = config or default_config()
    environ = dict(os.environ if environ is None else environ)
    cwd = cwd or os.getcwd()
    flavor = config.flavor
    torque = flavor == "torque"
    usage = TORQUE_USAGE if torque else QSUB_USAGE
    optstring = QSUB_OPTS_TORQUE if torque else QSUB_OPTS_PBSPRO
    argv = list(argv)
    store = _Options()

    # 1. the command line (errors: message(s) + usage, exit 2)
    opts, errors, rest = _getopt(argv, optstring, "qsub")
    errors += _process_opts(opts, 3, store, flavor, environ)
    command = None
    if rest:
        if rest[0] == "--":
            if len(rest) < 2:
                errors.append("")
            command = rest[1:]
        else:
            errors.append("")  # a script operand is not allowed here, or extra operands
    if errors:
        raise Rejected("\n".join([e for e in errors if e] + [usage]), 2)
    if "I" in store.flags and not torque:
        if store.get("J") is not None:
            raise Rejected("qsub: interactive and array job submission cannot be used together\n" + usage, 2)
        # qsub.c interactive_port(): stdin/stdout are never a terminal here
        raise Rejected("qsub:\tstandard input and output must be a terminal for\n\tinteractive job submission", 1)
    if "X" in store.flags and not torque:
        if not environ.get("DISPLAY"):
            raise Rejected("qsub: DISPLAY not set\n" + usage, 2)
        raise Rejected("qsub: X11 Forwarding possible only for interactive jobs", 1)

    # 2. the directives of the script (errors: message + "directive error", exit 1)
    if command is None:
        prefix = store.get("C")
        if prefix is None:
            prefix = environ.get("PBS_DPREFIX", "#PBS")
        for line in _directives(script_text, prefix):
            words = _make_argv(line)
            d_opts, d_errors, d_rest = _getopt(words, optstring, "qsub")
            d_errors += _process_opts(d_opts, 2, store, flavor, environ)
            if d_rest:
                d_errors.append("")
            if d_errors:
                text = [e for e in d_errors if e]
                text.append("qsub: directive error: " + " ".join(words) + " ")
                raise Rejected("\n".join(text), 1)

    # 3. client-side checks (the ECL layer, then qsub's own)
    def illegal(opt: str) -> Rejected:
        return Rejected(f"qsub: illegal -{opt} value\n{usage}", 2)

    name = store.get("N")
    if name is not None:
        problem = _check_job_name(name, True)
        if problem:
            raise Rejected(problem + ("\n" + usage if "illegal" in problem else ""), 2)
    else:
        name = "STDIN" if (command is not None or script_name is None) else os.path.basename(script_name)
        problem = _check_job_name(name, False)
        if problem:  # the basename is verified by the IFL like -N
            raise Rejected(problem + ("\n" + usage if "illegal" in problem else ""), 2)
    join = store.get("j") or "n"
    if join not in (("oe", "eo", "n") if not torque else ("oe", "eo", "n")):
        raise illegal("j")
    keep = store.get("k") or "n"
    if not re.fullmatch(r"[oedn]+", keep) or ("n" in keep and len(keep) > 1):
        raise illegal("k")
    mail = store.get("m") or "a"
    if not re.fullmatch(r"[abejn]+", mail) or ("n" in mail and len(mail) > 1):
        raise illegal("m")
    array = None
    if store.get("J") is not None:
        match = re.fullmatch(r"(\d+)-(\d+)(?::(\d+))?", store.get("J") or "")
        if not match:
            raise illegal("J")
        start, end, step = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
        if start >= end or step < 1:  # chk_Jrange.c: X < Y, Z >= 1
            raise illegal("J")
        array = (start, end, step)
    if "j" in mail and array is None:
        raise Rejected("qsub: mail option 'j' can not be used without array job", 1)
    priority = store.get("p")
    if priority is not None and (not re.fullmatch(r"[+-]?\d+", priority) or not -1024 <= int(priority) <= 1023):
        raise illegal("p")
    hold = "h" in store.flags
    variables: dict[str, str] = {}
    if store.get("v") is not None:
        for item in _comma_split(store.get("v") or ""):
            key, eq, val = item.partition("=")
            if not key:
                raise Rejected("qsub: cannot send environment with the job", 1)
            if not eq:
                if key not in environ:
                    raise Rejected("qsub: cannot send environment with the job", 1)
                val = environ[key]
            if not key.startswith("PBS_O_"):
                variables[key] = val
    depend: list[tuple[str, str]] = []
    block = False
    group_list = None
    for key, (_, val) in store.w_attrs.items():
        if key == "depend":
            try:
                depend = _parse_depend(val)
            except _OptError:
                raise illegal("W") from None
        elif key == "block":
            if val.lower() not in ("true", "false"):
                raise illegal("W")
            block = val.lower() == "true"
        elif key == "interactive":
            if val.lower() == "true":
                raise Rejected(
                    "qsub:\tstandard input and output must be a terminal for\n\tinteractive job submission", 1
                )
        elif key == "group_list":
            group_list = val
        elif key not in _W_KEYWORDS:
            # an attribute the ECL does not know: pbse_to_txt(PBSE_NOATTR) [unconfirmed]
            raise Rejected("qsub: Undefined attribute ", _status(PBSE_NOATTR))
    unsupported = [k for k, _ in depend if k not in ("after", "afterok", "afternotok", "afterany")]
    if unsupported:
        raise Rejected(f"qsub: [emulator] dependency type {unsupported[0]} is not emulated", 1)

    defs = resource_defs(config)
    given = {k: v for k, (_, v) in store.resources.items()}
    # ECL: built-in resource values are checked on the client (custom ones on the server)
    for res, val in given.items():
        rdef = defs.get(res)
        if rdef is not None and res not in ("select", "place", "nodes"):
            try:
                check_value(rdef, val)
            except ValueError:
                raise _illegal_resource(res) from None

    # 4. the server: queue, resources, select/place, limits
    queue_spec = store.get("q") or ""
    queue, _, server = queue_spec.partition("@")
    if server and server != config.server:
        # cnt2server() to another server fails [message format: qsub.c do_connect]
        raise Rejected(f"qsub: cannot connect to server {server} (errno=15010)", 1)
    queue = queue or config.default_queue
    if queue not in config.queues:
        if torque:
            raise Rejected(
                "qsub: submit error (Unknown queue MSG=requested queue not found)", _status(15020)
            )  # Torque numbering: UNKQUE 15020 [unconfirmed]
        raise Rejected("qsub: Unknown queue", _status(PBSE_UNKQUE))
    qconf = config.queues[queue] or {}
    for res, val in (qconf.get("resources_default") or {}).items():
        given.setdefault(res, str(val))
    for res in given:
        if res not in defs:
            if torque:
                # Torque pbs_error_db.h: "Unknown resource type " [inner text unconfirmed]
                raise Rejected(f"qsub: submit error (Unknown resource type  Resource_List.{res})", _status(15037))
            raise Rejected(f"qsub: Unknown resource Resource_List.{res}", _status(PBSE_UNKRESC))
        if defs[res].read_only:
            raise Rejected(
                f"qsub: Cannot set attribute, read only or insufficient permission  Resource_List.{res}", _status(15003)
            )
        if defs[res].type != "string" or res in ("select", "place", "nodes"):
            continue
        try:
            check_value(defs[res], given[res])
        except ValueError:
            raise _illegal_resource(res) from None

    if torque:
        parsed = _torque_resources(given, defs)
    else:
        parsed = _pbspro_resources(given, defs, config)
    chunks, place, resources = parsed
    for res, val in list(resources.items()):  # the server's encoding (encode_time/size)
        rdef = defs.get(res)
        if rdef is not None and rdef.type == "time":
            resources[res] = format_hms(parse_time(val))
        elif rdef is not None and rdef.type == "size":
            resources[res] = _encode_size(val)
    ncpus = sum(n * int(c.get("ncpus", "0")) for n, c in chunks)
    ngpus = sum(n * int(c.get("ngpus", c.get("gpus", "0"))) for n, c in chunks)
    mem_bytes = sum(n * parse_size(c["mem"]) for n, c in chunks if "mem" in c)
    if torque and "mem" in given:
        mem_bytes = parse_size(given["mem"])
    nodect = sum(n for n, _ in chunks)
    walltime_s = parse_time(resources["walltime"]) if "walltime" in resources else None

    # queue limits (resources_max / resources_min): whole-job totals
    totals = {"ncpus": ncpus, "ngpus": ngpus, "mem": mem_bytes, "nodect": nodect, "walltime": walltime_s}
    limits = [(qconf.get("resources_max") or {}, 1)] + [(qconf.get("resources_min") or {}, -1)]
    limits.append((config.extra.get("server_resources_max") or {}, 1))
    for table, sign in limits:
        for res, limit in table.items():
            value = totals.get(res)
            if value is None:
                continue
            if res == "walltime":
                limit_value = parse_time(str(limit))
            elif res == "mem":
                limit_value = parse_size(str(limit))
            else:
                limit_value = int(limit)
            if (value - limit_value) * sign > 0:
                if torque:
                    raise Rejected(
                        "qsub: submit error (Job exceeds queue resource limits "
                        "MSG=cannot satisfy queue max " + res + " requirement)",
                        _status(15038),
                    )  # [unconfirmed inner text]
                raise Rejected("qsub: Job violates queue and/or server resource limits", _status(PBSE_EXCQRESC))
    if array is not None and len(range(array[0], array[1] + 1, array[2])) > MAX_ARRAY_SIZE:
        raise Rejected("qsub: Array job exceeds server or queue size limit", _status(PBSE_MAXARRAYSIZE))

    # can it ever run on these hosts (config.hosts of them, one by default)?  Real PBS accepts such
    # a job and the scheduler comments it; the emulator keeps it queued for ever with the same kind of
    # comment.  A chunk needs one host; with one host, or place=pack, every chunk shares it.
    never = None
    hosts = 1 if config.hosts <= 1 or place.get("arrangement") == "pack" else config.hosts
    host_limits = {"ncpus": config.ncpus, "ngpus": config.ngpus, "mem": config.mem_bytes}
    for res, have in host_limits.items():
        want = totals[res]
        per_chunk = max([(n if hosts == 1 else 1) * _chunk_value(c, res) for n, c in chunks] or [0])
        if want > have * hosts or per_chunk > have:
            shown = format_size(want) if res == "mem" else want
            shown_have = format_size(have * hosts) if res == "mem" else have * hosts
            never = (
                f"Can Never Run: Insufficient amount of resource: {res} (R: {shown} A: {shown_have} T: {shown_have})"
            )
            break
    if never is None and place.get("arrangement") in ("scatter", "vscatter") and nodect > config.hosts:
        never = "Can Never Run: Not enough total nodes available"
    for _, chunk in chunks:
        for res in ("host", "vnode"):
            if never is None and res in chunk and chunk[res] != config.host:
                never = f"Can Never Run: Insufficient amount of resource: {res}"
    # [the comments follow the scheduler's "Can Never Run: ..." form; wording unconfirmed]

    output_path = _output_path(store.get("o"), cwd)
    error_path = _output_path(store.get("e"), cwd)
    shell = store.get("S")
    return ParsedJob(
        flavor=flavor,
        name=name,
        queue=queue,
        server=config.server,
        script_text=script_text,
        resources=resources,
        chunks=chunks,
        place=place,
        ncpus=ncpus,
        ngpus=ngpus,
        mem_bytes=mem_bytes,
        nodect=nodect,
        walltime_s=walltime_s,
        account=store.get("A"),
        project=store.get("P"),
        join=join,
        keep=keep,
        output_path=output_path,
        error_path=error_path,
        export_all="V" in store.flags,
        variables=variables,
        hold=hold,
        depend=depend,
        array=array,
        rerunable=(store.get("r") or "y") == "y",
        mail_points=mail,
        mail_users=store.get("M"),
        shell=shell,
        group_list=group_list,
        priority=int(priority or 0),
        block=block,
        quiet="z" in store.flags,
        command=command,
        submit_args=argv,
        workdir=cwd,
        exclusive=place.get("sharing") in ("excl", "exclhost") or given.get("naccesspolicy") == "singlejob",
        never_runs=never,
        gpus_per_node=max([int(c.get("gpus", 0)) for _, c in chunks] or [0]) if torque else 0,
        ppn=max([int(c.get("ncpus", 0)) for _, c in chunks] or [0]) if torque else 0,
    )


def _encode_size(text: str) -> str:
    """attr_fn_size.c ``from_size``: the number, the unit letter lowercased, then b or w."""
    match = re.fullmatch(r"(\d+)([kmgtp]?)([bw]?)", text.lower())
    if not match:
        return text
    return f"{int(match.group(1))}{match.group(2)}{match.group(3) or 'b'}"


def _chunk_value(chunk: dict[str, str], res: str) -> int:
    if res == "mem":
        return parse_size(chunk["mem"]) if "mem" in chunk else 0
    return int(chunk.get(res, chunk.get("gpus", "0") if res == "ngpus" else "0"))


def _output_path(value: str | None, cwd: str) -> str | None:
    """``-o``/``-e``: ``[host:]path``, relative to the submit directory (prepare_path.c)."""
    if value is None:
        return None
    host, colon, path = value.partition(":")
    if colon and "/" not in host:
        value = path
    directory = value.endswith("/")  # a directory: the default file name goes inside
    value = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
    return value + "/" if directory else value


def _pbspro_resources(
    given: dict[str, str], defs: dict[str, ResourceDef], config: EmulatorConfig
) -> tuple[list[tuple[int, dict[str, str]]], dict[str, str], dict[str, str]]:
    """Select/place rules of the PBS Pro server; returns (chunks, place, Resource_List)."""
    resources = dict(given)
    if "nodes" in given and "select" in given:
        raise Rejected(
            'qsub: "-lresource=" cannot be used with "select" or "place", resource is: nodes',
            _status(PBSE_INVALJOBRESC),
        )
    if "select" in given:
        chunk_level = [r for r in given if defs[r].level == "chunk"]
        if chunk_level:
            # pbs_messages.c msg_invaljobresc + ": <res>" [seen with ngpus]
            raise Rejected(
                f'qsub: "-lresource=" cannot be used with "select" or "place", resource is: {chunk_level[0]}',
                _status(PBSE_INVALJOBRESC),
            )
        chunks = _parse_select(given["select"], defs, config.flavor)
    elif "nodes" in given:
        # old-style nodes=N[:ppn=C][:property]: PBS Pro converts it to a select
        chunks = []
        for part in given["nodes"].split("+"):
            pieces = part.split(":")
            count = int(pieces[0]) if pieces[0].isdigit() else 1
            chunk: dict[str, str] = {}
            for piece in pieces[1 if pieces[0].isdigit() else 0 :]:
                key, eq, value = piece.partition("=")
                if key == "ppn" and value.isdigit():
                    chunk["ncpus"] = value
                    chunk["mpiprocs"] = value
                elif eq and key in defs and defs[key].level == "chunk":
                    chunk[key] = value
                else:  # a node property is looked up as a boolean resource [seen: AMD]
                    raise Rejected(f"qsub: Unknown resource: {key}", _status(PBSE_UNKRESC))
            chunks.append((count, chunk))
        del resources["nodes"]
    else:
        if "place" in given:
            raise Rejected(
                'qsub: Cannot have "place" without "select"', _status(PBSE_PLACENOSELECT)
            )  # [message from pbs_messages.c]
        # job-wide host-level resources become one chunk (PBS Pro's conversion)
        chunk = {r: given[r] for r in given if defs[r].level == "chunk"}
        chunks = [(1, chunk)]
        for r in chunk:
            del resources[r]
    for _, chunk in chunks:
        chunk.setdefault("ncpus", "1")  # server default_chunk.ncpus = 1
    place = _parse_place(given["place"], defs) if "place" in given else {}
    place.setdefault("arrangement", "free")
    resources["select"] = "+".join(f"{n}:" + ":".join(f"{k}={v}" for k, v in c.items()) for n, c in chunks)
    if "select" in given:
        resources["select"] = given["select"]
    resources["place"] = given.get("place", "free")
    # the job-wide sums the server adds (Resource_List.ncpus, .ngpus, .mem, .nodect)
    sums: dict[str, int] = {}
    for n, chunk in chunks:
        for key, value in chunk.items():
            if key in ("ncpus", "ngpus", "mpiprocs", "naccelerators"):
                sums[key] = sums.get(key, 0) + n * int(value)
            elif key in ("mem", "vmem"):
                sums[key] = sums.get(key, 0) + n * parse_size(value)
    for key, value in sums.items():
        if key == "mpiprocs":
            continue
        resources[key] = format_size(value) if key in ("mem", "vmem") else str(value)
    resources["nodect"] = str(sum(n for n, _ in chunks))
    return chunks, place, resources


def _torque_resources(
    given: dict[str, str], defs: dict[str, ResourceDef]
) -> tuple[list[tuple[int, dict[str, str]]], dict[str, str], dict[str, str]]:
    """Torque: ``nodes=N[:ppn=C][:gpus=G][:property]...[+...]``, ``procs``, ``ncpus``."""
    resources = dict(given)
    chunks = []
    if "nodes" in given:
        for part in given["nodes"].split("+"):
            pieces = part.split(":")
            if not pieces[0]:
                raise Rejected(
                    "qsub: submit error (Illegal attribute or resource value for  Resource_List.nodes)", _status(15016)
                )  # [unconfirmed]
            count = int(pieces[0]) if pieces[0].isdigit() else 1
            chunk = {"ncpus": "1"}
            for piece in pieces[1 if pieces[0].isdigit() else 0 :]:
                key, _, value = piece.partition("=")
                if key == "ppn" and value.isdigit():
                    chunk["ncpus"] = value
                elif key == "gpus" and value.isdigit():
                    chunk["gpus"] = value
                elif not value:
                    pass  # a node property (feature)
                else:
                    raise Rejected(
                        "qsub: submit error (Illegal attribute or resource value for  Resource_List.nodes)",
                        _status(15016),
                    )
            chunks.append((count, chunk))
    else:
        chunks = [(1, {"ncpus": given.get("ncpus", given.get("procs", "1"))})]
    resources["nodect"] = str(sum(n for n, _ in chunks))
    return chunks, {}, resources


# -- the PBS flavour (what the MoM does) ----------------------------------------------------


def _user_home() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return os.path.expanduser("~")


def _login_shell() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_shell or "/bin/bash"
    except KeyError:
        return "/bin/bash"


def full_job_id(job: JobRecord, server: str) -> str:
    if job.is_array_parent:
        return f"{job.id}[].{server}"
    return f"{job.key}.{server}"


class PBSFlavor(Flavor):
    """PBS Pro's MoM: environment, PBS_NODEFILE, TMPDIR, exit statuses."""

    name = "pbspro"
    stage_output = True  # PBS spools .OU/.ER and copies them when the job ends

    def prepare(self, store: JobStore, job: JobRecord) -> None:
        config = store.config
        server = config.server
        home = _user_home()
        jobid = f"{job.key}.{server}"
        env: dict[str, str] = {}
        # Variable_List: the PBS_O_* qsub sent, -v variables, and with -V everything
        env.update(job.extra.get("variable_list", {}))
        # what the MoM sets for every job (PBS Pro Reference Guide, "PBS environment
        # variables"); without -V PATH is a default (the login shell would add to it)
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        user = job.user
        env.update(
            {
                "HOME": home,
                "LOGNAME": user,
                "USER": user,
                "SHELL": job.extra.get("shell") or _login_shell(),
                "PBS_JOBNAME": job.name,
                "PBS_JOBID": jobid,
                "PBS_QUEUE": job.queue,
                "PBS_ENVIRONMENT": "PBS_BATCH",
                "ENVIRONMENT": "BATCH",
                "PBS_JOBDIR": home,
                "PBS_NODENUM": "0",
                "PBS_TASKNUM": "1",
                "PBS_MOMPORT": "15003",
                "PBS_JOBCOOKIE": f"{job.id:032X}",
            }
        )
        if config.flavor == "torque":
            env.pop("PBS_JOBDIR", None)
            env.pop("ENVIRONMENT", None)
        if job.array_index is not None:
            env["PBS_ARRAY_INDEX"] = str(job.array_index)
            env["PBS_ARRAY_ID"] = f"{job.id}[].{server}"
        # PBS_NODEFILE: the host once per MPI process (mpiprocs) of each chunk
        aux = store.home / "aux"
        aux.mkdir(exist_ok=True)
        nodefile = aux / jobid
        chunks = job.extra.get("chunks", [[1, {"ncpus": str(job.ncpus)}]])
        lines = []
        for count, chunk in chunks:
            if config.flavor == "torque":
                per = int(chunk.get("ncpus", 1))  # Torque: once per ppn
            else:
                per = int(chunk.get("mpiprocs", 1 if int(chunk.get("ncpus", 1)) > 0 else 0))
            lines += [config.host] * (count * per)
        nodefile.write_text("".join(f"{line}\n" for line in lines))
        env["PBS_NODEFILE"] = str(nodefile)
        # TMPDIR: a per-job directory the MoM creates and removes (pbs.conf PBS_TMPDIR)
        tmpdir = store.home / "tmp" / f"pbs.{jobid}"
        tmpdir.mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(tmpdir)
        first = chunks[0][1] if chunks else {}
        env["NCPUS"] = str(first.get("ncpus", job.ncpus))
        env["OMP_NUM_THREADS"] = str(first.get("ompthreads", first.get("ncpus", job.ncpus)))
        # the GPUs the cgroup hook gave the job (PBS Pro cgroups hook / Torque)
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, job.devices))
        if config.flavor == "torque":
            env.pop("NCPUS", None)
            gpufile = aux / f"{jobid}gpu"
            gpufile.write_text("".join(f"{config.host}-gpu{d}\n" for d in job.devices))
            env["PBS_GPUFILE"] = str(gpufile)
            ppn = int(first.get("ncpus", 1))
            env.update(
                {
                    "PBS_NUM_NODES": str(sum(int(c) for c, _ in chunks)),
                    "PBS_NUM_PPN": str(ppn),
                    "PBS_NP": str(job.ncpus),
                    "PBS_O_WORKDIR": env.get("PBS_O_WORKDIR", job.workdir),
                }
            )
        job.run_env = env
        # PBS Pro starts the job in the user's home directory; Torque too (-d changes it)
        job.run_cwd = job.extra.get("initdir") or home
        command = job.extra.get("command")
        if command:
            job.run_argv = list(command)
        elif job.extra.get("shell"):
            job.run_argv = [job.extra["shell"], job.script]
        else:
            job.run_argv = default_argv(job.script)
        job.extra["exec_host"] = self.exec_host(config, job)
        job.extra["nodefile"] = str(nodefile)
        job.extra["tmpdir"] = str(tmpdir)

    @staticmethod
    def exec_host(config: EmulatorConfig, job: JobRecord) -> str:
        parts = []
        index = 0
        for count, chunk in job.extra.get("chunks", [[1, {"ncpus": str(job.ncpus)}]]):
            for _ in range(count):
                parts.append(f"{config.host}/{index}*{chunk.get('ncpus', 1)}")
                index += 1
        return "+".join(parts)

    def signal_exit_status(self, signum: int) -> int:
        # the MoM records WTERMSIG + 0x100 for a job shell killed by a signal [seen]
        return 256 + signum

    def walltime_exit_status(self, returncode: int) -> int:
        return self.signal_exit_status(-returncode) if returncode < 0 else returncode

    def walltime_message(self, job: JobRecord, used_s: float) -> str | None:
        # "=>> PBS: job killed: walltime 152 exceeded limit 120" [seen]
        return f"=>> PBS: job killed: walltime {int(used_s)} exceeded limit {job.walltime_s}"

    def finish(self, store: JobStore, job: JobRecord) -> None:
        for key in ("tmpdir",):
            path = job.extra.get(key)
            if path:
                shutil.rmtree(path, ignore_errors=True)
        nodefile = job.extra.get("nodefile")
        if nodefile:
            Path(nodefile).unlink(missing_ok=True)
            Path(nodefile + "gpu").unlink(missing_ok=True)


class TorqueFlavor(PBSFlavor):
    name = "torque"


def flavor(name: str) -> Flavor:
    return TorqueFlavor() if name == "torque" else PBSFlavor()


# -- qsub -----------------------------------------------------------------------------------


def _variable_list(parsed: ParsedJob, environ: dict[str, str], config: EmulatorConfig) -> dict[str, str]:
    """qsub.c ``job_env_basic`` + -v + -V: the job's Variable_List."""
    variables: dict[str, str] = {}
    for name in ("HOME", "LANG", "LOGNAME", "PATH", "MAIL", "SHELL", "TZ"):
        if name in environ:
            variables[f"PBS_O_{name}"] = environ[name]
    variables.setdefault("PBS_O_HOME", "/")
    variables["PBS_O_WORKDIR"] = parsed.workdir
    variables["PBS_O_SYSTEM"] = os.uname().sysname
    if parsed.export_all:
        variables.update({k: v for k, v in environ.items() if not k.startswith("PBS_O_")})
    variables.update(parsed.variables)
    variables["PBS_O_QUEUE"] = parsed.queue
    variables["PBS_O_HOST"] = config.host  # set by the background qsub (PBS_O_HOST)
    return variables


_GENERIC_USER_LIMIT = re.compile(r"\[u:PBS_GENERIC=(\d+)\]")


def _check_user_queued_limit(parsed: ParsedJob, store: JobStore) -> None:
    """A queue's ``max_queued = [u:PBS_GENERIC=N]``: each user's jobs queued, held or running in the
    queue (an array counts once) stay at N; one more is refused at submit time, as PBS Pro does."""
    qconf = store.config.queues.get(parsed.queue or store.config.default_queue) or {}
    match = _GENERIC_USER_LIMIT.fullmatch(str(qconf.get("max_queued", "")).strip())
    if match is None:
        return
    user = getpass.getuser()
    queue = parsed.queue or store.config.default_queue
    jobs = [
        job
        for job in store.jobs()
        if job.user == user and job.queue == queue and job.array_index is None and job.state != "finished"
    ]
    if len(jobs) >= int(match.group(1)):
        # PBS Pro's words for max_queued [u:PBS_GENERIC=N] on a queue (its test suite's pbs_entity_limits)
        raise Rejected("qsub: would exceed queue generic's per-user limit", _status(PBSE_ENTLIMCT))


def submit(parsed: ParsedJob, store: JobStore, environ: dict[str, str]) -> JobRecord:
    """Queue a parsed job (and its array elements); returns the (parent) record."""
    config = store.config
    with store.locked():
        _check_user_queued_limit(parsed, store)
        depend = []
        for kind, job_id in parsed.depend:
            key = job_id.split(".", 1)[0]
            other = store.get(key[:-2] if key.endswith("[]") else key)
            if other is None or (key.endswith("[]") != other.is_array_parent):
                # the server looks the job up [message: pbs_messages.c msg_unkjobid;
                # that qsub prints it this way for a dependency is unconfirmed]
                raise Rejected(f"qsub: Unknown Job Id {job_id}", _status(PBSE_UNKJOBID))
            depend.append([kind, other.key])
        seq = store.next_id()
        script_copy = store.scripts_dir / f"{seq}.SC"
        script_copy.write_text(parsed.script_text)
        script_copy.chmod(0o700)
        out, err = parsed.output_paths(seq)
        variables = _variable_list(parsed, environ, config)
        holds = ("u" if parsed.hold else "") + ("s" if depend else "")
        extra = {
            "flavor": config.flavor,
            "resources": parsed.resources,
            "chunks": [[n, c] for n, c in parsed.chunks],
            "place": parsed.place,
            "account": parsed.account,
            "project": parsed.project,
            "keep": parsed.keep,
            "variable_list": variables,
            "rerunable": parsed.rerunable,
            "mail_points": parsed.mail_points,
            "mail_users": parsed.mail_users,
            "shell": parsed.shell,
            "group_list": parsed.group_list,
            "priority": parsed.priority,
            "command": parsed.command,
            "submit_args": parsed.submit_args,
            "direct_write": "d" in parsed.keep,
            "comment": parsed.never_runs,
            "never_runs": bool(parsed.never_runs),
            "server": config.server,
        }
        common = dict(
            name=parsed.name,
            queue=parsed.queue,
            workdir=parsed.workdir,
            join=parsed.join,
            env=variables,
            ncpus=parsed.ncpus,
            ngpus=parsed.ngpus,
            mem_bytes=parsed.mem_bytes,
            walltime_s=parsed.walltime_s,
            holds=holds,
            depend=depend,
            exclusive=parsed.exclusive,
            script=str(script_copy),
        )
        state = "held" if holds else "queued"
        if parsed.array is None:
            job = JobRecord(id=seq, stdout=out, stderr=err, state=state, extra=extra, **common)
            store.add(job)
        else:
            spec = f"{parsed.array[0]}-{parsed.array[1]}" + (f":{parsed.array[2]}" if parsed.array[2] != 1 else "")
            job = JobRecord(id=seq, stdout=out, stderr=err, state=state, array=spec, extra=dict(extra), **common)
            store.add(job)
            for index in parsed.array_indices():
                # PBS Pro names element output <name>.o<seq>.<index> [unconfirmed suffix]
                sub_out = out if parsed.output_path and out == parsed.output_path else f"{out}.{index}"
                sub_err = err if parsed.error_path and err == parsed.error_path else f"{err}.{index}"
                store.add(
                    JobRecord(
                        id=seq,
                        array_index=index,
                        array=spec,
                        stdout=sub_out,
                        stderr=sub_err,
                        state=state,
                        extra=dict(extra),
                        **common,
                    )
                )
    store.schedule()
    return store.get(job.key) or job


def qsub(argv: list[str], stdin: Any = None, environ: dict[str, str] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    home = emulator_home(environ, "qsub")
    store = JobStore(home)
    config = store.config
    torque = config.flavor == "torque"
    usage = TORQUE_USAGE if torque else QSUB_USAGE
    # find the operand: everything after the options
    opts, errors, rest = _getopt(argv, QSUB_OPTS_TORQUE if torque else QSUB_OPTS_PBSPRO, "qsub")
    options = argv[: len(argv) - len(rest)]
    script_name = None
    if errors:
        parse_submission("", argv, config, environ=environ)  # raises with usage
    if rest and rest[0] != "--":
        if len(rest) != 1:
            raise Rejected(usage, 2)  # process_special_args: the script must be last
        script_name = rest[0]
        path = Path(script_name)
        if not path.exists():
            # perror("qsub: script file:") [qsub.c read_job_script]
            raise Rejected("qsub: script file:: No such file or directory", 1)
        if not path.is_file():
            raise Rejected("qsub: script not a file", 1)
        script_text = path.read_text(errors="replace")
        parse_argv = options
    elif rest:
        script_text = ""
        parse_argv = argv
    else:
        stream = stdin if stdin is not None else sys.stdin
        script_text = stream.read() if stream is not None else ""
        parse_argv = options
    parsed = parse_submission(
        script_text, parse_argv, config, cwd=os.getcwd(), environ=environ, script_name=script_name
    )
    parsed.submit_args = list(argv)  # Submit_arguments: the whole command line
    job = submit(parsed, store, environ)
    job_id = full_job_id(job, config.server)
    if not parsed.quiet:
        print(job_id, flush=True)
    if parsed.block:
        # -W block=true: wait for the job and exit with its exit status (qsub.c block())
        while True:
            current = store.get(job.key)
            if current is None or current.state == "finished":
                break
            time.sleep(0.1)
        status = current.exit_status if current is not None else 0
        return (status or 0) & 0xFF
    return 0


# -- qstat ----------------------------------------------------------------------------------

_STATE_LETTER = {"queued": "Q", "held": "H", "running": "R", "exiting": "E", "finished": "F"}


def state_letter(job: JobRecord, torque: bool = False) -> str:
    if job.is_array_parent:
        return {"queued": "Q", "held": "H", "running": "B", "exiting": "B", "finished": "F"}[job.state]
    if job.array_index is not None and job.state == "finished":
        return "X"
    if torque and job.state == "finished":
        return "C"
    return _STATE_LETTER[job.state]


def _ctime(stamp: float | None) -> str:
    return time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(stamp or 0))


def _used_walltime(job: JobRecord) -> int:
    if job.start_time is None:
        return 0
    end = job.end_time if job.end_time else time.time()
    return int(end - job.start_time)


def job_attributes(job: JobRecord, store: JobStore) -> list[tuple[str, Any]]:
    """The attributes ``qstat -f`` shows, in PBS Pro's order (name, value)."""
    config = store.config
    server = config.server
    torque = config.flavor == "torque"
    extra = job.extra
    attrs: list[tuple[str, Any]] = [("Job_Name", job.name), ("Job_Owner", f"{job.user}@{config.host}")]
    if job.start_time is not None and not job.is_array_parent:
        used = _used_walltime(job)
        attrs += [
            ("resources_used.cpupercent", 0),
            ("resources_used.cput", "00:00:00"),
            ("resources_used.mem", "0kb"),
            ("resources_used.ncpus", job.ncpus),
            ("resources_used.vmem", "0kb"),
            ("resources_used.walltime", format_hms(used)),
        ]
    attrs += [
        ("job_state", state_letter(job, torque)),
        ("queue", job.queue),
        ("server", server),
        ("Checkpoint", "u"),
        ("ctime", _ctime(job.submit_time)),
    ]
    attrs.append(("Error_Path", f"{config.host}:{job.stderr}"))
    if job.active and not job.is_array_parent:
        attrs.append(("exec_host", extra.get("exec_host", "")))
        vnodes = "+".join(
            f"({config.host}:" + ":".join(f"{k}={v}" for k, v in c.items() if k in ("ncpus", "ngpus", "mem")) + ")"
            for n, c in extra.get("chunks", [])
            for _ in range(n)
        )
        if not torque:
            attrs.append(("exec_vnode", vnodes))
    attrs += [
        ("Hold_Types", job.holds or "n"),
        ("Join_Path", job.join),
        ("Keep_Files", extra.get("keep", "n")),
        ("Mail_Points", extra.get("mail_points", "a")),
        ("mtime", _ctime(job.end_time or job.start_time or job.submit_time)),
        ("Output_Path", f"{config.host}:{job.stdout}"),
        ("Priority", extra.get("priority", 0)),
        ("qtime", _ctime(job.submit_time)),
        ("Rerunable", "True" if extra.get("rerunable", True) else "False"),
    ]
    if extra.get("account"):
        attrs.insert(2, ("Account_Name", extra["account"]))
    for key, value in sorted(extra.get("resources", {}).items()):
        attrs.append((f"Resource_List.{key}", value))
    if job.start_time is not None:
        attrs.append(("stime", _ctime(job.start_time)))
    if job.pid:
        attrs.append(("session_id", job.pid))
    if job.array_index is None and not job.is_array_parent:
        attrs.append(("jobdir", _user_home()))
    attrs.append(("Variable_List", extra.get("variable_list", {})))
    comment = extra.get("comment")
    if job.state == "finished" and not job.is_array_parent:
        if extra.get("deleted"):
            comment = "Job deleted"
        else:
            comment = f"Job run at {_ctime(job.start_time)} on ({config.host}:ncpus={job.ncpus}) and finished"
    elif job.active and not job.is_array_parent:
        comment = f"Job run at {_ctime(job.start_time)} on ({config.host}:ncpus={job.ncpus})"
    if comment:
        attrs.append(("comment", comment))
    attrs.append(("etime", _ctime(job.submit_time)))
    estimate = store.estimated_start(job)
    if estimate is not None and not torque:  # set by the scheduler for jobs it calendars [openpbs qstat.c]
        attrs.append(("estimated.exec_vnode", f"({config.host}:ncpus={job.ncpus}:ngpus={job.ngpus})"))
        attrs.append(("estimated.start_time", _ctime(estimate)))
    if job.start_time is not None and not job.is_array_parent:
        attrs.append(("run_count", 1))
    if job.is_array_parent:
        subs = store.subjobs(job.id)
        counts = {"Queued": 0, "Running": 0, "Exiting": 0, "Expired": 0}
        for sub in subs:
            if sub.state in ("queued", "held"):
                counts["Queued"] += 1
            elif sub.state == "running":
                counts["Running"] += 1
            elif sub.state == "exiting":
                counts["Exiting"] += 1
            else:
                counts["Expired"] += 1
        attrs += [
            ("array", "True"),
            ("array_state_count", " ".join(f"{k}:{v}" for k, v in counts.items())),
            ("array_indices_submitted", job.array),
            ("array_indices_remaining", _remaining(subs) or "-"),
        ]
    if job.array_index is not None:
        attrs += [("array_id", f"{job.id}[].{server}"), ("array_index", job.array_index)]
    if job.state == "finished" and job.exit_status is not None:
        attrs.append(("exit_status" if torque else "Exit_status", job.exit_status))
    if job.depend:
        attrs.append(("depend", ",".join(f"{k}:{v}.{server}" for k, v in job.depend)))
    if extra.get("submit_args"):
        attrs.append(("Submit_arguments", " ".join(extra["submit_args"])))
    if extra.get("project") and not torque:
        attrs.append(("project", extra["project"]))
    elif not torque:
        attrs.append(("project", "_pbs_project_default"))
    return attrs


def _remaining(subs: list[JobRecord]) -> str:
    left = [s.array_index for s in subs if s.state in ("queued", "held")]
    return ",".join(str(i) for i in left)


def _format_full(job: JobRecord, store: JobStore) -> str:
    server = store.config.server
    lines = [f"Job Id: {full_job_id(job, server)}"]
    for name, value in job_attributes(job, store):
        if isinstance(value, dict):
            value = ",".join(f"{k}={v}" for k, v in value.items())
            # PBS folds long Variable_List lines at 80 columns with a tab; kept unfolded
        lines.append(f"    {name} = {value}")
    return "\n".join(lines) + "\n"


def _json_job(job: JobRecord, store: JobStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in job_attributes(job, store):
        if "." in name and name.split(".", 1)[0] in ("Resource_List", "resources_used", "estimated"):
            group, key = name.split(".", 1)
            if isinstance(value, str) and re.fullmatch(r"\d+", value):
                value = int(value)
            out.setdefault(group, {})[key] = value
        else:
            out[name] = value
    return out


def _table_row(job: JobRecord, store: JobStore, torque: bool) -> str:
    server = store.config.server
    job_id = full_job_id(job, server)
    if torque:
        timeuse = format_hms(_used_walltime(job)) if job.start_time else "0"
        return (
            f"{job_id[:25]:<25} {job.name[:16]:<16} {job.user[:15]:<15} "
            f"{timeuse:>8} {state_letter(job, True)} {job.queue}"
        )
    if len(job_id) > 17:
        job_id = job_id[:16] + "*"  # newer PBS Pro marks a truncated id with * [seen]
    timeuse = "00:00:00" if job.start_time and not job.is_array_parent else "0"
    return (
        f"{job_id:<17} {job.name[:16]:<16} {job.user[:16]:<16}  {timeuse:>8} {state_letter(job)} {job.queue[:15]:<15} "
    )


def _alt_row(job: JobRecord, store: JobStore) -> str:
    """``qstat -a`` / ``qstat -u`` row (layout from a PBS Pro transcript [seen])."""
    res = job.extra.get("resources", {})
    job_id = full_job_id(job, store.config.server)[:15]
    mem = res.get("mem", "--")
    wall = res.get("walltime")
    req_time = "--" if wall is None else format_hms(parse_time(wall))[:5]
    elapsed = "--"
    if job.start_time is not None and not job.is_array_parent:
        elapsed = format_hms(_used_walltime(job))[:5]
    sess = str(job.pid) if job.pid and job.active else "--"
    return (
        f"{job_id:<15} {job.user[:8]:<8} {job.queue[:8]:<8} {job.name[:10]:<10} "
        f"{sess:>6} {res.get('nodect', '1'):>3} {res.get('ncpus', job.ncpus):>3} "
        f"{mem:>6} {req_time:>5} {state_letter(job)} {elapsed:>5}"
    )


QSTAT_USAGE = (
    "usage: \n"
    "qstat [-f] [-J] [-p] [-t] [-x] [-E] [-F format] [-D delim] [ job_identifier... | "
    "destination... ]\n"
    "qstat [-a|-i|-r|-H|-T] [-J] [-t] [-u user] [-n] [-s] [-G|-M] [-1] [-w]\n"
    "\t[ job_identifier... | destination... ]\n"
    "qstat -Q [-f] [-F format] [-D delim] [ destination... ]\n"
    "qstat -q [-G|-M] [ destination... ]\n"
    "qstat -B [-f] [-F format] [-D delim] [ server_name... ]\n"
    "qstat --version"
)  # qstat.c usage [layout unconfirmed in detail]


def _resolve(ident: str, store: JobStore) -> tuple[str, JobRecord | None]:
    """A qstat/qdel operand -> (the full id as PBS prints it, the record or None)."""
    server = store.config.server
    text = ident
    seq, dot, srv = text.partition(".")
    full = f"{seq}.{srv or server}"
    match = re.fullmatch(r"(\d+)(\[(\d*)\])?", seq)
    if not match:
        return full, None
    number = int(match.group(1))
    if match.group(2) is None:
        job = store.get(number)
        if job is not None and job.is_array_parent:
            return full, None  # an array is named 1234[] [unconfirmed: plain id refused]
        return full, job
    if match.group(3) == "":
        job = store.get(number)
        return full, job if job is not None and job.is_array_parent else None
    return full, store.get(f"{number}[{int(match.group(3))}]")


def qstat(argv: list[str], environ: dict[str, str] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    home = emulator_home(environ, "qstat")
    store = JobStore(home)
    torque = store.config.flavor == "torque"
    opts, errors, rest = _getopt(argv, "fF:D:xHJtpu:awn1sTiQqBGME", "qstat")
    # qstat takes options after operands too (GNU getopt permutes); gather them
    operands = []
    while rest:
        if rest[0].startswith("-") and rest[0] != "-":
            more, more_errors, rest = _getopt(rest, "fF:D:xHJtpu:awn1sTiQqBGME", "qstat")
            opts += more
            errors += more_errors
        else:
            operands.append(rest.pop(0))
    if errors:
        raise Rejected("\n".join(errors + [QSTAT_USAGE]), 2)
    flags = {c for c, _ in opts}
    fmt = next((v for c, v in opts if c == "F"), None)
    user = next((v for c, v in opts if c == "u"), None)
    if fmt is not None and fmt not in ("json", "dsv"):
        raise Rejected("qstat: invalid -F value", 2)  # [unconfirmed text]
    if {"Q", "q", "B"} & flags:
        return _qstat_queues(store, flags, operands)
    store.schedule()  # no daemon: every command is a schedule pass
    history = "x" in flags or "H" in flags
    full = "f" in flags
    status = 0
    selected: list[JobRecord] = []
    messages: list[str] = []
    if operands:
        for ident in operands:
            shown, job = _resolve(ident, store)
            if job is None:
                messages.append(
                    f"qstat: Unknown Job Id {shown}" if not torque else f"qstat: Unknown Job Id Error {shown}"
                )
                status = _status(PBSE_UNKJOBID)
                continue
            if job.state == "finished" and not history and not torque:
                messages.append(
                    f"qstat: {full_job_id(job, store.config.server)} Job has "
                    "finished, use -x or -H to obtain historical job information"
                )
                status = _status(PBSE_HISTJOBID)  # [exit status derived, unconfirmed]
                continue
            selected.append(job)
            if "t" in flags and job.is_array_parent:
                selected += store.subjobs(job.id)
    else:
        for job in store.jobs():
            if job.array_index is not None and "t" not in flags:
                continue
            if job.state == "finished" and not history and not torque:
                continue
            if "J" in flags and not job.is_array_parent and job.array_index is None:
                continue
            selected.append(job)
    if user is not None:
        users = set(user.split(","))
        selected = [j for j in selected if j.user in users]
    out = sys.stdout
    if fmt == "json":
        doc: dict[str, Any] = {
            "timestamp": int(time.time()),
            "pbs_version": PBS_VERSION,
            "pbs_server": store.config.server,
        }
        if selected:
            doc["Jobs"] = {full_job_id(j, store.config.server): _json_job(j, store) for j in selected}
        out.write(json.dumps(doc, indent=4) + "\n")
    elif full:
        out.write("\n".join(_format_full(j, store) for j in selected))
        if selected:
            out.write("\n")
    elif selected:
        if ("a" in flags or user is not None) and not torque:
            out.write(
                f"\n{store.config.server}: \n"
                "                                                            "
                "Req'd  Req'd   Elap\n"
                "Job ID          Username Queue    Jobname    SessID NDS TSK Memory "
                "Time  S Time\n"
                "--------------- -------- -------- ---------- ------ --- --- ------ "
                "----- - -----\n"
            )
            for job in selected:
                out.write(_alt_row(job, store) + "\n")
        else:
            if torque:
                out.write(
                    "Job ID                    Name             User            "
                    "Time Use S Queue\n"
                    "------------------------- ---------------- --------------- "
                    "-------- - -----\n"
                )
            else:
                out.write(
                    "Job id            Name             User              "
                    "Time Use S Queue\n"
                    "----------------  ---------------- ----------------  "
                    "-------- - -----\n"
                )
            for job in selected:
                out.write(_table_row(job, store, torque) + "\n")
    out.flush()
    if messages:
        raise Rejected("\n".join(messages), status)
    return status


def _qstat_queues(store: JobStore, flags: set[str], names: list[str] | None = None) -> int:
    """``qstat -Q``: one line per queue (enough for a glance; layout as PBS Pro); ``qstat -Qf``: each queue's
    attributes, as ``qstat -f`` shows a job's."""
    unknown = [name for name in names or [] if name not in store.config.queues]
    if unknown:
        raise Rejected(f"qstat: Unknown queue {unknown[0]}", _status(PBSE_UNKQUE))  # [unconfirmed: text after it]
    chosen = names or list(store.config.queues)
    jobs = [j for j in store.jobs() if j.array_index is None]
    if "f" in flags:
        sys.stdout.write("".join(_queue_full(name, store, jobs) for name in chosen))
        return 0
    print("Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type")
    print("---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----")
    for name in chosen:
        mine = [j for j in jobs if j.queue == name and j.state != "finished"]
        count = {s: sum(1 for j in mine if j.state == s) for s in ("queued", "running", "held", "exiting")}
        print(
            f"{name[:16]:<16} {0:>5} {len(mine):>5} yes yes {count['queued']:>5} "
            f"{count['running']:>5} {count['held']:>5} {0:>5} {0:>5} {count['exiting']:>5} "
            "Exec"
        )
    return 0


def _queue_full(name: str, store: JobStore, jobs: list[JobRecord]) -> str:
    """One queue of ``qstat -Qf`` as PBS Pro prints it ([openpbs] src/cmds/qstat.c: display_statque with -f prints
    "Queue: NAME", then prt_attr's "    attribute[.resource] = value" line per attribute (a value past 78 columns
    folded at a comma onto a line that starts with a tab), then a blank line; [seen] MetaCentrum's ``qstat -Q -f
    default@meta-pbs.metacentrum.cz`` in its documentation, ``resources_max.walltime = 720:00:00``): queue_type,
    total_jobs, state_count, the queue's resources_max / resources_min / resources_default (a walltime in the
    server's HH:MM:SS), enabled, started."""
    qconf = store.config.queues[name] or {}
    mine = [j for j in jobs if j.queue == name and j.state != "finished"]
    count = {s: sum(1 for j in mine if j.state == s) for s in ("queued", "running", "held", "exiting")}
    lines = [
        f"Queue: {name}",
        "    queue_type = Execution",
        f"    total_jobs = {len(mine)}",
        f"    state_count = Transit:0 Queued:{count['queued']} Held:{count['held']} Waiting:0 "
        f"Running:{count['running']} Exiting:{count['exiting']} Begun:0 ",
    ]
    for table in ("resources_max", "resources_min", "resources_default"):
        for res, value in (qconf.get(table) or {}).items():
            shown = format_hms(parse_time(str(value))) if res == "walltime" else value
            lines.append(f"    {table}.{res} = {shown}")
    lines += ["    enabled = True", "    started = True", "", ""]
    return "\n".join(lines)


# -- qdel -----------------------------------------------------------------------------------

QDEL_USAGE = "usage:\n\tqdel [-W force|suppress_email=X] [-x] job_identifier...\n\tqdel --version"  # qdel.c


def qdel(argv: list[str], environ: dict[str, str] | None = None) -> int:
    environ = dict(os.environ if environ is None else environ)
    home = emulator_home(environ, "qdel")
    store = JobStore(home)
    torque = store.config.flavor == "torque"
    opts, errors, rest = _getopt(argv, "W:x" if not torque else "W:p:m:c:at:b:", "qdel")
    force = False
    for c, v in opts:
        if c == "W":
            if v == "force":
                force = True
            elif not (v.isdigit() or v.startswith("suppress_email=")):
                errors.append("qdel: illegal -W value")
    if errors or not rest:
        raise Rejected("\n".join(errors + [QDEL_USAGE]), 2)
    messages = []
    status = 0
    for ident in rest:
        if ident == "--":
            continue
        if not re.fullmatch(r"\d+(\[\d*\])?(\.[\w.-]+)?", ident):
            messages.append(f"qdel: illegally formed job identifier: {ident}")
            status = 1
            continue
        shown, job = _resolve(ident, store)
        if job is None:
            messages.append(f"qdel: Unknown Job Id {shown}")
            status = _status(PBSE_UNKJOBID)
            continue
        if job.state == "finished":
            # PBSE_HISTJOBID "Job has finished" [qdel.c prints "<msg> <id>"; not seen]
            messages.append(f"qdel: Job has finished {full_job_id(job, store.config.server)}")
            status = _status(PBSE_HISTJOBID)
            continue
        sequence = (signal.SIGKILL,) if force else (signal.SIGTERM, signal.SIGKILL)
        store.cancel(job.key, signal_sequence=sequence)
    store.schedule()
    if messages:
        raise Rejected("\n".join(messages), status)
    return status


# -- entry points ---------------------------------------------------------------------------


def _version_flag(argv: Sequence[str], prog: str) -> bool:
    if list(argv) == ["--version"]:
        print(f"pbs_version = {PBS_VERSION}")  # PRINT_VERSION_AND_EXIT
        return True
    return False


def qsub_main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if _version_flag(args, "qsub"):
        return 0
    return main_wrapper(lambda a: qsub(a), "qsub", args)


def qstat_main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if _version_flag(args, "qstat"):
        return 0
    return main_wrapper(lambda a: qstat(a), "qstat", args)


def qdel_main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if _version_flag(args, "qdel"):
        return 0
    return main_wrapper(lambda a: qdel(a), "qdel", args)


__all__ = [
    "ParsedJob",
    "parse_submission",
    "default_config",
    "qsub_main",
    "qstat_main",
    "qdel_main",
    "PBSFlavor",
    "flavor",
    "full_job_id",
    "state_letter",
    "submit",
    "QSUB_USAGE",
    "TORQUE_USAGE",
]
