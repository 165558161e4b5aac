"""The names of a module that was split, resolved in the modules they moved to, with a deprecation warning."""
from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any, Sequence

from .._validation import FedTheoryDeprecationWarning


def moved_name(old: str, name: str, modules: Sequence[ModuleType]) -> Any:
    """``name`` of the split module ``old`` (for its module-level ``__getattr__``): from the module of ``modules`` that
    exports it (its ``__all__``), else from the first that imports it; a FedTheoryDeprecationWarning names where to
    import it from (``fedtheory.checks`` for a name of the public face). An AttributeError where none has it."""
    found = next((m for m in modules if name in getattr(m, "__all__", ())), None) or next(
        (m for m in modules if name in vars(m) and not isinstance(vars(m)[name], ModuleType)), None)
    if name.startswith("__") or found is None:
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    value = vars(found)[name]
    home = found.__name__ if name in getattr(found, "__all__", ()) else getattr(value, "__module__", found.__name__)
    warnings.warn(f"{old}.{name} is deprecated (the module was split in 0.2; removed in 0.3): import {name} from "
                  f"{'fedtheory.checks' if name in _face() else home}", FedTheoryDeprecationWarning, stacklevel=3)
    return value


def _face() -> Sequence[str]:
    from . import __all__ as names

    return names
