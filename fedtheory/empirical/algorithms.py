"""The algorithm table as the training layer sees it: the sim layer's (``fedtheory.sim.algorithms``: the same names,
factories and plug-ins, so every rule has one implementation), completed by the paper plug-ins' own algorithms.
Every lookup here loads the plug-ins first (``fedtheory.plugins.load_plugins``, once per process), as the records'
lookups do: FedMRUR's and FedShift's algorithms register when their plug-in loads, so ``fedtheory train --algorithm
FedShift`` finds it in any process, a sweep's worker included."""
from __future__ import annotations

from typing import Any, Mapping

from ..plugins import (
    algorithms as algorithms,  # every registered algorithm after loading the plug-ins
    load_plugins,
)
from ..sim.algorithms import *  # noqa: F401,F403 - the rest of the table's API, unchanged
from ..sim.algorithms import (
    Algorithm,
    AlgorithmSpec,
    __all__ as _TABLE_API,
    build_algorithm as _build_algorithm,
    hyperparameter_names as _hyperparameter_names,
    resolve as _resolve,
)

__all__ = list(_TABLE_API)


def resolve(name: str) -> tuple[AlgorithmSpec, bool]:
    """``fedtheory.sim.algorithms.resolve`` after loading the plug-ins."""
    load_plugins()
    return _resolve(name)


def hyperparameter_names(name: str) -> dict[str, Any]:
    """``fedtheory.sim.algorithms.hyperparameter_names`` after loading the plug-ins."""
    load_plugins()
    return _hyperparameter_names(name)


def build_algorithm(name: str, hyperparameters: Mapping[str, Any] | None = None,
                    context: Mapping[str, Any] | None = None) -> Algorithm:
    """``fedtheory.sim.algorithms.build_algorithm`` after loading the plug-ins."""
    load_plugins()
    return _build_algorithm(name, hyperparameters, context)
