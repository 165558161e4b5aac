"""Deprecated (removed in 0.3): ``fedtheory.checks.verdicts`` was split into modules named for what each does
(``bounds``, ``trivial_bounds``, ``rounding``, ``terms``, ``rescaling``, ``series``, ``rates``, ``claims``,
``identities``, ``readings``, ``results``). Import public names from ``fedtheory.checks``; a name imported from
here still resolves, with a ``FedTheoryDeprecationWarning`` naming its module."""
from __future__ import annotations

from ..deprecation import moved_name
from . import (
    bounds as _bounds,
    certification as _certification,
    claims as _claims,
    comparisons as _comparisons,
    identities as _identities,
    rates as _rates,
    readings as _readings,
    registry as _registry,
    rescaling as _rescaling,
    results as _results,
    rounding as _rounding,
    series as _series,
    symbolic_cache as _symbolic_cache,
    terms as _terms,
    trivial_bounds as _trivial_bounds,
)

_MODULES = (_results, _series, _bounds, _trivial_bounds, _rounding, _terms, _rescaling, _rates, _readings,
            _identities, _claims, _registry, _comparisons, _symbolic_cache, _certification)


def __getattr__(name: str):
    import fedtheory.checks as face

    return moved_name(__name__, name, _MODULES, face)
