"""What a :func:`~fedtheory.sim.simulate` call is asked to run: :class:`RunConfig` (the run-level settings of a
batch: rounds, local steps, step sizes and their schedule, participation, the oracle) and :class:`StepWeights`
(the weights of the step measures' weighted running average)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import ParameterError, check_float, check_int, per_run
from .problems import Problem
from .rounds import StepSchedule
from .rules import Exact, Oracle

__all__ = ["RunConfig", "StepWeights"]


@dataclass(frozen=True)
class RunConfig:
    """Run-level settings shared by every run of a batch (shapes must agree), except ``lr``.

    lr_schedule: 'constant' (eta), 'inverse' (eta_t = lr / ((t+1) K): the c/tau schedule of
    seed 000 Thm 3 with c = lr, constant within a round and <= c/tau at every iteration tau),
    'exponential' (eta_t = lr * lr_decay**t), 'inverse_step' (a new step size at every local step:
    eta_tau = lr / (tau + lr_offset) with tau = t K + k + 1 the global step counter; Li et al.'s
    eta_tau = beta/(tau + gamma), which seed 004's Theorem 1 uses with lr = beta, lr_offset = gamma).

    step_origin: the index 'inverse_step' gives the first local step of round 0. 1 (the default): tau = t K + k + 1,
    for papers that count iterations t = 1, 2, ... (Li et al. 2020); 0: tau = t K + k, for papers that count
    t = 0, 1, ... (Stich 2019's eta_t = 4/(mu (a + t)) is lr = 4/mu, lr_offset = a, step_origin = 0; with the
    default origin the same schedule needs lr_offset = a - 1). With step_origin = 0, lr_offset must be > 0.

    Parameters
    ----------
    rounds : int
        T, the communication rounds (>= 1).
    local_steps : int
        K, the local steps per round (>= 1).
    lr : float or array_like
        The step size, or the schedule's numerator (> 0; one value per run allowed: a step-size grid runs as one
        batch).
    clients_per_round : int, optional
        N, the clients drawn uniformly without replacement each round (1..C); None: every client.
    oracle : Oracle, default Exact()
        How stochastic gradients are drawn (``Exact``, ``AdditiveNoise``, ``Minibatch``).
    lr_schedule : {"constant", "inverse", "exponential", "inverse_step"}, default "constant"
        The step-size schedule (above).
    lr_decay : float, default 1.0
        The factor per round of ``"exponential"``.
    lr_offset : float, default 0.0
        The offset of ``"inverse_step"`` (gamma).
    step_origin : {1, 0}, default 1
        The index ``"inverse_step"`` gives the first local step.
    divergence_threshold : float, default 1e6
        A run whose ||w||_inf exceeds this times max(1, ||w0||_inf), or turns non-finite, has diverged: its later
        entries are NaN.
    """

    rounds: int
    local_steps: int
    lr: Any  # scalar or (R,)
    clients_per_round: int | None = None  # None: every client
    oracle: Oracle = field(default_factory=Exact)
    lr_schedule: str = "constant"
    lr_decay: float = 1.0
    lr_offset: float = 0.0  # gamma of the 'inverse_step' schedule
    step_origin: int = 1  # 'inverse_step': the first local step's index tau (1: tau = tK + k + 1; 0: tau = tK + k)
    divergence_threshold: float = 1e6  # ||w||_inf beyond this times max(1, ||w0||_inf), or non-finite: diverged

    def validated(self, problem: Problem, runs: int) -> "RunConfig":
        check_int("rounds", self.rounds, 1)
        check_int("local_steps", self.local_steps, 1)
        check_float("lr", self.lr, 0.0, low_inclusive=False, size=runs)
        if self.clients_per_round is not None:
            check_int("clients_per_round", self.clients_per_round, 1, problem.n_clients)
        self.schedule()  # validates lr_schedule, lr_decay, lr_offset
        check_float("divergence_threshold", self.divergence_threshold, 0.0, low_inclusive=False)
        if not isinstance(self.oracle, Oracle):
            raise ParameterError("oracle", self.oracle, "an Oracle (Exact(), AdditiveNoise(sigma2), Minibatch(b))")
        return self

    def schedule(self) -> StepSchedule:
        """The step-size schedule (shared with the torch trainer)."""
        return StepSchedule(self.lr_schedule, self.local_steps, self.lr_decay, self.lr_offset, self.step_origin)

    def lr_at(self, t: int, lr: np.ndarray) -> np.ndarray:
        return self.schedule().at_round(t, lr)

    def lr_at_step(self, t: int, k: int, lr: np.ndarray) -> np.ndarray:
        """The step size of local step k of round t (differs from lr_at only for 'inverse_step')."""
        return self.schedule().at_step(t, k, lr)


@dataclass(frozen=True)
class StepWeights:
    """The weights of the weighted running average of the averaged iterates (the measures wavg_*):
    w_s = ratio**s * (offset + s)**power at local step s = 0, 1, ... (s = t K + k).

    power=0, ratio=1 (the default): uniform; power=1: linear, power=2: quadratic (Stich 2019's w_t = (a + t)^2 is
    StepWeights(power=2, offset=a)); ratio > 1: geometric (e.g. (1 - mu eta)^{-s} is ratio = 1/(1 - mu eta)).
    offset: a scalar or one value per run (> 0 when power > 0, so that w_0 > 0). The average is updated in
    normalized form (no sum of weights is formed), so geometric weights do not overflow.

    Parameters
    ----------
    power : float, default 0.0
        The polynomial power p of w_s (>= 0).
    offset : float or array_like, default 1.0
        a in (a + s)^p (one value per run allowed).
    ratio : float, default 1.0
        The geometric ratio r of w_s (> 0).
    """

    power: float = 0.0
    offset: Any = 1.0
    ratio: float = 1.0

    def validated(self, runs: int) -> "StepWeights":
        check_float("step_weights.power", self.power, 0.0)
        check_float("step_weights.ratio", self.ratio, 0.0, low_inclusive=False)
        low_ok = self.power == 0
        check_float("step_weights.offset", self.offset, 0.0, low_inclusive=low_ok, size=runs)
        return self

    def decay(self, s: int, runs: int) -> np.ndarray:
        """w_{s-1} / w_s for s >= 1, per run (R,)."""
        a = per_run(self.offset, runs)
        out = np.full(runs, 1.0 / self.ratio)
        if self.power:
            out = out * ((a + s - 1) / (a + s)) ** self.power
        return out

    def describe(self) -> dict[str, Any]:
        off = np.asarray(self.offset, dtype=float)
        return {"power": float(self.power), "offset": off.tolist() if off.ndim else float(off),
                "ratio": float(self.ratio)}
