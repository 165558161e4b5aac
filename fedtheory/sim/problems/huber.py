"""Huber regression, f(w; (x, y)) = huber_delta(x.w - y) with huber_delta(r) = r^2/2 for |r| <= delta and
delta (|r| - delta/2) beyond: convex, smooth, and with gradients bounded at every w (the derivative of the loss is
clip(r, -delta, delta)). The problem family of theorems that assume bounded gradients (decentralized gradient
descent's consensus bound, Yuan, Ling & Yin 2016), where least squares and logistic regression with an L2 term
certify them only on the region a run visited.

Exact or bounded constants: the per-sample Lipschitz constant delta max_j ||x_j|| (exact: attained far from the
data), each client's gradient bound delta (1/S) sum_j ||x_j|| (a bound), L = max_i lambda_max(X_i'X_i/S) (a bound:
the loss's curvature is 1 inside the kink, 0 beyond); w* and f* are computed (L-BFGS to a stated gradient norm), and
the problem is convex but neither strongly convex nor PL (the loss is linear far from the data).
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from ..._validation import ParameterError, check_finite, check_float, check_int, check_random_state
from ..certificates import Certificate, certified, refused
from .base import ClientView, Constant, Problem, gather, sample_rows

__all__ = ["HuberProblem", "huber_regression", "opposed_huber"]


def _psi(r: np.ndarray, delta: float) -> np.ndarray:
    """huber_delta'(r) = clip(r, -delta, delta)."""
    return np.clip(r, -delta, delta)


def _huber(r: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def _minimise_huber(X: np.ndarray, y: np.ndarray, kink: float) -> tuple[np.ndarray, float, float]:
    """(w*, f*, the final ||grad||) of (1/n) sum_j huber_kink(x_j . w - y_j) over the rows X (n, d), y (n,): L-BFGS
    from the least-squares fit."""
    import scipy.optimize  # here, not at import (start-up of `fedtheory list`)

    n = len(y)

    def fun(w):
        r = X @ w - y
        return float(_huber(r, kink).sum() / n), X.T @ _psi(r, kink) / n

    w0 = np.linalg.lstsq(X, y, rcond=None)[0]
    res = scipy.optimize.minimize(fun, w0, jac=True, method="L-BFGS-B",
                                  options={"gtol": 1e-13, "ftol": 1e-15, "maxiter": 20000})
    w = res.x
    f, g = fun(w)
    return w, f, float(np.linalg.norm(g))


class _HuberView(ClientView):
    def __init__(self, p: "HuberProblem", clients, variant):
        self.p, self.clients, self.variant = p, clients, variant
        self.X = gather(p.X, variant, clients)  # (R,N,S,d)
        self.y = gather(p.y, variant, clients)  # (R,N,S)
        self.delta = p._kink(variant)[:, None, None] if p.deltas is not None else p.delta  # (R,1,1): each run's kink

    def _r(self, w):
        return np.einsum("rnsd,rnd->rns", self.X, w) - self.y

    def grad(self, w):
        return np.einsum("rnsd,rns->rnd", self.X, _psi(self._r(w), self.delta)) / self.X.shape[2]

    def loss(self, w):
        return _huber(self._r(w), self.delta).mean(axis=-1)

    def grad_batch(self, w, idx):
        rows = sample_rows(self.p.X, self.variant, self.clients, idx)
        Xb = np.take(self.p.X.reshape(-1, self.p.dim), rows, axis=0)  # (R,N,b,d)
        yb = np.take(self.p.y.reshape(-1), rows)
        r = np.einsum("rnbd,rnd->rnb", Xb, w) - yb
        return np.einsum("rnbd,rnb->rnd", Xb, _psi(r, self.delta)) / idx.shape[-1]


class HuberProblem(Problem):
    """Federated Huber regression: f_i(w) = (1/S) sum_j huber_delta(x_ij . w - y_ij), f = (1/C) sum_i f_i.

    X: (C, S, d) or (V, C, S, d); y: (C, S) or (V, C, S); delta > 0 the kink, one for every variant or one per
    variant (V,) (a worst-case search's instances: ``fedtheory.worst.HuberClass``); ``delta`` is variant 0's, the
    certificates' (which describe variant 0, as every family's). Every client holds S samples.

    Parameters
    ----------
    X : numpy.ndarray
        The features, (C, S, d) or (V, C, S, d).
    y : numpy.ndarray
        The targets, (C, S) or (V, C, S).
    delta : float or array_like, default 1.0
        The kink (> 0), or one per data variant.
    name : str, default "huber"
        The problem's name.

    Raises
    ------
    ParameterError
        For non-finite data, arrays of other shapes, or a kink <= 0.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, *, delta: Any = 1.0, name: str = "huber"):
        X, y = check_finite("X", X), check_finite("y", y)
        if X.ndim == 3:
            X, y = X[None], y[None]
        if X.ndim != 4 or y.shape != X.shape[:3]:
            raise ParameterError("X", X.shape, "an array (clients, samples, dim) or (variants, clients, samples, dim)")
        self.X, self.y = X, y
        self.name = name
        self.n_variants, self.n_clients, S, self.dim = X.shape
        if np.ndim(delta) == 0:
            self.delta, self.deltas = check_float("delta", delta, 0.0, low_inclusive=False), None
        else:
            d = check_finite("delta", delta)
            if d.shape != (self.n_variants,) or not np.all(d > 0):
                raise ParameterError("delta", d.shape if d.shape != (self.n_variants,) else float(d.min()),
                                     f"a kink > 0, or one per data variant ({self.n_variants},), each > 0")
            self.delta, self.deltas = float(d[0]), d
        self.client_sizes = np.full(self.n_clients, S)

    def view(self, clients, variant):
        return _HuberView(self, clients, variant)

    def _kink(self, variant: np.ndarray) -> Any:
        """The kink of each run's variant, (R,), or the one kink of every variant."""
        return self.delta if self.deltas is None else self.deltas[np.asarray(variant)]

    def sample_losses(self, w, variant=None):
        v = self._variant(w, variant)
        k = self._kink(v)
        return _huber(np.einsum("rcsd,rd->rcs", self.X[v], w) - self.y[v], k if np.ndim(k) == 0 else k[:, None, None])

    def sample_grad_stats(self, w, variant=None):
        v = self._variant(w, variant)
        X = self.X[v]
        k = self._kink(v)
        g = X * _psi(np.einsum("rcsd,rd->rcs", X, w) - self.y[v], k if np.ndim(k) == 0 else k[:, None, None])[..., None]
        var = np.mean(np.sum((g - g.mean(axis=2, keepdims=True)) ** 2, axis=-1), axis=2)
        return np.linalg.norm(g, axis=-1).max(axis=(1, 2)), var.max(axis=1)

    def sample_smoothness(self) -> Constant:
        return Constant(float(np.max(np.sum(self.X ** 2, axis=-1))), "bound",
                        "max_ij ||x_ij||^2: huber'' <= 1 (= 1 inside the kink)")

    def client_sample_variances(self, w):
        X = self.X[0]
        g = X * _psi(X @ np.asarray(w, dtype=float)[0] - self.y[0], self.delta)[..., None]
        return np.mean(np.sum((g - g.mean(axis=1, keepdims=True)) ** 2, axis=-1), axis=1)

    @cached_property
    def _gradient_bounds(self) -> np.ndarray:
        """b_i = delta (1/S) sum_j ||x_ij||: ||grad f_i(w)|| <= b_i at every w (triangle inequality)."""
        return self.delta * np.linalg.norm(self.X[0], axis=-1).mean(axis=1)

    @cached_property
    def _constants(self) -> dict[str, Constant]:
        S = self.X.shape[2]
        lam = np.linalg.eigvalsh(np.einsum("vcsd,vcse->vcde", self.X, self.X) / S)[..., -1]
        w, f, gn = self._minimise(0)
        return {
            "L": Constant(float(lam.max()), "bound", "max_i lambda_max(X_i'X_i/S): huber'' <= 1 (= 1 inside the kink)"),
            "mu": Constant(0.0, "exact", "not strongly convex: the loss is linear beyond the kink"),
            "strongly_convex": Constant(False, "exact"),
            "w_star": Constant(w, "computed", f"L-BFGS, final ||grad f|| = {gn:.1e}"),
            "f_star": Constant(f, "computed", f"L-BFGS, final ||grad f|| = {gn:.1e}"),
        }

    def _minimise(self, variant: int) -> tuple[np.ndarray, float, float]:
        """(w*, f*, the final ||grad f||) of variant ``variant``'s objective by L-BFGS from the least-squares fit."""
        kink = float(self._kink(np.array([variant]))[0]) if self.deltas is not None else self.delta
        return _minimise_huber(self.X[variant].reshape(-1, self.dim), self.y[variant].reshape(-1), kink)

    def _variant_optimum(self, variant: int) -> tuple[np.ndarray, float]:
        w, f, _ = self._minimise(variant)
        return w, f

    @cached_property
    def _client_curvature(self):
        S = self.X.shape[2]
        lam = np.linalg.eigvalsh(np.einsum("vcsd,vcse->vcde", self.X, self.X) / S)[..., -1].max(axis=0)
        return {"L_clients": Constant(lam, "bound", "lambda_max(X_i'X_i/S) (huber'' <= 1)"),
                "mu_clients": Constant(np.zeros(self.n_clients), "exact", "0: each f_i is convex, not strongly")}

    @cached_property
    def _client_minima(self):
        """Each client's minimiser and minimum (variant 0): f_i is convex and bounded below by 0, so its minimum is
        attained (a minimiser need not be unique when X_i has a null space: L-BFGS from the least-squares fit gives
        one)."""
        found = [_minimise_huber(self.X[0, i], self.y[0, i], self.delta) for i in range(self.n_clients)]
        W = np.stack([w for w, _, _ in found])
        F = np.array([f for _, f, _ in found])
        how = ("L-BFGS per client from its least-squares fit, final max_i ||grad f_i|| = "
               f"{max(g for *_, g in found):.1e}")
        return {"w_star_clients": Constant(W, "computed", how), "f_star_clients": Constant(F, "computed", how)}

    def sample_gradient_variance(self) -> Constant:
        sq = np.max(np.mean(np.sum(self.X[0] ** 2, axis=-1), axis=1))
        return Constant(float(self.delta**2 * sq), "bound", "max_i delta^2 (1/S) sum_j ||x_ij||^2: the variance is at "
                                                            "most the second moment, and |huber'| <= delta")

    def _certify(self, name: str, visited=None) -> Certificate | None:
        c = self.constants
        b = self._gradient_bounds
        not_pl = ("the Huber loss is linear beyond its kink: far from w*, f grows linearly while ||grad f|| stays "
                  "bounded, so no mu > 0 satisfies the inequality")
        if name in ("L_smooth", "L_smooth_global"):
            return certified(name, c["L"].note, kind="bound", L=c["L"].value)
        if name in ("convex", "convex_global"):
            return certified(name, "the Huber loss of an affine function of w is convex")
        if name in ("strongly_convex", "strongly_convex_clients", "PL"):
            return refused(name, not_pl)
        if name == "lower_bounded":
            return certified(name, c["f_star"].note, kind="computed", f_star=c["f_star"].value)
        if name == "bounded_grad_norm":
            return certified(name, "max_i delta (1/S) sum_j ||x_ij|| (|huber'| <= delta; the triangle inequality)",
                             kind="bound", G=float(b.max()))
        if name == "lipschitz":
            kinks = np.full(self.n_variants, self.delta) if self.deltas is None else self.deltas
            lg = float(np.max(kinks * np.linalg.norm(self.X, axis=-1).max(axis=(1, 2))))  # over all variants, as L
            return certified(name, "delta max_ij ||x_ij||, attained where |x.w - y| >= delta", L_G=lg)
        if name == "nonnegative_loss":
            return self._visited_loss_range(name, visited)
        how = "||grad f_i|| <= b_i = delta mean_j ||x_ij|| at every w"
        if name == "heterogeneity":
            return certified(name, how + ": mean_i ||grad f_i||^2 <= ||grad f||^2 + mean_i b_i^2 for B = 1 (the "
                                         "variance identity), so G^2 = mean_i b_i^2 for every B >= 1", kind="bound",
                             B=1.0, family=("G", lambda B: np.where(np.asarray(B, float) >= 1.0,
                                                                    np.sqrt(np.mean(b ** 2)), np.inf)))
        if name == "heterogeneity_global":
            return certified(name, how + ": mean_i ||g_i - mean g||^2 <= mean_i ||g_i||^2 <= mean_i b_i^2",
                             kind="bound", sigma_g=float(np.sqrt(np.mean(b ** 2))))
        if name == "heterogeneity_max":
            return certified(name, how + ": ||g_i - mean g|| <= b_i + mean_q b_q", kind="bound",
                             zeta=float(np.max(b + b.mean())))
        if name == "heterogeneity_at_optimum":
            g = self.client_grads(np.asarray(c["w_star"].value)[None], np.zeros(1, dtype=np.int64))[0]
            return certified(name, f"(1/C) sum_i ||grad f_i(w*)||^2 at w* ({c['w_star'].note})", kind="computed",
                             zeta_star=float(np.sqrt(np.mean(np.sum(g ** 2, axis=1)))))
        return super()._certify(name, visited)


def huber_regression(n_clients: int = 10, dim: int = 5, samples_per_client: int = 20, *, delta: float = 1.0,
                     heterogeneity: float = 1.0, noise_std: float = 0.5, random_state=0) -> HuberProblem:
    """Client i: x ~ N(m_i, I), y = x.w_i + noise; ``heterogeneity`` scales the spread of m_i and w_i.

    Convex, with gradients bounded at every w: the family for theorems that assume bounded gradients.

    Parameters
    ----------
    n_clients : int, default 10
        C, the number of clients (>= 1).
    dim : int, default 5
        d, the dimension (>= 1).
    samples_per_client : int, default 20
        S, the samples of each client (>= 1).
    delta : float, default 1.0
        The Huber kink (> 0).
    heterogeneity : float, default 1.0
        The spread of the clients' feature means and true models (>= 0).
    noise_std : float, default 0.5
        The target noise's standard deviation (>= 0).
    random_state : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The draw's seed (``check_random_state``): the same seed, the same problem.

    Returns
    -------
    HuberProblem
        Named ``huber_regression``.
    """
    n_clients = check_int("n_clients", n_clients, 1)
    dim = check_int("dim", dim, 1)
    S = check_int("samples_per_client", samples_per_client, 1)
    heterogeneity = check_float("heterogeneity", heterogeneity, 0.0)
    noise_std = check_float("noise_std", noise_std, 0.0)
    rng = check_random_state(random_state)
    means = heterogeneity * 0.5 * rng.standard_normal((n_clients, dim))
    w_true = (rng.standard_normal(dim) / np.sqrt(dim)
              + heterogeneity * rng.standard_normal((n_clients, dim)) / np.sqrt(dim))
    X = means[:, None, :] + rng.standard_normal((n_clients, S, dim))
    y = np.einsum("csd,cd->cs", X, w_true) + noise_std * rng.standard_normal((n_clients, S))
    return HuberProblem(X, y, delta=delta, name="huber_regression")


def opposed_huber(n_agents: int = 16, dim: int = 1, *, delta: float = 1.0, target: float = 10.0) -> HuberProblem:
    """One agent's Huber loss opposed to the others': agent 0 pulls w towards +target, the other n - 1 towards
    -target, one sample each (x = e_1 in R^dim): every gradient norm is at most delta, and at the consensus optimum
    the agents' gradients are as far apart as the kink allows (the extreme case of a bounded-gradient consensus
    bound).

    Parameters
    ----------
    n_agents : int, default 16
        The number of agents (>= 2).
    dim : int, default 1
        The dimension (>= 1; only the first coordinate is used).
    delta : float, default 1.0
        The Huber kink (> 0).
    target : float, default 10.0
        How far the agents' targets lie from 0 (> 0).

    Returns
    -------
    HuberProblem
        Named ``opposed_huber``.
    """
    n_agents = check_int("n_agents", n_agents, 2)
    dim = check_int("dim", dim, 1)
    target = check_float("target", target, 0.0, low_inclusive=False)
    X = np.zeros((n_agents, 1, dim))
    X[:, 0, 0] = 1.0
    y = np.full((n_agents, 1), -target)
    y[0, 0] = target
    return HuberProblem(X, y, delta=delta, name="opposed_huber")
