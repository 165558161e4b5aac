"""Deprecated (removed in 0.3): ``fedtheory.checks.base`` was split into modules named for what each does
(``results``, ``session``, ``registry``, ``comparisons``, ``rounding``, ``symbolic_cache``, ``execution``,
``controls``). Import public names from ``fedtheory.checks``; a name imported from here still resolves, with a
``FedTheoryDeprecationWarning`` naming its module."""
from __future__ import annotations

from ..deprecation import moved_name
from . import (
    comparisons as _comparisons,
    controls as _controls,
    execution as _execution,
    registry as _registry,
    results as _results,
    rounding as _rounding,
    session as _session,
    symbolic_cache as _symbolic_cache,
)

_MODULES = (_results, _session, _registry, _comparisons, _rounding, _symbolic_cache, _execution, _controls)


def __getattr__(name: str):
    import fedtheory.checks as face

    return moved_name(__name__, name, _MODULES, face)
