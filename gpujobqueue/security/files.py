"""Reading a file that users control (a site file, a usage report, the scheduler file) within a bound: only a
regular file is opened (a FIFO, which would wait for a writer, a device or a directory is refused by its kind),
never more than its bound is read, and its text is UTF-8. A link is followed (a site folder may link to a shared
config): what it points to is judged.
"""

from __future__ import annotations

import os
import stat

from ..errors import FileRefusedError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str | None:
    """What a file of this mode is, unless it is a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for is_kind, kind in _KINDS if is_kind(mode)), "of an unknown kind")


def _size(count: int) -> str:
    """A bound in the binary unit it is set in (``256 KiB``), else bytes."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift and count % (1 << shift) == 0:
            return f"{count >> shift} {unit}"
    return f"{count} bytes"


def read_bounded_text(path: str | os.PathLike[str], limit: int, what: str, dir_fd: int | None = None) -> str:
    """The text of ``path`` (relative to the folder ``dir_fd`` where given), a regular file of at most ``limit``
    bytes of UTF-8; else a FileRefusedError that says ``what`` the file is (``"a site file"``) and names the
    line of a byte that is not UTF-8."""

    path = os.fspath(path)
    try:
        kind = _not_regular(os.stat(path, dir_fd=dir_fd).st_mode)
        if kind is None:
            # Not blocking: were it swapped for a FIFO since it was looked at, opening it must not wait for a writer.
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
            with os.fdopen(descriptor, "rb") as file:
                info = os.fstat(file.fileno())
                kind = _not_regular(info.st_mode)
                if kind is None and info.st_size > limit:
                    raise FileRefusedError(
                        path, f"{info.st_size} bytes; {what} is at most {_size(limit)} (gpujobqueue.settings.limits)"
                    )
                data = file.read(limit + 1) if kind is None else b""
    except OSError as error:
        raise FileRefusedError(path, f"cannot read: {error.strerror or error}") from None
    if kind is not None:
        raise FileRefusedError(path, f"not a regular file but {kind}")
    if len(data) > limit:  # it grew since it was looked at, or its size is not known (/proc)
        raise FileRefusedError(path, f"over {_size(limit)}; {what} is at most that (gpujobqueue.settings.limits)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise FileRefusedError(path, f"not UTF-8 text: byte {data[error.start]:#04x} cannot be decoded", line) from None
