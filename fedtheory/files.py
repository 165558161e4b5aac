"""Files written whole: a temporary file in the target's folder, flushed to disk, renamed over the target. A reader
never sees half a file, and a killed writer leaves the old file (and a ``.NAME.*.tmp`` that nothing reads).

The file gets the mode of any file the user writes, 0666 minus the umask (``mkstemp`` alone makes it 0600): a
results file or a report is meant to be read by others, attached or served.

Files read that may be someone else's (a run directory, an instance file, a results file) are read with
:func:`read_regular`: a regular file only (never a device, a FIFO or a socket: ``/dev/zero`` would fill the memory,
a FIFO would block), at most a stated number of bytes. Public: a plug-in that writes or reads files uses the same
functions (``fedtheory.files.write_atomic``, ``read_regular``, ``open_regular``)."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["FileRefused", "fsync_dir", "open_regular", "read_regular", "user_file_mode", "write_atomic"]


class FileRefused(ValueError):
    """A file that :func:`read_regular` does not read: missing, not a regular file, or over its size limit. The
    message names the file (``path``) and why (``why``); a caller turns it into its own error naming its parameter
    (a ParameterError, a RunDirError: exit 2)."""

    def __init__(self, path: str | os.PathLike, why: str):
        self.path, self.why = str(path), why
        super().__init__(f"{path}: {why}")

    def __reduce__(self):
        return (type(self), (self.path, self.why))


def _a(what: str) -> str:
    return ("an " if what[:1].lower() in "aeiou" else "a ") + what


def _open_checked(path: str | os.PathLike, limit: int, what: str) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` opened without blocking, and its stat, if it is a regular file (a symbolic link to
    one counts) of at most ``limit`` bytes; else FileRefused (the descriptor closed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileRefused(path, f"no such {what}") from None
    except OSError as exc:
        raise FileRefused(path, f"cannot open the {what} ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                    "a character device" if stat.S_ISCHR(st.st_mode) else "a block device" if stat.S_ISBLK(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise FileRefused(path, f"{kind}, not a regular {what}: refused (only regular files are read)")
        if st.st_size > limit:
            raise FileRefused(path, f"{_size(st.st_size)}, over the {_size(limit)} {_a(what)} may have: refused")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path`` if it is a regular file (a symbolic link to one counts) of at most ``limit`` bytes;
    else :class:`FileRefused` naming it. The file is opened without blocking (a FIFO is refused, not waited on) and
    read up to ``limit`` + 1 bytes whatever its size claims (a file that grows while read is refused too)."""
    fd, _ = _open_checked(path, limit, what)
    try:
        chunks, n = [], 0
        while n <= limit:
            b = os.read(fd, min(1 << 20, limit + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
        if n > limit:
            raise FileRefused(path, f"more than the {_size(limit)} {_a(what)} may have (it grew while read): refused")
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(path, f"cannot read the {what} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def open_regular(path: str | os.PathLike, limit: int, what: str = "file"):
    """``path`` opened for binary reading (a file object) if it is a regular file of at most ``limit`` bytes, as
    :func:`read_regular` checks it, without reading it whole (for a reader that streams, e.g. ``torch.load``)."""
    fd, _ = _open_checked(path, limit, what)
    return os.fdopen(fd, "rb")


def _size(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.3g} {unit}"
    return f"{n} bytes"


def user_file_mode() -> int:
    """0666 & ~umask: the mode ``open(path, 'w')`` gives a new file."""
    mask = os.umask(0o022)  # the umask can only be read by setting it
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` to ``path`` whole (see the module docstring). Raises OSError; the temporary file is removed."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, user_file_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def fsync_dir(d: str | os.PathLike) -> None:
    """Flush a folder's entries (a rename in it) to disk, where the platform allows it."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
