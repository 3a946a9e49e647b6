"""Folders named after the process that owns them, and which of them are stale.

A cluster's private folder (its scheduler file and TLS credentials) and a ``--run`` job's (its CA,
certificate and key) are named ``.gpujobqueue-p<pid>-t<start>-h<host>-<random>``: the process that
made it, its start time (whole seconds since the epoch, so that a reused pid is not taken for it)
and its host. Its owner removes it when it ends; a SIGKILLed process cannot, so each cluster start,
and ``gpujobqueue clean``, removes this user's folders in that directory whose owner process on this
host has ended. A folder of a live process, of another host (a shared file system) or of another
user is never touched, nor one whose name says no owner.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
from dataclasses import dataclass

import psutil

PREFIX = ".gpujobqueue-"
# The random part: what Python's tempfile writes ([a-z0-9_]) or the shell's mktemp ([A-Za-z0-9]).
_OWNED = re.compile(r"\.gpujobqueue-p(\d+)-t(\d+)-h(.+)-[A-Za-z0-9_]+")


def this_host() -> str:
    """This host's name as folder names carry it: no character outside ``[A-Za-z0-9.-]``."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "unknown"


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (whole seconds since the epoch), or None if there is none."""
    try:
        return int(psutil.Process(pid).create_time())
    except psutil.NoSuchProcess:
        return None


def owner_prefix() -> str:
    """The start of the name of a folder this process owns, before its random part."""
    return f"{PREFIX}p{os.getpid()}-t{process_start(os.getpid())}-h{this_host()}-"


@dataclass(frozen=True)
class FolderVerdict:
    """What :func:`judge_folder` found: whether a folder may go, and why."""

    path: str
    stale: bool
    reason: str


def judge_folder(path: str) -> FolderVerdict | None:
    """Whether the private folder at ``path`` is stale (its owner process on this host ended);
    None for anything that is not one of this user's gpujobqueue folders."""
    name = os.path.basename(path)
    if not name.startswith(PREFIX):
        return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return None
    match = _OWNED.fullmatch(name)
    if match is None:
        return FolderVerdict(path, False, "its name says no owner process (made by an older gpujobqueue)")
    pid, started, host = int(match.group(1)), int(match.group(2)), match.group(3)
    if host != this_host():
        return FolderVerdict(path, False, f"its owner is process {pid} on another host, {host}")
    now_started = process_start(pid)
    if now_started is not None and abs(now_started - started) <= 1:
        return FolderVerdict(path, False, f"its owner, process {pid}, is running")
    if now_started is None:
        return FolderVerdict(path, True, f"its owner, process {pid} on {host}, has ended")
    return FolderVerdict(path, True, f"its owner, process {pid} on {host}, has ended (that pid is now another process)")


def remove_stale_private_directories(directory: str) -> tuple[list[FolderVerdict], list[FolderVerdict]]:
    """Remove this user's private folders in ``directory`` whose owner process on this host
    has ended; return (removed, left), each folder with the reason."""
    removed: list[FolderVerdict] = []
    left: list[FolderVerdict] = []
    try:
        names = sorted(name for name in os.listdir(directory) if name.startswith(PREFIX))
    except OSError:
        return removed, left
    for name in names:
        verdict = judge_folder(os.path.join(directory, name))
        if verdict is None:
            continue
        if not verdict.stale:
            left.append(verdict)
            continue
        try:
            shutil.rmtree(verdict.path)
        except FileNotFoundError:
            continue  # another cleaner was first
        except OSError as error:
            left.append(FolderVerdict(verdict.path, False, f"{verdict.reason}, but it could not be removed: {error}"))
            continue
        removed.append(verdict)
    return removed, left
