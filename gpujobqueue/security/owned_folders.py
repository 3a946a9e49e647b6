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
import socket
import stat
from dataclasses import dataclass

import psutil

from ..errors import GPUJobQueueError
from .files import read_bounded_text
from .tls import FOLDER_FLAGS

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
class ClusterFolder:
    """A cluster's private folder at ``path``, as its jobs check it before they read it (templates/private_dir.sh.j2):
    its ``identity``, owner, mode and inode when it was made, as ``stat -c '%u %a %i'`` writes them (``"1000 700
    4242"``)."""

    path: str
    identity: str

    def __post_init__(self) -> None:
        if not os.path.isabs(self.path) or not re.fullmatch(r"[0-9]+ 700 [0-9]+", self.identity):
            raise ValueError(f"not a private folder's path and identity: {self.path!r}, {self.identity!r}")

    def read(self, name: str, limit: int, what: str) -> str:
        """The text of its file ``name``, read through the folder as it is at :attr:`path` (no link followed, no
        FIFO waited on) once that is checked to be the folder made (:attr:`identity`): else a GPUJobQueueError, and
        nothing in it is read; a FileRefusedError as :func:`~gpujobqueue.security.files.read_bounded_text` raises.
        """
        try:
            descriptor = os.open(self.path, FOLDER_FLAGS)
        except OSError as error:
            found = error.strerror
        else:
            try:
                info = os.fstat(descriptor)
                found = f"{info.st_uid} {stat.S_IMODE(info.st_mode):o} {info.st_ino}"
                if found == self.identity:
                    return read_bounded_text(name, limit, what, dir_fd=descriptor)
                found = f"uid, mode, inode: {found}, not {self.identity}"
            finally:
                os.close(descriptor)
        raise GPUJobQueueError(
            f"{self.path} is not the private folder the cluster made ({found}): nothing in it is read"
        )

    def file_name(self, path: str) -> str | None:
        """The name of ``path`` where it is a file of this folder (which a job copies from it), else None."""
        name = os.path.basename(path)
        return name if os.path.dirname(path) == self.path and re.fullmatch(r"[A-Za-z0-9._-]+", name) else None


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
    reused = "" if now_started is None else " (that pid is now another process)"
    return FolderVerdict(path, True, f"its owner, process {pid} on {host}, has ended{reused}")


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
            if not remove_owned_folder(verdict.path):
                continue  # another cleaner was first, or it is no longer this user's folder
        except OSError as error:
            left.append(FolderVerdict(verdict.path, False, f"{verdict.reason}, but it could not be removed: {error}"))
            continue
        removed.append(verdict)
    return removed, left


def remove_owned_folder(path: str) -> bool:
    """Remove this user's folder at ``path`` and what it holds, through descriptors; say whether it did.
    What is at that name is opened as a folder without following a link or waiting on a FIFO (shutil.rmtree
    opens it to read and waits for a writer), and removed only where it is this user's: in a group-writable
    folder another user may have renamed it and put something of his own there, which is left as it is. An
    OSError where the folder is this user's but could not be emptied or removed.
    """
    try:
        descriptor = os.open(path, FOLDER_FLAGS)
    except OSError:
        return False  # gone, or not a folder (a link, a FIFO)
    try:
        if os.fstat(descriptor).st_uid != os.getuid():
            return False
        inode = os.fstat(descriptor).st_ino
        _empty_folder(descriptor)
    finally:
        os.close(descriptor)
    try:
        if os.lstat(path).st_ino != inode:
            return False  # swapped while it was emptied: what is there now is not the folder made
        os.rmdir(path)
    except FileNotFoundError:
        return False
    return True


def _empty_folder(descriptor: int) -> None:
    """Remove what the open folder ``descriptor`` holds, by names relative to it, its folders first emptied."""
    for entry in os.scandir(descriptor):
        if entry.is_dir(follow_symlinks=False):
            inner = os.open(entry.name, FOLDER_FLAGS, dir_fd=descriptor)
            try:
                _empty_folder(inner)
            finally:
                os.close(inner)
            os.rmdir(entry.name, dir_fd=descriptor)
        else:
            os.unlink(entry.name, dir_fd=descriptor)
