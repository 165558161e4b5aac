"""One federated round, written once for numpy (``sim.engine.simulate``) and torch (``empirical.trainer``).

The protocol, in order: participants -> anchor -> the round's random draws (the backend's local oracle) ->
plug-ins' ``round_start`` -> initialisation -> K local steps (oracle gradient, then the local transform chain,
then ``w <- w - lr g``) -> compression -> combination (communication + aggregation) -> plug-ins' ``round_end``.
A backend supplies only what differs: the gradient oracle (exact/noisy gradients of a problem, or a network's
minibatch gradients) and the arrays. Measures and divergence handling stay with the caller.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from .._validation import ParameterError, check_choice, check_float, check_int
from .backend import ops
from .rules import Plugin, RoundState, State, every_client

__all__ = ["LocalOracle", "StepSchedule", "SCHEDULES", "commit_round", "divergence_flags", "park_runs", "run_round",
           "versions"]

SCHEDULES = ("constant", "inverse", "exponential", "inverse_step")


@dataclass(frozen=True)
class StepSchedule:
    """The local step size of round t (and, for 'inverse_step', of local step k), from per-run base sizes lr.

    constant: lr; inverse: lr / ((t+1) K) (seed 000 Thm 3's c/tau, constant within a round); exponential:
    lr * decay**t; inverse_step: lr / (t K + k + origin + offset) (Li et al.'s eta_tau = beta/(tau + gamma) with
    origin 1, the default; origin 0 for papers whose first step is t = 0, e.g. Stich 2019's 4/(mu (a + t))).
    """

    kind: str = "constant"
    local_steps: int = 1
    decay: float = 1.0
    offset: float = 0.0
    origin: int = 1

    def __post_init__(self):
        check_choice("lr_schedule", self.kind, SCHEDULES)
        check_float("lr_decay", self.decay, 0.0, 1.0, low_inclusive=False)
        check_float("lr_offset", self.offset, 0.0)
        check_int("step_origin", self.origin, 0, 1)
        if self.kind == "inverse_step" and self.origin == 0 and not self.offset > 0:
            raise ParameterError("lr_offset", self.offset,
                                 "> 0 with step_origin = 0 (the first step is lr / lr_offset)")

    @property
    def per_step(self) -> bool:
        """Whether the step size changes within a round."""
        return self.kind == "inverse_step"

    def at_round(self, t: int, lr: np.ndarray) -> np.ndarray:
        if self.kind == "constant":
            return lr
        if self.kind == "inverse":
            return lr / ((t + 1) * self.local_steps)
        if self.kind == "inverse_step":
            return self.at_step(t, 0, lr)
        return lr * self.decay**t

    def at_step(self, t: int, k: int, lr: np.ndarray) -> np.ndarray:
        if self.kind == "inverse_step":
            return lr / (t * self.local_steps + k + self.origin + self.offset)
        return self.at_round(t, lr)


class LocalOracle(Protocol):
    """The gradients of one round's local steps, for the participating clients of every run.

    ``grad(k, w)`` is the direction the local step k starts from at the local models w (R, N, d): the
    stochastic gradient of the client objective (plus any objective terms). ``grad_at(k)`` is the same oracle
    as a function of the point, with step k's randomness fixed (e.g. SAM's second gradient).

    An oracle may also offer ``descend(w0, lr, K, direction_sum) -> (w_K, direction sum or None) | None``: the K
    plain steps w <- w - lr grad(k, w) at once, with the loop's rounding of every elementwise operation (the sim
    backend's exact and noisy gradients of least squares). ``run_round`` uses it when nothing acts between the
    steps (no local transform, no per-step step size, no per-step hook); None: step by step.

    And ``prox(anchor, mu) -> argmin_x f_i(x) + (mu/2) ||x - anchor_i||^2`` per participant (an exact proximal solve,
    for ``ProximalSolve``); the round's oracle is ``rs.oracle``.
    """

    def grad(self, k: int, w: Any) -> Any: ...

    def grad_at(self, k: int) -> Callable[[Any], Any]: ...


def run_round(algorithm, state: State, streams, t: int, *, n_runs: int, n_clients: int, per_round: int,
              local_steps: int, lr: Any, make_oracle: Callable[[RoundState], LocalOracle], view: Any = None,
              step_lr: Callable[[int], Any] | None = None, hooked: Sequence[Plugin] | None = None,
              before_step: Callable[[int, Any], None] | None = None, writable_sel: bool = False,
              direction_sum: bool | None = None) -> RoundState:
    """Run round t of ``algorithm`` on every run at once and return its RoundState (w0, wK, sent, w_next set).

    lr: the round's step size (R, 1, 1); step_lr(k): local step k's, where the schedule changes within a round
    (plug-ins reading ``rs.lr`` after the local steps see the last step's). make_oracle(rs) draws the round's
    randomness after the participants (the order fixes the random streams). hooked: the plug-ins whose
    round_start/round_end run (default: all). before_step(k, w): the caller's per-step measurements.
    writable_sel: copy the participants into a writable int64 array (torch tensors are made from it).
    direction_sum: keep rs.extra['direction_sum'] (default: when a plug-in ``needs_direction_sum``).
    The state is not changed; ``commit_round`` applies the round.
    """
    comm = algorithm.comm
    sel = comm.participants(streams, n_runs, n_clients, per_round)
    if writable_sel:
        sel = np.array(sel, dtype=np.int64)
    anchor = comm.anchor(state, sel)
    rs = RoundState(t=t, K=local_steps, sel=sel, anchor=anchor, lr=lr, view=view, state=state, streams=streams)
    oracle = rs.oracle = make_oracle(rs)
    plugins = algorithm.plugins() if hooked is None else hooked
    for p in plugins:
        p.round_start(rs)
    rs.w0 = algorithm.init.init(rs)
    wk = rs.w0
    local = algorithm.local
    if direction_sum is None:
        direction_sum = any(p.needs_direction_sum for p in algorithm.plugins())
    descend = getattr(oracle, "descend", None)
    steps = None if local or step_lr is not None or before_step is not None or descend is None else \
        descend(wk, rs.lr, local_steps, direction_sum)
    if steps is not None:  # the K plain steps at once
        wk, dsum = steps
    else:
        xp = ops(wk)
        dsum = xp.zeros(tuple(wk.shape), like=wk) if direction_sum else None
        for k in range(local_steps):
            if step_lr is not None:
                rs.lr = step_lr(k)
            if before_step is not None:
                before_step(k, wk)
            g = oracle.grad(k, wk)
            if local:
                grad_at = oracle.grad_at(k)
                for tr in local:
                    g = tr.direction(rs, g, wk, grad_at)
            if dsum is not None:
                dsum += g
            wk = xp.sgd_step(wk, rs.lr, g)
    rs.wK = wk
    if dsum is not None:
        rs.extra["direction_sum"] = dsum
    rs.sent = algorithm.compress.compress(rs) if algorithm.compress is not None else rs.wK
    rs.w_next = comm.combine(rs, algorithm.aggregate)
    for p in plugins:
        p.round_end(rs)
    return rs


def commit_round(state: State, rs: RoundState) -> None:
    """Apply a round: each participant's latest local model becomes its ``last_local``; w <- w_next."""
    arr, sel = state.clients["last_local"], rs.sel
    if sel is every_client(arr.shape[0], arr.shape[1]) or (
            sel.shape[1] == arr.shape[1] and (np.asarray(sel) == np.arange(arr.shape[1])).all()):
        arr[...] = rs.wK  # every client, in order
    else:
        ops(arr).put_clients(arr, sel, rs.wK)
    state.w = rs.w_next


def divergence_flags(w: Any, wK: Any, threshold: Any) -> tuple[np.ndarray, np.ndarray]:
    """(global model ok, local end points ok) per run: finite and ||.||_inf <= threshold (a number, or one per run
    for the numpy engine)."""
    xp = ops(w)
    return xp.finite_and_bounded(w, threshold), xp.finite_and_bounded(wK, threshold)


def park_runs(state: State, dead: np.ndarray, w0: Any) -> None:
    """Park diverged runs at w0 (server state and client state zeroed, last_local = w0) so the batch's arithmetic
    stays finite; the caller keeps their measures NaN."""
    xp = ops(state.w)
    mask = xp.run_mask(dead, like=state.w)
    start = w0 if tuple(w0.shape) == tuple(state.w.shape) else xp.broadcast_to(w0, tuple(state.w.shape))
    state.w[mask] = start[mask]
    for arr in state.server.values():
        if xp.is_array(arr):
            arr[mask] = 0
    for key, arr in state.clients.items():
        if xp.is_array(arr):
            arr[mask] = start[mask][:, None, :] if key == "last_local" else 0


def versions() -> dict[str, str]:
    """The library versions a result depends on (the numpy side; the torch trainer adds its own)."""
    import platform

    import scipy
    import sympy

    from .. import __version__

    return {"fedtheory": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "sympy": sympy.__version__}
