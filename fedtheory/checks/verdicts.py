"""Deprecated (removed in 0.3): ``fedtheory.checks.verdicts`` was split into modules named for what each does
(``bounds``, ``trivial_bounds``, ``rounding``, ``terms``, ``rescaling``, ``series``, ``rates``, ``claims``,
``identities``, ``readings``, ``results``). Import public names from ``fedtheory.checks``; a name imported from
here still resolves, with a ``FedTheoryDeprecationWarning`` naming its module."""
from __future__ import annotations

from . import bounds as _bounds
from . import certification as _certification
from . import claims as _claims
from . import comparisons as _comparisons
from . import identities as _identities
from . import rates as _rates
from . import readings as _readings
from . import registry as _registry
from . import rescaling as _rescaling
from . import results as _results
from . import rounding as _rounding
from . import series as _series
from . import symbolic_cache as _symbolic_cache
from . import terms as _terms
from . import trivial_bounds as _trivial_bounds
from .._deprecation import moved_name

_MODULES = (_results, _series, _bounds, _trivial_bounds, _rounding, _terms, _rescaling, _rates, _readings,
            _identities, _claims, _registry, _comparisons, _symbolic_cache, _certification)


def __getattr__(name: str):
    import fedtheory.checks as face

    return moved_name(__name__, name, _MODULES, face)
