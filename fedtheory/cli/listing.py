"""The listings of ``fedtheory list`` (the records, the checks, the plug-ins) kept between runs: a listing read back
needs neither sympy nor the plug-ins' import, which are most of a listing's second (issue 42's budget: 0.5 s).

A listing is written after a full load and read back only while everything it was built from is unchanged:

* the **key**: the Python (version, executable, prefix, ``sys.path``, its flags and ``-W`` warning options), the
  folder, ``$FEDTHEORY_PLUGINS`` and the ``--plugin`` targets (each also as the real path it names: a symbolic link
  moved to another release is seen), and the installed plug-ins (the ``fedtheory.papers`` entry points with their
  distributions' versions);
* every **environment variable** the load read (``os.environ``, ``os.getenv``), with its value or its absence;
* every **file** the load imported, opened or listed outside the standard library (fedtheory's own sources, the
  plug-ins' and what they import or read, such as a data file their titles come from, third-party packages), and
  every entry of ``sys.path``: its modification and change times, size and inode (a change with its modification
  time put back, as ``touch -r`` or ``cp -p`` do, still changes the change time), or its absence (a file the load
  looked for and did not find); and the folders of the files outside installed packages (a file added or removed
  there changes the folder's times). What the load opens and lists is seen through an audit hook
  (``sys.addaudithook``), which records only while a listing is built.

A load that said anything (a warning: a plug-in that registers nothing, a deprecated name), that iterated over the
whole environment, or whose rows are not of their section's shape (:data:`SECTIONS`: a plug-in's own summary with
other keys, a title that is not text) is not kept, so that it runs again; nor is one where a file changed in the
last 2 s (a change within the clock's resolution could go unseen, as git's index treats "racy" files). A listing that
cannot be read, does not parse, is a symbolic link or has rows of another shape is rebuilt: the file is data, read
with :func:`fedtheory.files.read_json` (a regular file, at most 16 MiB); a symbolic link at its place is never
written through. A folder that cannot be written leaves the listing unkept, silently; a new folder is made readable
by its owner only. ``FEDTHEORY_CACHE=''`` turns it off (with the symbolic cache); ``FEDTHEORY_CACHE=DIR`` moves it
(the listing lives in ``DIR/listing``). In a process that has already imported fedtheory's records (a Python
session, a test calling :func:`fedtheory.cli.main`), records may have been registered outside any plug-in: the
listing is built there, never read. What a plug-in's import prints does not appear on a run that reads a listing.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
import time
import warnings
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, Callable, Sequence

from ..files import FileRefused, cache_dir, read_json, write_atomic

__all__ = ["FORMAT", "MAX_BYTES", "RACY_S", "SECTIONS", "cached_listing", "listing_path"]

FORMAT = "fedtheory.listing/2"
MAX_BYTES = 16 << 20
RACY_S = 2.0
#: Each section's rows: the keys every row has and their types (a row of another shape is rebuilt, never printed).
SECTIONS = {"records": {"id": str, "paper": str, "kind": str, "title": str, "source": str},
            "checks": {"id": str, "paper": str, "kind": str, "records": list, "profiles": list, "measures": list,
                       "description": str},
            "plugins": {"name": str, "target": str, "origin": str, "module": str, "records": int, "checks": int}}


def listing_path(section: str) -> Path | None:
    """The file of one section's listing for this Python environment, or None when caches are off."""
    folder = cache_dir("listing")
    if folder is None:
        return None
    env = hashlib.sha256(f"{sys.prefix}\0{Path(__file__).resolve().parents[1]}".encode()).hexdigest()[:16]
    return folder / f"{section}-{env}.json"


def cached_listing(section: str, targets: Sequence[str], build: Callable[[], list[dict[str, Any]]]) -> list[dict]:
    """``section``'s rows: read back where nothing they were built from changed, else ``build()`` (which loads the
    plug-ins, the ``--plugin`` ``targets`` included) and kept for the next run (see the module docstring)."""
    path = listing_path(section)
    if path is None or "fedtheory.theory.core" in sys.modules:
        return build()
    try:
        key = _key(section, targets)
    except OSError:  # the current folder was removed: no key to hold a listing to
        return build()
    rows = _read(path, section, key)
    if rows is not None:
        return rows
    started = time.time()
    with _Said() as said, _Reads() as reads, _WatchedEnviron() as environ:
        rows = build()
    if not said.anything and not environ.iterated and _shaped(section, rows):
        _write(path, key, rows, started, reads, environ.read)
    return rows


_RECORDING: set[str] | None = None  # while a listing is built: the paths the process opened or listed
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    if _RECORDING is None or event not in ("open", "os.listdir", "os.scandir"):
        return
    target = args[0] if args else None
    if isinstance(target, (str, bytes, os.PathLike)):
        try:
            _RECORDING.add(os.path.abspath(os.fsdecode(target)))
        except (TypeError, ValueError):
            pass


class _Reads:
    """Within ``with``: the set of paths the process opened or listed (an audit hook, added once per process)."""

    def __enter__(self) -> set[str]:
        global _RECORDING, _HOOKED
        if not _HOOKED:
            sys.addaudithook(_audit)
            _HOOKED = True
        _RECORDING = set()
        return _RECORDING

    def __exit__(self, *exc) -> None:
        global _RECORDING
        _RECORDING = None


class _WatchedEnviron(MutableMapping):
    """Within ``with``: ``os.environ`` (and so ``os.getenv``) seen through this mapping, which notes every variable
    read (``read``: name -> value, None where unset) and whether the whole environment was iterated."""

    def __init__(self) -> None:
        self.read: dict[str, str | None] = {}
        self.iterated = False

    def __enter__(self) -> _WatchedEnviron:
        self._env = os.environ
        os.environ = self
        return self

    def __exit__(self, *exc) -> None:
        os.environ = self._env

    def __getitem__(self, name):
        try:
            value = self._env[name]
        except KeyError:
            if isinstance(name, str):
                self.read.setdefault(name, None)
            raise
        if isinstance(name, str):
            self.read.setdefault(name, value)
        return value

    def __setitem__(self, name, value) -> None:
        self._env[name] = value

    def __delitem__(self, name) -> None:
        del self._env[name]

    def __iter__(self):
        self.iterated = True
        return iter(self._env)

    def __len__(self) -> int:
        return len(self._env)

    def copy(self) -> dict[str, str]:
        self.iterated = True
        return self._env.copy()


class _Said:
    """Within ``with``: whether any warning was shown (the CLI's one-line printer, or Python's, is still called)."""

    anything = False

    def __enter__(self) -> _Said:
        self._previous = warnings.showwarning

        def show(*args, **kwargs):
            self.anything = True
            return self._previous(*args, **kwargs)

        warnings.showwarning = show
        return self

    def __exit__(self, *exc) -> None:
        warnings.showwarning = self._previous


def _real(target: str) -> str:
    path = os.path.expanduser(target)
    return os.path.realpath(path) if os.path.exists(path) else ""


def _key(section: str, targets: Sequence[str]) -> dict[str, Any]:
    from importlib import metadata

    from ..plugins import ENTRY_POINT_GROUP, ENV_VAR

    eps = sorted([e.name, e.value, e.dist.name if e.dist else "", e.dist.version if e.dist else ""]
                 for e in metadata.entry_points(group=ENTRY_POINT_GROUP))
    env = os.environ.get(ENV_VAR, "")
    return {"format": FORMAT, "section": section, "python": sys.version, "executable": sys.executable,
            "prefix": sys.prefix, "path": list(sys.path), "flags": repr(sys.flags),
            "warnoptions": list(sys.warnoptions), "cwd": os.getcwd(),
            "env": [env, [_real(e.strip()) for e in env.split(os.pathsep) if e.strip()]],
            "targets": [[t, _real(t)] for t in targets], "entry_points": eps}


def _stamp(path: str) -> list:
    """[path, modification time, change time (ns), size, inode]; [path, -1, -1, -1, -1] for a path that is not
    there (a file the load looked for and did not find: the listing holds while it stays away)."""
    try:
        st = os.stat(path)
    except OSError:
        return [path, -1, -1, -1, -1]
    return [path, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino]


def _shaped(section: str, rows: Any) -> bool:
    """Whether ``rows`` are of the section's shape: a list of rows with exactly its keys, each of its type (a list
    of text where a list)."""
    shape = SECTIONS[section]
    return isinstance(rows, list) and all(
        isinstance(r, dict) and r.keys() == shape.keys()
        and all(type(r[k]) is t and (t is not list or all(isinstance(x, str) for x in r[k])) for k, t in shape.items())
        for r in rows)


def _read(path: Path, section: str, key: dict[str, Any]) -> list[dict] | None:
    if path.is_symlink():
        return None
    try:
        data = read_json(path, MAX_BYTES, "listing")
    except (FileRefused, ValueError, OSError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
        return None
    stamps, environ, rows = data.get("files"), data.get("environ"), data.get("rows")
    if not isinstance(stamps, list) or not isinstance(environ, dict) or not _shaped(section, rows):
        return None
    if any(os.environ.get(name) != value for name, value in environ.items()):
        return None
    for s in stamps:
        if not (isinstance(s, list) and len(s) == 5 and isinstance(s[0], str)) or _stamp(s[0]) != s:
            return None
    return rows


def _sources(reads: set[str]) -> list[str]:
    """What to watch, outside the standard library: the files the process imported, the paths the load opened or
    listed (``reads``), the folders of the files outside installed packages (a plug-in's folder), and every entry of
    ``sys.path`` (a folder, a zip file, or a path not there yet)."""
    paths = sysconfig.get_paths()
    std = tuple({os.path.join(paths[k], "") for k in ("stdlib", "platstdlib")})
    installed = tuple({os.path.join(paths[k], "") for k in ("purelib", "platlib")})  # may lie under platstdlib
    files = {f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)}
    files |= {f for f in reads if not f.startswith(("/dev/", "/proc/", "/sys/"))}
    files = {f for f in files if f.startswith(installed) or not f.startswith(std)}
    folders = {os.path.dirname(f) for f in files if not f.startswith(installed)}
    entries = {os.path.abspath(p) for p in sys.path if p}
    return sorted(files | folders | entries)


def _write(path: Path, key: dict[str, Any], rows: list[dict], started: float, reads: set[str],
           environ: dict[str, str | None]) -> None:
    stamps = [_stamp(f) for f in _sources(reads)]
    if any(max(s[1], s[2]) >= (started - RACY_S) * 1e9 for s in stamps):
        return  # a file changed within the clock's resolution of the load: kept next time
    try:
        text = json.dumps({"format": FORMAT, "key": key, "environ": environ, "files": stamps, "rows": rows})
    except (TypeError, ValueError):  # a plug-in's row that JSON cannot hold: not kept
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.is_symlink():
            write_atomic(path, text)
    except OSError:
        pass
