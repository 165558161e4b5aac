"""Deprecation periods (CHANGELOG.md): a name or module renamed, moved or dropped from a public face keeps working for
one more minor release, with a :class:`~fedtheory.validation.FedTheoryDeprecationWarning` that says what to write
instead. Each old module or face gets a module-level ``__getattr__`` from here; nothing else changes."""
from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

from ._validation import FedTheoryDeprecationWarning

SINCE, REMOVED = "0.2", "0.3"


def warn_deprecated(subject: str, instead: str, stacklevel: int = 3) -> None:
    """Warn that ``subject`` is deprecated (since SINCE, removed in REMOVED) and say what to write ``instead``; the
    warning points at the line ``stacklevel`` frames up (the caller of the deprecated thing, by default)."""
    warnings.warn(f"{subject} is deprecated (since {SINCE}, removed in {REMOVED}; CHANGELOG.md): {instead}",
                  FedTheoryDeprecationWarning, stacklevel=stacklevel + 1)


def renamed_module(old: str, new: ModuleType) -> Callable[[str], Any]:
    """The ``__getattr__`` of a module ``old`` renamed to ``new`` (the module object: the old module imports it, so
    the layer contracts see the arrow): every name resolves in ``new``, with a warning."""
    def getattr_(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        value = getattr(new, name)  # AttributeError names the new module
        warn_deprecated(f"{old}.{name}", f"the module is now {new.__name__}: import {name} from {new.__name__}")
        return value
    return getattr_


def face_aliases(module: str, aliases: Mapping[str, tuple[Callable[[], Any], str]]) -> Callable[[str], Any]:
    """The ``__getattr__`` of a public face (``module``) that no longer exports the names of ``aliases``: old name ->
    (a function returning the object, what to write instead). The object is looked up only when the name is used."""
    def getattr_(name: str) -> Any:
        if name not in aliases:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        get, instead = aliases[name]
        value = get()
        warn_deprecated(f"{module}.{name}", instead)
        return value
    return getattr_


def moved_name(old: str, name: str, modules: Sequence[ModuleType], face: ModuleType) -> Any:
    """``name`` of the split module ``old`` (for its module-level ``__getattr__``): from the module of ``modules`` that
    exports it (its ``__all__``), else from the first that imports it; the warning names where to import it from
    (``face``, for a name the public face exports). An AttributeError where none has it."""
    found = next((m for m in modules if name in getattr(m, "__all__", ())), None) or next(
        (m for m in modules if name in vars(m) and not isinstance(vars(m)[name], ModuleType)), None)
    if name.startswith("__") or found is None:
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    value = vars(found)[name]
    home = found.__name__ if name in getattr(found, "__all__", ()) else getattr(value, "__module__", found.__name__)
    where = face.__name__ if name in getattr(face, "__all__", ()) else home
    warn_deprecated(f"{old}.{name}", f"the module was split: import {name} from {where}")
    return value
