"""The listings of ``fedtheory list`` (the records, the checks, the plug-ins) kept between runs: a listing read back
needs neither sympy nor the plug-ins' import, which are most of a listing's second (issue 42's budget: 0.5 s).

A listing is written after a full load and read back only while everything it was built from is unchanged:

* the **key**: the Python (version, executable, prefix, ``sys.path``, its flags and ``-W`` warning options), the
  folder, ``$FEDTHEORY_PLUGINS`` and the ``--plugin`` targets (each also as the real path it names: a symbolic link
  moved to another release is seen), and the installed plug-ins (the ``fedtheory.papers`` entry points with their
  distributions' versions);
* every **environment variable** the load read (``os.environ``, ``os.getenv``, their bytes forms), with its value or
  its absence (a stand-in of ``os.environ``'s own type notes them while a listing is built);
* every **file** the load imported, opened (an sqlite database too), listed or looked at (``os.path.exists``)
  outside the standard library (fedtheory's own sources, the plug-ins' and what they import or read, such as a data
  file their titles come from, third-party packages), every entry of ``sys.path`` and the ``.pth`` files there: its
  modification and change times, size and inode (a change with its modification time put back, as ``touch -r`` or
  ``cp -p`` do, still changes the change time), or its absence (a file the load looked for and did not find); and
  the folders of the files outside installed packages (a file added or removed there changes the folder's times).
  What the load opens and lists is seen through an audit hook (``sys.addaudithook``), what it looks at through
  ``os.stat`` and ``os.lstat`` wrapped; both record only while a listing is built.

A load that said anything (a warning: a plug-in that registers nothing, a deprecated name; or one that rerouted the
warnings, as ``logging.captureWarnings`` does), that read the whole environment, that ran another program (whose
environment and files cannot be followed), or whose rows are not of their section's shape (:data:`SECTIONS`: a
plug-in's own summary with other keys, a title that is not text) is not kept, so that it runs again; nor is one
where a file changed in the last 2 s (a change within the clock's resolution could go unseen, as git's index treats
"racy" files). A listing that cannot be read, does not parse, is a symbolic link or has rows of another shape is
rebuilt: the file is data, read with :func:`fedtheory.files.read_json` (a regular file, at most 16 MiB); a symbolic
link at its place is never written through. A folder that cannot be written leaves the listing unkept, silently; a
new folder is made readable by its owner only, and a folder of another user's, or one others can write to, is not
used. ``FEDTHEORY_CACHE=''`` turns it off (with the symbolic cache); ``FEDTHEORY_CACHE=DIR`` moves it (the listing
lives in ``DIR/listing``). In a process that has already imported fedtheory's records (a Python session, a test
calling :func:`fedtheory.cli.main`), records may have been registered outside any plug-in: the listing is built
there, never read. What a plug-in's import prints does not appear on a run that reads a listing.
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
    if path is None or "fedtheory.theory.core" in sys.modules or not _own_folder(path.parent):
        return build()
    key = _key(section, targets)  # (a removed current folder ends the command before: fedtheory.cli.process)
    rows = _read(path, section, key)
    if rows is not None:
        return rows
    started = time.time()
    with _Said() as said, _Reads() as reads, _WatchedEnviron() as environ:
        rows = build()
    if not said.anything and not environ.iterated and _UNSEEN not in reads and _shaped(section, rows):
        _write(path, key, rows, started, reads, environ.read)
    return rows


_RECORDING: set[str] | None = None  # while a listing is built: the paths the process opened or listed
_LOOKED: set[str] = set()  # ... and those it only looked at (os.stat, os.lstat)
_HOOKED = False


_PATH_EVENTS = ("open", "os.listdir", "os.scandir", "sqlite3.connect")
# what the listing cannot follow: another program (its environment, the files it reads)
_UNSEEN_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.startfile")
_UNSEEN = "\0unseen"  # in the recording: the load did something the listing cannot follow


def _note(target, into: set[str] | None = None) -> None:
    into = _RECORDING if into is None else into
    if _RECORDING is not None and isinstance(target, (str, bytes, os.PathLike)):
        try:
            into.add(os.path.abspath(os.fsdecode(target)))
        except (TypeError, ValueError):
            pass


def _audit(event: str, args: tuple) -> None:
    if _RECORDING is None:
        return
    if event in _PATH_EVENTS:
        _note(args[0] if args else None)
    elif event in _UNSEEN_EVENTS:
        _RECORDING.add(_UNSEEN)


class _Reads:
    """Within ``with``: the set of paths the process opened or listed, through an audit hook added once per
    process, and (in :data:`_LOOKED`) those it only looked at: ``os.stat`` and ``os.lstat``, behind
    ``os.path.exists``, ``isfile``, ``getsize`` and ``realpath`` (no audit event says so), wrapped while the listing
    is built; :data:`_UNSEEN` in the set where the load ran another program."""

    def __enter__(self) -> set[str]:
        global _RECORDING, _HOOKED
        if not _HOOKED:
            sys.addaudithook(_audit)
            _HOOKED = True
        _RECORDING = set()
        _LOOKED.clear()
        self._saved = {name: getattr(os, name) for name in ("stat", "lstat")}
        for name, fn in self._saved.items():
            setattr(os, name, self._watching(fn))
        return _RECORDING

    @staticmethod
    def _watching(fn):
        def watched(path, *args, **kwargs):
            if not isinstance(path, int):  # a file descriptor names no path
                _note(path, _LOOKED)
            return fn(path, *args, **kwargs)

        return watched

    def __exit__(self, *exc) -> None:
        global _RECORDING
        for name, fn in self._saved.items():
            setattr(os, name, fn)
        _RECORDING = None


class _Watched(type(os.environ)):
    """``os.environ`` or ``os.environb`` over the same data (writes go through), noting every variable read (in
    ``seen.read``) and whether the whole environment was read (``seen.iterated``: iterated, counted, copied,
    printed, merged)."""

    def __init__(self, env, seen: _WatchedEnviron) -> None:
        # os._Environ's own constructor over the very dict it wraps (CPython's attributes, stable since 3.2): the
        # stand-in behaves as os.environ does (|, |=, setdefault, putenv on writes), which a plain mapping did not
        super().__init__(env._data, env.encodekey, env.decodekey, env.encodevalue, env.decodevalue)
        self._seen = seen

    def __getitem__(self, name):
        key = os.fsdecode(name) if isinstance(name, (str, bytes)) else None
        try:
            value = super().__getitem__(name)
        except KeyError:
            if key is not None:
                self._seen.read.setdefault(key, None)
            raise
        if key is not None:
            self._seen.read.setdefault(key, os.fsdecode(value))
        return value

    def __iter__(self):
        self._seen.iterated = True
        return super().__iter__()

    def __len__(self) -> int:
        self._seen.iterated = True
        return super().__len__()

    def __repr__(self) -> str:
        self._seen.iterated = True
        return super().__repr__()

    def copy(self):
        self._seen.iterated = True
        return super().copy()


class _WatchedEnviron:
    """Within ``with``: ``os.environ`` and ``os.environb`` (and so ``os.getenv``, ``os.getenvb``) seen through
    :class:`_Watched` stand-ins of their own type; ``read``: name -> value (None where unset) of every variable read;
    ``iterated``: whether the whole environment was read."""

    def __init__(self) -> None:
        self.read: dict[str, str | None] = {}
        self.iterated = False

    def __enter__(self) -> _WatchedEnviron:
        self._saved = {name: getattr(os, name) for name in ("environ", "environb") if hasattr(os, name)}
        for name, env in self._saved.items():
            setattr(os, name, _Watched(env, self))
        return self

    def __exit__(self, *exc) -> None:
        for name, env in self._saved.items():
            setattr(os, name, env)


class _Said:
    """Within ``with``: whether any warning was shown (the CLI's one-line printer, or Python's, is still called)."""

    anything = False

    def __enter__(self) -> _Said:
        self._previous = warnings.showwarning

        def show(*args, **kwargs):
            self.anything = True
            return self._previous(*args, **kwargs)

        warnings.showwarning = self._show = show
        return self

    def __exit__(self, *exc) -> None:
        if warnings.showwarning is self._show:
            warnings.showwarning = self._previous
        else:  # the load rerouted the warnings (logging.captureWarnings): what it says is not seen here
            self.anything = True


def _own_folder(folder: Path) -> bool:
    """Whether a listing may be read and written in ``folder``: not there yet, or this user's and writable by no one
    else (a folder others can write to could hold a listing they planted)."""
    try:
        st = folder.stat()
    except OSError:
        return True
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


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
            "warnoptions": list(sys.warnoptions), "hashseed": os.environ.get("PYTHONHASHSEED"), "cwd": os.getcwd(),
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
    # a folder only looked at is left out: realpath looks at every folder above a path, and /tmp or a home folder
    # changes all the time; a file looked at, or looked for and not found, is watched
    looked = {f for f in _LOOKED if not os.path.isdir(f)}
    files |= {f for f in reads | looked if not f.startswith(("/dev/", "/proc/", "/sys/"))}
    files = {f for f in files if f.startswith(installed) or not f.startswith(std)}
    folders = {os.path.dirname(f) for f in files if not f.startswith(installed)}
    entries = {os.path.abspath(p) for p in sys.path if p}
    pth = set()  # run at start-up (before any recording): an in-place edit leaves its folder's times alone
    for entry in entries:
        try:
            pth |= {os.path.join(entry, n) for n in os.listdir(entry) if n.endswith(".pth")}
        except OSError:
            pass
    return sorted(files | folders | entries | pth)


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
