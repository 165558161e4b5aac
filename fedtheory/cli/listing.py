"""The listings of ``fedtheory list`` (the records, the checks, the plug-ins) kept between runs: a listing read back
needs neither sympy nor the plug-ins' import, which are most of a listing's second (issue 42's budget: 0.5 s).

A listing is written after a full load and read back only while everything it was built from is unchanged:

* the **key**: the Python (version, executable, prefix, ``sys.path``), the folder, ``$FEDTHEORY_PLUGINS``, the
  ``--plugin`` targets, and the installed plug-ins (the ``fedtheory.papers`` entry points with their distributions'
  versions);
* every **file** the load imported or opened outside the standard library (fedtheory's own sources, the plug-ins'
  and what they import or read, such as a data file their titles come from, third-party packages): its size and
  modification time, to the nanosecond; and the **folders** the load listed, those of the plug-ins' files and of
  ``sys.path`` (a file added or removed there changes the folder's time). What the load opens and lists is seen
  through an audit hook (``sys.addaudithook``), which records only while a listing is built.

A load that said anything (a warning: a plug-in that registers nothing, a deprecated name) is not kept, so that it is
said again; nor is one where a file changed in the last 2 s (a change within the clock's resolution could go unseen,
as git's index treats "racy" files). A listing that cannot be read, does not parse, or has rows of another shape is
rebuilt: the file is data, read with :func:`fedtheory.files.read_json` (a regular file, at most 16 MiB). A folder that
cannot be written leaves the listing unkept, silently. ``FEDTHEORY_CACHE=''`` turns it off (with the symbolic cache);
``FEDTHEORY_CACHE=DIR`` moves it (the listing lives in ``DIR/listing``). In a process that has already imported
fedtheory's records (a Python session, a test calling :func:`fedtheory.cli.main`), records may have been registered
outside any plug-in: the listing is built there, never read.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

from ..files import FileRefused, cache_dir, read_json, write_atomic

__all__ = ["FORMAT", "MAX_BYTES", "RACY_S", "SECTIONS", "cached_listing", "listing_path"]

FORMAT = "fedtheory.listing/1"
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
    said = _Said()
    with said, _Reads() as reads:
        rows = build()
    if not said.anything:
        _write(path, key, rows, started, reads)
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


class _Said:
    """Within ``with``: whether any warning was shown (the CLI's one-line printer, or Python's, is still called)."""

    anything = False

    def __enter__(self):
        self._previous = warnings.showwarning

        def show(*args, **kwargs):
            self.anything = True
            return self._previous(*args, **kwargs)

        warnings.showwarning = show
        return self

    def __exit__(self, *exc) -> None:
        warnings.showwarning = self._previous


def _key(section: str, targets: Sequence[str]) -> dict[str, Any]:
    from importlib import metadata

    from ..plugins import ENTRY_POINT_GROUP, ENV_VAR

    eps = sorted([e.name, e.value, e.dist.name if e.dist else "", e.dist.version if e.dist else ""]
                 for e in metadata.entry_points(group=ENTRY_POINT_GROUP))
    return {"format": FORMAT, "section": section, "python": sys.version, "executable": sys.executable,
            "prefix": sys.prefix, "path": list(sys.path), "cwd": os.getcwd(), "env": os.environ.get(ENV_VAR, ""),
            "targets": [[t, os.path.abspath(t) if os.path.exists(t) else ""] for t in targets], "entry_points": eps}


def _stamp(path: str) -> list:
    """[path, modification time in ns, size]; [path, -1, -1] for a path that is not there (a file the load looked
    for and did not find: the listing holds while it stays away)."""
    try:
        st = os.stat(path)
    except OSError:
        return [path, -1, -1]
    return [path, st.st_mtime_ns, st.st_size]


def _read(path: Path, section: str, key: dict[str, Any]) -> list[dict] | None:
    try:
        data = read_json(path, MAX_BYTES, "listing")
    except (FileRefused, ValueError, OSError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
        return None
    stamps, rows = data.get("files"), data.get("rows")
    if not isinstance(stamps, list) or not isinstance(rows, list):
        return None
    for s in stamps:
        if not (isinstance(s, list) and len(s) == 3 and isinstance(s[0], str)) or _stamp(s[0]) != s:
            return None
    shape = SECTIONS[section]
    if not all(isinstance(r, dict) and all(isinstance(r.get(k), t) and (t is not list or all(isinstance(x, str)
                                                                                           for x in r[k]))
                                           for k, t in shape.items()) for r in rows):
        return None
    return rows


def _sources(reads: set[str]) -> list[str]:
    """What to watch, outside the standard library: the files the process imported, the paths the load opened or
    listed (``reads``), and the folders of the files outside installed packages (a plug-in's folder) and of
    ``sys.path``."""
    paths = sysconfig.get_paths()
    std = tuple({os.path.join(paths[k], "") for k in ("stdlib", "platstdlib")})
    installed = tuple({os.path.join(paths[k], "") for k in ("purelib", "platlib")})  # may lie under platstdlib
    files = {f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)}
    files |= {f for f in reads if not f.startswith(("/dev/", "/proc/", "/sys/"))}
    files = {f for f in files if f.startswith(installed) or not f.startswith(std)}
    folders = {os.path.dirname(f) for f in files if not f.startswith(installed)}
    folders |= {os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)}
    return sorted(files | folders)


def _write(path: Path, key: dict[str, Any], rows: list[dict], started: float, reads: set[str]) -> None:
    stamps = [_stamp(f) for f in _sources(reads)]
    if any(s[1] >= (started - RACY_S) * 1e9 for s in stamps):
        return  # a file changed within the clock's resolution of the load: kept next time
    try:
        text = json.dumps({"format": FORMAT, "key": key, "files": stamps, "rows": rows})
    except (TypeError, ValueError):  # a plug-in's row that JSON cannot hold: not kept
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError:
        pass
