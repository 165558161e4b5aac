"""Objective terms of local plug-ins, on networks.

A sim-layer local transform with ``objective = True`` adds a term to client p's objective and gives
its gradient through the problem's client view (``objective_grad(rs, w)``). A network has no such
view: here the term is written once more as a function of the minibatch's representations under the
local and the anchor model, and autograd differentiates it together with the cross-entropy (so SAM's
ascent point, clipping and every other rule see the whole local objective, as in the sim engine).
The distance itself is the sim layer's code (``sim.hyperbolic.lifted_sqdist``), not a copy.

An adapter gives (per-run parameters (R, P), term(z, z_anchor, params (P,)) -> scalar). The trainer
refuses an objective plug-in that has none, rather than training without its term.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from .._validation import ParameterError


@dataclass(frozen=True)
class ObjectiveAdapter:
    params: Callable[[Any, torch.Tensor], torch.Tensor]  # (plugin, like) -> (R, P) per-run parameters
    term: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]  # (z, z_anchor, p) -> scalar
    names: tuple[str, ...]


_ADAPTERS: dict[type, ObjectiveAdapter] = {}


def register_objective(cls: type, adapter: ObjectiveAdapter) -> None:
    _ADAPTERS[cls] = adapter


def adapter_for(plugin) -> ObjectiveAdapter:
    for cls, ad in _ADAPTERS.items():
        if isinstance(plugin, cls):
            return ad
    raise ParameterError("algorithm", type(plugin).__name__, "local plug-ins whose objective term has a network form "
                         "(fedtheory.empirical.objectives: known for " + ", ".join(c.__name__ for c in _ADAPTERS) + ")")


# ------------------------------------------------------------------------------------ FedMRUR


def _hyperbolic():
    from ..sim.hyperbolic import HyperbolicRegularizer, lifted_sqdist

    def params(plugin, like):
        return torch.cat([plugin.param(n, like)[:, :, 0] for n in ("gamma", "sigma", "beta")], dim=1)  # (R, 3)

    def term(z, za, p):
        """gamma exp(D / sigma), D = mean over the minibatch of ||L(z_j) - L(z_anchor,j)||_L^2 (seed 003 eqs. 3, 5)."""
        gamma, sigma, beta = p[0], p[1], p[2]
        D = lifted_sqdist(z, za, beta).mean()
        return gamma * torch.exp(D / sigma)

    register_objective(HyperbolicRegularizer, ObjectiveAdapter(params, term, ("gamma", "sigma", "beta")))


_hyperbolic()
