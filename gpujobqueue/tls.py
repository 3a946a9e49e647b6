"""TLS by default: a cluster that talks TCP encrypts and authenticates with temporary
credentials, so that no one else on a shared login node (or compute node) can reach its
scheduler or workers; plain TCP must be asked for, and warns. UCX has no TLS."""

from __future__ import annotations

import dataclasses
import importlib.util
import socket
import warnings
from typing import Any

from distributed.security import Security

from .errors import ValidationError
from .workers import WorkerLaunch


class InsecureClusterWarning(UserWarning):
    """A cluster was asked to listen without TLS (``security=False``)."""


def resolve_security(security: Any, launch: WorkerLaunch) -> tuple[Security | None, WorkerLaunch]:
    """The cluster's security and its launch with the protocol that goes with it.

    Parameters
    ----------
    security : None, bool or Security
        ``None`` or ``True``: temporary credentials (a new CA, certificate and key for this
        cluster) and ``tls://``; a :class:`~distributed.security.Security`: those
        credentials and ``tls://``; ``False``: plain TCP, with an
        :class:`InsecureClusterWarning`.
    launch : WorkerLaunch
        Its ``protocol`` is None, ``tcp``, ``tls`` or ``ucx``.

    Raises
    ------
    ValidationError
        TLS asked for with UCX, or ``protocol="tls"`` with ``security=False``.
    """
    if launch.protocol == "ucx":
        if security not in (None, False):
            raise ValidationError("security", "UCX has no TLS: with protocol='ucx' leave security unset (the scheduler then runs where UCX reaches the workers: "
                                              "scheduler='job' keeps it on the job's network), or use protocol='tls'")
        return None, launch
    if security is False:
        if launch.protocol == "tls":
            raise ValidationError("security", "protocol='tls' needs credentials; security=False turns TLS off")
        warnings.warn(
            f"security=False: the scheduler and workers talk plain TCP, and anyone who can reach their ports "
            f"(other users of {socket.gethostname()} too) can connect and run code as you; leave security unset for TLS",
            InsecureClusterWarning, stacklevel=4)
        return None, launch
    if not isinstance(security, Security):
        if security not in (None, True):
            raise ValidationError("security", f"expected True, False or a distributed.security.Security, got {security!r}")
        if importlib.util.find_spec("cryptography") is None:
            raise ValidationError("security", "TLS, the default over TCP, makes temporary credentials with the cryptography package, which is not installed here: "
                                              "pip install cryptography (or give security=False for plain TCP)")
        security = Security.temporary()
    return security, dataclasses.replace(launch, protocol="tls")
