"""Non-convex problems whose global objective is PL, with exact constants: ``pl_nonconvex``,
f(w; z) = sum_j (w_j^2 + 3 sin^2 w_j) + z.w with client data centred so that sum_i h_i = 0, and the separable family
f_i(w) = sum_j c_j (w_j^2 + a_j sin^2 w_j) + h_i.w (``pl_nonconvex``: c = 1, a = 3), with the 1-D minimisations
that give their PL constants and client minima."""
from __future__ import annotations

from functools import cached_property

import numpy as np

from ..._validation import ParameterError, check_finite, check_float, check_int, check_random_state
from ..certificates import Certificate, certified, refused
from .base import ClientView, Constant, Problem, gather, sample_rows

__all__ = ["AMPLITUDE_MAX", "PLNonconvexProblem", "SeparablePLProblem", "linear_shift_G2", "pl_nonconvex", "pl_ratio",
           "pl_ratio_infimum"]


# ------------------------------------------------------------------------------------ PL non-convex
# f(w; z) = sum_j (w_j^2 + 3 sin^2 w_j) + z.w, client data centred so sum_i h_i = 0


def pl_ratio(x):
    """g'(x)^2 / (2 g(x)) for g = x^2 + 3 sin^2 x (each entry of x != 0): its infimum is g's PL constant."""
    g = x**2 + 3 * np.sin(x) ** 2
    dg = 2 * x + 3 * np.sin(2 * x)
    return dg**2 / (2 * g)


def _tightest_pl_constant() -> float:
    """inf_x g'(x)^2 / (2 g(x)) for g = x^2 + 3 sin^2 x (Karimi et al. 2016 give 1/32 as a valid mu).

    The ratio tends to 8 at 0 and to 2 at infinity; the infimum is interior. Grid + bounded
    scalar minimisation to 1e-12.
    """
    import scipy.optimize  # here, not at import (start-up of `fedtheory list`)

    xs = np.linspace(1e-3, 20.0, 200_001)
    x0 = xs[np.argmin(pl_ratio(xs))]
    res = scipy.optimize.minimize_scalar(pl_ratio, bounds=(x0 - 1e-3, x0 + 1e-3), method="bounded",
                                         options={"xatol": 1e-12})
    return float(res.fun)


_PL_C = 0.5 * np.arccos(-1.0 / 3.0)  # 2 + 6 cos 2x > 0 exactly on the pieces |x - pi k| < _PL_C
_PL_PSI = 2 * _PL_C + 3 * np.sin(2 * _PL_C)  # psi(x) = 2x + 3 sin 2x at the right end of piece 0


def _pl_coordinate_minimisers(h: np.ndarray) -> np.ndarray:
    """argmin_x x^2 + 3 sin^2 x + a x for every entry a of h (same shape).

    Local minima are roots of psi(x) = 2x + 3 sin 2x = -a on the pieces where psi increases,
    [pi k - c, pi k + c]; psi maps piece k onto [2 pi k - psi(c), 2 pi k + psi(c)], so at most two
    pieces (k0, k0 + 1) hold a root. Bisect on each (psi is monotone there), keep the lower value.
    """
    a = np.asarray(h, dtype=np.float64)
    k0 = np.ceil((-a - _PL_PSI) / (2 * np.pi))
    best_x, best_v = np.zeros_like(a), np.full(a.shape, np.inf)
    phi = lambda x: x**2 + 3 * np.sin(x) ** 2 + a * x
    dphi = lambda x: 2 * x + 3 * np.sin(2 * x) + a
    for k in (k0, k0 + 1):
        lo, hi = np.pi * k - _PL_C, np.pi * k + _PL_C
        ok = (dphi(lo) <= 0) & (dphi(hi) >= 0)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            up = dphi(mid) > 0
            hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
        x = 0.5 * (lo + hi)
        v = np.where(ok, phi(x), np.inf)
        better = v < best_v
        best_x, best_v = np.where(better, x, best_x), np.where(better, v, best_v)
    return best_x


def _separable_coordinate_minimisers(b: np.ndarray, a: np.ndarray) -> np.ndarray:
    """argmin_x x^2 + a sin^2 x + b x for every entry (b, a broadcast; each a in [0, AMPLITUDE_MAX]).

    The minimiser lies within sqrt(a) of -b/2 (the function is between x^2 + b x and x^2 + b x + a) and on a piece
    where psi(x) = 2x + a sin 2x increases: everywhere for a <= 1, else |x - pi k| <= c, cos 2c = -1/a. On each of
    the (at most three) pieces that meet that interval, psi + b is monotone: bisect to machine precision, keep the
    lowest value (``_pl_coordinate_minimisers`` is the case a = 3)."""
    b, a = np.broadcast_arrays(np.asarray(b, dtype=np.float64), np.asarray(a, dtype=np.float64))
    c = np.where(a <= 1.0, np.pi / 2, 0.5 * np.arccos(-1.0 / np.maximum(a, 1.0)))
    lo_all, hi_all = -b / 2 - np.sqrt(a), -b / 2 + np.sqrt(a)
    phi = lambda x: x**2 + a * np.sin(x) ** 2 + b * x  # noqa: E731
    dphi = lambda x: 2 * x + a * np.sin(2 * x) + b  # noqa: E731
    k_first = np.ceil((lo_all - c) / np.pi)
    best_x, best_v = -b / 2, np.full(b.shape, np.inf)
    for j in range(int(np.max(np.floor((hi_all + c) / np.pi) - k_first, initial=0)) + 1):
        k = k_first + j
        lo, hi = np.maximum(np.pi * k - c, lo_all), np.minimum(np.pi * k + c, hi_all)
        ok = (lo <= hi) & (dphi(lo) <= 0) & (dphi(hi) >= 0)
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            up = dphi(mid) > 0
            hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
        x = 0.5 * (lo + hi)
        v = np.where(ok, phi(x), np.inf)
        better = v < best_v
        best_x, best_v = np.where(better, x, best_x), np.where(better, v, best_v)
    return best_x


def linear_shift_G2(h: np.ndarray, B: float) -> Constant:
    """Assumption 3's G^2 at ``B`` for clients f_i = g + h_i.w with sum_i h_i = 0 (h: (C, d)): for every w,
    (1/C) sum_i ||grad f_i||^2 = ||grad f||^2 + (1/C) sum_i ||h_i||^2, so G^2 = (1/C) sum_i ||h_i||^2 for any B >= 1."""
    B = check_float("B", B, 0.0, low_inclusive=False)
    if B < 1.0:
        return Constant(np.inf, "exact", "B < 1 is never valid (Jensen)")
    return Constant(float(np.mean(np.sum(h ** 2, axis=1))), "exact",
                    "(1/C) sum_i ||grad g + h_i||^2 = ||grad g||^2 + (1/C) sum_i ||h_i||^2 exactly")


def _certify_linear_shift(p: Problem, name: str, visited, h: np.ndarray, lowest_curvature: float) -> Certificate | None:
    """The answers of a problem f_i = g + h_i.w with sum_i h_i = 0 (so f = g, w* = 0, f* = 0, grad f_i - grad f = h_i):
    the PL non-convex problem and the separable family. lowest_curvature: inf_w lambda_min of g's Hessian."""
    c = p.constants
    sq = np.sum(h ** 2, axis=1)
    if name in ("L_smooth", "L_smooth_global"):
        return certified(name, c["L"].note, L=c["L"].value)
    if name in ("convex", "convex_global"):
        return (certified(name, f"g's Hessian is >= {lowest_curvature:.4g} >= 0 everywhere") if lowest_curvature >= 0
                else refused(name, f"g's Hessian reaches {lowest_curvature:.4g} < 0: non-convex"))
    if name in ("strongly_convex", "strongly_convex_clients"):
        return (certified(name, "inf_w lambda_min of g's Hessian (every f_i has g's Hessian)", mu=lowest_curvature)
                if lowest_curvature > 0 else
                refused(name, f"not strongly convex: g's Hessian reaches {lowest_curvature:.4g} <= 0 (only PL)"))
    if name == "PL":
        return certified(name, c["mu"].note, mu=c["mu"].value)
    if name == "lower_bounded":
        return certified(name, "f = g >= 0 with g(0) = 0", f_star=0.0)
    if name == "bounded_grad_norm":
        return p._visited_grad_norm(name, visited, "gradients unbounded (grad f_i(w) = grad g(w) + h_i grows linearly "
                                                   "in ||w||)")
    if name == "lipschitz":
        return p._visited_lipschitz(name, visited, "per-sample gradients grow linearly in ||w||")
    if name == "nonnegative_loss":
        return refused(name, f"{p.name}: per-sample losses can be negative (the linear term z.w)")
    if name == "heterogeneity":
        return certified(name, "(1/C) sum_i ||grad f_i||^2 = ||grad f||^2 + (1/C) sum_i ||h_i||^2 exactly: "
                               "G^2 = (1/C) sum_i ||h_i||^2 for every B >= 1", B=1.0,
                         family=("G", lambda B: np.where(np.asarray(B, float) >= 1.0, np.sqrt(sq.mean()), np.inf)))
    if name == "heterogeneity_global":
        return certified(name, "grad f_i - grad f = h_i at every w: (1/C) sum_i ||h_i||^2",
                         sigma_g=float(np.sqrt(sq.mean())))
    if name == "heterogeneity_max":
        return certified(name, "grad f_i - grad f = h_i at every w: max_i ||h_i||^2", zeta=float(np.sqrt(sq.max())))
    if name == "heterogeneity_at_optimum":
        return certified(name, "grad f_i(w* = 0) = h_i: (1/C) sum_i ||h_i||^2", zeta_star=float(np.sqrt(sq.mean())))
    return None


class _PLView(ClientView):
    def __init__(self, p: "PLNonconvexProblem", clients, variant):
        self.p, self.clients, self.variant = p, clients, variant
        self.shift = gather(p.h, variant, clients)  # (R,N,d)

    def grad(self, w):
        return 2 * w + 3 * np.sin(2 * w) + self.shift

    def loss(self, w):
        return np.sum(w**2 + 3 * np.sin(w) ** 2, axis=-1) + np.einsum("rnd,rnd->rn", self.shift, w)

    def grad_batch(self, w, idx):
        rows = sample_rows(self.p.Z, self.variant, self.clients, idx)
        zb = np.take(self.p.Z.reshape(-1, self.p.dim), rows, axis=0).mean(axis=2)
        return 2 * w + 3 * np.sin(2 * w) + zb


class PLNonconvexProblem(Problem):
    """Non-convex but PL: f_i(w) = g(w) + h_i.w with g(w) = sum_j (w_j^2 + 3 sin^2 w_j).

    h_i = mean of client i's samples z_ij, centred so that sum_i h_i = 0, hence f = g.
    Exact: L = 8 (``|g''| <= 8``), mu = tightest PL constant of g (1-D minimisation), w* = 0,
    f* = 0, and Assumption 3 with B = 1 and G^2 = (1/C) sum_i ||h_i||^2 (an equality for all w).
    Minibatch noise has a variance independent of w: exact. Per-sample losses can be negative.

    Parameters
    ----------
    Z : numpy.ndarray
        The samples z_ij, (C, S, d) or (V, C, S, d); sample j's loss is g(w) + z_ij.w.
    name : str, default "pl_nonconvex"
        The problem's name.
    """

    nonnegative_losses = False

    def __init__(self, Z: np.ndarray, name: str = "pl_nonconvex"):
        Z = check_finite("Z", Z)
        if Z.ndim == 3:
            Z = Z[None]
        self.Z = Z
        self.name = name
        self.n_variants, self.n_clients, S, self.dim = Z.shape
        self.client_sizes = np.full(self.n_clients, S)
        self.h = Z.mean(axis=2)

    def view(self, clients, variant):
        return _PLView(self, clients, variant)

    def sample_losses(self, w, variant=None):
        v = self._variant(w, variant)
        g = np.sum(w**2 + 3 * np.sin(w) ** 2, axis=1)
        return g[:, None, None] + np.einsum("rcsd,rd->rcs", self.Z[v], w)

    def sample_grad_stats(self, w, variant=None):
        v = self._variant(w, variant)
        G = (2 * w + 3 * np.sin(2 * w))[:, None, None, :] + self.Z[v]
        var = np.mean(np.sum((self.Z[v] - self.h[v][:, :, None, :]) ** 2, axis=-1), axis=2)
        return np.linalg.norm(G, axis=-1).max(axis=(1, 2)), var.max(axis=1)

    @cached_property
    def _constants(self):
        return {
            "L": Constant(8.0, "exact", "|d^2/dx^2 (x^2 + 3 sin^2 x)| = |2 + 6 cos 2x| <= 8"),
            "mu": Constant(_tightest_pl_constant(), "exact", "inf_x g'(x)^2/(2 g(x)) by 1-D minimisation (tol 1e-12)"),
            "strongly_convex": Constant(False, "exact"),
            "w_star": Constant(np.zeros(self.dim), "exact"),
            "f_star": Constant(0.0, "exact"),
            "B_min": Constant(1.0, "exact"),
            "minibatch_variance_1": Constant(
                float(np.max(np.mean(np.sum((self.Z[0] - self.h[0][:, None, :]) ** 2, axis=-1), axis=1))),
                "exact", "max_i (1/S) sum_j ||z_ij - h_i||^2; a minibatch of b (with replacement) divides it by b"),
        }

    def _variant_optimum(self, variant: int) -> tuple[np.ndarray, float]:
        """A neighbouring data set's clients need not be centred: f = g + hbar.w, minimised coordinate-wise."""
        hbar = self.h[variant].mean(axis=0)
        w = _pl_coordinate_minimisers(hbar)
        return w, float(self.loss(w[None], np.array([variant]))[0])

    @cached_property
    def _client_curvature(self):
        C = self.n_clients
        return {
            "L_clients": Constant(np.full(C, 8.0), "exact",
                                  "each f_i = g + h_i.w has the Hessian of g: |2 + 6 cos 2x| <= 8"),
            "mu_clients": Constant(np.full(C, -4.0), "exact",
                                   "f_i is non-convex: inf_w lambda_min(Hessian) = 2 - 6 = -4 (4-weakly convex, no "
                                   "strong convexity); only the global f is PL, with constant mu"),
        }

    @cached_property
    def _client_minima(self):
        w = _pl_coordinate_minimisers(self.h[0])
        how = ("coordinate-wise: the global minimiser of x^2 + 3 sin^2 x + h x is the best of at most two roots of the "
               "derivative on its increasing pieces, found by bisection to machine precision")
        return {
            "w_star_clients": Constant(w, "exact", how),
            "f_star_clients": Constant(self._client_losses_at(w), "exact", "f_i(w_i*)"),
        }

    def _certify(self, name: str, visited=None) -> Certificate | None:
        cert = _certify_linear_shift(self, name, visited, self.h[0], -4.0)
        return cert if cert is not None else super()._certify(name, visited)

    def client_sample_variances(self, w):
        return np.mean(np.sum((self.Z[0] - self.h[0][:, None, :]) ** 2, axis=-1), axis=1)

    def sample_smoothness(self) -> Constant:
        return Constant(np.inf, "exact", "per-sample losses g(w) + z.w are not convex (g'' reaches -4)")

    def sample_gradient_variance(self) -> Constant:
        return Constant(self.constants["minibatch_variance_1"].value, "exact",
                        "max_i (1/S) sum_j ||z_ij - h_i||^2, independent of w")

    def heterogeneity_G2(self, B: float) -> Constant:
        return linear_shift_G2(self.h[0], B)

    def neighbours(self, replacements, random_state=0):
        def draw(rng, client):
            return (self.h[0, client] + rng.standard_normal(self.dim) * np.std(self.Z[0, client]),)

        (Z,) = self._replaced((self.Z[0],), replacements, draw, random_state)
        return PLNonconvexProblem(Z, name=self.name)


def pl_nonconvex(n_clients: int = 10, dim: int = 10, samples_per_client: int = 50, *, heterogeneity: float = 1.0,
                 sample_std: float = 1.0, random_state=0) -> PLNonconvexProblem:
    """A non-convex PL problem (:class:`PLNonconvexProblem`): f_i(w) = g(w) + h_i.w, g(w) = sum_j (w_j^2 + 3
    sin^2 w_j), with random client terms h_i centred so that f = g (w* = 0, f* = 0).

    Parameters
    ----------
    n_clients : int, default 10
        C, the number of clients (>= 2).
    dim : int, default 10
        d, the dimension (>= 1).
    samples_per_client : int, default 50
        S, the samples of each client (>= 2), centred on h_i.
    heterogeneity : float, default 1.0
        The scale of the client terms h_i (>= 0; 0: identical clients).
    sample_std : float, default 1.0
        The spread of a client's samples around h_i (>= 0): the minibatch noise.
    random_state : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The draw's seed (``check_random_state``): the same seed, the same problem.

    Returns
    -------
    PLNonconvexProblem
        The problem.
    """
    n_clients = check_int("n_clients", n_clients, 2)
    dim = check_int("dim", dim, 1)
    S = check_int("samples_per_client", samples_per_client, 2)
    heterogeneity = check_float("heterogeneity", heterogeneity, 0.0)
    sample_std = check_float("sample_std", sample_std, 0.0)
    rng = check_random_state(random_state)
    h = heterogeneity * rng.standard_normal((n_clients, dim))
    h -= h.mean(axis=0)  # sum_i h_i = 0 exactly: f = g
    noise = sample_std * rng.standard_normal((n_clients, S, dim))
    noise -= noise.mean(axis=1, keepdims=True)  # client means are exactly h_i
    return PLNonconvexProblem(h[:, None, :] + noise)


# ------------------------------------------------------------------------------------ the separable PL family
# f_i(w) = sum_j c_j (w_j^2 + a_j sin^2 w_j) + h_i.w, sum_i h_i = 0 (pl_nonconvex: c = 1, a = 3)

AMPLITUDE_MAX = 3.0  # for a in [0, 3], x (2x + a sin 2x) > 0 for x != 0: w* = 0 is the only stationary point of g


def pl_ratio_infimum(a) -> np.ndarray:
    """m(a) = inf_{x > 0} (2x + a sin 2x)^2 / (2 (x^2 + a sin^2 x)) for each entry of a in [0, 3] (same shape):
    the PL constant of x^2 + a sin^2 x. Grid on (0, 20] (step 5e-3; the ratio tends to 2 + O(a/x) beyond, so its
    infimum is interior), then bounded scalar minimisation to 1e-12 in the grid minimum's cell (the procedure of
    ``_tightest_pl_constant`` for a = 3, on a coarser grid); m(0) = 2 (the quadratic x^2)."""
    a = np.asarray(a, dtype=np.float64)
    out = np.full(a.shape, 2.0)
    vals = np.unique(a[a != 0.0])
    if vals.size == 0:
        return out
    import scipy.optimize  # here, not at import (start-up of `fedtheory list`)

    xs = np.linspace(5e-3, 20.0, 4_000)
    step = xs[1] - xs[0]
    ratio = lambda x, v: (2 * x + v * np.sin(2 * x)) ** 2 / (2 * (x**2 + v * np.sin(x) ** 2))  # noqa: E731
    x0 = xs[np.argmin(ratio(xs[None, :], vals[:, None]), axis=1)]
    for v, x in zip(vals, x0):
        res = scipy.optimize.minimize_scalar(lambda t: ratio(t, v), bounds=(max(x - step, 1e-6), x + step),
                                             method="bounded", options={"xatol": 1e-12})
        out[a == v] = min(float(res.fun), float(ratio(x, v)))
    return out


class _SeparablePLView(ClientView):
    def __init__(self, p: "SeparablePLProblem", clients, variant):
        self.c = p.c[variant][:, None, :]  # (R,1,d)
        self.a = p.a[variant][:, None, :]
        self.shift = gather(p.h, variant, clients)  # (R,N,d)

    def grad(self, w):
        return self.c * (2 * w + self.a * np.sin(2 * w)) + self.shift

    def loss(self, w):
        return np.sum(self.c * (w**2 + self.a * np.sin(w) ** 2), axis=-1) + np.einsum("rnd,rnd->rn", self.shift, w)

    def grad_batch(self, w, idx):  # one sample per client: every minibatch is the client's whole data
        return self.grad(w)


class SeparablePLProblem(Problem):
    """Non-convex clients, PL mean: f_i(w) = g(w) + h_i.w, g(w) = sum_j c_j (w_j^2 + a_j sin^2 w_j).

    c (V, d) > 0 and a (V, d) in [0, 3] per variant (the worst-case search's instances are variants), h (V, C, d)
    the clients' linear terms with sum_i h_i = 0 (to 1e-12 relative), so f = g: w* = 0, f* = 0. One sample per
    client (its h_i); the simulator's noise comes from an oracle. ``pl_nonconvex`` is the case c = 1, a = 3.
    Exact: L = max_j c_j (2 + 2 a_j) (the largest g''), the PL constant mu = min_j c_j m(a_j)
    (``pl_ratio_infimum``; ||grad g||^2 / (2 g) >= min_j of the coordinates' ratios, attained along one
    coordinate), each client's Hessian in [min_j c_j (2 - 2 a_j), L] (non-convex where a_j > 1), and Assumption 3
    with B = 1: (1/C) sum_i ||grad f_i(w)||^2 = ||grad f(w)||^2 + (1/C) sum_i ||h_i||^2 for every w.

    Parameters
    ----------
    c : array_like
        The curvature scales c_j > 0, (d,) or (V, d).
    a : array_like
        The amplitudes a_j in [0, 3], (d,) or (V, d).
    h : array_like
        The clients' linear terms, (C, d) or (V, C, d), summing to 0 over the clients.
    name : str, default "separable_pl"
        The problem's name.

    Raises
    ------
    ParameterError
        For c <= 0, a outside [0, 3], or client terms that do not sum to 0.
    """

    nonnegative_losses = False

    def __init__(self, c, a, h, name: str = "separable_pl"):
        c, a, h = check_finite("c", c), check_finite("a", a), check_finite("h", h)
        if h.ndim == 2:
            h = h[None]
        c = np.broadcast_to(np.atleast_2d(c), (h.shape[0], h.shape[2])).astype(np.float64)
        a = np.broadcast_to(np.atleast_2d(a), (h.shape[0], h.shape[2])).astype(np.float64)
        if h.ndim != 3:
            raise ParameterError("h", h.shape, "an array (clients, dim) or (variants, clients, dim)")
        if not np.all(c > 0):
            raise ParameterError("c", float(c.min()), "curvature scales > 0")
        if not np.all((a >= 0) & (a <= AMPLITUDE_MAX)):
            raise ParameterError("a", (float(a.min()), float(a.max())), f"amplitudes in [0, {AMPLITUDE_MAX}]")
        scale = max(float(np.abs(h).max()), 1e-300)
        if np.abs(h.mean(axis=1)).max() > 1e-12 * scale:
            raise ParameterError("h", float(np.abs(h.mean(axis=1)).max()),
                                 "client terms with sum_i h_i = 0 (centre them)")
        self.c, self.a, self.h = c, a, h
        self.name = name
        self.n_variants, self.n_clients, self.dim = h.shape
        self.client_sizes = np.ones(self.n_clients, dtype=np.int64)

    def view(self, clients, variant):
        return _SeparablePLView(self, clients, variant)

    def sample_losses(self, w, variant=None):
        return self.client_losses(w, self._variant(w, variant))[..., None]

    def sample_grad_stats(self, w, variant=None):
        g = self.client_grads(w, self._variant(w, variant))
        return np.linalg.norm(g, axis=-1).max(axis=1), np.zeros(w.shape[0])

    @cached_property
    def _constants(self):
        c, a = self.c[0], self.a[0]
        return {
            "L": Constant(float(np.max(self.c * (2 + 2 * self.a))), "exact", "max_j c_j (2 + 2 a_j): the largest g''"),
            "mu": Constant(float(np.min(c * pl_ratio_infimum(a))), "exact",
                           "min_j c_j m(a_j), m(a) = inf_x g_a'(x)^2 / (2 g_a(x)) by 1-D minimisation (tol 1e-12)"),
            "strongly_convex": Constant(bool(np.all(a < 1)), "exact"),
            "w_star": Constant(np.zeros(self.dim), "exact"),
            "f_star": Constant(0.0, "exact"),
            "B_min": Constant(1.0, "exact"),
        }

    def _variant_optimum(self, variant: int) -> tuple[np.ndarray, float]:
        """Every variant's clients are centred (sum_i h_i = 0): f = g, minimised at 0 with value 0."""
        return np.zeros(self.dim), 0.0

    @cached_property
    def _client_curvature(self):
        C = self.n_clients
        lo = float(np.min(self.c * (2 - 2 * self.a)))
        return {
            "L_clients": Constant(np.full(C, self.constants["L"].value), "exact", "every f_i has the Hessian of g"),
            "mu_clients": Constant(np.full(C, lo), "exact", "inf_w lambda_min(Hessian of g) = min_j c_j (2 - 2 a_j) "
                                                            "(< 0: non-convex clients)"),
        }

    @cached_property
    def _client_minima(self):
        # coordinate j of f_i is c_j (x^2 + a_j sin^2 x + (h_ij / c_j) x)
        c, a = self.c[0], self.a[0]
        w = _separable_coordinate_minimisers(self.h[0] / c, a)
        how = ("coordinate-wise: the global minimiser of x^2 + a_j sin^2 x + (h_ij / c_j) x is the best of at most "
               "three roots of the derivative on its increasing pieces, found by bisection to machine precision")
        return {
            "w_star_clients": Constant(w, "exact", how),
            "f_star_clients": Constant(self._client_losses_at(w), "exact", "f_i(w_i*)"),
        }

    def _certify(self, name: str, visited=None) -> Certificate | None:
        cert = _certify_linear_shift(self, name, visited, self.h[0], float(np.min(self.c * (2 - 2 * self.a))))
        return cert if cert is not None else super()._certify(name, visited)

    def client_sample_variances(self, w):
        return np.zeros(self.n_clients)

    def sample_smoothness(self) -> Constant:
        if np.all(self.a <= 1):
            return Constant(float(self.constants["L"].value), "exact", "one sample per client: f_i itself")
        return Constant(np.inf, "exact", "f_i is not convex (a_j > 1)")

    def sample_gradient_variance(self) -> Constant:
        return Constant(0.0, "exact", "one sample per client")

    def heterogeneity_G2(self, B: float) -> Constant:
        return linear_shift_G2(self.h[0], B)
