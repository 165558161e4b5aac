"""The sim backend's LocalOracle (:class:`ProblemOracle`): a problem's exact or noisy client gradients for one round
of the round protocol, its exact proximal solve and its K plain local steps at once; with the step measures, the
exact gradient at a local iterate computed once per step."""
from __future__ import annotations

import numpy as np

from .._validation import ParameterError
from .problems import Problem
from .rules import Exact, Oracle, RoundState

__all__ = ["ProblemOracle"]


class ProblemOracle:
    """The sim backend's LocalOracle: a problem's (noisy) client gradients for one round, plus the local
    objective's extra terms (plug-ins with ``objective = True``). ``simulate`` builds one per call and points it at
    each round (``follow``, then the round's draws)."""

    def __init__(self, oracle: Oracle, view, draws, rs: RoundState, terms=(), share_step_gradient: bool = False):
        self.oracle, self.view, self.draws, self.rs, self.terms = oracle, view, draws, rs, terms
        self._sel: np.ndarray | None = None  # the participants self.view holds
        self._held: np.ndarray | None = None  # the selection object last followed
        self.sizes: np.ndarray | None = None  # their sample counts (R, N)
        self._share = share_step_gradient
        self.step_view = view if view is None or not share_step_gradient else _StepGradient(view)

    def follow(self, problem: Problem, rs: RoundState, variant: np.ndarray):
        """Point the oracle at round ``rs``: the participants' view, gathered anew only when they change (a view
        is the selected clients' data, the same for the same clients). Returns the view; ``step_view`` is the same
        data for the per-step measures (with ``share_step_gradient``: the exact gradient at the local iterate they
        ask for is kept for the oracle's step, computed once)."""
        sel = rs.sel
        if sel is self._held and not sel.flags.writeable:  # the same read-only selection (every client)
            pass
        elif self._sel is None or sel.shape != self._sel.shape or not np.array_equal(sel, self._sel):
            self.view, self._sel = problem.view(sel, variant), np.array(sel)
            self.step_view = _StepGradient(self.view) if self._share else self.view
            self.sizes = problem.client_sizes[sel]
        self._held = sel
        self.rs = rs
        return self.view

    def grad(self, k: int, w: np.ndarray) -> np.ndarray:
        if self._share:  # the gradient the step measures took at w (if any), then forgotten: one step's lifetime
            g = self.oracle.grad(self.step_view, w, k, self.draws)
            self.step_view.forget()
        else:
            g = self.oracle.grad(self.view, w, k, self.draws)
        for tr in self.terms:
            g = g + tr.objective_grad(self.rs, w)
        return g

    def grad_at(self, k: int):
        return lambda x: self.grad(k, x)

    def prox(self, anchor: np.ndarray, mu) -> np.ndarray:
        """Each participant's exact proximal point argmin_x f_i(x) + (mu/2) ||x - anchor_i||^2 (R, N, d), through the
        view's ``prox``; exact gradients only, and no extra objective terms."""
        if not isinstance(self.oracle, Exact):
            raise ParameterError("oracle", type(self.oracle).__name__, "Exact() for an exact proximal solve")
        if self.terms:
            raise ParameterError("algorithm.local", [type(t).__name__ for t in self.terms],
                                 "no objective terms beside an exact proximal solve")
        return self.view.prox(anchor, np.asarray(mu, dtype=np.float64))

    def descend(self, w0: np.ndarray, lr, steps: int, direction_sum: bool = False):
        """The round's K plain local steps at once (the round protocol's ``LocalOracle.descend``), through the
        oracle's and the view's ``descend``; None where the local objective has extra terms, the step measures share
        the gradient, or the view has no such route."""
        if self.terms or self._share:
            return None
        return self.oracle.descend(self.view, w0, lr, steps, self.draws, direction_sum)


class _StepGradient:
    """A round's view whose exact gradient at the current local iterate is computed once per local step: the step
    measures take it before the step and the oracle finds it (the same array: the same bits as computing it twice).
    ``forget`` ends the step; every other attribute is the view's."""

    def __init__(self, view):
        self.view, self._w, self._g = view, None, None

    def __getattr__(self, name):
        return getattr(self.view, name)

    def grad(self, w):
        if w is not self._w:
            self._g, self._w = self.view.grad(w), w
        return self._g

    def forget(self) -> None:
        self._w = self._g = None
