"""Deprecated (removed in 0.4): the module ``fedtheory.checks.verdicts`` was split into modules named for what each
does (``bounds``, ``trivial_bounds``, ``rounding``, ``terms``, ``rescaling``, ``series``, ``rates``, ``claims``,
``identities``, ``readings``, ``results``). Import public names from ``fedtheory.checks``; a name here still
resolves, with a ``FedTheoryDeprecationWarning`` naming its new module."""
from __future__ import annotations

from ._moved import moved_name
from . import bounds, claims, identities, rates, readings, rescaling, results, rounding, series, terms, trivial_bounds

_MODULES = (results, series, bounds, trivial_bounds, rounding, terms, rescaling, rates, readings, identities, claims)


def __getattr__(name: str):
    return moved_name(__name__, name, _MODULES)
