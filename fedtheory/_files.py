"""Files written whole: a temporary file in the target's folder, flushed to disk, renamed over the target. A reader
never sees half a file, and a killed writer leaves the old file (and a ``.NAME.*.tmp`` that nothing reads).

The file gets the mode of any file the user writes, 0666 minus the umask (``mkstemp`` alone makes it 0600): a
results file or a report is meant to be read by others, attached or served."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["fsync_dir", "user_file_mode", "write_atomic"]


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
