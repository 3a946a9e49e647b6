"""A strict IBM Spectrum LSF emulator for the tests: ``bsub``, ``bjobs``, ``bkill`` and ``jsrun``.

Built on the shared core in ``common.py`` (job store, scheduler, runner); this module holds
LSF's grammar, messages, output formats and job environment.  Stdlib only.

What is emulated
----------------
* ``bsub < script`` reads ``#BSUB`` lines from the script on stdin; ``bsub [options] command
  [args]`` runs a command through ``/bin/sh -c``.  ``bsub script_file`` is a *command*: LSF
  does not read the ``#BSUB`` lines of a file named on the command line unless
  ``LSB_BSUB_PARSE_SCRIPT=Y`` is set in lsf.conf [IBM job_script] (config key
  ``bsub_parse_script``, default off, as LSF's default); the file must then be executable at
  run time.  That is why dask-jobqueue has ``use_stdin``.  Options on the command line
  override the same options in the script [IBM command; OL cmd.sub.c fillReq: the embedded
  options are applied with the mask ``~req->options``].
* ``#BSUB`` lines are read from the *whole* script, not only up to the first command
  [OL cmd.sub.c parseScript/parseLine parse every line; IBM job_script's example puts
  ``#BSUB -P myproj`` after the commands and says it applies].  A line is a directive when,
  after optional blanks, it is ``#`` + optional blanks + ``BSUB`` + optional blanks + ``-``;
  a word starting with ``#`` ends the directive (a comment) [OL parseLine].
* Refusals print LSF's message to stderr and exit 255 (``exit(-1)`` in bsub [OL]; 255 seen
  on real LSF [ERT]).  Every message below names its source; ``[UNCONFIRMED]`` marks text we
  chose where no source was found.
* Jobs get LSF's environment (submission environment exported, LSB_* variables,
  CUDA_VISIBLE_DEVICES for ``-gpu``), run in the submission directory (or ``-cwd``), write
  ``-o``/``-e`` files (LSF's job report then the output, as without LSB_STDOUT_DIRECT) or
  mail the report when no ``-o`` is given (to ``HOME/mail/<user>``), and are killed by
  ``bkill`` with SIGINT, SIGTERM, SIGKILL [OLCF: "sent in that order"] spaced by
  JOB_TERMINATE_INTERVAL (config ``job_terminate_interval_s``; LSF's default is 10 s).
* CSM queues (``csm: true``, Summit's ``batch``): ``-nnodes N`` whole nodes; the script runs
  on the launch node without CUDA_VISIBLE_DEVICES and starts work through ``jsrun``.
* One emulated host (config ``hosts`` counts more for the submission checks): a job that can
  never fit (more GPUs or memory than the host, a span over more hosts) pends for ever, as on
  a real cluster; ``-n`` above the hosts' cores is refused ("Too many processors requested").
  Config ``seconds_per_minute`` (60 in reality) shortens run limits for tests.
* The pending-job threshold (``MAX_PEND_JOBS`` of lsb.users or lsb.params; config
  ``max_pend_jobs``, default none): with that many of the user's jobs pending, mbatchd rejects
  a submission and bsub says ``User <name>: Pending job threshold reached. Retrying in 60
  seconds...`` on stderr, waits ``SUB_TRY_INTERVAL`` (config ``sub_try_interval_s``, 60 s) and
  tries again, as many times as ``LSB_NTRIES`` allows, without end where it is unset
  [IBM job states, "Maximum pending job threshold"; the message as users' scripts quote it,
  TPL]. What bsub prints when ``LSB_NTRIES`` runs out is [UNCONFIRMED].
* Python API: ``parse_submission(script_text, argv, config)`` returns a ``ParsedJob`` or
  raises ``Rejected`` exactly when bsub would refuse; ``default_config(**overrides)``.

Sources
-------
[IBM]   IBM Spectrum LSF 10.1 documentation (bsub -gpu, -W, -M, -nnodes, job_script, command,
        LSF_UNIT_FOR_LIMITS, RESOURCE_RESERVE_PER_TASK ("by default, memory is reserved for
        parallel jobs on a per-host basis")).
[OL]    openlava, the GPL release of Platform LSF's code (towel1980/openlava on GitHub):
        lsbatch/lib/lsb.err.c (the error strings), lsb.sub.c (setOption_, postSubMsg),
        lsbatch/cmd/cmd.sub.c (fillReq, parseScript, parseLine, do_sub: ". Job not
        submitted."), bjobs.c (table format), cmd.err.c (jobInfoErr), lsf/lib/lib.misc.c
        (my_getopt: "bsub: illegal option -- x").
[ERT]   equinor/ert tests/ert/unit_tests/scheduler/test_lsf_driver.py: bsub messages "manually
        obtained on the command line by perturbing the command arguments to bsub", bkill
        messages, bjobs exit statuses.
[DASK]  dask/dask-blog _posts/2019-08-28-dask-on-summit.md: Summit's bsub refusing a
        dask-jobqueue script (its stdout usage and stderr ERROR lines).
[VISIT] visit-dav/visit issue #3126: LLNL Sierra (LSF + CSM) refusing ``-n``.
[OLCF]  olcf/olcf-user-docs systems/summit_user_guide.rst: jsrun flags and defaults, bkill
        signals, batch environment variables.
[RP]    radical-cybertools/radical.pilot issue #1783: a jsrun error line.
[TPL]   bsub's pending-threshold line as users' code quotes it: "User <joeuser>: Pending job
        threshold reached. Retrying in 60 seconds..." (a bsub stand-in's comment) and "Group
        <resUsers>: Pending job threshold reached. Retrying in 60 seconds..." (an LSF job
        manager's parser); IBM's text: "The system will continue to send the job submission
        requests with the interval specified by SUB_TRY_INTERVAL in lsb.params until it has made
        a number of attempts equal to the LSB_NTRIES environment variable. If LSB_NTRIES is
        undefined ... indefinitely" (IBM LSF 10.1 "About job states").
"""

from __future__ import annotations

import contextlib
import getpass
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from emulators.common import (
    ENV_HOME,
    EmulatorConfig,
    Flavor,
    JobRecord,
    JobStore,
    Rejected,
    emulator_home,
    main_wrapper,
    short_hostname,
)

__all__ = [
    "LSFRejected",
    "ParsedJob",
    "GPURequest",
    "ResReq",
    "default_config",
    "write_lsf_conf",
    "parse_submission",
    "flavor",
    "bsub_main",
    "bjobs_main",
    "bqueues_main",
    "bkill_main",
    "jsrun_main",
]

NOT_SUBMITTED = "Job not submitted."
EXIT_REFUSED = 255  # bsub's exit(-1) [OL]; 255 observed [ERT]

#: LSF_UNIT_FOR_LIMITS units -> bytes (powers of 1024) [IBM -M: KB|K MB|M GB|G TB|T PB|P EB|E ZB|Z]
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60, "Z": 1 << 70}


class LSFRejected(Rejected):
    """A refusal that also prints ``stdout`` (Summit's bsub prints its usage there [DASK])."""

    def __init__(self, message: str, exit_status: int = EXIT_REFUSED, stdout: str = ""):
        super().__init__(message, exit_status)
        self.stdout = stdout


def refused(message: str) -> LSFRejected:
    """A bsub refusal: ``<message>. Job not submitted.`` (sub_perror + do_sub [OL])."""
    return LSFRejected(f"{message}. {NOT_SUBMITTED}")


# -- configuration --------------------------------------------------------------------------

DEFAULT_QUEUES: dict[str, dict[str, Any]] = {
    "normal": {"run_limit_min": 24 * 60, "exclusive": True, "description": "default queue, RUNLIMIT 24:00"},
    "short": {"run_limit_min": 30, "exclusive": False, "description": "RUNLIMIT 30 minutes"},
    "batch": {
        "run_limit_min": 2 * 60,
        "csm": True,
        "exclusive": True,
        "description": "CSM queue (Summit-like): whole nodes by -nnodes, jsrun",
    },
}

DEFAULT_EXTRA: dict[str, Any] = {
    "lsf_unit_for_limits": "MB",
    "bsub_parse_script": False,
    "job_terminate_interval_s": 10.0,
    "projects": None,  # None: any project name; a list: only those
    "user_groups": None,  # None: any -G; a list: only those
    "cluster_name": "emulator",
    "csm_site": "summit",  # "summit": Summit's bsub checks first [DASK]; "lsf": plain LSF
    "csm_launch_host": "batch1",
    "max_array_size": 1000,  # LSB_MAX_ARRAY_IDX's default (MAX_JOB_ARRAY_SIZE 1000)
    "clean_period_s": 3600,  # CLEAN_PERIOD: finished jobs stay visible to bjobs 1 hour
    # test accelerator: seconds in one LSF minute of run limit (-W, RUNLIMIT); 60 is real
    "seconds_per_minute": 60,
    "max_pend_jobs": None,  # MAX_PEND_JOBS for each user: None, no threshold (LSF's default)
    "sub_try_interval_s": 60,  # SUB_TRY_INTERVAL: bsub's wait between tries past the threshold
}


def default_config(**overrides: Any) -> EmulatorConfig:
    """The emulated LSF machine: one host (8 cores, 4 GPUs, 32 GB) and queues normal (the
    default), short and batch (CSM).  Keyword overrides set config fields or extra keys."""
    config = EmulatorConfig(
        flavor="lsf",
        server="emulator",
        ncpus=8,
        ngpus=4,
        mem="32gb",
        queues={k: dict(v) for k, v in DEFAULT_QUEUES.items()},
        default_queue="normal",
        first_id=1000,
        kill_grace_s=1.0,
    )
    config.extra.update(DEFAULT_EXTRA)
    fields_ = set(config.__dataclass_fields__)
    for key, value in overrides.items():
        if key in fields_ and key != "extra":
            setattr(config, key, value)
        elif key == "extra":
            config.extra.update(value)
        else:
            config.extra[key] = value
    return config


def _extra(config: EmulatorConfig, key: str) -> Any:
    return config.extra.get(key, DEFAULT_EXTRA.get(key))


def write_lsf_conf(home: str | os.PathLike[str], config: EmulatorConfig) -> Path:
    """Write ``HOME/conf/lsf.conf`` (the directory is what ``LSF_ENVDIR`` names), so that
    dask-jobqueue's ``lsf_detect_units`` finds ``LSF_UNIT_FOR_LIMITS``."""
    conf = Path(home) / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    lines = [
        "# lsf.conf of the gpujobqueue LSF emulator (generated from config.json)",
        f"LSF_UNIT_FOR_LIMITS={_extra(config, 'lsf_unit_for_limits')}",
        "LSB_GPU_NEW_SYNTAX=extend",
        f"LSB_BSUB_PARSE_SCRIPT={'Y' if _extra(config, 'bsub_parse_script') else 'N'}",
        f"LSF_CLUSTER_NAME={_extra(config, 'cluster_name')}",
    ]
    path = conf / "lsf.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def unit_bytes(config: EmulatorConfig) -> int:
    unit = str(_extra(config, "lsf_unit_for_limits")).upper()
    return UNITS[unit[0]] if unit and unit[0] in UNITS else UNITS["K"]  # KB by default [IBM]


# -- option table ---------------------------------------------------------------------------

#: bsub options: name -> takes an argument (LSF 10.1's list [IBM bsub], my_getopt's rules [OL])
OPTIONS: dict[str, bool] = {
    # flags
    "B": False,
    "H": False,
    "I": False,
    "Ip": False,
    "Is": False,
    "IS": False,
    "ISp": False,
    "ISs": False,
    "IX": False,
    "K": False,
    "N": False,
    "r": False,
    "rn": False,
    "ul": False,
    "x": False,
    "h": False,
    "V": False,
    "Zs": False,
    "tty": False,
    "XF": False,
    "ar": False,
    "hl": False,
    "datachk": False,
    "Ne": False,
    # with an argument
    "a": True,
    "alloc_flags": True,
    "app": True,
    "b": True,
    "C": True,
    "c": True,
    "clusters": True,
    "cn_cu": True,
    "cn_mem": True,
    "core_isolation": True,
    "csm": True,
    "cwd": True,
    "D": True,
    "data": True,
    "datagrp": True,
    "E": True,
    "Ep": True,
    "e": True,
    "eo": True,
    "env": True,
    "eptl": True,
    "ext": True,
    "extsched": True,
    "F": True,
    "f": True,
    "freq": True,
    "G": True,
    "g": True,
    "gpu": True,
    "i": True,
    "is": True,
    "J": True,
    "Jd": True,
    "jobaff": True,
    "jsdl": True,
    "jsdl_strict": True,
    "jsm": True,
    "k": True,
    "L": True,
    "Lp": True,
    "ln_mem": True,
    "ln_slots": True,
    "M": True,
    "m": True,
    "mig": True,
    "n": True,
    "network": True,
    "nnodes": True,
    "o": True,
    "oo": True,
    "outdir": True,
    "P": True,
    "p": True,
    "pack": True,
    "ptl": True,
    "Q": True,
    "q": True,
    "R": True,
    "rcacct": True,
    "rnc": True,
    "S": True,
    "s": True,
    "sla": True,
    "smt": True,
    "sp": True,
    "stage": True,
    "step_cgroup": True,
    "T": True,
    "t": True,
    "U": True,
    "u": True,
    "v": True,
    "W": True,
    "We": True,
    "w": True,
    "wa": True,
    "wt": True,
}
INTERACTIVE = ("I", "Ip", "Is", "IS", "ISp", "ISs", "IX", "tty", "XF")
#: real options this emulator does not implement: refused with a labelled message rather than
#: silently ignored (an emulator that accepts anything proves nothing)
NOT_EMULATED = (
    "a",
    "app",
    "b",
    "clusters",
    "csm",
    "data",
    "datagrp",
    "E",
    "Ep",
    "ext",
    "extsched",
    "f",
    "i",
    "is",
    "jsdl",
    "jsdl_strict",
    "k",
    "mig",
    "network",
    "pack",
    "Q",
    "rnc",
    "sla",
    "stage",
    "t",
    "U",
    "w",
    "ar",
    "ptl",
    "eptl",
    "freq",
    "jobaff",
    "rcacct",
)
#: CSM easy-mode options [IBM: "-nnodes ... -ln_slots ... -cn_cu: for easy mode LSF job
#: submission to run with the IBM Cluster Systems Manager (CSM) integration package"]
CSM_OPTIONS = ("nnodes", "ln_slots", "ln_mem", "cn_cu", "cn_mem", "core_isolation", "jsm", "smt", "step_cgroup")
#: options whose first occurrence wins (setOption_ breaks when already set [OL]); the others
#: take the last occurrence (req->queue = optarg ...), -R accumulates
FIRST_WINS = ("n", "W", "M", "c", "C", "D", "F", "S", "v", "p", "T", "b", "t")

BSUB_USAGE = """\
Usage: bsub [-h] [-V] [-H] [-x] [-r] [-N] [-B] [-I | -Ip | -Is | -K]
            [-q queue_name ...] [-m host_name[+[pref_level]]...]
            [-n min_proc[,max_proc]] [-R res_req] [-J job_name_spec]
            [-b begin_time] [-t term_time] [-i input_file] [-o out_file]
            [-e err_file] [-u mail_user] [-f \"lfile op [rfile]\"]
            [-E \"pre_exec_command [argument ...]\"] [-c cpu_limit[/host_spec]]
            [-W run_limit[/host_spec]] [-F file_limit] [-M mem_limit]
            [-D data_limit] [-S stack_limit] [-C core_limit]
            [-w depend_cond] [-L login_shell] [-P project_name] [-G user_group]
            [-gpu gpu_req] [-nnodes num_nodes] [-alloc_flags flags] [-cwd dir]
            [-env env_spec] [command [argument ...]]
"""  # abbreviated: real bsub prints a longer list [OL subUsage_]


def _usage_refusal(first_line: str) -> LSFRejected:
    return LSFRejected(first_line.rstrip("\n") + "\n" + BSUB_USAGE.rstrip("\n"))


def parse_options(args: Sequence[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Split bsub's argv into (option, value) pairs and the command words.

    As my_getopt [OL]: options come before the command; ``--`` ends them; an exact option
    name wins, otherwise the value may be attached (``-W02:00``, ``-M32000``, ``-Pprj``).
    Errors: ``bsub: illegal option -- x``, ``bsub: option requires an argument -- x``,
    ``bsub: option cannot have an argument -- x`` [OL lib.misc.c], then the usage.
    """
    found: list[tuple[str, str | None]] = []
    i = 0
    args = list(args)
    while i < len(args):
        token = args[i]
        if not token.startswith("-") or token == "-":
            break
        if token == "--":
            i += 1
            break
        name = token[1:]
        if name in OPTIONS:
            if OPTIONS[name]:
                if i + 1 >= len(args):
                    raise _usage_refusal(f"bsub: option requires an argument -- {name}")
                found.append((name, args[i + 1]))
                i += 2
            else:
                found.append((name, None))
                i += 1
            continue
        prefixes = [o for o in OPTIONS if name.startswith(o)]
        if not prefixes:
            raise _usage_refusal(f"bsub: illegal option -- {name}")
        option = max(prefixes, key=len)
        if not OPTIONS[option]:
            raise _usage_refusal(f"bsub: option cannot have an argument -- {option}")
        found.append((option, name[len(option) :]))
        i += 1
    return found, args[i:]


DIRECTIVE = re.compile(r"^\s*#\s*BSUB\s*(-.*)$")


def script_directives(script_text: str) -> list[tuple[str, str | None]]:
    """The options of every ``#BSUB`` line of a script, in order (see the module notes).

    A trailing ``\\`` continues a ``#BSUB`` line [OL parseScript]; a word starting with ``#``
    ends the directive [OL parseLine]; quotes group words as in the shell.
    """
    options: list[tuple[str, str | None]] = []
    lines = script_text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        match = DIRECTIVE.match(line)
        if not match:
            continue
        text = match.group(1)
        while text.endswith("\\") and index < len(lines):
            text = text[:-1] + lines[index]
            index += 1
        try:
            words = shlex.split(text, comments=False, posix=True)
        except ValueError:
            # [UNCONFIRMED] LSF's getNextValueQ_ reads to the end of the line; we refuse
            raise refused(f"Unbalanced quotation marks in <{line.strip()}>") from None
        cut = next((k for k, w in enumerate(words) if w.startswith("#")), len(words))
        parsed, rest = parse_options(words[:cut])
        if rest:
            # a word that is not an option inside a #BSUB line: getopt stops there and the
            # rest is ignored by parseLine's caller [OL]; real LSF ignores it too
            pass
        options.extend(parsed)
    return options


def has_command(script_text: str) -> bool:
    """Whether a script has a line that is neither blank nor a comment (emptyCmd [OL])."""
    return any(line.strip() and not line.strip().startswith("#") for line in script_text.splitlines())


# -- values ---------------------------------------------------------------------------------


def _isint(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+", text.strip()) is not None


def parse_processors(value: str) -> tuple[int, int]:
    """``-n min[,max]`` [OL setOption_ case 'n' / getValPair]."""
    words = re.split(r"[,/]", value.strip(), maxsplit=1)
    first = words[0] or None
    second = words[1] if len(words) > 1 and words[1] else None
    if (
        (first is None and second is None)
        or (first is not None and not _isint(first))
        or (second is not None and not _isint(second))
    ):
        raise refused("Bad argument for option -n")  # [OL 414; ERT "Bad argument for option -n. Job not submitted."]
    low = int(first) if first is not None else None
    high = int(second) if second is not None else None
    if (low is not None and low <= 0) or (high is not None and high <= 0):
        raise refused("The number of processors must be a positive integer")  # [OL 415]
    if low is None:
        low = 1
    if high is None:
        high = low
    if low > high:
        raise refused("Bad argument for option -n")  # [OL 416]
    return low, high


def parse_run_limit(value: str) -> int:
    """``-W [hour:]minute[/host_spec]`` -> minutes [OL setOption_ case 'W'].

    Minutes over 59 are valid, with or without hours [IBM -W: "The minutes can be specified
    as a number greater than 59. For example, three and a half hours can either be specified
    as 3:30, or 210."; OL adds hours*60 + minutes without a range check], so ``1:90`` is
    150 minutes.  ``HH:MM:SS`` (SLURM/PBS style) is refused: the part after the first colon
    is not an integer.
    """
    text = value.split("/", 1)[0]
    hours, colon, minutes = text.partition(":")
    message = f"{value}: Bad RUNLIMIT specification"  # [OL 428]
    if not _isint(hours) or int(hours) < 0:
        raise refused(message)
    if colon:
        if not _isint(minutes) or int(minutes) < 0:
            raise refused(message)
        return int(hours) * 60 + int(minutes)
    return int(hours)


def parse_memory(text: str, config: EmulatorConfig, *, allow_float: bool) -> int | None:
    """``4096`` (in LSF_UNIT_FOR_LIMITS), ``4GB``, ``4G``, ``500MB`` -> bytes, or None.

    Units KB|K MB|M GB|G TB|T PB|P EB|E ZB|Z, powers of 1024 [IBM -M]; dask-jobqueue's
    ``lsf_format_bytes_ceil`` writes plain numbers in the cluster's unit (powers of 1000).
    Unit letters are accepted in either case [UNCONFIRMED for lower case].
    """
    number = r"\d+(?:\.\d+)?" if allow_float else r"\d+"
    match = re.fullmatch(rf"({number})\s*([KMGTPEZkmgtpez][Bb]?)?", text.strip())
    if not match:
        return None
    amount = float(match.group(1))
    unit = match.group(2)
    factor = UNITS[unit[0].upper()] if unit else unit_bytes(config)
    return int(math.ceil(amount * factor))


# -- -gpu -----------------------------------------------------------------------------------


@dataclass
class GPURequest:
    """A parsed ``-gpu`` string [IBM bsub -gpu]; defaults num=1:mode=shared:mps=no:j_exclusive=no."""

    num: int = 1
    per: str = "host"
    mode: str = "shared"
    mps: str = "no"
    j_exclusive: str = "no"
    options: dict[str, str] = field(default_factory=dict)

    def count(self, slots: int) -> int:
        """GPUs the job takes on its one host."""
        return self.num * slots if self.per == "task" else self.num


GPU_KEYS = (
    "num",
    "mode",
    "mps",
    "j_exclusive",
    "aff",
    "block",
    "gpack",
    "glink",
    "gvendor",
    "gmodel",
    "gtile",
    "gmem",
    "mig",
    "nvlink",
)
YES_NO = ("yes", "no")


def parse_gpu(value: str, config: EmulatorConfig) -> GPURequest:
    """Parse ``-gpu - | "num=N[/task|host][:mode=shared|exclusive_process][:mps=...]..."``.

    Syntax from [IBM bsub -gpu]: keywords num, mode, mps (yes|no|per_socket|per_gpu, with
    ``,shared`` / ``,nocvd``; the example page writes ``,share``), j_exclusive, aff, block,
    gpack (yes|no), glink (yes), gvendor (amd|nvidia), gmodel (name[-mem] or name[#mem]),
    gtile (number or '!'), gmem (size), mig (GI[/CI]).  Any order; a trailing ``:`` is
    accepted (seen in a real job script, ``-gpu num=1:j_exclusive=yes:mode=shared:mps=no:``).
    The refusal text is LSF's resource-requirement error [OL 75]; whether bsub prints it for
    a bad -gpu string is [UNCONFIRMED].
    """
    bad = refused("Bad resource requirement syntax")
    text = value.strip()
    request = GPURequest()
    if text == "-":
        return request
    if not text:
        raise bad
    parts = text.split(":")
    if parts[-1] == "":
        parts = parts[:-1]
    seen: set[str] = set()
    for part in parts:
        key, eq, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if not eq or key not in GPU_KEYS or key in seen or not val:
            raise bad
        seen.add(key)
        if key == "num":
            number, slash, per = val.partition("/")
            if not re.fullmatch(r"\d+", number) or int(number) <= 0:
                raise bad
            if slash and per not in ("task", "host"):
                raise bad
            request.num, request.per = int(number), per or "host"
        elif key == "mode":
            if val not in ("shared", "exclusive_process"):
                raise bad
            request.mode = val
        elif key == "mps":
            head, *flags = val.split(",")
            if head not in ("yes", "no", "per_socket", "per_gpu"):
                raise bad
            if head == "no" and flags:
                raise bad
            if any(f not in ("shared", "share", "nocvd") for f in flags) or len(set(flags)) != len(flags):
                raise bad
            request.mps = val
        elif key in ("j_exclusive", "aff", "block", "gpack"):
            if val not in YES_NO:
                raise bad
            if key == "j_exclusive":
                request.j_exclusive = val
            request.options[key] = val
        elif key in ("glink", "nvlink"):
            if val != "yes":
                raise bad
            request.options[key] = val
        elif key == "gvendor":
            if val not in ("amd", "nvidia"):
                raise bad
            request.options[key] = val
        elif key == "gmodel":
            if not re.fullmatch(r"[A-Za-z0-9_.\-]+(?:[#\-]\d+(?:\.\d+)?[KMGTkmgt]?[Bb]?)?", val):
                raise bad
            request.options[key] = val
        elif key == "gtile":
            if val != "!" and val != "'!'" and not (val.isdigit() and int(val) > 0):
                raise bad
            request.options[key] = val
        elif key == "gmem":
            if parse_memory(val, config, allow_float=True) is None:
                raise bad
            request.options[key] = val
        elif key == "mig":
            if not re.fullmatch(r"[1-7](?:/[1-7])?", val):
                raise bad
            request.options[key] = val
    if request.mode == "exclusive_process" and request.options.get("gvendor") == "amd":
        raise bad  # [IBM: "Do not specify exclusive_process when you are using AMD GPUs"]
    return request


# -- -R resource requirement strings ---------------------------------------------------------

SECTIONS = ("select", "order", "rusage", "span", "same", "cu", "affinity", "filter")


@dataclass
class ResReq:
    """The merged ``-R`` strings: sections -> text, plus what the emulator uses."""

    sections: dict[str, str] = field(default_factory=dict)
    mem_bytes: int = 0  # rusage[mem=] reserved per host (LSF 10's default [IBM])
    mem_per: str = "host"
    ptile: int | None = None
    span_hosts: int | None = None

    @property
    def text(self) -> str:
        return " ".join(f"{name}[{body}]" for name, body in self.sections.items())


def _split_sections(text: str) -> list[tuple[str, str]]:
    """``select[a] rusage[mem=1]`` -> [(select, a), (rusage, mem=1)]; text before any
    section is a select string (``-R "mem>100"``, ``-R tensorcore``)."""
    bad = refused(
        "Bad resource requirement syntax"
    )  # [OL 75; IBM-site FAQ "Bad resource requirement syntax. Job not submitted"]
    stripped = text.strip()
    if not stripped:
        raise bad
    if "{" in stripped or "}" in stripped or re.search(r"\]\s*\|\|", stripped):
        # compound / alternative requirements: valid LSF, not emulated
        raise LSFRejected(
            "emulator: compound or alternative resource requirements ({...}, ||) are not emulated. " + NOT_SUBMITTED,
            EXIT_REFUSED,
        )
    sections: list[tuple[str, str]] = []
    position = 0
    pattern = re.compile(r"\s*([A-Za-z_]+)\s*\[")
    if not re.match(r"\s*[A-Za-z_]+\s*\[", stripped):
        # a leading select string without the select[] keyword, up to the first section
        first = re.search(r"(?:^|\s)(" + "|".join(SECTIONS) + r")\s*\[", stripped)
        end = first.start() if first else len(stripped)
        head = stripped[:end].strip()
        if "[" in head or "]" in head:
            raise bad
        sections.append(("select", head))
        position = end
    while position < len(stripped):
        if not stripped[position:].strip():
            break
        match = pattern.match(stripped, position)
        if not match:
            raise bad
        name = match.group(1)
        depth, cursor = 1, match.end()
        while cursor < len(stripped) and depth:
            if stripped[cursor] == "[":
                depth += 1
            elif stripped[cursor] == "]":
                depth -= 1
            cursor += 1
        if depth:
            raise bad  # unbalanced brackets
        if name not in SECTIONS:
            raise bad  # unknown section
        sections.append((name, stripped[match.end() : cursor - 1]))
        position = cursor
    return sections


SELECT_TOKEN = re.compile(
    r"\s*(?:(\d+(?:\.\d+)?[KMGTkmgt]?[Bb]?)|('[^']*'|\"[^\"]*\")|"
    r"([A-Za-z_][A-Za-z0-9_.\-]*)|(==|!=|>=|<=|&&|\|\||[<>=!()]))"
)


def _check_select(body: str) -> None:
    """Syntax of a select expression: names, numbers, strings, comparisons, ``&& || !``,
    parentheses, ``defined(name)``.  Resource names are not checked (sites define their own)."""
    if not body.strip():
        # [ERT] real LSF for an empty select section
        raise refused('Error in select section: Expected number, string, name, or "(" but found end of section')
    if "&" in body.replace("&&", "") or "|" in body.replace("||", ""):
        # [ERT] "Error with <select[... & ...] ...>: '&' cannot be used in the resource
        # requirement section." (we print the section only [UNCONFIRMED wording of the <..>])
        raise refused(f"Error with <select[{body}]>: '&' cannot be used in the resource requirement section")
    tokens = []
    position = 0
    while position < len(body):
        if not body[position:].strip():
            break
        match = SELECT_TOKEN.match(body, position)
        if not match or match.end() == position:
            raise refused("Bad resource requirement syntax")
        tokens.append(next(g for g in match.groups() if g is not None))
        position = match.end()
    depth = 0
    expect_operand = True
    for token in tokens:
        if token == "(":
            depth += 1
            expect_operand = True
        elif token == ")":
            depth -= 1
            if depth < 0 or expect_operand:
                raise refused("Bad resource requirement syntax")
        elif token in ("&&", "||", "==", "!=", ">=", "<=", "<", ">", "="):
            if expect_operand:
                raise refused("Bad resource requirement syntax")
            expect_operand = True
        elif token == "!":
            expect_operand = True
        else:
            expect_operand = False
    if depth or expect_operand:
        raise refused("Bad resource requirement syntax")


def parse_resreq(values: Sequence[str], config: EmulatorConfig) -> ResReq:
    """Parse and merge ``-R`` strings.

    Within one string a section may appear once (``Error near "select" : duplicate
    section.`` [ERT]); across several ``-R`` options (LSF 9.1+ takes ``-R "res_req" [-R
    "res_req" ...]`` [IBM bsub synopsis]) select strings are ANDed and rusage merged, while a
    second span/order/same/cu/affinity is the duplicate-section error [UNCONFIRMED].
    """
    merged = ResReq()
    for value in values:
        seen: set[str] = set()
        for name, body in _split_sections(value):
            if name in seen:
                raise refused(f'Error near "{name}" : duplicate section')  # [ERT]
            seen.add(name)
            if name == "select":
                _check_select(body)
                old = merged.sections.get("select")
                merged.sections["select"] = f"({old}) && ({body})" if old else body
            elif name == "rusage":
                _parse_rusage(body, merged, config)
                old = merged.sections.get("rusage")
                merged.sections["rusage"] = f"{old},{body}" if old else body
            else:
                if name in merged.sections:
                    raise refused(f'Error near "{name}" : duplicate section')
                if name == "span":
                    _parse_span(body, merged)
                elif not body.strip():
                    raise refused("Bad resource requirement syntax")
                merged.sections[name] = body
    return merged


RUSAGE_NAMES = (
    "mem",
    "swp",
    "swap",
    "tmp",
    "ut",
    "r15s",
    "r1m",
    "r15m",
    "pg",
    "io",
    "it",
    "ls",
    "ngpus_physical",
    "ngpus",
    "duration",
    "decay",
)


def _parse_rusage(body: str, merged: ResReq, config: EmulatorConfig) -> None:
    """``rusage[mem=4096]``, ``rusage[mem=4G/host:duration=10]``, ``rusage[mem=1,swp=2]``.

    Any error is ``Error in rusage section.`` [ERT]; a resource name outside LSF's built-in
    consumable indices is refused the same way [UNCONFIRMED: sites may define their own].
    """
    bad = refused("Error in rusage section")  # [ERT]
    if not body.strip():
        raise bad
    for item in re.split(r"[,:]", body):
        name, eq, value = item.strip().partition("=")
        if not eq or not value.strip() or name.strip() not in RUSAGE_NAMES:
            raise bad
        name, value = name.strip(), value.strip()
        if name == "mem":
            amount, slash, per = value.partition("/")
            if slash and per not in ("task", "job", "host"):
                raise bad
            size = parse_memory(amount, config, allow_float=True)
            if size is None:
                raise bad
            merged.mem_bytes, merged.mem_per = size, per or "host"
        elif name == "duration":
            if not re.fullmatch(r"\d+[hms]?", value):
                raise bad
        elif name == "decay":
            if value not in ("0", "1"):
                raise bad
        elif not re.fullmatch(r"\d+(?:\.\d+)?[KMGTkmgt]?[Bb]?(?:/(?:task|job|host))?", value):
            raise bad


def _parse_span(body: str, merged: ResReq) -> None:
    """``span[hosts=1]``, ``span[hosts=-1]``, ``span[ptile=N]`` (N > 0), ``span[block=N]``."""
    bad = refused("Bad resource requirement syntax")
    items = [i.strip() for i in body.split(":") if i.strip()]
    if not items:
        raise bad
    for item in items:
        name, eq, value = item.partition("=")
        if name == "hosts" and value in ("1", "-1"):
            merged.span_hosts = int(value)
        elif name == "hosts" and _isint(value) and int(value) > 1:
            merged.span_hosts = int(value)
        elif name == "ptile" and value.isdigit() and int(value) > 0:
            merged.ptile = int(value)
        elif name == "block" and value.isdigit() and int(value) > 0:
            pass
        elif name == "stripe":
            pass
        else:
            raise bad


# -- job names and arrays --------------------------------------------------------------------


def parse_job_name(value: str, config: EmulatorConfig) -> tuple[str, list[int] | None, str | None, int | None]:
    """``name``, ``name[1-10]``, ``name[1-10:2,20]%4`` -> (name, indices, spec, slot limit).

    Index syntax start[-end[:step]] separated by commas, indices >= 1 [IBM -J].  Errors: a
    malformed name is ``Bad job name`` [OL 42], index 0 or a reversed range ``Job array index
    error`` [OL 97], more than MAX_JOB_ARRAY_SIZE ``Job array index too large`` [OL 98];
    which error LSF 10 prints for which mistake is [UNCONFIRMED].
    """
    match = re.fullmatch(r"([^\[\]%]*)(?:\[([^\[\]]*)\](?:%(\d+))?)?", value)
    if not match or (value.count("[") != value.count("]")):
        raise refused("Bad job name")
    name, spec, limit = match.group(1), match.group(2), match.group(3)
    if spec is None:
        if not name.strip() and value:
            raise refused("Bad job name")
        return name, None, None, None
    indices: list[int] = []
    for part in spec.split(","):
        item = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
        if not item:
            raise refused("Bad job name")
        start = int(item.group(1))
        end = int(item.group(2)) if item.group(2) else start
        step = int(item.group(3)) if item.group(3) else 1
        if start < 1 or end < start or step < 1:
            raise refused("Job array index error")
        if end > int(_extra(config, "max_array_size")):
            raise refused("Job array index too large")
        indices.extend(range(start, end + 1, step))
    indices = sorted(set(indices))
    if len(indices) > int(_extra(config, "max_array_size")):
        raise refused("Job array index too large")
    return name, indices, spec, int(limit) if limit else None


# -- the parsed submission -------------------------------------------------------------------


@dataclass
class ParsedJob:
    """Everything bsub decided about a submission (``parse_submission``'s result)."""

    queue: str
    queue_given: bool
    name: str
    name_given: bool
    array_indices: list[int] | None
    array_spec: str | None
    array_limit: int | None
    slots: int
    max_slots: int
    gpu: GPURequest | None
    ngpus: int
    resreq: ResReq
    mem_limit_bytes: int | None
    mem_reserve_bytes: int
    run_limit_min: int | None  # -W (None: the queue's RUNLIMIT applies)
    walltime_s: int | None  # what the job gets (-W or the queue's RUNLIMIT)
    out: str | None
    out_overwrite: bool
    err: str | None
    err_overwrite: bool
    project: str | None
    user_group: str | None
    cwd: str | None
    env_spec: str | None
    exclusive: bool
    hold: bool
    block: bool
    csm: bool
    nnodes: int | None
    alloc_flags: str | None
    mode: str  # "script" (stdin / parsed job_script) or "command"
    command: str  # the job's command line, or the script text
    script: str | None
    options: list[tuple[str, str | None]]
    pending_reason: str | None = None  # a job that can never start on the emulated host

    @property
    def ncpus(self) -> int:
        return self.slots

    @property
    def mem_bytes(self) -> int:
        return self.mem_reserve_bytes


def _as_config(config: EmulatorConfig | dict[str, Any] | None) -> EmulatorConfig:
    if config is None:
        return default_config()
    if isinstance(config, dict):
        return default_config(**config)
    return config


def parse_submission(
    script_text: str | None = None,
    argv: Sequence[str] = (),
    config: EmulatorConfig | dict[str, Any] | None = None,
    *,
    environ: dict[str, str] | None = None,
    stdin_is_file: bool = True,
) -> ParsedJob:
    """What ``bsub argv < script_text`` would do, or the ``Rejected`` it would raise.

    ``argv`` are bsub's arguments (options, then an optional command); ``script_text`` is
    its standard input (``None`` or ``""`` when there is none; ``stdin_is_file``: it was
    redirected from a file, which changes the wording of the empty-script refusal [OL]).  ``environ`` supplies
    LSB_DEFAULTQUEUE / LSB_DEFAULTPROJECT (default: none).  Raises ``Rejected`` (an
    ``LSFRejected``) exactly when bsub refuses; ``message`` is bsub's stderr.
    """
    config = _as_config(config)
    environ = {} if environ is None else environ
    cmd_options, command_words = parse_options(argv)
    mode, command, script = "command", "", None
    if command_words:
        if _extra(config, "bsub_parse_script") and len(command_words) == 1 and _is_text_file(command_words[0]):
            script = Path(command_words[0]).read_text()
            mode, command = "script", script  # LSB_BSUB_PARSE_SCRIPT=Y [IBM job_script]
        else:
            command = shlex.join(command_words)
    else:
        script = script_text or ""
        if not has_command(script):
            # [OL cmd.sub.c 1559/1560]; stdin from a file or a pipe is "the script file"
            raise refused("No command is specified in the script file" if stdin_is_file else "No command is specified")
        mode, command = "script", script
    embedded = script_directives(script) if script is not None else []
    return _build(cmd_options, embedded, mode, command, script, config, environ)


def _is_text_file(path: str) -> bool:
    try:
        data = Path(path).read_bytes()[:4096]
    except OSError:
        return False
    return b"\0" not in data


def _canonical(name: str) -> str:
    """Options sharing one setting: -o/-oo, -e/-eo, the interactive family."""
    if name in ("o", "oo"):
        return "o"
    if name in ("e", "eo"):
        return "e"
    return name


def _build(
    cmd_options: list[tuple[str, str | None]],
    embedded: list[tuple[str, str | None]],
    mode: str,
    command: str,
    script: str | None,
    config: EmulatorConfig,
    environ: dict[str, str],
) -> ParsedJob:
    # the command line first, then the script's options it did not set [OL fillReq]
    settings: dict[str, list[tuple[str, str | None]]] = {}
    order: list[tuple[str, str | None]] = []
    for source in (cmd_options, embedded):
        given = set(settings)
        for name, value in source:
            key = _canonical(name)
            if key in given:
                continue
            settings.setdefault(key, []).append((name, value))
            order.append((name, value))
    # option-level checks, in the order the options were read (setOption_ [OL])
    for name, value in order:
        _check_option(name, value, config)

    def last(key: str) -> tuple[str, str | None] | None:
        values = settings.get(key)
        if not values:
            return None
        return values[0] if key in FIRST_WINS else values[-1]

    def value_of(key: str) -> str | None:
        item = last(key)
        return None if item is None else item[1]

    present = set(settings)
    # -- mbatchd-side checks ------------------------------------------------------------
    for name in INTERACTIVE:
        if name in present:
            # the emulated queues are NO_INTERACTIVE: bsub -I* cannot work in batch tests
            raise refused("Queue does not accept interactive jobs")  # [OL lsb.err.c 14]
    for name in NOT_EMULATED:
        if name in present:
            raise LSFRejected(f"emulator: bsub -{name} is not emulated. {NOT_SUBMITTED}", EXIT_REFUSED)
    queue_text = value_of("q")
    queue_given = queue_text is not None or bool(environ.get("LSB_DEFAULTQUEUE"))
    if queue_text is None:
        queue_text = environ.get("LSB_DEFAULTQUEUE") or config.default_queue
    queue_names = queue_text.split()
    if not queue_names:
        raise refused(f"{queue_text}: No such queue")
    for queue_name in queue_names:
        if queue_name not in config.queues:
            raise refused(f"{queue_name}: No such queue")  # [OL 18 + prtErrMsg; ERT]
    queue = queue_names[0]
    qconf = config.queues[queue]
    csm = bool(qconf.get("csm"))

    project = value_of("P") or environ.get("LSB_DEFAULTPROJECT")
    projects = _extra(config, "projects")
    if project is not None and projects is not None and project not in projects:
        raise refused("Invoker is not in specified project group")  # [OL lsb.err.c 105]
    group = value_of("G")
    groups = _extra(config, "user_groups")
    if group is not None and groups is not None and group not in groups:
        raise refused("User not in the specified user group")  # [OL lsb.err.c 85]

    exclusive = "x" in present
    if exclusive and not qconf.get("exclusive"):
        raise refused(f"{queue}: Queue does not accept EXCLUSIVE jobs")  # [OL 7 + prtErrMsg]

    resreq_values = [v for _, v in settings.get("R", []) if v is not None]
    gpu_text = value_of("gpu")
    nnodes_text = value_of("nnodes")

    if csm:
        _check_csm(present, settings, config)
    else:
        for name in CSM_OPTIONS:
            if name in present:
                # [UNCONFIRMED] a non-CSM queue: LSF's wording is unknown
                raise refused(
                    f"-{name}: CSM options can only be used with a CSM queue; queue <{queue}> is not a CSM queue"
                )
    resreq = parse_resreq(resreq_values, config) if resreq_values else ResReq()
    gpu = parse_gpu(gpu_text, config) if gpu_text is not None else None

    low, high = parse_processors(value_of("n")) if value_of("n") is not None else (1, 1)
    nnodes = int(nnodes_text) if nnodes_text is not None else (1 if csm else None)
    if csm:
        slots = config.ncpus * nnodes
        ngpus = config.ngpus * nnodes
        high = slots
    else:
        slots = low
        ngpus = gpu.count(slots) if gpu else 0
        if low > config.ncpus * config.hosts:
            raise refused("Too many processors requested")  # [OL 24; ERT]

    mem_limit = None
    if value_of("M") is not None:
        mem_text = value_of("M").rstrip("!")
        mem_limit = parse_memory(mem_text, config, allow_float=False)
    mem_reserve = resreq.mem_bytes * (slots if resreq.mem_per == "task" else 1)
    if csm:
        mem_reserve = config.mem_bytes * nnodes

    run_limit = parse_run_limit(value_of("W")) if value_of("W") is not None else None
    queue_limit = qconf.get("run_limit_min")
    if run_limit is not None and queue_limit is not None and run_limit > queue_limit:
        raise refused("RUNLIMIT: Cannot exceed queue's hard limit(s)")  # [OL 39 + prtErrMsg rNames]
    limit_min = run_limit if run_limit is not None else queue_limit
    walltime_s = (
        None if limit_min is None else int(math.ceil(float(limit_min) * float(_extra(config, "seconds_per_minute"))))
    )

    name_value = value_of("J")
    if name_value is not None:
        name, indices, spec, limit = parse_job_name(name_value, config)
        name_given = True
    else:
        name, indices, spec, limit = _default_name(mode, command), None, None, None
        name_given = False
    if "K" in present and indices is not None:
        raise refused("Job array doesn't support -K option")  # [OL 441]

    out_item, err_item = last("o"), last("e")
    out = out_item[1] if out_item else None
    err = err_item[1] if err_item else None
    if out is not None and not out.strip():
        raise refused("Bad argument")  # [OL 35; UNCONFIRMED for an empty -o]
    if err is not None and not err.strip():
        raise refused("Bad argument")

    pending = None
    if not csm:
        hosts_needed = 1
        if resreq.ptile is not None:
            hosts_needed = math.ceil(slots / resreq.ptile)
        if resreq.span_hosts is not None and resreq.span_hosts > 1:
            hosts_needed = max(hosts_needed, resreq.span_hosts)
        if resreq.span_hosts == 1 and slots > config.ncpus:
            hosts_needed = 2  # one host asked for, more slots than a host has
        if hosts_needed > config.hosts:
            # a job that must span more hosts than the cluster has pends for ever, as on a real
            # cluster without enough hosts (LSF does not refuse it at submission)
            pending = "Not enough hosts to meet the job's spanning requirement"  # [UNCONFIRMED wording]
    elif nnodes > config.hosts:
        pending = "Not enough processors to meet the job's spanning requirement"  # [UNCONFIRMED]

    return ParsedJob(
        queue=queue,
        queue_given=queue_given,
        name=name,
        name_given=name_given,
        array_indices=indices,
        array_spec=spec,
        array_limit=limit,
        slots=slots,
        max_slots=high,
        gpu=gpu,
        ngpus=ngpus,
        resreq=resreq,
        mem_limit_bytes=mem_limit,
        mem_reserve_bytes=mem_reserve,
        run_limit_min=run_limit,
        walltime_s=walltime_s,
        out=out,
        out_overwrite=bool(out_item and out_item[0] == "oo"),
        err=err,
        err_overwrite=bool(err_item and err_item[0] == "eo"),
        project=project,
        user_group=group,
        cwd=value_of("cwd"),
        env_spec=value_of("env"),
        exclusive=exclusive,
        hold="H" in present,
        block="K" in present,
        csm=csm,
        nnodes=nnodes if csm else None,
        alloc_flags=value_of("alloc_flags"),
        mode=mode,
        command=command,
        script=script if mode == "script" else None,
        options=order,
        pending_reason=pending,
    )


def _check_option(name: str, value: str | None, config: EmulatorConfig) -> None:
    """Per-option syntax checks made while the options are read (setOption_ [OL])."""
    if name == "n":
        parse_processors(value or "")
    elif name == "W":
        parse_run_limit(value or "")
    elif name == "We":
        parse_run_limit(value or "")  # same syntax as -W [IBM -We]
    elif name == "c":
        try:
            parse_run_limit(value or "")
        except LSFRejected:
            raise refused(f"{value}: Bad CPULIMIT specification") from None  # [OL 421]
    elif name == "M":
        text = (value or "").rstrip("!")
        if parse_memory(text, config, allow_float=False) in (None, 0):
            raise refused(f"{value}: MEMLIMT value should be a positive integer")  # [OL 436, its spelling]
    elif name in ("F", "D", "S", "C", "v", "p", "T"):
        if not _isint(value or "") or int(value or "0") <= 0:
            limit = {
                "F": "FILELIMIT",
                "D": "DATALIMIT",
                "S": "STACKLIMIT",
                "C": "CORELIMIT",
                "v": "SWAPLIMIT",
                "p": "PROCESSLIMIT",
                "T": "THREADLIMIT",
            }[name]
            raise refused(f"{value}: {limit} value should be a positive integer")  # [OL 432-439]
    elif name == "sp":
        if not _isint(value or "") or int(value or "0") <= 0:
            raise refused(f"{value}: Illegal job priority")  # [OL 494]
    elif name == "P":
        if value is not None and len(value) > 59:
            raise refused(f"{value}:  project name too long")  # [OL 425, its two spaces]
    elif name in ("o", "oo", "e", "eo"):
        if value is not None and len(value) > 4094:
            raise refused(f"{value}: File name too long")  # [OL 409]
    elif name == "nnodes":
        if not value or not value.isdigit() or int(value) <= 0:
            raise refused("Bad argument for option -nnodes")  # [UNCONFIRMED, as -n's]
    elif name == "env":
        _parse_env_spec(value or "")
    elif name == "J":
        parse_job_name(value or "", config)
    elif name == "gpu":
        parse_gpu(value or "", config)
    elif name == "m":
        hosts = (value or "").split()
        allowed = {config.host, "all", "others", _extra(config, "csm_launch_host")}
        for host in hosts:
            if host.rstrip("!").split("+")[0] not in allowed:
                raise refused("Bad host name, host group name or cluster name")  # [OL 23]


SUMMIT_USAGE = """\

Typical usage:
  bsub [LSF arguments] jobscript
  bsub [LSF arguments] -Is $SHELL
  bsub -h[elp] [options]
  bsub -V

NOTES:
 * All jobs must specify a walltime (-W) and project id (-P)
 * Standard jobs must specify a node count (-nnodes) or -ln_slots. These jobs cannot specify a resource string (-R).
 * Expert mode jobs (-csm y) must specify a resource string and cannot specify -nnodes or -ln_slots.
"""  # [DASK] verbatim


def _check_csm(present: set[str], settings: dict[str, list[tuple[str, str | None]]], config: EmulatorConfig) -> None:
    """A CSM (easy mode) queue: whole nodes by -nnodes; no -R, -n, -M, -gpu.

    With ``csm_site: summit`` Summit's bsub checks come first, as seen in [DASK]: usage on
    stdout, one ERROR line per problem on stderr (exit status [UNCONFIRMED]: 255 as bsub's).
    The -W and -P lines are [UNCONFIRMED] wording (Summit's NOTES say both are required).
    Then LSF's own easy-mode check [VISIT]: "You cannot specify -R/-M/-n/LSB_DEFAULT_RESREQ
    when CSM Easy Mode job submission is enabled." (the dashes of -R/-M restored: the issue
    tracker stripped them [UNCONFIRMED]).
    """
    if _extra(config, "csm_site") == "summit":
        errors = []
        if "R" in present:
            errors.append(
                "ERROR: Resource strings (-R) are not supported in easy mode. "
                "Please resubmit without a resource string."
            )  # [DASK]
        if "n" in present:
            errors.append("ERROR: -n is no longer supported. Please request nodes with -nnodes.")  # [DASK]
        if "nnodes" not in present and "ln_slots" not in present:
            errors.append("ERROR: No nodes requested. Please request nodes with -nnodes.")  # [DASK]
        if "W" not in present:
            errors.append("ERROR: No walltime requested. Please request a walltime with -W.")  # [UNCONFIRMED]
        if "P" not in present:
            errors.append("ERROR: No project id given. Please specify a project with -P.")  # [UNCONFIRMED]
        if errors:
            raise LSFRejected("\n".join(errors), EXIT_REFUSED, stdout=SUMMIT_USAGE)
    if present & {"R", "M", "n"}:
        raise refused(
            "You cannot specify -R/-M/-n/LSB_DEFAULT_RESREQ when CSM Easy Mode job submission is enabled"
        )  # [VISIT]
    if "gpu" in present:
        raise refused(
            "You cannot specify -gpu when CSM Easy Mode job submission is enabled"
        )  # [UNCONFIRMED], by analogy with [VISIT]


def _default_name(mode: str, command: str) -> str:
    """LSF names a job after its command; a stdin script's lines are joined with ``;``
    (getOtherParams' job description [OL]), capped at 4094 characters."""
    if mode == "command":
        return command[:4094]
    return ";".join(command.strip("\n").splitlines())[:4094]


def _parse_env_spec(spec: str) -> tuple[bool, list[str], dict[str, str]]:
    """``-env "all" | "none" | "all, A=1, B" | "A, B=2"`` -> (all, names, assignments)."""
    text = spec.strip()
    if not text:
        raise refused("Bad argument for option -env")  # [UNCONFIRMED]
    everything = False
    names: list[str] = []
    values: dict[str, str] = {}
    for index, item in enumerate(i.strip() for i in text.split(",")):
        if index == 0 and item in ("all", "none"):
            everything = item == "all"
            if item == "none" and text != "none":
                raise refused("Bad argument for option -env")  # "none" takes nothing else
            continue
        name, eq, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.strip()):
            raise refused("Bad argument for option -env")  # [UNCONFIRMED]
        if eq:
            values[name.strip()] = value.strip()
        else:
            names.append(name.strip())
    return everything, names, values


# -- submission -----------------------------------------------------------------------------

#: variables bsub does not copy from the submission environment [OL createJobInfoFile]
ENV_SKIP = (
    "LSB_JOBID",
    "LSB_HOSTS",
    "LSB_QUEUE",
    "LSB_JOBNAME",
    "LSB_TRAPSIGS",
    "LSB_JOBFILENAME",
    "LSB_RESTART",
    "LSB_EXIT_PRE_ABORT",
    "LSB_EXIT_REQUEUE",
    "LS_JOBPID",
    "LSB_INTERACTIVE",
    "LSB_ACCT_MAP",
    "LSB_JOB_STARTER",
    "LSB_EVENT_ATTRIB",
    "HOME",
    "PWD",
    "USER",
    "TERM",
    "TERMCAP",
)


def submission_env(parsed: ParsedJob, environ: dict[str, str]) -> dict[str, str]:
    """The environment the job will get from bsub (all of it by default [IBM description:
    "Sets the user's execution environment for the job, including ... all environment
    variables"]), per ``-env``."""
    base = {k: v for k, v in environ.items() if k not in ENV_SKIP and not k.startswith("LSB_SUB_")}
    if parsed.env_spec is None:
        return base
    everything, names, values = _parse_env_spec(parsed.env_spec)
    env = dict(base) if everything else {k: base[k] for k in names if k in base}
    env.update(values)
    return env


def submit(parsed: ParsedJob, store: JobStore, environ: dict[str, str], cwd: str) -> JobRecord:
    """Create the job (and its array elements) in the store; returns the job (or parent)."""
    config = store.config
    job_id = store.next_id()
    env = submission_env(parsed, environ)
    user = environ.get("USER") or getpass.getuser()
    extra: dict[str, Any] = {
        "lsf": True,
        "slots": parsed.slots,
        "csm": parsed.csm,
        "nnodes": parsed.nnodes,
        "mode": parsed.mode,
        "command": parsed.command,
        "queue_given": parsed.queue_given,
        "name_given": parsed.name_given,
        "project": parsed.project or "default",
        "user_group": parsed.user_group,
        "out": parsed.out,
        "out_overwrite": parsed.out_overwrite,
        "err": parsed.err,
        "err_overwrite": parsed.err_overwrite,
        "cwd_option": parsed.cwd,
        "submit_cwd": cwd,
        "from_host": short_hostname(),
        "exclusive": parsed.exclusive,
        "gpu": None
        if parsed.gpu is None
        else {
            "num": parsed.gpu.num,
            "per": parsed.gpu.per,
            "mode": parsed.gpu.mode,
            "mps": parsed.gpu.mps,
            "j_exclusive": parsed.gpu.j_exclusive,
            **parsed.gpu.options,
        },
        "resreq": parsed.resreq.text,
        "mem_limit_bytes": parsed.mem_limit_bytes,
        "run_limit_min": parsed.run_limit_min,
        "alloc_flags": parsed.alloc_flags,
        "pending_reason": parsed.pending_reason,
        "home_env": environ.get("HOME", ""),
        "array_limit": parsed.array_limit,
        "array_spec": parsed.array_spec,
    }
    script_path = store.scripts_dir / f"{job_id}.lsf"
    if parsed.mode == "script":
        script_path.write_text(parsed.command)
    else:
        script_path.write_text(parsed.command + "\n")
    ncpus = config.ncpus if parsed.exclusive else parsed.slots
    holds = ("u" if parsed.hold else "") + ("s" if parsed.pending_reason else "")

    def record(index: int | None) -> JobRecord:
        key = f"{job_id}" if index is None else f"{job_id}[{index}]"
        run_dir = store.home / "run" / key
        return JobRecord(
            id=job_id,
            name=parsed.name,
            user=user,
            queue=parsed.queue,
            script=str(script_path),
            workdir=cwd,
            stdout=str(run_dir / "stdout.txt"),
            stderr=str(run_dir / "stderr.txt"),
            join="n" if parsed.err is not None and parsed.err != parsed.out else "oe",
            env=env,
            ncpus=ncpus,
            ngpus=parsed.ngpus,
            mem_bytes=parsed.mem_reserve_bytes,
            walltime_s=parsed.walltime_s,
            holds=holds,
            state="held" if holds else "queued",
            array=parsed.array_spec if parsed.array_indices is not None and index is None else None,
            array_index=index,
            extra=dict(extra),
        )

    with store.locked():
        if parsed.array_indices is None:
            job = store.add(record(None))
        else:
            job = store.add(record(None))
            for index in parsed.array_indices:
                store.add(record(index))
    return job


def submitted_message(job: JobRecord, parsed: ParsedJob) -> str:
    """``Job <1234> is submitted to [default ]queue <normal>.`` [OL postSubMsg; ERT]: "queue"
    when a queue was asked for (``-q``, ``#BSUB -q`` or LSB_DEFAULTQUEUE)."""
    if parsed.queue_given:
        return f"Job <{job.id}> is submitted to queue <{job.queue}>."
    return f"Job <{job.id}> is submitted to default queue <{job.queue}>."


# -- the flavour ----------------------------------------------------------------------------


def _substitute(path: str, job: JobRecord) -> str:
    """%J -> job id, %I -> array index (0 outside arrays) [IBM -o/-e/-i]."""
    return path.replace("%J", str(job.id)).replace("%I", str(job.array_index or 0))


def _output_file(path: str | None, job: JobRecord, base: str, kind: str) -> str | None:
    if path is None:
        return None
    path = _substitute(path, job)
    target = Path(path) if os.path.isabs(path) else Path(base) / path
    if path.endswith("/") or target.is_dir():
        # a directory: LSF writes <dir>/<jobid>.out [IBM -o] (array: <jobid>_<index>)
        name = f"{job.id}" if job.array_index is None else f"{job.id}_{job.array_index}"
        target = target / f"{name}.{kind}"
    return str(target)


class LSFFlavor(Flavor):
    """LSF's hooks for the core."""

    name = "lsf"
    stage_output = True
    #: what LSF sends at the run limit: SIGUSR2, then SIGKILL [IBM -W: "the job is sent a
    #: SIGUSR2 signal, and is killed if it does not terminate within ten minutes"].  The
    #: core's runner sends (SIGTERM, SIGKILL) until it honours this attribute (requested).
    walltime_signals = (signal.SIGUSR2, signal.SIGKILL)

    def prepare(self, store: JobStore, job: JobRecord) -> None:
        config = store.config
        x = job.extra
        host = job.hosts[0] if job.hosts else config.host
        run_dir = store.job_dir(job)
        cwd = _resolve_cwd(job)
        env = dict(job.env or {})
        # LSF sets CUDA_VISIBLE_DEVICES for -gpu jobs; a job without GPUs (and a CSM launch
        # node) does not inherit the submitter's value here [UNCONFIRMED for non-GPU jobs]
        env.pop("CUDA_VISIBLE_DEVICES", None)
        slots = int(x.get("slots", job.ncpus))
        if x.get("csm"):
            launch = str(_extra(config, "csm_launch_host"))
            hosts = [launch] + [host] * slots
            mcpu = f"{launch} 1 {host} {slots}"
            numproc = slots + 1
        else:
            hosts = [host] * slots
            mcpu = f"{host} {slots}"
            numproc = slots
            if job.devices or job.ngpus:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, job.devices))
        hostfile = run_dir / "hostfile"
        hostfile.write_text("".join(f"{h}\n" for h in hosts))
        name = job.name
        if job.array_index is not None:
            name = f"{job.name}[{job.array_index}]"
        env.update(
            {
                "LSB_JOBID": str(job.id),
                "LSB_JOBNAME": name,
                "LSB_QUEUE": job.queue,
                "LSB_HOSTS": " ".join(hosts),
                "LSB_MCPU_HOSTS": mcpu,
                "LSB_DJOB_HOSTFILE": str(hostfile),
                "LSB_DJOB_NUMPROC": str(numproc),
                "LSB_MAX_NUM_PROCESSORS": str(numproc),
                "LSB_EXEC_CLUSTER": str(_extra(config, "cluster_name")),
                "LSB_JOBFILENAME": str(run_dir / "jobfile"),
                "LS_SUBCWD": x.get("submit_cwd") or job.workdir,
                "LSB_SUB_HOST": x.get("from_host", config.host),
                "LSB_PROJECT_NAME": x.get("project") or "default",
                "HOME": x.get("home_env") or os.path.expanduser("~"),
                "USER": job.user,
                "PWD": cwd,
                ENV_HOME: str(store.home),
            }
        )
        if job.array_index is not None:
            # set for array elements [OLCF: "The job's index (if it belongs to a job array)"];
            # left unset otherwise ([UNCONFIRMED] whether LSF 10 sets 0 for other jobs)
            env["LSB_JOBINDEX"] = str(job.array_index)
            indices = [s.array_index for s in store.subjobs(job.id) if s.array_index is not None]
            if indices:
                env["LSB_JOBINDEX_END"] = str(max(indices))
        if x.get("gpu") and not x.get("csm"):
            env["LSB_GPU_REQ"] = _gpu_text(x["gpu"])
        if x.get("alloc_flags"):
            env["LSB_ALLOC_FLAGS"] = x["alloc_flags"]
        job.run_env = env
        job.run_cwd = cwd
        if x.get("mode") == "script":
            job.run_argv = _script_argv(job.script)
        else:
            job.run_argv = ["/bin/sh", "-c", x.get("command", "")]

    def signal_exit_status(self, signum: int) -> int:
        return 128 + signum

    def walltime_exit_status(self, returncode: int) -> int:
        return 128 - returncode if returncode < 0 else returncode

    def finish(self, store: JobStore, job: JobRecord) -> None:
        try:
            _write_outputs(store, job)
        except Exception as error:  # noqa: BLE001 - record why, the core swallows errors here
            with contextlib.suppress(OSError):
                with open(store.log_dir / f"finish-{job.key}.log", "a") as log:
                    log.write(f"{time.ctime()}: {error!r}\n")


def flavor(name: str) -> LSFFlavor:
    """The core's hook: ``FLAVOR_MODULES["lsf"]`` names this module."""
    return LSFFlavor()


def _gpu_text(gpu: dict[str, Any]) -> str:
    num = f"{gpu['num']}" + ("/task" if gpu.get("per") == "task" else "")
    parts = [f"num={num}", f"mode={gpu['mode']}", f"mps={gpu['mps']}", f"j_exclusive={gpu['j_exclusive']}"]
    parts += [f"{k}={v}" for k, v in gpu.items() if k not in ("num", "per", "mode", "mps", "j_exclusive")]
    return ":".join(parts)


def _resolve_cwd(job: JobRecord) -> str:
    """The job's working directory: -cwd (relative to the submission directory, %J/%I
    substituted, created when missing [IBM -cwd]; creation [UNCONFIRMED]) or the submission
    directory; /tmp when it is gone [IBM description: the last fallback is /tmp]."""
    option = job.extra.get("cwd_option")
    base = job.extra.get("submit_cwd") or job.workdir
    if option:
        path = _substitute(option, job)
        target = Path(path) if os.path.isabs(path) else Path(base) / path
        with contextlib.suppress(OSError):
            target.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            return str(target)
    return base if os.path.isdir(base) else "/tmp"


def _script_argv(script: str) -> list[str]:
    """A spooled script runs under its ``#!`` interpreter, else the Bourne shell [OL
    parseScript: 'If the shell is not given in the first line, the Bourne shell is used']."""
    try:
        first = Path(script).read_text(errors="replace").split("\n", 1)[0]
    except OSError:
        first = ""
    if first.startswith("#!"):
        words = first[2:].split()
        if words:
            return [*words, script]
    return ["/bin/sh", script]


def _ctime(seconds: float | None) -> str:
    return time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(seconds or time.time()))


def _termination(job: JobRecord) -> str:
    reason = (job.kill or {}).get("reason")
    status = job.exit_status
    lines = []
    if reason == "walltime":
        lines.append("TERM_RUNLIMIT: job killed after reaching LSF run time limit.")
    elif reason in ("bkill", "cancel"):
        lines.append("TERM_OWNER: job killed by owner.")
    if status == 0 and not lines:
        lines.append("Successfully completed.")
    else:
        lines.append(f"Exited with exit code {status if status is not None else '-'}.")
    return "\n".join(lines)


def _report(job: JobRecord, store: JobStore, err_file: str | None) -> str:
    """LSF's job report (the head of the -o file or of the mail) [ERT: the stdout file
    "should always start with 'Sender:'" and holds "The output (if any) follows:"]; the
    other lines follow LSF 10's reports [UNCONFIRMED in detail]."""
    config = store.config
    cluster = _extra(config, "cluster_name")
    host = job.hosts[0] if job.hosts else config.host
    name = job.name if job.array_index is None else f"{job.name}[{job.array_index}]"
    done = job.exit_status == 0 and not job.kill
    started = job.start_time or time.time()
    ended = job.end_time or time.time()
    cwd = job.run_cwd or job.workdir
    command = job.extra.get("command", "")
    lines = [
        f"Sender: LSF System <lsfadmin@{host}>",
        f"Subject: Job {job.key}: <{name}> in cluster <{cluster}> {'Done' if done else 'Exited'}",
        "",
        f"Job <{name}> was submitted from host <{job.extra.get('from_host', host)}> by user "
        f"<{job.user}> in cluster <{cluster}> at {_ctime(job.submit_time)}",
        f"Job was executed on host(s) <{host}>, in queue <{job.queue}>, as user <{job.user}> "
        f"in cluster <{cluster}> at {_ctime(started)}",
        f"<{job.extra.get('home_env') or os.path.expanduser('~')}> was used as the home directory.",
        f"<{cwd}> was used as the working directory.",
        f"Started at {_ctime(started)}",
        f"Terminated at {_ctime(ended)}",
        f"Results reported at {_ctime(time.time())}",
        "",
        "Your job looked like:",
        "",
        "-" * 60,
        "# LSBATCH: User input",
        command.rstrip("\n"),
        "-" * 60,
        "",
        _termination(job),
        "",
        "Resource usage summary:",
        "",
        f"    Run time :                                   {int(ended - started)} sec.",
        f"    Turnaround time :                            {int(ended - job.submit_time)} sec.",
        "",
        "The output (if any) follows:",
        "",
    ]
    return "\n".join(lines) + "\n"


def _write_outputs(store: JobStore, job: JobRecord) -> None:
    """Turn the staged output into LSF's files: ``-o`` gets the report then stdout (and
    stderr without ``-e``); ``-e`` gets stderr alone; no ``-o``: the report is mailed."""
    x = job.extra
    base = x.get("submit_cwd") or job.workdir
    out_file = _output_file(x.get("out"), job, base, "out")
    err_file = _output_file(x.get("err"), job, base, "err")
    if err_file is not None and err_file == out_file:
        err_file = None
    stdout = Path(job.stdout).read_text(errors="replace") if Path(job.stdout).exists() else ""
    stderr = ""
    if job.join == "n" and Path(job.stderr).exists():
        stderr = Path(job.stderr).read_text(errors="replace")
    text = _report(job, store, err_file) + stdout
    if err_file is not None:
        text += f"\n\nPS:\n\nRead file <{err_file}> for stderr output of this job.\n\n"
    if out_file is not None:
        _deliver(store, out_file, text, overwrite=bool(x.get("out_overwrite")))
    else:
        _deliver(store, str(store.home / "mail" / job.user), text + "\n", overwrite=False)
    if err_file is not None:
        _deliver(store, err_file, stderr, overwrite=bool(x.get("err_overwrite")))


def _deliver(store: JobStore, path: str, text: str, overwrite: bool) -> None:
    target = Path(path)
    if target.parent == store.home / "mail":
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(target, "w" if overwrite else "a") as handle:
            handle.write(text)
    except OSError:
        # LSF cannot write the file (no such directory): it mails the output instead
        lost = store.home / "mail" / "undeliverable"
        lost.parent.mkdir(parents=True, exist_ok=True)
        with open(lost, "a") as handle:
            handle.write(f"--- {path}\n{text}")


# -- bsub -----------------------------------------------------------------------------------


def bsub(argv: list[str]) -> int:
    store = JobStore(emulator_home(prog="bsub"))
    if argv and argv[0] in ("-V",):
        sys.stderr.write("IBM Spectrum LSF 10.1.0.0 (gpujobqueue emulator)\n")
        return 0
    if argv and argv[0] in ("-h", "-help"):
        sys.stderr.write(BSUB_USAGE)
        return 0
    _, command = parse_options(argv)
    script_text = None
    stdin_is_file = False
    if not command:
        if sys.stdin is None or sys.stdin.isatty():
            raise refused("No command is specified")  # [OL 1560] (a terminal: LSF prompts bsub>)
        with contextlib.suppress(OSError, ValueError):
            stdin_is_file = os.path.isfile(f"/proc/self/fd/{sys.stdin.fileno()}")
        script_text = sys.stdin.read()
    parsed = parse_submission(script_text, argv, store.config, environ=dict(os.environ), stdin_is_file=stdin_is_file)
    job = _submit_below_pending_threshold(parsed, store)
    print(submitted_message(job, parsed), flush=True)
    store.schedule()
    if parsed.block:
        return _wait_blocking(store, job)
    return 0


def _submit_below_pending_threshold(parsed: ParsedJob, store: JobStore) -> JobRecord:
    """Submit, as mbatchd does one submission at a time: while the user has ``max_pend_jobs`` jobs
    pending it rejects the job, and bsub says so, waits SUB_TRY_INTERVAL and tries again,
    LSB_NTRIES times or for ever [IBM, TPL]."""
    user = os.environ.get("USER") or getpass.getuser()
    threshold = _extra(store.config, "max_pend_jobs")
    tries_text = os.environ.get("LSB_NTRIES", "")
    tries = int(tries_text) if tries_text.isdigit() and int(tries_text) > 0 else None
    made = 0
    while True:
        with store.locked():
            store.schedule()
            pending = [
                job
                for job in store.jobs()
                if job.user == user and not job.is_array_parent and lsf_state(job) in ("PEND", "PSUSP")
            ]
            if threshold is None or len(pending) < int(threshold):
                return submit(parsed, store, dict(os.environ), os.getcwd())
        made += 1
        if tries is not None and made >= tries:
            raise refused(f"User <{user}>: Pending job threshold reached")  # [UNCONFIRMED]
        interval = float(_extra(store.config, "sub_try_interval_s"))
        sys.stderr.write(f"User <{user}>: Pending job threshold reached. Retrying in {interval:g} seconds...\n")
        sys.stderr.flush()
        time.sleep(interval)


def _wait_blocking(store: JobStore, job: JobRecord) -> int:
    """``bsub -K``: wait for the job, print LSF's progress lines [OL postSubMsg 402]."""
    sys.stderr.write("<<Waiting for dispatch ...>>\n")
    started = False
    while True:
        current = store.get(job.key) or job
        if current.start_time and not started:
            started = True
            host = current.hosts[0] if current.hosts else store.config.host
            sys.stderr.write(f"<<Starting on {host}>>\n")
        if current.state == "finished":
            sys.stderr.write("<<Job is finished>>\n")  # [IBM BSUB_QUIET2 text]
            return current.exit_status or 0
        time.sleep(0.1)
        store.schedule()


def bsub_main(argv: Sequence[str] | None = None) -> int:
    return _main(bsub, "bsub", argv)


def _main(func, prog: str, argv: Sequence[str] | None) -> int:
    def run(args: list[str]) -> int:
        try:
            return func(args)
        except LSFRejected as refusal:
            if refusal.stdout:
                sys.stdout.write(refusal.stdout)
                sys.stdout.flush()
            raise

    return main_wrapper(run, prog, argv)


# -- bjobs ----------------------------------------------------------------------------------


def lsf_state(job: JobRecord) -> str:
    """LSF's STAT of a record: PEND, PSUSP (user hold), RUN, DONE, EXIT."""
    if job.state == "queued":
        return "PEND"
    if job.state == "held":
        return "PSUSP" if "u" in job.holds else "PEND"
    if job.state in ("running", "exiting"):
        return "RUN"
    return "DONE" if job.exit_status == 0 and not job.extra.get("deleted") else "EXIT"


def _short_time(seconds: float | None) -> str:
    if not seconds:
        return "-"
    stamp = time.localtime(seconds)
    return time.strftime("%b ", stamp) + f"{stamp.tm_mday:2d}" + time.strftime(" %H:%M", stamp)


def _trunc(text: str, width: int) -> str:
    """TRUNC_STR [OL bjobs.c]: a long name keeps its end, behind ``*``."""
    return text if len(text) <= width else "*" + text[len(text) - width + 1 :]


def _exec_host(job: JobRecord, config: EmulatorConfig) -> str:
    if lsf_state(job) in ("PEND", "PSUSP") or not job.hosts:
        return ""
    slots = int(job.extra.get("slots", job.ncpus))
    host = job.hosts[0]
    if job.extra.get("csm"):
        return str(_extra(config, "csm_launch_host"))
    return host if slots == 1 else f"{slots}*{host}"


def _display_name(job: JobRecord) -> str:
    return job.name if job.array_index is None else f"{job.name}[{job.array_index}]"


#: bjobs -o fields: name -> (header, default width) [IBM bjobs -o; widths UNCONFIRMED]
FIELDS: dict[str, tuple[str, int]] = {
    "jobid": ("JOBID", 7),
    "stat": ("STAT", 5),
    "user": ("USER", 7),
    "queue": ("QUEUE", 10),
    "job_name": ("JOB_NAME", 10),
    "from_host": ("FROM_HOST", 11),
    "exec_host": ("EXEC_HOST", 11),
    "submit_time": ("SUBMIT_TIME", 15),
    "start_time": ("START_TIME", 15),
    "finish_time": ("FINISH_TIME", 16),
    "exit_code": ("EXIT_CODE", 9),
    "slots": ("SLOTS", 5),
    "nalloc_slot": ("NALLOC_SLOT", 11),
    "jobindex": ("JOBINDEX", 8),
    "command": ("COMMAND", 15),
    "proj_name": ("PROJ_NAME", 11),
    "run_time": ("RUN_TIME", 15),
    "pend_reason": ("PEND_REASON", 11),
    "exit_reason": ("EXIT_REASON", 50),
    "runtimelimit": ("RUNTIMELIMIT", 11),
    "memlimit": ("MEMLIMIT", 8),
    "gpu_num": ("GPU_NUM", 10),
    "cpu_used": ("CPU_USED", 10),
    "nexec_host": ("NEXEC_HOST", 10),
    "sub_cwd": ("SUB_CWD", 15),
    "exec_cwd": ("EXEC_CWD", 15),
    "output_file": ("OUTPUT_FILE", 11),
    "error_file": ("ERROR_FILE", 10),
    # where LSB_ENABLE_ESTIMATION=Y (extra["estimates"]) [IBM lsf.conf LSB_ENABLE_ESTIMATION; header UNCONFIRMED]
    "estimated_sim_start_time": ("ESTIMATED_SIM_START_TIME", 16),
}
ALIASES = {
    "esstart_time": "estimated_sim_start_time",
    "id": "jobid",
    "name": "job_name",
    "proj": "proj_name",
    "project": "proj_name",
    "cmd": "command",
}


def _field_value(name: str, job: JobRecord, config: EmulatorConfig) -> str:
    x = job.extra
    state = lsf_state(job)
    if name == "jobid":
        return str(job.id)
    if name == "stat":
        return state
    if name == "user":
        return job.user
    if name == "queue":
        return job.queue
    if name == "job_name":
        return _display_name(job)
    if name == "from_host":
        return x.get("from_host", "")
    if name == "exec_host":
        return _exec_host(job, config) or "-"
    if name == "submit_time":
        return _short_time(job.submit_time)
    if name == "start_time":
        return _short_time(job.start_time)
    if name == "finish_time":
        return _short_time(job.end_time) if job.state == "finished" else "-"
    if name == "exit_code":
        # "-" for DONE jobs and unfinished ones (seen: "261871|DONE|-|..." [gc3pie#514])
        if state == "EXIT" and job.exit_status is not None:
            return str(job.exit_status)
        return "-"
    if name in ("slots", "nalloc_slot"):
        return str(x.get("slots", job.ncpus))
    if name == "jobindex":
        return str(job.array_index or 0)
    if name == "command":
        return _command_line(job)
    if name == "proj_name":
        return x.get("project") or "default"
    if name == "run_time":
        if not job.start_time:
            return "0 second(s)"
        return f"{int((job.end_time or time.time()) - job.start_time)} second(s)"
    if name == "pend_reason":
        return x.get("pending_reason") or "-" if state == "PEND" else "-"
    if name == "exit_reason":
        reason = (job.kill or {}).get("reason")
        return {
            "walltime": "TERM_RUNLIMIT: job killed after reaching LSF run time limit",
            "bkill": "TERM_OWNER: job killed by owner",
        }.get(reason or "", "-")
    if name == "runtimelimit":
        return f"{job.walltime_s / 60:.1f}" if job.walltime_s else "-"
    if name == "memlimit":
        limit = x.get("mem_limit_bytes")
        return f"{limit // (1 << 20)} M" if limit else "-"
    if name == "gpu_num":
        return str(job.ngpus) if job.ngpus else "-"
    if name == "cpu_used":
        return "0.0 second(s)"
    if name == "nexec_host":
        return "1" if job.hosts and state not in ("PEND", "PSUSP") else "-"
    if name == "sub_cwd":
        return x.get("submit_cwd") or job.workdir
    if name == "exec_cwd":
        return job.run_cwd or "-"
    if name == "output_file":
        return x.get("out") or "-"
    if name == "error_file":
        return x.get("err") or "-"
    if name == "estimated_sim_start_time":
        return _short_time(x.get("estimated_start"))
    return "-"


def _parse_format(spec: str, config: EmulatorConfig | None = None) -> tuple[list[tuple[str, int | None]], str | None]:
    """``"jobid stat:8 exit_code delimiter='^'"`` -> fields (name, width), delimiter."""
    delimiter = None
    match = re.search(r"delimiter\s*=\s*(?:'([^']*)'|\"([^\"]*)\")", spec)
    if match:
        delimiter = match.group(1) if match.group(1) is not None else match.group(2)
        spec = spec[: match.start()] + spec[match.end() :]
    fields = []
    for word in spec.replace(",", " ").split():
        name, _, width = word.partition(":")
        name = ALIASES.get(name.lower(), name.lower())
        estimator = config is not None and config.extra.get("estimates")
        if name not in FIELDS or (name == "estimated_sim_start_time" and not estimator):
            raise Rejected(f"{word}: Illegal field name.", 255)  # [UNCONFIRMED]
        if width and not re.fullmatch(r"-?\d+[SMHDT]?", width):
            raise Rejected(f"{word}: Illegal field width.", 255)  # [UNCONFIRMED]
        fields.append((name, int(re.sub(r"[^\d]", "", width)) if width else None))
    if not fields:
        raise Rejected("bjobs: no output field given", 255)  # [UNCONFIRMED]
    return fields, delimiter


BJOBS_USAGE = """\
Usage: bjobs [-h] [-V] [-w | -l] [-a] [-d] [-p] [-s] [-r] [-A]
             [-m host_name] [-q queue_name] [-u user_name | -u all]
             [-P project_name] [-J name_spec] [-noheader] [-o "field ..."] [-json]
             [jobId | "jobId[idxList]" ...]"""  # [OL bjobs.c usage, with LSF 10's -o/-json/-noheader]

BJOBS_FLAGS = ("a", "d", "p", "s", "r", "w", "W", "l", "A", "noheader", "json", "X", "UF", "hms", "aff")
BJOBS_ARGS = ("o", "u", "q", "J", "m", "P", "g", "G", "app")


def bjobs(argv: list[str]) -> int:
    store = JobStore(emulator_home(prog="bjobs"))
    store.schedule()
    opts: dict[str, Any] = {}
    ids: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("-") and token != "-":
            name = token[1:]
            if name in BJOBS_FLAGS:
                opts[name] = True
                i += 1
                continue
            if name in BJOBS_ARGS:
                if i + 1 >= len(argv):
                    raise Rejected(f"bjobs: option requires an argument -- {name}\n{BJOBS_USAGE}", 255)
                opts[name] = argv[i + 1]
                i += 2
                continue
            if name in ("h", "help"):
                sys.stderr.write(BJOBS_USAGE + "\n")
                return 0
            if name == "V":
                sys.stderr.write("IBM Spectrum LSF 10.1.0.0 (gpujobqueue emulator)\n")
                return 0
            raise Rejected(f"bjobs: illegal option -- {name}\n{BJOBS_USAGE}", 255)  # [OL my_getopt style]
        ids.append(token)
        i += 1
    if "json" in opts and "o" not in opts:
        raise Rejected("bjobs: -json must be used with -o", 255)  # [UNCONFIRMED]
    config = store.config
    user = os.environ.get("USER") or getpass.getuser()
    now = time.time()
    clean = float(_extra(config, "clean_period_s"))
    jobs = [j for j in store.jobs() if not j.is_array_parent and j.extra.get("lsf", True)]
    jobs = [j for j in jobs if not (j.state == "finished" and (now - (j.end_time or now)) > clean)]
    status = 0
    selected: list[JobRecord] = []
    if ids:
        missing = []
        for text in ids:
            match = re.fullmatch(r"(\d+)(?:\[(\d+)\])?", text.strip())
            if not match:
                raise Rejected(f"{text}: Illegal job ID.", 255)  # [UNCONFIRMED]
            number = int(match.group(1))
            index = None if match.group(2) is None else int(match.group(2))
            found = [j for j in jobs if j.id == number and (index is None or j.array_index == index)]
            if not found:
                missing.append(text)
            selected.extend(j for j in found if j not in selected)
        for text in missing:
            sys.stderr.write(f"Job <{text}> is not found\n")  # [OL cmd.err.c 808; ERT]
        # one id not found: status 0 ("Actual command is seen to return zero" [ERT]);
        # several ids of which some are not found: 255 [ERT, OL bjobs.c]
        if missing and len(ids) > 1:
            status = 255
    else:
        want_user = opts.get("u", user)
        for job in jobs:
            state = lsf_state(job)
            if want_user != "all" and job.user != want_user:
                continue
            if "q" in opts and job.queue != opts["q"]:
                continue
            if "J" in opts and not _name_matches(opts["J"], job):
                continue
            finished = state in ("DONE", "EXIT")
            if opts.get("d"):
                keep = finished
            elif opts.get("p"):
                keep = state in ("PEND", "PSUSP")
            elif opts.get("r"):
                keep = state == "RUN"
            elif opts.get("s"):
                keep = state.endswith("SUSP")
            elif opts.get("a"):
                keep = True
            else:
                keep = not finished
            if keep:
                selected.append(job)
        if not selected:
            what = (
                "No DONE/EXIT job found"
                if opts.get("d")
                else "No pending job found"
                if opts.get("p")
                else "No running job found"
                if opts.get("r")
                else "No suspended job found"
                if opts.get("s")
                else "No job found"
                if opts.get("a")
                else "No unfinished job found"
            )
            if "q" in opts:
                what += f" in queue <{opts['q']}>"
            sys.stderr.write(what + "\n")  # [OL cmd.err.c 814-820: stderr]
            return 0  # [UNCONFIRMED: openlava exits -1/-2; we follow ERT's exit 0 for "not found"]
    if not selected:
        return status
    if "o" in opts:
        for job in selected:  # in this answer only: not saved
            job.extra["estimated_start"] = store.estimated_start(job)
        sys.stdout.write(_format_o(selected, opts, config))
    elif opts.get("l"):
        sys.stdout.write(_format_long(selected, config))
    else:
        sys.stdout.write(_format_table(selected, opts, config))
    sys.stdout.flush()
    return status


def _command_line(job: JobRecord) -> str:
    """The job's command as LSF shows it: a script's lines joined with ``;`` [OL]."""
    return ";".join((job.extra.get("command") or "").strip("\n").splitlines())


def _name_matches(pattern: str, job: JobRecord) -> bool:
    regex = re.escape(pattern).replace(r"\*", ".*")
    return re.fullmatch(regex, job.name) is not None or re.fullmatch(regex, _display_name(job)) is not None


def _format_table(jobs: list[JobRecord], opts: dict[str, Any], config: EmulatorConfig) -> str:
    """bjobs' default table [OL bjobs.c displayJobs: header and
    ``%-7d %-7.7s %-5.5s %-10.10s %-11.11s %-11.11s %-10.10s %s``]; ``-w`` does not
    truncate."""
    wide = opts.get("w") or opts.get("W")
    lines = []
    if not opts.get("noheader"):
        lines.append("JOBID   USER    STAT  QUEUE      FROM_HOST   EXEC_HOST   JOB_NAME   SUBMIT_TIME")
    for job in jobs:
        name = _display_name(job)
        values = [
            str(job.id),
            job.user,
            lsf_state(job),
            job.queue,
            job.extra.get("from_host", ""),
            _exec_host(job, config),
            name,
            _short_time(job.submit_time),
        ]
        if wide:
            lines.append("{:<7} {:<7} {:<5} {:<10} {:<11} {:<11} {:<10} {}".format(*values))
        else:
            lines.append(
                "{:<7} {:<7.7} {:<5.5} {:<10.10} {:<11.11} {:<11.11} {:<10.10} {}".format(
                    values[0], values[1], values[2], values[3], values[4], values[5], _trunc(name, 10), values[7]
                )
            )
    return "\n".join(lines) + "\n"


def _format_o(jobs: list[JobRecord], opts: dict[str, Any], config: EmulatorConfig) -> str:
    fields, delimiter = _parse_format(opts["o"], config)
    if opts.get("json"):
        records = []
        for job in jobs:
            record = {}
            for name, _ in fields:
                value = _field_value(name, job, config)
                record[FIELDS[name][0]] = "" if value == "-" else value
            records.append(record)
        # {"COMMAND":"bjobs","JOBS":n,"RECORDS":[...]} [IBM bjobs -json; layout UNCONFIRMED]
        return json.dumps({"COMMAND": "bjobs", "JOBS": len(records), "RECORDS": records}, indent=2) + "\n"
    rows = [[_field_value(name, job, config) for name, _ in fields] for job in jobs]
    headers = [FIELDS[name][0] for name, _ in fields]
    lines = []
    if delimiter is not None:
        if not opts.get("noheader"):
            lines.append(delimiter.join(headers))
        lines.extend(delimiter.join(row) for row in rows)
    else:
        widths = [width or FIELDS[name][1] for name, width in fields]
        if not opts.get("noheader"):
            lines.append(" ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
        for row in rows:
            lines.append(" ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(lines) + "\n"


def _format_long(jobs: list[JobRecord], config: EmulatorConfig) -> str:
    """A minimal ``bjobs -l`` [shape of LSF's long format; details UNCONFIRMED]."""
    blocks = []
    for job in jobs:
        x = job.extra
        state = lsf_state(job)
        lines = [
            f"Job <{job.key}>, Job Name <{_display_name(job)}>, User <{job.user}>, Project "
            f"<{x.get('project') or 'default'}>, Status <{state}>, Queue <{job.queue}>, "
            f"Command <{_command_line(job)}>",
            f"{_ctime(job.submit_time)}: Submitted from host <{x.get('from_host', '')}>, CWD "
            f"<{x.get('submit_cwd') or job.workdir}>, {x.get('slots', job.ncpus)} Task(s);",
        ]
        if job.walltime_s:
            lines.append(f" RUNLIMIT\n {job.walltime_s / 60:.1f} min")
        if state in ("PEND", "PSUSP"):
            reason = x.get("pending_reason") or (
                "The job was suspended by user while pending;"
                if state == "PSUSP"
                else "Job's resource requirements not satisfied;"
            )
            lines.append(f" PENDING REASONS:\n {reason}")
        else:
            host = _exec_host(job, config)
            lines.append(
                f"{_ctime(job.start_time)}: Started {x.get('slots', job.ncpus)} "
                f"Task(s) on Host(s) <{host}>, Execution CWD <{job.run_cwd or ''}>;"
            )
        if state == "DONE":
            lines.append(f"{_ctime(job.end_time)}: Done successfully.")
        elif state == "EXIT":
            lines.append(
                f"{_ctime(job.end_time)}: Exited with exit code "
                f"{job.exit_status if job.exit_status is not None else '-'}."
            )
        if job.devices:
            lines.append(f" GPU_ALLOCATION: {','.join(map(str, job.devices))}")
        blocks.append("\n".join(lines))
    sep = "\n" + "-" * 78 + "\n"
    return "\n" + sep.join(blocks) + "\n\n"


def bjobs_main(argv: Sequence[str] | None = None) -> int:
    return _main(bjobs, "bjobs", argv)


# -- bqueues -------------------------------------------------------------------------------
# The long form as openlava's lsbatch/cmd/bqueues.c prtQueuesLong prints it [OL]: queues after the first behind a
# line of 79 dashes; "QUEUE: name", "  -- description" (with "  This is the default queue."), PARAMETERS/STATISTICS
# (prtWord columns: PRIO 4, NICE 4, STATUS 14, MAX JL/U JL/P JL/H 4 each, NJOBS PEND RUN SSUSP USUSP 5, RSV 4);
# the limits as lsbatch/lib/lib.prtjob.c (cmd.prt.c) prtResourceLimit/prtLimit print them: a header line of
# " %-24s" names, then the values, each " %.1f min" in 25 columns; USERS and HOSTS ("all hosts used by the
# scheduler system" where the queue names none). A queue's config ``hosts`` (a list of host names) is its HOSTS line
# [its layout as bqueues.c; which hosts a job may use is not enforced by bsub here]. The SCHEDULING PARAMETERS
# thresholds table is printed with every index "-" [UNCONFIRMED layout: no thresholds are emulated].
BQUEUES_USAGE = "Usage: bqueues [-h] [-V] [-w | -l] [-m host_name | -m cluster_name] [-u user_name] [queue_name ...]"
_DASHES = "-" * 79


def _queue_counts(store: JobStore, name: str) -> dict[str, int]:
    states = [lsf_state(job) for job in store.jobs() if job.queue == name and not job.is_array_parent]
    live = [state for state in states if state not in ("DONE", "EXIT")]
    return {"NJOBS": len(live), "PEND": live.count("PEND"), "RUN": live.count("RUN"), "SUSP": live.count("PSUSP")}


def _queue_long(name: str, qconf: dict[str, Any], counts: dict[str, int], default: bool) -> str:
    lines = [f"QUEUE: {name}"]
    lines.append(f"  -- {qconf.get('description', name)}" + ("  This is the default queue.\n" if default else "\n"))
    lines.append("PARAMETERS/STATISTICS")
    lines.append("PRIO NICE STATUS          MAX JL/U JL/P JL/H NJOBS  PEND   RUN SSUSP USUSP  RSV")
    prio, nice = qconf.get("priority", 30), qconf.get("nice", 0)
    lines.append(
        f"{prio:>3}  {nice:>3}  {'Open:Active':<14}{'-':>4}{'-':>5}{'-':>5}{'-':>5}"
        f"{counts['NJOBS']:>6}{counts['PEND']:>6}{counts['RUN']:>6}{counts['SUSP']:>6}{0:>6}{0:>5}"
    )
    if qconf.get("run_limit_min") is not None:
        lines += ["", f" {'RUNLIMIT':<24}", f" {float(qconf['run_limit_min']):.1f} min".ljust(25)]
    lines += ["", "SCHEDULING PARAMETERS"]
    lines.append("           r15s   r1m  r15m   ut      pg    io   ls    it    tmp    swp    mem")
    lines += [
        f" {row:<9}   -     -     -     -       -     -    -     -     -      -      -"
        for row in ("loadSched", "loadStop")
    ]
    if qconf.get("exclusive"):
        lines += ["", "SCHEDULING POLICIES:  EXCLUSIVE"]
    hosts = " ".join(qconf["hosts"]) if qconf.get("hosts") else "all hosts used by the scheduler system"
    lines += ["", "USERS:  all users", f"HOSTS:  {hosts}", ""]
    return "\n".join(lines) + "\n"


def bqueues(argv: list[str]) -> int:
    store = JobStore(emulator_home(prog="bqueues"))
    flags = [arg for arg in argv if arg.startswith("-")]
    names = [arg for arg in argv if not arg.startswith("-")]
    for flag in flags:
        if flag in ("-h", "-V"):
            sys.stderr.write(
                (BQUEUES_USAGE if flag == "-h" else "IBM Spectrum LSF 10.1.0.0 (gpujobqueue emulator)") + "\n"
            )
            return 0
        if flag not in ("-l", "-w"):
            raise Rejected(f"bqueues: illegal option -- {flag[1:]}\n{BQUEUES_USAGE}", 255)  # [OL my_getopt style]
    config = store.config
    unknown = [name for name in names if name not in config.queues]
    if unknown:
        raise Rejected(f"{unknown[0]}: No such queue", 255)  # [OL lsb.err.c 18]
    chosen = names or list(config.queues)
    if "-l" in flags:
        blocks = [
            _queue_long(name, config.queues[name], _queue_counts(store, name), name == config.default_queue)
            for name in chosen
        ]
        sys.stdout.write(f"{_DASHES}\n\n".join(blocks) + "\n")
        return 0
    sys.stdout.write("QUEUE_NAME      PRIO STATUS          MAX JL/U JL/P JL/H NJOBS  PEND   RUN  SUSP\n")
    for name in chosen:
        counts, prio = _queue_counts(store, name), config.queues[name].get("priority", 30)
        sys.stdout.write(
            f"{name[:15]:<15} {prio:>4} {'Open:Active':<14}{'-':>5}{'-':>5}{'-':>5}{'-':>5}"
            f"{counts['NJOBS']:>6}{counts['PEND']:>6}{counts['RUN']:>6}{counts['SUSP']:>6}\n"
        )
    return 0


def bqueues_main(argv: Sequence[str] | None = None) -> int:
    return _main(bqueues, "bqueues", argv)


# -- bkill ----------------------------------------------------------------------------------

BKILL_USAGE = """\
Usage: bkill [-h] [-V] [-l] [-s signal_value | -s signal_name] [-q queue_name]
             [-u user_name | -u all] [-J job_name] [-r] [jobId | "jobId[index_list]" ...]"""


def _signal_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    name = text.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    value = getattr(signal, name, None)
    return int(value) if value is not None else None


def bkill(argv: list[str]) -> int:
    store = JobStore(emulator_home(prog="bkill"))
    config = store.config
    sig: int | None = None
    queue = user_opt = name_opt = None
    ids: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in ("-s", "-q", "-u", "-J"):
            if i + 1 >= len(argv):
                raise Rejected(f"bkill: option requires an argument -- {token[1:]}\n{BKILL_USAGE}", 255)
            value = argv[i + 1]
            if token == "-s":
                sig = _signal_number(value)
                if sig is None:
                    raise Rejected(f"{value}: Illegal signal value", 255)  # [OL 419 wording]
            elif token == "-q":
                queue = value
            elif token == "-u":
                user_opt = value
            else:
                name_opt = value
            i += 2
            continue
        if token in ("-h", "-V", "-l", "-r"):
            if token == "-l":
                sys.stdout.write(
                    " ".join(s.name[3:] for s in signal.Signals if s.name.startswith("SIG") and "_" not in s.name)
                    + "\n"
                )
                return 0
            if token == "-r":
                i += 1
                continue
            sys.stderr.write(BKILL_USAGE + "\n")
            return 0
        if token.startswith("-"):
            raise Rejected(f"bkill: illegal option -- {token[1:]}\n{BKILL_USAGE}", 255)
        ids.append(token)
        i += 1
    me = os.environ.get("USER") or getpass.getuser()
    targets: list[tuple[str, list[JobRecord]]] = []
    everything = store.jobs()
    if not ids and (queue or name_opt or user_opt):
        ids = ["0"]
    if not ids:
        raise Rejected(BKILL_USAGE, 255)
    status = 0
    for text in ids:
        match = re.fullmatch(r"(\d+)(?:\[(\d+)\])?", text.strip())
        if not match:
            sys.stderr.write(f"{text}: Illegal job ID.\n")  # [UNCONFIRMED]
            status = 255
            continue
        number, index = int(match.group(1)), match.group(2)
        if number == 0:  # bkill 0: all the user's unfinished jobs [IBM bkill]
            jobs = [
                j
                for j in everything
                if j.state != "finished"
                and not j.is_array_parent
                and (user_opt == "all" or j.user == (user_opt or me))
                and (queue is None or j.queue == queue)
                and (name_opt is None or _name_matches(name_opt, j))
            ]
            if not jobs:
                sys.stderr.write("No unfinished job found\n")
                status = 255
            for job in jobs:
                targets.append((job.key, [job]))
            continue
        if index is not None:
            job = store.get(f"{number}[{index}]")
            jobs = [job] if job else []
        else:
            parent = store.get(number)
            jobs = (
                [parent]
                if parent and not parent.is_array_parent
                else [s for s in store.subjobs(number)]
                if parent
                else []
            )
        if not jobs:
            sys.stderr.write(f"Job <{text}>: No matching job found\n")  # [OL lsb.err.c 1; ERT]
            status = 255
            continue
        targets.append((text, jobs))
    for label, jobs in targets:
        live = [j for j in jobs if j.state != "finished"]
        if not live:
            sys.stderr.write(f"Job <{label}>: Job has already finished\n")  # [OL lsb.err.c 4; ERT]
            status = 255
            continue
        if sig is not None and sig not in (signal.SIGKILL,):
            for job in live:
                if job.active and job.pgid:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(job.pgid, sig)
            if not any(j.active for j in live):
                sys.stderr.write(f"Job <{label}>: Job has not started yet\n")  # [OL lsb.err.c 2]
                status = 255
                continue
            print(f"Job <{label}> is being signaled")  # [ERT]
            continue
        grace = float(_extra(config, "job_terminate_interval_s"))
        sequence = (signal.SIGKILL,) if sig == signal.SIGKILL else (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
        for job in live:
            store.cancel(job.key, sequence, grace_s=grace, reason="bkill")
        print(f"Job <{label}> is being terminated")  # [ERT; OL]
    sys.stdout.flush()
    store.schedule()
    return status


def bkill_main(argv: Sequence[str] | None = None) -> int:
    return _main(bkill, "bkill", argv)


# -- jsrun ----------------------------------------------------------------------------------

JSRUN_OPTIONS = {
    # long name: (short name, takes a value)  [OLCF "Common jsrun Options"; IBM jsrun]
    "nrs": ("n", True),
    "tasks_per_rs": ("a", True),
    "cpu_per_rs": ("c", True),
    "gpu_per_rs": ("g", True),
    "rs_per_host": ("r", True),
    "bind": ("b", True),
    "latency_priority": ("l", True),
    "launch_distribution": ("d", True),
    "np": ("p", True),
    "memory_per_rs": ("m", True),
    "smpiargs": ("M", True),
    "exit_on_error": ("X", True),
    "stdio_mode": ("e", True),
    "stdio_stdout": ("o", True),
    "stdio_stderr": ("k", True),
    "env": ("E", True),
    "chdir": ("h", True),
    "env_no_propagate": ("D", True),
}
JSRUN_SHORT = {short: long for long, (short, _) in JSRUN_OPTIONS.items()}


class JsrunError(Rejected):
    pass


def _jsrun_error(message: str) -> JsrunError:
    return JsrunError(message, 1)  # exit status [UNCONFIRMED]


def parse_jsrun(argv: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    opts: dict[str, list[str]] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            i += 1
            break
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if name not in JSRUN_OPTIONS:
                raise _jsrun_error(f"jsrun: unrecognized option '--{name}'")  # [UNCONFIRMED]
            if not eq:
                if i + 1 >= len(args):
                    raise _jsrun_error(f"jsrun: option '--{name}' requires an argument")  # [UNCONFIRMED]
                value = args[i + 1]
                i += 1
            opts.setdefault(name, []).append(value)
            i += 1
            continue
        if token.startswith("-") and len(token) > 1:
            short = token[1]
            if short not in JSRUN_SHORT:
                raise _jsrun_error(f"jsrun: invalid option -- '{short}'")  # [UNCONFIRMED]
            value = token[2:]
            if not value:
                if i + 1 >= len(args):
                    raise _jsrun_error(f"jsrun: option requires an argument -- '{short}'")  # [UNCONFIRMED]
                value = args[i + 1]
                i += 1
            opts.setdefault(JSRUN_SHORT[short], []).append(value)
            i += 1
            continue
        break
    return opts, args[i:]


def _jsrun_int(
    opts: dict[str, list[str]],
    name: str,
    default: int | None,
    *,
    minimum: int,
    all_value: int | None = None,
    all_word: str | None = None,
) -> int | None:
    if name not in opts:
        return default
    value = opts[name][-1]
    if all_word and value.upper() == all_word:
        return all_value
    if not re.fullmatch(r"\d+", value) or int(value) < minimum:
        raise _jsrun_error(f"jsrun: Invalid value <{value}> for --{name}")  # [UNCONFIRMED]
    return int(value)


def jsrun(argv: list[str]) -> int:
    """Run a command once per task of each resource set of the CSM job we are in.

    ``-n/--nrs`` resource sets (default: as many as fit [OLCF: "All available physical
    cores"]), ``-a/--tasks_per_rs`` tasks each (or ``-p/--np`` tasks in all), ``-c/--cpu_per_rs``
    cores (default 1, ``ALL_CPUS``), ``-g/--gpu_per_rs`` GPUs (default 0, ``ALL_GPUS``),
    ``-r/--rs_per_host``, ``-b/--bind`` none|rs|packed:N.  A resource set never spans a node
    [OLCF].  Each task gets its set's GPUs in CUDA_VISIBLE_DEVICES (empty without GPUs
    [UNCONFIRMED]), JSM_NAMESPACE_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE and OMPI_COMM_WORLD_* ;
    jsrun waits for all and exits with the largest task status (0 if all succeeded
    [UNCONFIRMED]).  Tasks stay in the job's process group: killing the job kills them.
    """
    opts, command = parse_jsrun(argv)
    home = os.environ.get(ENV_HOME)
    job_id = os.environ.get("LSB_JOBID")
    if not home or not job_id:
        # [UNCONFIRMED] real jsrun outside an allocation cannot reach JSM
        raise _jsrun_error(
            "jsrun: Error: not inside an LSF CSM job allocation (LSB_JOBID is not set); jsrun runs only within a job"
        )
    store = JobStore(home)
    index = os.environ.get("LSB_JOBINDEX")
    job = store.get(f"{job_id}[{index}]" if index else job_id)
    if job is None or not job.active:
        raise _jsrun_error(f"jsrun: Error: job <{job_id}> is not running")  # [UNCONFIRMED]
    if not job.extra.get("csm"):
        raise _jsrun_error(
            f"jsrun: Error: job <{job_id}> is not a CSM job; jsrun needs an allocation of whole nodes (bsub -nnodes)"
        )  # [UNCONFIRMED]
    if not command:
        raise _jsrun_error("jsrun: Error: no program given")  # [UNCONFIRMED]
    for value in opts.get("bind", []):
        if not re.fullmatch(r"none|rs|packed:(?:smt:)?\d+", value):
            raise _jsrun_error(f"jsrun: Invalid value <{value}> for --bind")  # [UNCONFIRMED]
    config = store.config
    nodes = int(job.extra.get("nnodes") or 1)
    host_cpus, host_gpus = config.ncpus, config.ngpus
    cpu = _jsrun_int(opts, "cpu_per_rs", 1, minimum=1, all_value=host_cpus, all_word="ALL_CPUS")
    gpu = _jsrun_int(opts, "gpu_per_rs", 0, minimum=0, all_value=host_gpus, all_word="ALL_GPUS")
    per_host_fit = host_cpus // cpu
    if gpu:
        per_host_fit = min(per_host_fit, host_gpus // gpu)
    rs_per_host = _jsrun_int(opts, "rs_per_host", None, minimum=1)
    per_host = per_host_fit if rs_per_host is None else rs_per_host
    nrs = _jsrun_int(opts, "nrs", None, minimum=1)
    total_tasks = _jsrun_int(opts, "np", None, minimum=1)
    if nrs is None:
        nrs = total_tasks if total_tasks is not None and "tasks_per_rs" not in opts else nodes * per_host
    not_enough = _jsrun_error("ERROR: Not enough resources available to schedule job.")  # [RP]
    if per_host_fit == 0 or per_host > per_host_fit or nrs > nodes * per_host or nrs <= 0:
        raise not_enough
    tasks_per_rs = _jsrun_int(opts, "tasks_per_rs", None, minimum=1)
    if tasks_per_rs is None:
        if total_tasks is not None:
            if total_tasks % nrs:
                raise not_enough
            tasks_per_rs = total_tasks // nrs
        else:
            tasks_per_rs = 1
    devices = sorted(job.devices)
    base_env = dict(os.environ)
    for item in opts.get("env", []):
        name, _, value = item.partition("=")
        base_env[name] = value
    cwd = opts.get("chdir", [None])[-1]
    size = nrs * tasks_per_rs
    out_handle = None
    if "stdio_stdout" in opts:
        out_handle = open(opts["stdio_stdout"][-1], "a")  # noqa: SIM115
    procs = []
    try:
        rank = 0
        for rs in range(nrs):
            slot = rs % per_host
            rs_devices = devices[slot * gpu : (slot + 1) * gpu] if gpu else []
            for local in range(tasks_per_rs):
                env = dict(base_env)
                env.update(
                    {
                        "CUDA_VISIBLE_DEVICES": ",".join(map(str, rs_devices)),
                        "JSM_NAMESPACE_RANK": str(rank),
                        "JSM_NAMESPACE_SIZE": str(size),
                        "JSM_NAMESPACE_LOCAL_RANK": str(slot * tasks_per_rs + local),
                        "JSM_NAMESPACE_LOCAL_SIZE": str(min(nrs, per_host) * tasks_per_rs),
                        "OMPI_COMM_WORLD_RANK": str(rank),
                        "OMPI_COMM_WORLD_SIZE": str(size),
                        "OMPI_COMM_WORLD_LOCAL_RANK": str(slot * tasks_per_rs + local),
                        "OMPI_COMM_WORLD_LOCAL_SIZE": str(min(nrs, per_host) * tasks_per_rs),
                        "PMIX_RANK": str(rank),
                    }
                )
                try:
                    procs.append(subprocess.Popen(command, env=env, cwd=cwd, stdout=out_handle))
                except OSError as error:
                    raise _jsrun_error(
                        f"jsrun: Error: cannot execute {command[0]}: {error.strerror}"
                    ) from None  # [UNCONFIRMED]
                rank += 1
        statuses = []
        for proc in procs:
            code = proc.wait()
            statuses.append(128 - code if code < 0 else code)
    finally:
        if out_handle is not None:
            out_handle.close()
    return max(statuses) if statuses else 0


def jsrun_main(argv: Sequence[str] | None = None) -> int:
    return _main(jsrun, "jsrun", argv)


def bin_dir() -> Path:
    """The folder of the executables ``bsub``, ``bjobs``, ``bqueues``, ``bkill``, ``jsrun``."""
    return Path(__file__).resolve().parent / "bin" / "lsf"
