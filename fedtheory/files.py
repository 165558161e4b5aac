"""Files written whole: a temporary file in the target's folder, flushed to disk, renamed over the target. A reader
never sees half a file, and a killed writer leaves the old file (and a ``.NAME.*.tmp`` that nothing reads).

The file gets the mode of any file the user writes, 0666 minus the umask (``mkstemp`` alone makes it 0600): a
results file or a report is meant to be read by others, attached or served.

Files read that may be someone else's (a run directory, an instance file, a results file) are read with
:func:`read_regular`: a regular file only (never a device, a FIFO or a socket: ``/dev/zero`` would fill the memory,
a FIFO would block), at most a stated number of bytes; a JSON file with :func:`read_json`, which also refuses text
that is not JSON or is nested deeper than :data:`MAX_JSON_DEPTH` levels (a file nested 200,000 deep would exhaust the
parser's stack). Public: a plug-in that writes or reads files uses the same functions
(``fedtheory.files.write_atomic``, ``read_regular``, ``open_regular``, ``read_json``)."""
from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterable

__all__ = ["CACHE_ENV", "FileRefused", "MAX_JSON_DEPTH", "cache_dir", "check_writable", "fsync_dir", "json_depth",
           "open_regular", "parse_json", "read_json", "read_regular", "user_dir_mode", "user_file_mode",
           "write_atomic", "write_error_text", "write_target", "written_by_fedtheory"]

#: How deeply a JSON file fedtheory reads may nest objects and lists. What fedtheory writes nests at most ~10 levels
#: (a results file: payload, results, record, extra, measurements, series, ...); a deeper file is refused, named.
MAX_JSON_DEPTH = 100


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
            raise FileRefused(path, f"{_kind(st.st_mode)}, not a regular {what}: refused (only regular files are read)")
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


def json_depth(value: Any) -> int:
    """How many levels of objects and lists ``value`` (parsed JSON) nests: 0 for a number or a string, 1 for
    ``[1, 2]``. Counted without recursion, so any depth is measured."""
    depth, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        depth = max(depth, d)
        stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return depth


def parse_json(data: bytes | str, path: str | os.PathLike, what: str = "file") -> Any:
    """``data`` (the text of ``path``) as JSON, or :class:`FileRefused` naming ``path``: not JSON (the parser's
    message), or nested deeper than :data:`MAX_JSON_DEPTH` levels."""
    too_deep = f"nested deeper than the {MAX_JSON_DEPTH} levels {_a(what)} may have: refused"
    try:
        value = json.loads(data)
    except RecursionError:  # deeper than the parser's stack: far beyond the limit
        raise FileRefused(path, too_deep) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise FileRefused(path, f"not JSON: {exc}") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise FileRefused(path, too_deep)
    return value


def read_json(path: str | os.PathLike, limit: int, what: str = "file") -> Any:
    """The JSON value in ``path``, read as :func:`read_regular` reads it (a regular file of at most ``limit``
    bytes) and parsed by :func:`parse_json`; any refusal is a :class:`FileRefused` naming the file and why."""
    return parse_json(read_regular(path, limit, what), path, what)


#: The environment variable naming the folder of fedtheory's caches (the symbolic results, the listings of
#: ``fedtheory list``); empty: no cache is read or written. Unset: ``$XDG_CACHE_HOME/fedtheory``, else
#: ``~/.cache/fedtheory``.
CACHE_ENV = "FEDTHEORY_CACHE"


def cache_dir(kind: str) -> Path | None:
    """The folder of one of fedtheory's caches (``kind``: ``"symbolic"``, ``"listing"``) under ``$FEDTHEORY_CACHE``
    (see :data:`CACHE_ENV`), or None when caches are off (``FEDTHEORY_CACHE=''``). Nothing is created here."""
    root = os.environ.get(CACHE_ENV)
    if root == "":
        return None
    if root:
        return Path(root) / kind
    try:
        home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    except RuntimeError:  # no home folder to be found (HOME unset, no password entry): no cache
        return None
    return Path(home) / "fedtheory" / kind


def _size(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.3g} {unit}"
    return f"{n} bytes"


def _umask() -> int:
    mask = os.umask(0o022)  # the umask can only be read by setting it
    os.umask(mask)
    return mask


def user_file_mode() -> int:
    """0666 & ~umask: the mode ``open(path, 'w')`` gives a new file."""
    return 0o666 & ~_umask()


def user_dir_mode() -> int:
    """0777 & ~umask: the mode ``mkdir`` gives a new folder (``tempfile.mkdtemp`` makes it 0700)."""
    return 0o777 & ~_umask()


def _kind(mode: int) -> str:
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
            "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def write_target(path: str | os.PathLike) -> Path:
    """Where :func:`write_atomic` writes ``path``: the path itself, or the file a symbolic link points to (a link is
    written through, never replaced by a file)."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` to ``path`` whole (see the module docstring). A symbolic link is written through to its target;
    an existing file keeps its mode; an existing path that is not a regular file (a FIFO, a device, a socket) is
    refused with an OSError and left alone: a rename would replace it. Raises OSError; the temporary file is
    removed."""
    path = write_target(path)
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EEXIST, f"{_kind(st.st_mode)}, not a regular file: refused (only regular files and new "
                      "paths are written)", str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else user_file_mode())
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


#: What fedtheory writes at the start of its outputs (a results, mutation or controls file: a JSON object whose first
#: key is "fedtheory"; a report: its generator tag, or the title older reports had): how :func:`written_by_fedtheory`
#: tells a file fedtheory may replace from a user's file.
_OWN_OUTPUT = re.compile(rb'\A\s*\{\s*"fedtheory"\s*:|<meta name="generator" content="fedtheory|'
                         rb'<title>fedtheory report:')


def written_by_fedtheory(path: str | os.PathLike) -> bool:
    """Whether the regular file ``path`` is an output of fedtheory's (see ``_OWN_OUTPUT``), read from its first
    4 KiB; an empty file counts (nothing in it to lose)."""
    try:
        fd, st = _open_checked(path, 1 << 62, "file")
    except FileRefused:
        return False
    try:
        head = os.read(fd, 4096)
    except OSError:
        return False
    finally:
        os.close(fd)
    return st.st_size == 0 or _OWN_OUTPUT.search(head) is not None


def check_writable(path: str | os.PathLike, what: str = "file", *, force: bool = False,
                   inputs: Iterable[str | os.PathLike] = (), input_dirs: Iterable[str | os.PathLike] = ()) -> None:
    """Raise :class:`FileRefused` naming ``path`` unless :func:`write_atomic` could write it now, and should:

    * ``path`` is not empty, not a folder, and not an existing FIFO, device or socket (a symbolic link is judged by
      the file it points to: it is written through);
    * it is none of ``inputs`` (the files a run reads: a plug-in's source, a results file) nor an existing file
      under one of ``input_dirs`` (a folder of logged runs), even with ``force``;
    * an existing file is one fedtheory wrote (:func:`written_by_fedtheory`) unless ``force``;
    * its folder (or, where folders are still to be made, the nearest one that exists) is a folder in which a file
      can be created. Probed by creating and removing an empty temporary file there (permissions alone say nothing
      to root, nor about a read-only file system or ``/proc``). Nothing else is written or made."""
    if not os.fspath(path):
        raise FileRefused(path, "an empty path: refused (name the file to write)")
    target = write_target(path)
    p = Path(os.path.abspath(target))
    via = f" (the symbolic link points to {p})" if os.path.islink(path) else ""
    try:
        st = os.stat(p)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise FileRefused(path, f"a folder, not {_a(what)}{via}: refused")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FileRefused(path, f"{_kind(st.st_mode)}{via}, not a regular file: refused (only regular files and new "
                          "paths are written)")
    if st is not None:
        for given in inputs:
            if _same(p, given):
                raise FileRefused(path, f"an input of this run ({given}){via}: refused, it would be replaced")
        for folder in input_dirs:
            if _inside(p, folder):
                raise FileRefused(path, f"a file under {folder}, which this run reads{via}: refused")
        if not force and not written_by_fedtheory(p):
            raise FileRefused(path, f"an existing file that fedtheory did not write{via}: refused (--force replaces "
                              "it)")
    folder = p.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise FileRefused(path, f"its folder cannot be made ({folder} is not a folder)")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".fedtheory-probe.", suffix=".tmp")
    except OSError as exc:
        raise FileRefused(path, f"no file can be created in {folder} ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass


def _same(a: Path, b: str | os.PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _inside(p: Path, folder: str | os.PathLike) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(p), os.path.realpath(folder)]) == os.path.realpath(folder)
    except ValueError:
        return False


def write_error_text(exc: OSError, folder: str | os.PathLike) -> str:
    """Why a write into ``folder`` failed, naming its disk: 'No space left on device; the disk holding DIR has 0.0
    MiB free'."""
    import shutil

    why = exc.strerror or str(exc)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return f"{why}; on the disk holding {folder}"
    return f"{why}; the disk holding {folder} has {free / 2**20:.1f} MiB free"


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
