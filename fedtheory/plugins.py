"""Paper plug-ins: how fedtheory finds the records and checks it runs.

A *paper plug-in* is an importable module (or package) that, when imported, registers its records
(``fedtheory.theory.register``) and its checks (the ``fedtheory.checks.check`` decorator). Plug-ins are
found in three places, in this order:

1. the entry-point group ``fedtheory.papers`` of every installed distribution (``pip install
   my-paper-checks`` is enough); the built-in papers (the four seeds and the zoo) register here too,
   through fedtheory's own ``pyproject.toml``;
2. ``$FEDTHEORY_PLUGINS``: entries separated by ``os.pathsep`` (``:`` on Linux), each a ``.py`` file, a
   package directory, or a dotted module name (blank entries are skipped);
3. ``--plugin PATH_OR_MODULE`` on the command line (repeatable), or ``load_plugin`` in Python.

A plug-in that fails to import raises :class:`PluginError` (the CLI exits with status 2), naming the
plug-in, where it came from and the exception (``sys.exit()`` at import included): never a silent skip. One that
imports but registers no record and no check (``FEDTHEORY_PLUGINS=os``) is loaded with a :class:`PluginWarning`.

This module stands right above the theory and simulation layers: the lookups that load the plug-ins first (the
records': :func:`records`, :func:`record`, :func:`papers`; the algorithms': :func:`algorithms`) are here, since
``fedtheory.theory`` and ``fedtheory.sim`` import nothing that finds plug-ins. The layers above (``empirical``,
``checks``, ``worst``, the CLI) call :func:`load_plugins` before their own lookups.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from ._validation import FedTheoryError

if TYPE_CHECKING:  # imported where used: this module's constants are read without sympy (`fedtheory list`)
    from .sim.algorithms import AlgorithmSpec
    from .theory.core import Definition, Record

__all__ = ["ENTRY_POINT_GROUP", "ENV_VAR", "PluginError", "PluginInfo", "PluginWarning", "algorithms", "load_plugin",
           "load_plugins", "loaded_plugins", "papers", "record", "records"]

#: The entry-point group an installed paper plug-in declares itself in (``[project.entry-points."fedtheory.papers"]``
#: of its ``pyproject.toml``: what ``fedtheory new-paper`` writes).
ENTRY_POINT_GROUP = "fedtheory.papers"
#: The environment variable that names more plug-ins: entries separated by ``os.pathsep``, each a ``.py`` file, a
#: package folder or a module name (blank entries are skipped).
ENV_VAR = "FEDTHEORY_PLUGINS"
#: The built-in papers, as ``pyproject.toml`` declares them in ``[project.entry-points."fedtheory.papers"]``
#: (a test holds the two equal). Used only when fedtheory runs without its distribution metadata
#: (an uninstalled source tree), where entry points cannot be read.
BUILTIN_PAPERS = {
    "fedinit": "fedtheory.papers.fedinit",
    "oledfl": "fedtheory.papers.oledfl",
    "fedmrur": "fedtheory.papers.fedmrur",
    "fedshift": "fedtheory.papers.fedshift",
    "drori2014": "fedtheory.papers.drori2014",
    "taylor2018": "fedtheory.papers.taylor2018",
    "ghadimi2013": "fedtheory.papers.ghadimi2013",
    "khaled2020": "fedtheory.papers.khaled2020",
    "yuan2016": "fedtheory.papers.yuan2016",
    "karimireddy2020": "fedtheory.papers.karimireddy2020",
    "yu2019": "fedtheory.papers.yu2019",
    "fedprox": "fedtheory.papers.fedprox",
    "koloskova2020": "fedtheory.papers.koloskova2020",
}


class PluginError(FedTheoryError):
    """A plug-in could not be found or failed to import. The message names it, its origin and the exception.

    The command line prints it in one line and exits with status 2.

    Parameters
    ----------
    *args : object
        The exception's arguments; the first is the message.
    """


class PluginWarning(UserWarning):
    """A plug-in that imported but registered no record and no check (a module that is not a paper plug-in, such as
    ``os``, or one imported before it was named a plug-in): it is listed with 0 and 0, and warned about.

    Parameters
    ----------
    *args : object
        The warning's arguments; the first is the message.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)


@dataclass
class PluginInfo:
    """One loaded plug-in: its name, what was loaded (module or file), where it was declared, and what it registered.

    ``fedtheory list --plugins`` prints one line per plug-in from these fields.

    Parameters
    ----------
    name : str
        The plug-in's name: the entry point's name, or the module's (or file's) name for ``--plugin``.
    target : str
        What was loaded, as given: a dotted module name, a ``.py`` file or a package directory.
    origin : str
        Where it was declared: ``'entry point (DIST)'``, ``'$FEDTHEORY_PLUGINS'``, ``'--plugin'`` or ``'built-in
        (no entry-point metadata)'``.
    module : str, default ""
        The name of the module it was imported as (a file gets a generated name).
    records : list of str
        The ids of the records (and definitions) it registered.
    checks : list of str
        The ids of the checks it registered.
    """

    name: str
    target: str
    origin: str  # 'entry point (dist)', '$FEDTHEORY_PLUGINS', '--plugin', 'built-in'
    module: str = ""
    records: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"name": self.name, "target": self.target, "origin": self.origin, "module": self.module,
                "records": len(self.records), "checks": len(self.checks)}


_LOADED: dict[str, PluginInfo] = {}  # key: module name or resolved file path
_AUTO_DONE = False
# What load_plugin counts of each plug-in: kind -> the ids of that kind registered so far. The records are the theory
# layer's, below this module; a registry above it joins with count_registered when it is imported.
def _record_ids() -> Iterable[str]:
    from .theory.core import registered_ids

    return registered_ids()


_COUNTED: dict[str, Callable[[], Iterable[str]]] = {"records": _record_ids}


def count_registered(kind: str, ids: Callable[[], Iterable[str]]) -> None:
    """Have every later :func:`load_plugin` tell which ``kind`` the plug-in registered; ``ids()`` lists the ids of
    that kind registered so far (the checks' registry calls this with ``"checks"``)."""
    _COUNTED[kind] = ids


def _snapshot() -> dict[str, set[str]]:
    return {kind: set(ids()) for kind, ids in _COUNTED.items()}


_RECORD_HOOKS: list[Callable[[Iterable[str]], object]] = []


def on_records_registered(hook: Callable[[Iterable[str]], object]) -> None:
    """A layer above registers ``hook(record_ids)``: called with the records a plug-in registered, right after its
    import (so the checks the hook registers for them count as the plug-in's), and with every registered record
    when plug-ins load (records imported outside a plug-in). Hooks must be idempotent (the checks' units check,
    ``fedtheory.checks.dimensions``, gives every paper its PAPER.units this way)."""
    if hook not in _RECORD_HOOKS:
        _RECORD_HOOKS.append(hook)


def _run_record_hooks(record_ids: Iterable[str]) -> None:
    ids = sorted(record_ids)
    for hook in _RECORD_HOOKS:
        hook(ids)


def _import_target(target: str) -> tuple[str, str]:
    """Import a dotted module name, a ``.py`` file or a package directory. Returns (key, module name)."""
    path = Path(target).expanduser()
    looks_like_path = target.endswith(".py") or os.sep in target or path.exists()
    if not looks_like_path:
        if target in sys.modules:
            return target, target
        importlib.import_module(target)
        return target, target
    path = path.resolve()
    if not path.exists():
        raise FileNotFoundError(f"no such file or directory: {path}")
    key = str(path)
    if key in _LOADED:
        return key, _LOADED[key].module
    if path.is_dir():
        init = path / "__init__.py"
        if not init.is_file():
            raise FileNotFoundError(f"{path} is a directory without __init__.py "
                                    "(give a .py file, a package or a module)")
        modname = path.name
        there = sys.modules.get(modname)
        if there is not None and Path(getattr(there, "__file__", "") or "").resolve() != init.resolve():
            raise ImportError(f"the package name {modname!r} is the name of a module already imported from "
                              f"{getattr(there, '__file__', None) or 'the interpreter'}: loading it would replace that "
                              f"module; rename the folder")
        spec = importlib.util.spec_from_file_location(path.name, init, submodule_search_locations=[str(path)])
    else:
        digest = hashlib.sha1(key.encode()).hexdigest()[:8]
        modname = f"fedtheory_plugin_{path.stem}_{digest}"
        spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return key, modname


def _holds_records(modname: str) -> bool:
    """Whether the imported module ``modname`` or one of its imported submodules holds a record: a paper plug-in that
    was imported before load_plugin (its records are registered already, none is new)."""
    from .theory.core import Definition, Record

    for name, mod in list(sys.modules.items()):
        if mod is not None and (name == modname or name.startswith(modname + ".")):
            if any(isinstance(v, (Record, Definition)) for v in list(vars(mod).values())):
                return True
    return False


def load_plugin(target: str, *, name: str | None = None, origin: str = "--plugin") -> PluginInfo:
    """Import one plug-in (a dotted module name, a ``.py`` file or a package directory) and return what it
    registered. Loading the same plug-in twice is a no-op.

    While it is imported the plug-in may register records only under paper names of its own. One that registers
    no record and no check is loaded with a :class:`PluginWarning`.

    Parameters
    ----------
    target : str
        A dotted module name (imported from ``sys.path``), a ``.py`` file, or a package directory (a folder with
        an ``__init__.py``, imported under the folder's name).
    name : str, optional
        The plug-in's name (default: the module's name).
    origin : str, default "--plugin"
        Where the plug-in was declared, for :class:`PluginInfo` and the error messages.

    Returns
    -------
    PluginInfo
        The plug-in and the record and check ids it registered (the earlier one, when it was loaded before).

    Raises
    ------
    PluginError
        When the target does not exist or its import raises (``sys.exit()`` included), naming the plug-in, its
        origin, the exception and the plug-in's line it came from.
    """
    from .theory.core import registering_for

    existing = _LOADED.get(target) or _LOADED.get(str(Path(target).expanduser().resolve()))
    if existing is not None:
        return existing
    before = _snapshot()
    preloaded = target in sys.modules and _holds_records(target)  # a paper imported before (by a test, a user)
    try:
        with registering_for(name or target):  # a plug-in registers only under paper names of its own
            key, modname = _import_target(target)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported with its origin, never skipped
        # SystemExit too: a plug-in that calls sys.exit() at import would end fedtheory with its status (0: a run
        # that printed nothing and wrote no --out would look like a success)
        where = [f for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename != __file__ and not f.filename.startswith("<frozen")]
        last = f" at {where[-1].filename}:{where[-1].lineno}" if where else ""
        what = (f"it called sys.exit({exc.code!r}) while being imported" if isinstance(exc, SystemExit)
                else f"{type(exc).__name__}: {exc}")
        raise PluginError(f"plug-in {name or target!r} ({origin}: {target}) failed to import: {what}{last}") from exc
    _run_record_hooks(set(_record_ids()) - before["records"])
    after = _snapshot()
    new = {kind: sorted(ids - before.get(kind, set())) for kind, ids in after.items()}
    info = PluginInfo(name or Path(modname).name, target, origin, modname, new["records"], new.get("checks", []))
    _LOADED[key] = info
    if not info.records and not info.checks and not preloaded:
        warnings.warn(f"plug-in {info.name!r} ({origin}: {target}) registered no record and no check: it is not a "
                      "paper plug-in (a paper plug-in registers records with fedtheory.theory.register and checks with "
                      "@fedtheory.checks.check when imported; docs/extending.md)", PluginWarning, stacklevel=2)
    return info


def _entry_points() -> list[metadata.EntryPoint]:
    """fedtheory's own first (in BUILTIN_PAPERS order: a later built-in imports an earlier one's records), then the
    other distributions' by name."""
    order = list(BUILTIN_PAPERS)

    def key(e):
        own = e.dist is not None and e.dist.name == "fedtheory"
        return (0, order.index(e.name) if e.name in order else len(order), e.name) if own else \
            (1, e.dist.name if e.dist else "", e.name)

    return sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=key)


def load_plugins(extra: Iterable[str] = ()) -> list[PluginInfo]:
    """Load every plug-in: entry points and ``$FEDTHEORY_PLUGINS`` (once per process), then ``extra``.

    The entry points of fedtheory's own distribution (the built-in papers) load first; in a source tree without
    distribution metadata the built-in papers load from their module names.

    Parameters
    ----------
    extra : iterable of str, optional
        More targets, each loaded as by :func:`load_plugin` with origin ``--plugin``.

    Returns
    -------
    list of PluginInfo
        Every plug-in loaded so far, in load order.

    Raises
    ------
    PluginError
        When a plug-in fails to import.
    """
    global _AUTO_DONE
    if not _AUTO_DONE:
        _AUTO_DONE = True
        eps = _entry_points()
        own = [e for e in eps if e.dist is not None and e.dist.name == "fedtheory"]
        if not own:  # an uninstalled source tree: no metadata to read the built-ins from
            for n, mod in BUILTIN_PAPERS.items():
                load_plugin(mod, name=n, origin="built-in (no entry-point metadata)")
        for e in eps:
            dist = e.dist.name if e.dist is not None else "?"
            load_plugin(e.value, name=e.name, origin=f"entry point ({dist})")
        for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
            if entry.strip():  # blank entries ('a::b', a trailing ':', spaces) name nothing: skipped
                load_plugin(entry.strip(), origin=f"${ENV_VAR}")
    for target in extra:
        load_plugin(target, origin="--plugin")
    _run_record_hooks(_record_ids())  # records registered outside a plug-in (imported directly) too
    return loaded_plugins()


def loaded_plugins() -> list[PluginInfo]:
    """The plug-ins loaded so far, in load order.

    Returns
    -------
    list of PluginInfo
        One entry per loaded plug-in (loads none).
    """
    return list(_LOADED.values())


def source_files() -> list[str]:
    """The files the loaded plug-ins were imported from (each plug-in module and its submodules): inputs of a run,
    which an output of the run must never replace."""
    names = [i.module for i in loaded_plugins() if i.module]
    out = []
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and any(name == n or name.startswith(n + ".") for n in names):
            out.append(f)
    return out


def worker_targets() -> list[str]:
    """What another process (a Dask worker) must pass to ``load_plugins`` to see the plug-ins loaded here beyond
    the installed ones: the ``--plugin`` and ``$FEDTHEORY_PLUGINS`` targets, paths made absolute."""
    out = []
    for info in _LOADED.values():
        if info.origin.startswith("entry point") or info.origin.startswith("built-in"):
            continue
        p = Path(info.target).expanduser()
        out.append(str(p.resolve()) if p.exists() else info.target)
    return out


def portable_target(target: str) -> tuple[str, str]:
    """What to pass to ``--plugin`` to load the plug-in ``target`` from any folder, and how it was chosen: the module
    name when a module of that name is importable without the current folder and is this very plug-in ('module name,
    installed'); otherwise the absolute path of its file or package ('absolute path, not installed'). A module
    name that only the current folder provides becomes that folder's absolute path too."""
    import importlib.machinery

    here = {"", ".", os.getcwd()}
    elsewhere = [p for p in sys.path if p not in here and os.path.abspath(p or ".") != os.getcwd()]

    def installed(name: str, location: Path | None) -> bool:
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, elsewhere)
        except (ImportError, ValueError):
            return False
        if spec is None or spec.origin is None:
            return False
        found = Path(spec.origin).resolve()
        return location is None or found == location or found.parent == location

    path = Path(target).expanduser()
    if target.endswith(".py") or os.sep in target or path.exists():
        path = path.resolve()
        name = path.stem if path.suffix == ".py" else path.name
        location = path if path.suffix == ".py" else path / "__init__.py"
        if name.isidentifier() and installed(name, location.resolve()):
            return name, "module name, installed"
        return str(path), "absolute path, not installed"
    if installed(target.split(".")[0], None):
        return target, "module name, installed"
    module = sys.modules.get(target)
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    if origin:
        found = Path(origin).resolve()
        return str(found.parent if found.name == "__init__.py" else found), "absolute path, not installed"
    return target, "module name"


def plugin_of(item_id: str) -> PluginInfo | None:
    """The plug-in that registered a record or check id (None: registered outside any plug-in)."""
    for info in _LOADED.values():
        if item_id in info.records or item_id in info.checks:
            return info
    return None


# ------------------------------------------------------------------------------------ the records, plug-ins loaded


def records() -> dict[str, Record | Definition]:
    """Every registered record, after loading the paper plug-ins (``fedtheory.theory.registry`` without loading).

    Returns
    -------
    dict of str to Record or Definition
        The records and definitions by id.
    """
    from .theory.core import registry

    load_plugins()
    return registry()


def record(record_id: str) -> Record | Definition:
    """The record with this id after loading the paper plug-ins, or a ParameterError that suggests close ids.

    Parameters
    ----------
    record_id : str
        A record's or a definition's id, such as ``"fedinit.thm1"``.

    Returns
    -------
    Record or Definition
        The registered record.

    Raises
    ------
    ParameterError
        When no record has this id; the message names the closest ids.
    """
    from .theory.core import get

    load_plugins()
    return get(record_id)


def papers() -> list[str]:
    """The papers with registered records, after loading the paper plug-ins.

    Returns
    -------
    list of str
        The papers' names, sorted.
    """
    return sorted({r.paper for r in records().values()})


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm by name after loading the plug-ins: the core's (``fedtheory.sim``) and those the
    paper plug-ins register when they load (FedMRUR's, FedShift's).

    Returns
    -------
    dict of str to AlgorithmSpec
        The algorithm table: each name with its factory (whose keyword arguments are the hyperparameters) and
        its source.
    """
    from .sim.algorithms import algorithms as algorithm_table

    load_plugins()
    return algorithm_table()
