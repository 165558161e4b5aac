"""Deprecated (removed in 0.4): the module ``fedtheory.checks.base`` was split into modules named for what each does
(``results``, ``session``, ``registry``, ``comparisons``, ``rounding``, ``symbolic_cache``, ``execution``,
``controls``). Import public names from ``fedtheory.checks``; a name here still resolves, with a
``FedTheoryDeprecationWarning`` naming its new module."""
from __future__ import annotations

from ._moved import moved_name
from . import comparisons, controls, execution, registry, results, rounding, session, symbolic_cache

_MODULES = (results, session, registry, comparisons, rounding, symbolic_cache, execution, controls)


def __getattr__(name: str):
    return moved_name(__name__, name, _MODULES)
