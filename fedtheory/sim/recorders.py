"""How :func:`~fedtheory.sim.simulate` takes its measures while the runs advance: at the global model
(:func:`record_state_measures`), per round (:func:`record_round_measures`), as running maxima over the visited
points (:func:`record_visited_measures`), before every local step (:class:`StepMeasures`) and at the averaged iterate
of every local step (:class:`StepAverages`); and :class:`TrackGradients`, the plug-in that records the gradient norms
over the points the clients visit, added to any algorithm."""
from __future__ import annotations

from typing import Any

import numpy as np

from .config import StepWeights
from .rules import LocalTransform, RoundState, State

__all__ = ["StepAverages", "StepMeasures", "TrackGradients", "record_round_measures", "record_state_measures",
           "record_visited_measures"]


class TrackGradients(LocalTransform):
    """Leaves the direction unchanged; records two round measures (T, R) of ||grad f_k(w)||^2 (exact local
    gradients) over the points w the selected clients visit (every local iterate, the round's start and end points):

    * ``visited_client_grad2``: the per-round maximum, row t = round t alone;
    * ``visited_client_grad2_running``: the running maximum, row t = the maximum over rounds 0..t, i.e. over the
      whole trajectory up to the end of round t (what a statement "for t = 0..T-1, E||g_t||^2 <= G^2" needs at
      horizon T; its last row is the maximum over the whole run).

    It is the visited-region part of a bounded-gradient assumption such as Li et al.'s Assumption 4
    (E||g||^2 <= G^2 = this + sigma^2 for additive noise of variance sigma^2).

    Add it to any algorithm: ``dataclasses.replace(alg, local=(*alg.local, TrackGradients()))``.
    """

    name = "track_gradients"

    def setup(self, state: State, runs: int, n_clients: int, dim: int) -> None:
        state.server["track_gradients_running"] = np.zeros(runs)

    def round_start(self, rs: RoundState) -> None:
        rs.extra["visited_client_grad2"] = np.zeros(rs.sel.shape[0])

    def direction(self, rs: RoundState, g, w, grad_at):
        gn = np.sum(rs.view.grad(w) ** 2, axis=-1).max(axis=1)
        rs.extra["visited_client_grad2"] = np.maximum(rs.extra["visited_client_grad2"], gn)
        return g

    def measures(self) -> dict[str, str]:
        return {"visited_client_grad2": "per round: max over round t's local iterates (and its start and end "
                                        "points) and clients of ||grad f_k(w)||^2",
                "visited_client_grad2_running": "running maximum: max of visited_client_grad2 over rounds 0..t "
                                                "(the whole trajectory up to the end of round t)"}

    def measure(self, rs: RoundState) -> dict[str, Any]:
        g0 = np.sum(rs.view.grad(rs.w0) ** 2, axis=-1).max(axis=1)
        gK = np.sum(rs.view.grad(rs.wK) ** 2, axis=-1).max(axis=1)
        per_round = np.maximum(rs.extra["visited_client_grad2"], np.maximum(g0, gK))
        running = np.fmax(rs.state.server["track_gradients_running"], per_round)
        rs.state.server["track_gradients_running"] = running
        return {"visited_client_grad2": per_round, "visited_client_grad2_running": running}


class StepAverages:
    """The step measures: at every local step s = t K + k the averaged iterate xbar_s = mean over the round's
    participants of w_{i,k}^t, its uniform and weighted running averages (normalized updates, no weight sums), and
    f - f*, ||. - w*||^2, ||grad f||^2 at them. A round's K points are buffered and evaluated in one batched call
    per quantity (no loop over clients or runs)."""

    def __init__(self, problem, variant, measures, weights: StepWeights, R: int, K: int, d: int, f_star, w_star,
                 iterates):
        self.problem, self.variant, self.measures, self.weights = problem, variant, measures, weights
        self.R, self.f_star, self.w_star, self.iterates = R, f_star, w_star, iterates
        self.buffer = np.empty((K, R, d))
        self.s = 0  # the next step index
        self.xu = self.xw = None
        self.z = np.ones(R)  # S_s / w_s of the weighted average
        self.g_sum = np.zeros(R)  # sum of ||grad f(xbar_j)||^2 so far (step_grad_norm2_mean)
        self.kinds = {prefix for prefix in ("step", "avg", "wavg") if any(m.startswith(prefix + "_") for m in measures)}

    def before_step(self, k: int, wk: np.ndarray) -> None:
        self.buffer[k] = wk.mean(axis=1)

    def flush(self, rec, alive: np.ndarray, count: int | None = None) -> None:
        n = self.buffer.shape[0] if count is None else count
        xs = self.buffer[:n]
        s0 = self.s
        pts = {kind: np.empty_like(xs) for kind in self.kinds}
        for j in range(n):  # the running averages: a recursion over the steps, vectorized over runs
            x, s = xs[j], s0 + j
            if s == 0:
                self.xu, self.xw = x.copy(), x.copy()
            else:
                self.xu = self.xu + (x - self.xu) / (s + 1)
                self.z = 1.0 + self.z * self.weights.decay(s, self.R)
                self.xw = self.xw + (x - self.xw) / self.z[:, None]
            for kind, val in (("step", x), ("avg", self.xu), ("wavg", self.xw)):
                if kind in pts:
                    pts[kind][j] = val
        self.s = s0 + n
        if self.iterates is not None:
            self.iterates[s0:s0 + n] = np.where(alive[None, :, None], xs, np.nan)
        R, d = self.R, xs.shape[-1]
        var = np.tile(self.variant, n)
        # per-run minima and minimisers (R,) and (R, d) repeat with the n steps of the flat rows
        f_star = np.tile(self.f_star, n) if np.ndim(self.f_star) else self.f_star
        w_star = np.tile(self.w_star, (n, 1)) if np.ndim(self.w_star) == 2 else self.w_star
        for kind, P in pts.items():
            flat = P.reshape(n * R, d)
            vals = {}
            if f"{kind}_opt_error" in self.measures:
                vals["opt_error"] = self.problem.global_loss(flat, var) - f_star
            if f"{kind}_dist2" in self.measures:
                vals["dist2"] = np.sum((flat - w_star) ** 2, axis=1)
            if f"{kind}_grad_norm2" in self.measures or (kind == "step" and "step_grad_norm2_mean" in self.measures):
                vals["grad_norm2"] = np.sum(self.problem.global_grad(flat, var) ** 2, axis=1)
            if kind == "step" and "step_grad_norm2_mean" in self.measures:
                g = vals["grad_norm2"].reshape(n, R)
                total = self.g_sum + np.cumsum(g, axis=0)
                self.g_sum = total[-1]
                running_mean = total / (s0 + 1 + np.arange(n))[:, None]
                rec["step_grad_norm2_mean"][s0:s0 + n] = np.where(alive[None, :], running_mean, np.nan)
            for q, v in vals.items():
                if f"{kind}_{q}" in self.measures:
                    rec[f"{kind}_{q}"][s0:s0 + n] = np.where(alive[None, :], v.reshape(n, R), np.nan)


class StepMeasures:
    """Measures taken before every local step (V1, the exact-gradient sum, the largest ||w_{i,k} - w*||^2)."""

    def __init__(self, measures, state: State, R: int, N: int, d: int, w_star: np.ndarray | None = None):
        self.state, self.N = state, N
        self.v1 = np.zeros(R) if "V1" in measures else None
        self.gsum = np.zeros((R, d)) if "local_grad_sum2" in measures else None
        self.w_star = w_star
        self.dmax = np.zeros(R) if w_star is not None else None
        self.active = self.v1 is not None or self.gsum is not None or self.dmax is not None
        self.view = None

    def before_step(self, k: int, wk: np.ndarray) -> None:
        if self.dmax is not None:
            self.dmax = np.fmax(self.dmax, np.sum((wk - self.w_star) ** 2, axis=2).max(axis=1))
        if self.v1 is not None:
            self.v1 += np.sum((wk - self.state.w[:, None, :]) ** 2, axis=(1, 2)) / self.N
        if self.gsum is not None:
            self.gsum += self.view.grad(wk).sum(axis=1)


def _sum_last(x: np.ndarray) -> np.ndarray:
    """np.sum(x, axis=-1): the same reduction, without np.sum's Python layers (the engine calls it every round)."""
    return np.add.reduce(x, axis=-1)


def _mean_clients(x: np.ndarray) -> np.ndarray:
    """np.mean(x, axis=1): the same reduction and division."""
    return np.add.reduce(x, axis=1) / x.shape[1]


def record_state_measures(problem, state, variant, measures, rec, t, f_star, alive) -> None:
    w = state.w
    if "loss" in measures or "opt_error" in measures:
        f = problem.loss(w, variant)
        if "loss" in measures:
            rec["loss"][t] = np.where(alive, f, np.nan)
        if "opt_error" in measures:
            rec["opt_error"][t] = np.where(alive, f - f_star, np.nan)
    if "grad_norm2" in measures or "client_grad_norm2" in measures:
        G = problem.client_grads(w, variant)
        if "grad_norm2" in measures:
            rec["grad_norm2"][t] = np.where(alive, _sum_last(_mean_clients(G) ** 2), np.nan)
        if "client_grad_norm2" in measures:
            rec["client_grad_norm2"][t] = np.where(alive, _mean_clients(_sum_last(G**2)), np.nan)
    if "delta" in measures:
        diff = state.clients["last_local"] - w[:, None, :]
        rec["delta"][t] = np.where(alive, _mean_clients(_sum_last(diff**2)), np.nan)
    if "population" in measures or "gen_gap" in measures:
        F = problem.population_loss(w)
        if "population" in measures:
            rec["population"][t] = np.where(alive, F, np.nan)
        if "gen_gap" in measures:
            rec["gen_gap"][t] = np.where(alive, F - problem.loss(w, variant), np.nan)
    if "test_loss" in measures:
        rec["test_loss"][t] = np.where(alive, problem.test_loss(w), np.nan)


def record_round_measures(rs: RoundState, measures, rec, t, v1, gsum, alive) -> None:
    w, w1 = rs.state.w, rs.w_next
    put = lambda name, val: rec[name].__setitem__(t, np.where(alive, val, np.nan))
    if "delta_code" in measures:
        put("delta_code", _mean_clients(_sum_last((rs.wK - w1[:, None, :]) ** 2)))
    if "drift" in measures:
        put("drift", _mean_clients(_sum_last((rs.wK - w[:, None, :]) ** 2)))
    if "unbiased_gap" in measures:
        put("unbiased_gap", np.linalg.norm(rs.w0.mean(axis=1) - w, axis=1))
    if "init_offset" in measures:
        put("init_offset", np.linalg.norm(rs.w0 - w[:, None, :], axis=2).max(axis=1))
    if "client_deviation_max" in measures:
        put("client_deviation_max", np.linalg.norm(rs.wK - w1[:, None, :], axis=2).max(axis=1))
    if "V1" in measures:
        put("V1", v1)
    if "V2" in measures:
        put("V2", np.sum((w1 - w) ** 2, axis=1))
    if "local_grad_sum2" in measures:
        put("local_grad_sum2", np.sum(gsum**2, axis=1))


def record_visited_measures(problem, w, wK, variant, measures, rec, alive) -> None:
    """Running maxima over the visited points (global models and local end points) of per-sample
    loss, per-sample gradient norm and per-client gradient variance."""
    R, N, d = wK.shape
    pts = np.concatenate([w, wK.reshape(R * N, d)])
    var = np.concatenate([variant, np.repeat(variant, N)])
    gmax, gvar = problem.sample_grad_stats(pts, var)
    owner = np.concatenate([np.arange(R), np.repeat(np.arange(R), N)])
    stats = {"visited_max_grad": gmax, "visited_max_grad_var": gvar}
    if "visited_max_loss" in measures:
        stats["visited_max_loss"] = np.nanmax(problem.sample_losses(pts, var).reshape(len(pts), -1), axis=1)
    for name, vals in stats.items():
        if name in measures:
            per_run_max = np.full(R, -np.inf)
            np.maximum.at(per_run_max, owner, vals)
            cur = rec[name][0]
            rec[name][0] = np.where(alive, np.fmax(cur, per_run_max), cur)
