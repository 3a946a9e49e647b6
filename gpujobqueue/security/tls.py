"""Security in one place: TLS for clusters and rendered scripts, credentials, private files.

TLS is the default over TCP: a cluster encrypts and authenticates with temporary credentials, so that no one
else on a shared login node (or compute node) can reach its scheduler or workers; plain TCP must be asked for,
and warns; UCX has no TLS. Rendered job scripts have TLS as Python clusters do, with certificates of one private
CA (:class:`ScriptTLS`). A cluster's scheduler file and credentials go to a private folder of a shared directory
(:mod:`gpujobqueue.security.owned_folders`), which it removes when it closes.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import logging
import os
import shlex
import socket
import stat
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from ..errors import ValidationError
from ..jobs.workers import WorkerLaunch
from ..settings.validation import parse_job_path

if TYPE_CHECKING:  # distributed is imported where a Security is made or checked: render and plan need none
    from distributed.security import Security

logger = logging.getLogger(__name__)

# The job's shell expands $HOME: home directories are shared by the login and compute nodes.
DEFAULT_TLS_DIRECTORY = "$HOME/.config/gpujobqueue/tls"
CREDENTIAL_FILES = ("ca.pem", "cert.pem", "key.pem")
PLAIN_TCP_WARNING = (
    "plain TCP (--no-tls): anyone who can reach the scheduler's or the workers' ports, other users of "
    "the login and compute nodes too, can connect and run code as you"
)


# --- A cluster's TLS ---------------------------------------------------------------------------


class InsecureClusterWarning(UserWarning):
    """A cluster was asked to listen without TLS (``security=False``)."""


def resolve_security(security: Any, launch: WorkerLaunch) -> tuple[Security | None, WorkerLaunch]:
    """The cluster's security and its launch (whose ``protocol`` is None, ``tcp``, ``tls`` or ``ucx``) with the
    protocol that goes with it. ``security`` None or True: temporary credentials (a new CA, certificate and key for
    this cluster) and ``tls://``; a :class:`~distributed.security.Security`: those credentials and ``tls://``;
    False: plain TCP, with an :class:`InsecureClusterWarning`. A ValidationError for TLS asked for with UCX, or
    ``protocol="tls"`` with ``security=False``."""
    if launch.protocol == "ucx":
        if security not in (None, False):
            raise ValidationError(
                "security",
                "UCX has no TLS: with protocol='ucx' leave security unset (the "
                "scheduler then runs where UCX reaches the workers: scheduler='job' "
                "keeps it on the job's network), or use protocol='tls'",
            )
        return None, launch
    if security is False:
        if launch.protocol == "tls":
            raise ValidationError("security", "protocol='tls' needs credentials; security=False turns TLS off")
        warnings.warn(
            f"security=False: the scheduler and workers talk plain TCP, and anyone who can reach their ports "
            f"(other users of {socket.gethostname()} too) can connect and run code as you; "
            f"leave security unset for TLS",
            InsecureClusterWarning,
            stacklevel=5,  # resolve_security < make_plan < the cluster < GPUCluster < the user
        )
        return None, launch
    from distributed.security import Security

    if not isinstance(security, Security):
        if security not in (None, True):
            raise ValidationError(
                "security", f"expected True, False or a distributed.security.Security, got {security!r}"
            )
        if importlib.util.find_spec("cryptography") is None:
            raise ValidationError(
                "security",
                "TLS, the default over TCP, makes temporary credentials with the "
                "cryptography package, which is not installed here: "
                "pip install cryptography (or give security=False for plain TCP)",
            )
        security = Security.temporary()
    return security, dataclasses.replace(launch, protocol="tls")


def tls_args(role: str, security: Security | None, directory: str | None = None) -> tuple[str, ...]:
    """The ``--tls-*`` options of ``role``'s command (``dask scheduler``, ``dask worker``); with ``directory``,
    certificates held in memory are written to 0600 files there."""
    if not security:
        return ()
    args: list[str] = []
    for key, value in security.get_tls_config_for_role(role).items():
        if key == "ciphers" or not value:  # ciphers has no command-line option
            continue
        if "\n" in value and directory is not None:  # a PEM in memory (Security.temporary()): the job reads a file
            value = write_private_file(directory, f"{role}-{key.replace('_', '-')}.pem", value)
        args += ["--tls-" + key.replace("_", "-"), value]
    return tuple(args)


def worker_security_with_files(security: Security | None, folder: Callable[[], str]) -> Security | None:
    """``security`` with its worker credentials held in memory written to 0600 files in the cluster's private
    folder, which ``folder()`` gives (made on first use), not into the shared directory as dask-jobqueue's."""
    if security is None:
        return None
    in_memory = {
        key: value for key, value in security.get_tls_config_for_role("worker").items() if value and "\n" in value
    }
    if not in_memory:
        return security
    security = copy.copy(security)
    for key, value in in_memory.items():
        path = write_private_file(folder(), f"worker-{key.replace('_', '-')}.pem", value)
        setattr(security, "tls_" + ("worker_" if key != "ca_file" else "") + key, path)
    return security


# --- A rendered script's TLS -------------------------------------------------------------------


class InsecureScriptWarning(UserWarning):
    """A job script was rendered without TLS (``--no-tls``)."""


@dataclass(frozen=True)
class ScriptTLS:
    """Where a job script's TLS credentials come from."""

    in_job: bool = False  # True: the script makes them (--run); False: it reads them from directory
    # The folder of ca.pem, cert.pem and key.pem as the job's shell writes it ($HOME and other variables expand on
    # the node); unused with in_job.
    directory: str = DEFAULT_TLS_DIRECTORY
    #: The shell variable that holds the credentials' folder in the job.
    variable: ClassVar[str] = "GPUJOBQUEUE_TLS_DIR"

    @classmethod
    def for_script(cls, *, run: bool, directory: str | None = None) -> "ScriptTLS":
        """The TLS of a ``--run`` script (made in the job) or of a script joining your scheduler; a ValidationError
        for ``directory`` given with ``run``, or not a path the job's shell can expand safely."""
        if run:
            if directory is not None:
                raise ValidationError(
                    "tls_directory", "a --run script makes its own credentials in the job; leave out --tls-directory"
                )
            return cls(in_job=True)
        if directory is None:
            return cls(in_job=False, directory=DEFAULT_TLS_DIRECTORY)
        return cls(in_job=False, directory=parse_job_path("tls_directory", directory))

    def args(self) -> list[str]:
        """The ``--tls-*`` options of ``dask worker``, ``dask cuda worker`` and ``dask scheduler``, as shell words:
        the credential files double-quoted, in the folder :attr:`variable` holds."""
        options = ("--tls-ca-file", "--tls-cert", "--tls-key")
        return [
            word for option, name in zip(options, CREDENTIAL_FILES) for word in (option, f'"${self.variable}/{name}"')
        ]


def missing_credentials_here(script_tls: ScriptTLS) -> str | None:
    """Where a script reads its credentials from a folder that, as this host expands it, lacks some: what to say
    (the job would end at once, after its queue wait) and the command that makes them; None where they are all
    there, the job makes its own, or the folder names a variable this host does not set."""
    folder = os.path.expanduser(os.path.expandvars(script_tls.directory))
    if script_tls.in_job or "$" in folder:
        return None
    missing = [name for name in CREDENTIAL_FILES if not os.path.isfile(os.path.join(folder, name))]
    if not missing:
        return None
    where = "" if script_tls.directory == DEFAULT_TLS_DIRECTORY else f" {shlex.quote(script_tls.directory)}"
    return (
        f"this host has no TLS credentials in {folder} ({', '.join(missing)} missing), which the script's workers "
        f"read: where the nodes see this folder, the job would end at once after its queue wait; make them with: "
        f"gpujobqueue credentials{where}"
    )


def resolve_script_security(
    launch: WorkerLaunch, *, run: bool, tls: bool, tls_directory: str | None
) -> tuple[ScriptTLS | None, WorkerLaunch]:
    """A rendered script's TLS (:meth:`ScriptTLS.for_script`) and its launch with the protocol that goes with it,
    as :func:`resolve_security` for a cluster; ``tls`` False is plain TCP, with an :class:`InsecureScriptWarning`.
    A ValidationError for ``tls_directory`` with UCX or without TLS, or ``protocol="tls"`` without TLS."""
    if launch.protocol == "ucx":
        if tls_directory is not None:
            raise ValidationError("tls_directory", "UCX has no TLS: leave out --tls-directory with --protocol ucx")
        return None, launch
    if not tls:
        if launch.protocol == "tls":
            raise ValidationError("protocol", "protocol 'tls' needs credentials; --no-tls turns TLS off")
        if tls_directory is not None:
            raise ValidationError("tls_directory", "--no-tls turns TLS off; leave out --tls-directory")
        warnings.warn(PLAIN_TCP_WARNING, InsecureScriptWarning, stacklevel=2)
        return None, launch
    return ScriptTLS.for_script(run=run, directory=tls_directory), dataclasses.replace(launch, protocol="tls")


def make_credentials(directory: str | os.PathLike) -> tuple[Path, bool]:
    """Make a private CA, certificate and key in ``directory`` (0700; files 0600), or keep the set already there,
    so that scripts rendered earlier go on working; return the folder and whether they were made. A
    ValidationError where the folder is not private to this user, or holds part of a set."""
    path = Path(os.path.expanduser(os.path.expandvars(os.fspath(directory)))).resolve()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ValidationError(
            "tls_directory",
            f"{path} must be yours alone (mode 0700), not "
            f"{oct(info.st_mode & 0o777)}: the key in it lets anyone who reads it "
            f"into your cluster",
        )
    present = [name for name in CREDENTIAL_FILES if (path / name).exists()]
    if len(present) == len(CREDENTIAL_FILES):
        return path, False
    if present:
        raise ValidationError(
            "tls_directory",
            f"{path} holds {', '.join(present)} but not all of "
            f"{', '.join(CREDENTIAL_FILES)}; remove them or choose another folder",
        )
    from distributed.security import Security

    credentials = Security.temporary()  # one new CA; its certificate is the scheduler's, the workers' and the client's
    texts = (credentials.tls_ca_file, credentials.tls_scheduler_cert, credentials.tls_scheduler_key)
    for name, text in zip(CREDENTIAL_FILES, texts):
        write_private_file(str(path), name, text)
    return path, True


# --- Private files and folders -----------------------------------------------------------------


def write_private_file(directory: str, name: str, text: str) -> str:
    """Write ``text`` to a new file of mode 0600 in ``directory``; return its path. ``O_EXCL`` refuses any name
    already there, a link planted at it too."""
    path = os.path.join(directory, name)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as f:
        f.write(text)
    return path


def replace_private_file(path: str, text: str) -> None:
    """Write ``text`` to ``path``, mode 0600 also when an older copy was readable; never through a
    link planted at that name (``OSError``)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w") as f:
        f.write(text)


# A folder opened as it is: never through a link, nor waiting on a FIFO put at its name.
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_private_folder(path: str, field: str, advice: str, parent: int | None = None) -> int:
    """Open the folder ``path`` as this user's own, made if it is not there, never through a link, nor another
    user's; made 0700; return its descriptor. ``parent``: a descriptor of the folder ``path`` is in, itself opened
    so (no one can swap a folder of the path between the checks). A ValidationError naming ``field`` and the folder
    ends with ``advice``: what the user may do."""
    name = path if parent is None else os.path.basename(path)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
        descriptor = os.open(name, FOLDER_FLAGS, dir_fd=parent)
    except OSError as error:
        raise ValidationError(field, f"{path} {_what_is_there(name, parent, error, 'a folder')}; {advice}") from None
    owner = os.fstat(descriptor).st_uid
    if owner != os.getuid():
        os.close(descriptor)
        raise ValidationError(
            field,
            f"{path} belongs to another user (uid {owner}), who can read or redirect what is written in it; {advice}",
        )
    os.fchmod(descriptor, 0o700)
    return descriptor


def open_private_file(path: str, field: str, advice: str, parent: int | None = None) -> int:
    """Open the file ``path`` for writing from its start, mode 0600: made, or an earlier one of this
    user's emptied; return its descriptor. Never through a link, nor into another user's file or one
    with a second name (a hard link); ``field``, ``parent`` and ``advice`` as for :func:`open_private_folder`."""
    name = path if parent is None else os.path.basename(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # O_NONBLOCK: a FIFO fails
    try:
        descriptor = os.open(name, flags, 0o600, dir_fd=parent)
    except OSError as error:
        raise ValidationError(field, f"{path} {_what_is_there(name, parent, error, 'a file')}; {advice}") from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_nlink != 1:
        os.close(descriptor)
        raise ValidationError(field, f"{path} is not a file of yours alone (another user's, or a hard link); {advice}")
    os.ftruncate(descriptor, 0)  # only now: the checks above protect whatever the name stood for
    os.fchmod(descriptor, 0o600)
    return descriptor


def _what_is_there(name: str, parent: int | None, error: OSError, wanted: str) -> str:
    """Why ``name`` could not be opened as ``wanted``, in words that end "<path> ..."."""
    try:
        mode = os.lstat(name, dir_fd=parent).st_mode
    except OSError:
        return f"cannot be made {wanted}: {error.strerror}"
    if stat.S_ISLNK(mode):
        return "is a link, which gpujobqueue never follows (another user may have planted it)"
    if not (stat.S_ISDIR if wanted == "a folder" else stat.S_ISREG)(mode):
        return f"is not {wanted}"
    return f"cannot be opened: {error.strerror}"


def memory_file(text: str, name: str) -> int:
    """A file in memory alone holding ``text``, for a child process to read as ``/dev/fd/<descriptor>``
    (``pass_fds``): in no process's arguments, on no disk, gone when the last process holding it ends."""
    descriptor = os.memfd_create(name, os.MFD_CLOEXEC)
    with open(descriptor, "w", encoding="utf-8", closefd=False) as file:
        file.write(text)
    return descriptor


def make_private_directory(shared_directory: str, prefix: str) -> tuple[str, str]:
    """A new private folder (mode 0700) in ``shared_directory``, its name starting with ``prefix`` (this
    process's: :func:`~gpujobqueue.security.owned_folders.owner_prefix`), for the scheduler file and the TLS
    credentials, which the jobs read on the compute nodes. Returns its path, and its owner, mode and inode
    as it was made (``"1000 700 4242"``, as ``stat -c '%u %a %i'`` writes them), which the jobs check. A
    ValidationError where the shared directory does not exist or cannot be written, or the folder was swapped."""
    base = os.path.abspath(os.path.expanduser(os.path.expandvars(shared_directory)))
    try:
        path = tempfile.mkdtemp(prefix=prefix, dir=base)  # mkdtemp makes it 0700
        info = os.lstat(path)
    except OSError as error:
        message = (
            f"the scheduler file and TLS credentials go to a private folder of a directory the compute nodes "
            f"can read, and {base!r} is not writable here: {error}"
        )
        raise ValidationError("shared_temp_directory", message) from error
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700:
        raise ValidationError("shared_temp_directory", f"{path} was replaced by another user as it was made")
    return path, f"{info.st_uid} 700 {info.st_ino}"


def make_private_folder(prefix: str) -> str:
    """A new folder of this user's alone (mode 0700, a name no one else had) in the temporary folder."""
    return tempfile.mkdtemp(prefix=prefix)
