"""Deprecated (removed in 0.3): ``fedtheory.checks.base`` was split into modules named for what each does
(``results``, ``session``, ``registry``, ``comparisons``, ``rounding``, ``symbolic_cache``, ``execution``,
``controls``). Import public names from ``fedtheory.checks``; a name imported from here still resolves, with a
``FedTheoryDeprecationWarning`` naming its module."""
from __future__ import annotations

from . import comparisons as _comparisons
from . import controls as _controls
from . import execution as _execution
from . import registry as _registry
from . import results as _results
from . import rounding as _rounding
from . import session as _session
from . import symbolic_cache as _symbolic_cache
from .._deprecation import moved_name

_MODULES = (_results, _session, _registry, _comparisons, _rounding, _symbolic_cache, _execution, _controls)


def __getattr__(name: str):
    import fedtheory.checks as face

    return moved_name(__name__, name, _MODULES, face)
