"""TLS for rendered job scripts (``gpujobqueue render``), as Python clusters have it: the
workers and the scheduler prove who they are with certificates of one private CA, so nobody
else who reaches their ports can connect and run code as the user.

- ``--run`` scripts make their credentials in the job, in a private folder (0700, files
  0600) on the job's node, or in the submit directory for a job of several nodes.
- Scripts whose workers join a scheduler you run read the credentials from a private folder
  made by ``gpujobqueue credentials`` (by default ``$HOME/.config/gpujobqueue/tls``), which
  your scheduler and client use too.
- ``--no-tls`` (``tls=False``) is plain TCP, and warns. UCX has no TLS.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from .errors import ValidationError
from .request import parse_job_path
from .scheduler_job import write_private_file

# The job's shell expands $HOME: home directories are shared by the login and compute nodes.
DEFAULT_TLS_DIRECTORY = "$HOME/.config/gpujobqueue/tls"
CREDENTIAL_FILES = ("ca.pem", "cert.pem", "key.pem")
PLAIN_TCP_WARNING = ("plain TCP (--no-tls): anyone who can reach the scheduler's or the workers' ports, other users of "
                     "the login and compute nodes too, can connect and run code as you")


class InsecureScriptWarning(UserWarning):
    """A job script was rendered without TLS (``--no-tls``)."""


@dataclass(frozen=True)
class ScriptTLS:
    """Where a job script's TLS credentials come from.

    Parameters
    ----------
    in_job : bool
        True: the script makes them (``--run``); False: it reads them from ``directory``.
    directory : str
        The folder of ``ca.pem``, ``cert.pem`` and ``key.pem`` as the job's shell writes
        it (``$HOME`` and other variables expand on the node); unused with ``in_job``.
    """

    in_job: bool = False
    directory: str = DEFAULT_TLS_DIRECTORY

    @classmethod
    def for_script(cls, *, run: bool, directory: str | None = None) -> "ScriptTLS":
        """The TLS of a ``--run`` script (made in the job) or of a script joining your scheduler.

        Raises
        ------
        ValidationError
            ``directory`` given with ``run``, or not a path the job's shell can expand safely.
        """
        if run:
            if directory is not None:
                raise ValidationError("tls_directory", "a --run script makes its own credentials in the job; leave out --tls-directory")
            return cls(in_job=True)
        return cls(in_job=False, directory=DEFAULT_TLS_DIRECTORY if directory is None else parse_job_path("tls_directory", directory))

    @property
    def variable(self) -> str:
        """The shell variable that holds the credentials' folder in the job."""
        return "GPUJOBQUEUE_TLS_DIR"

    def files(self) -> dict[str, str]:
        """``ca_file``, ``cert`` and ``key`` as double-quoted shell words of the job."""
        return {key: f'"${self.variable}/{name}"' for key, name in zip(("ca_file", "cert", "key"), CREDENTIAL_FILES)}

    def args(self) -> list[str]:
        """The ``--tls-*`` options of ``dask worker``, ``dask cuda worker`` and ``dask scheduler``, as shell words."""
        files = self.files()
        return ["--tls-ca-file", files["ca_file"], "--tls-cert", files["cert"], "--tls-key", files["key"]]


def warn_plain_tcp() -> None:
    """Warn that a script was rendered for plain TCP."""
    warnings.warn(PLAIN_TCP_WARNING, InsecureScriptWarning, stacklevel=3)


def make_credentials(directory: str | os.PathLike) -> tuple[Path, bool]:
    """Make a private CA, certificate and key in ``directory`` (0700; files 0600), or keep
    the set already there, so that scripts rendered earlier go on working.

    Returns
    -------
    directory : Path
    made : bool
        False when a complete set was already there.

    Raises
    ------
    ValidationError
        The folder is not private to this user, or holds part of a set.
    """
    from distributed.security import Security

    path = Path(os.path.expanduser(os.path.expandvars(os.fspath(directory)))).resolve()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ValidationError("tls_directory", f"{path} must be yours alone (mode 0700), not {oct(info.st_mode & 0o777)}: "
                                               f"the key in it lets anyone who reads it into your cluster")
    present = [name for name in CREDENTIAL_FILES if (path / name).exists()]
    if len(present) == len(CREDENTIAL_FILES):
        return path, False
    if present:
        raise ValidationError("tls_directory", f"{path} holds {', '.join(present)} but not all of {', '.join(CREDENTIAL_FILES)}; "
                                               f"remove them or choose another folder")
    credentials = Security.temporary()  # one new CA; its certificate is the scheduler's, the workers' and the client's
    for name, text in zip(CREDENTIAL_FILES, (credentials.tls_ca_file, credentials.tls_scheduler_cert, credentials.tls_scheduler_key)):
        write_private_file(str(path), name, text)
    return path, True
