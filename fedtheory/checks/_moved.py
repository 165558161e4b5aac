"""Names of a module that was split, resolved in the modules they moved to, with a deprecation warning."""
from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any, Sequence

from .._validation import FedTheoryDeprecationWarning


def moved_name(old: str, name: str, modules: Sequence[ModuleType]) -> Any:
    """``name`` of the split module ``old``, from the first of ``modules`` that defines it (a module-level
    ``__getattr__``): a FedTheoryDeprecationWarning names the new place; an AttributeError where none defines it."""
    if name.startswith("__"):
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    for module in modules:
        if name in vars(module) and not isinstance(vars(module)[name], ModuleType):
            public = "fedtheory.checks" if name in _face() else module.__name__
            warnings.warn(f"{old}.{name} is deprecated (the module was split in 0.3; removed in 0.4): import {name} "
                          f"from {public}", FedTheoryDeprecationWarning, stacklevel=3)
            return vars(module)[name]
    raise AttributeError(f"module {old!r} has no attribute {name!r}")


def _face() -> Sequence[str]:
    from . import __all__ as names

    return names
