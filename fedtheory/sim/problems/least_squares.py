"""Heterogeneous least squares, f(w; (x, y)) = (x.w - y)^2 / 2 (+ ridge/2 ||w||^2): every constant exact (the
eigenvalues of the exact Hessians, the normal equations, G^2(B) in closed form); the population risk of the known
Gaussian client distributions."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..._validation import ParameterError, check_finite, check_float, check_int, check_random_state
from ..certificates import Certificate, certified, refused
from .base import ClientView, Constant, Problem, gather, sample_rows, shared_index

__all__ = ["B_MIN_ROUNDING", "GaussianClientModel", "LeastSquaresProblem", "heterogeneous_least_squares",
           "identical_least_squares", "least_squares_noise_at_optimum", "quadratic_B_min", "quadratic_G2"]

#: B_min within this of 1 is 1: identical clients (or clients whose Hessians differ only by rounding) give B_min = 1
#: exactly, and then G^2(1) is finite, rather than 1.0000000000000004 and G^2(1) = inf.
B_MIN_ROUNDING = 1e-12


def _moments_batched(H: np.ndarray, h: np.ndarray):
    """H (P,C,d,d), h (P,C,d) -> Hbar, hbar, M = (1/C) sum_i H_i^2, m = (1/C) sum_i H_i h_i, s = (1/C) sum_i
    ||h_i||^2."""
    C = H.shape[1]
    Hbar, hbar = H.mean(axis=1), h.mean(axis=1)
    M = np.einsum("pcde,pcef->pdf", H, H) / C
    m = np.einsum("pcde,pce->pd", H, h) / C
    s = np.mean(np.sum(h**2, axis=2), axis=1)
    return Hbar, hbar, M, m, s


def quadratic_B_min(H: np.ndarray) -> np.ndarray:
    """The smallest B for which some finite G satisfies (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2
    for all w, per instance, of quadratic clients with Hessians H (P, C, d, d): B_min^2 = lambda_max(Hbar^+ M Hbar^+)
    = 1 + lambda_max(Hbar^+ D Hbar^+) on the range of Hbar, with D = (1/C) sum_i (H_i - Hbar)^2 the Hessians'
    dispersion (computed as such, so identical clients give D = 0 up to the rounding of the mean). Within
    B_MIN_ROUNDING of 1 it is 1. Returns (P,)."""
    C = H.shape[1]
    Hbar = H.mean(axis=1)
    dev = H - Hbar[:, None]
    D = np.einsum("pcde,pcef->pdf", dev, dev) / C
    P = np.linalg.pinv(Hbar, rcond=1e-10, hermitian=True)
    lam = np.linalg.eigvalsh(P @ D @ P)[:, -1]
    B = np.sqrt(1.0 + np.maximum(lam, 0.0))
    return np.where(B - 1.0 <= B_MIN_ROUNDING, 1.0, B)


def quadratic_G2(H: np.ndarray, h: np.ndarray, B: float) -> np.ndarray:
    """Exact G^2(B) per instance for quadratic clients f_i = w'H_i w/2 - h_i'w + c: H (P,C,d,d), h (P,C,d) -> (P,).

    sup_w (1/C) sum_i ||H_i w - h_i||^2 - B^2 ||Hbar w - hbar||^2 = c0 + b' A^+ b, A = B^2 Hbar^2 - M, b = m - B^2
    Hbar hbar, c0 = s - B^2 ||hbar||^2 (inf where A is not PSD or b leaves A's range). An eigenvalue of A, or a part
    of b, at the rounding level of the terms it is the difference of (1e-12 of ||M|| and ||B^2 Hbar^2||, 1e-6 of
    ||m|| and ||B^2 Hbar hbar||) counts as zero: identical clients at B = 1 give G^2 = the spread of the h_i, not
    inf."""
    Hbar, hbar, M, m, s = _moments_batched(H, h)
    A = B**2 * Hbar @ Hbar - M
    Hh = B**2 * np.einsum("pde,pe->pd", Hbar, hbar)
    b = m - Hh
    c0 = s - B**2 * np.sum(hbar**2, axis=1)
    lam, U = np.linalg.eigh(A)
    terms = np.maximum(np.abs(M).max(axis=(1, 2)), B**2 * np.abs(Hbar @ Hbar).max(axis=(1, 2)))
    zero = np.maximum(np.maximum(1e-10 * np.abs(lam).max(axis=1), 1e-12 * terms), 1e-300)  # eigenvalues <= this: 0
    proj = np.einsum("pde,pd->pe", U, b)
    null = lam <= zero[:, None]
    b_terms = np.maximum(np.linalg.norm(m, axis=1), np.linalg.norm(Hh, axis=1))
    b_scale = np.maximum(np.maximum(np.linalg.norm(b, axis=1), 1e-6 * b_terms), 1e-300)
    bad = (lam.min(axis=1) < -zero) | np.any(null & (np.abs(proj) > 1e-8 * b_scale[:, None]), axis=1)
    G2 = c0 + np.sum(np.where(null, 0.0, proj**2 / np.where(null, 1.0, lam)), axis=1)
    return np.where(bad, np.inf, np.maximum(G2, 0.0))


TRANSPOSE_BLOCK = 1 << 12  # numbers per block of a runs-first copy (32 KiB)


def _runs_first(X: np.ndarray) -> np.ndarray:
    """X (N, d, R) C-contiguous -> the same numbers as a C-contiguous (R, N, d) array, the layout every consumer of
    the local models had (a sum's rounding depends on it). Copied in blocks of the (N d) axis: a plain transposing
    copy strides through the whole target for every source row (3-5x slower at R = 64, N d = 10^4)."""
    N, d, R = X.shape
    if R == 1:
        return X.reshape(1, N, d)  # the same memory
    out = np.empty((R, N, d))
    src, dst = X.reshape(N * d, R), out.reshape(R, N * d)
    rows = max(16, TRANSPOSE_BLOCK // R)
    for a in range(0, N * d, rows):
        dst[:, a:a + rows] = src[a:a + rows].T
    return out


class _LSView(ClientView):
    def __init__(self, p: "LeastSquaresProblem", clients, variant):
        self.p, self.clients, self.variant = p, clients, variant
        index = shared_index(variant, clients, p.H.shape[1])
        self.shared = index is not None
        if self.shared:  # every run: the same clients and data; one (N, d, d) stack serves all runs
            self.H, self.h, self.c = p.H[index], p.h[index], p.c[index]
        else:
            self.H = gather(p.H, variant, clients)  # (R,N,d,d)
            self.h = gather(p.h, variant, clients)  # (R,N,d)
            self.c = gather(p.c, variant, clients)  # (R,N)

    def _Hw(self, w):
        if self.shared:  # (N,d,d) @ (N,d,R): one batched matmul with R columns per client
            return np.matmul(self.H, w.transpose(1, 2, 0)).transpose(2, 0, 1)
        return np.matmul(self.H, w[..., None])[..., 0]

    def grad(self, w):
        return self._Hw(w) - self.h

    def descend(self, w0, lr, steps, noise=None, direction_sum=False):
        """The local steps of ``grad`` (H_i w - h_i, plus the noise), then ``w - lr g``, with no temporary array per
        step. On the shared path the iterates are kept runs last, (N, d, R) C-contiguous: each client's product is
        one BLAS call on a contiguous (d, R) block (``_Hw`` hands BLAS the transposed (R, N, d) layout, 1.2-2.5x
        slower at R = 64; with this project's OpenBLAS 0.3.31 the two layouts round alike for d <= 15, R = 1 and the
        R >= 48 tried, within an ulp of a product otherwise). Every elementwise operation is the loop's, in its
        order."""
        lr = np.asarray(lr, dtype=np.float64)
        if noise is not None:
            noise = noise.transpose(1, 2, 3, 0) if self.shared else noise.transpose(1, 0, 2, 3)  # step k: noise[k]
        if self.shared:
            X = np.array(w0.transpose(1, 2, 0), order="C")  # (N, d, R), a copy
            G = np.empty_like(X)
            X_in, G_out, h = X, G, self._h_runs_last(X.shape)
        else:
            X = np.array(w0, order="C")  # (R, N, d), a copy
            G = np.empty_like(X)
            X_in, G_out, h = X[..., None], G[..., None], self.h  # one matrix-vector product per client
        # lr g: one number when every run has the same step size; else one per entry (a broadcast lr makes numpy's
        # inner loops R or d long)
        flat = lr.reshape(-1)
        if flat.size and np.logical_and.reduce(flat == flat[0]):  # (ndarray.all's Python layers: 7 us a round)
            step = flat[0]
        else:
            step = np.array(np.broadcast_to(flat if self.shared else lr, X.shape))
        total = np.zeros_like(X) if direction_sum else None
        for k in range(steps):
            np.matmul(self.H, X_in, out=G_out)  # H_i w
            G -= h  # the gradient
            if noise is not None:
                G += noise[k]
            if total is not None:
                total += G
            G *= step  # lr g
            X -= G  # w - lr g
        if self.shared:
            return _runs_first(X), None if total is None else _runs_first(total)
        return X, total

    def prox(self, anchor, mu):
        """(H_i + mu I)^{-1} (h_i + mu anchor_i): the stationarity condition of f_i(x) + (mu/2)||x - anchor_i||^2."""
        R, N, d = anchor.shape
        H = np.broadcast_to(self.H, (R, N, d, d)) if self.shared else self.H
        h = np.broadcast_to(self.h, (R, N, d)) if self.shared else self.h
        mu = np.broadcast_to(np.asarray(mu, dtype=np.float64).reshape(-1, 1, 1), (R, N, 1))
        A = H + mu[..., None] * np.eye(d)
        return np.linalg.solve(A, (h + mu * anchor)[..., None])[..., 0]

    def _h_runs_last(self, shape: tuple[int, int, int]) -> np.ndarray:
        """h_i for every run, (N, d, R) C-contiguous, kept while the view lives (subtracting a broadcast h runs along
        R-long inner loops, 4x slower at R = 64, d = 5)."""
        kept = self.__dict__.get("_h_kept")
        if kept is None or kept.shape != shape:
            kept = self.__dict__["_h_kept"] = np.array(np.broadcast_to(self.h[:, :, None], shape))
        return kept

    def loss(self, w):  # np.add.reduce: np.sum's reduction without its Python layers (measured every round)
        return 0.5 * np.add.reduce(w * self._Hw(w), axis=-1) - np.add.reduce(self.h * w, axis=-1) + self.c

    def grad_batch(self, w, idx):
        rows = sample_rows(self.p.X, self.variant, self.clients, idx)
        Xb = np.take(self.p.X.reshape(-1, self.p.dim), rows, axis=0)  # (R,N,b,d): only the batch rows
        yb = np.take(self.p.y.reshape(-1), rows)
        r = np.einsum("rnbd,rnd->rnb", Xb, w) - yb
        g = np.einsum("rnbd,rnb->rnd", Xb, r) / idx.shape[-1]
        return g + self.p.ridge * w if self.p.ridge else g


@dataclass
class GaussianClientModel:
    """Client i's data distribution: x = mean + A g (g standard normal), y = x.w_true + noise_std * e."""

    mean: np.ndarray  # (C, d)
    factor: np.ndarray  # (C, d, r)
    w_true: np.ndarray  # (C, d)
    noise_std: float

    def draw(self, rng: np.random.Generator, client: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        g = rng.standard_normal((n, self.factor.shape[2]))
        x = self.mean[client] + g @ self.factor[client].T
        y = x @ self.w_true[client] + self.noise_std * rng.standard_normal(n)
        return x, y


class LeastSquaresProblem(Problem):
    """Federated least squares: client i's objective f_i(w) = (1/S) sum_j (x_ij . w - y_ij)^2 / 2 + ridge ||w||^2 / 2
    over its S samples, f = (1/C) sum_i f_i. Exact: L, mu (strong convexity or PL), w*, f*, G^2(B), F.

    X: the features, shape (C, S, d) (clients, samples per client, dimension), or (V, C, S, d) with a leading
    variant axis (variant 0 is the data; coupled stability runs add neighbours). y: the labels, shape (C, S), or
    (V, C, S). Every client holds the same number S of samples. ridge: the L2 term (a negative one gives non-convex
    clients). model: the clients' data distribution, when known (population risk). Identical clients (every
    f_i = f): :meth:`identical` or :func:`identical_least_squares`; ``problem.identical_clients`` tells.

    Parameters
    ----------
    X : numpy.ndarray
        The features, (C, S, d) or (V, C, S, d).
    y : numpy.ndarray
        The labels, (C, S) or (V, C, S).
    ridge : float, default 0.0
        The L2 coefficient (negative: non-convex clients).
    model : GaussianClientModel, optional
        The clients' data distribution, when known (then the population risk is exact).
    name : str, default "least_squares"
        The problem's name, as printed.

    Raises
    ------
    ParameterError
        For non-finite data or arrays of other shapes.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, *, ridge: float = 0.0, model: GaussianClientModel | None = None,
                 name: str = "least_squares"):
        X = check_finite("X", X)
        y = check_finite("y", y)
        if X.ndim == 3:
            X, y = X[None], y[None]
        if X.ndim != 4 or y.shape != X.shape[:3]:
            raise ParameterError("X", X.shape, "an array (clients, samples, dim) or (variants, clients, samples, dim)")
        self.X, self.y = X, y
        # a negative ridge gives non-convex clients (X'X/S + ridge I may be indefinite): the worst-case search's
        # non-convex quadratic class uses it; the per-sample losses are then no longer non-negative
        self.ridge = check_float("ridge", ridge)
        self.nonnegative_losses = self.ridge >= 0
        self.model = model
        self.name = name
        self.n_variants, self.n_clients, S, self.dim = X.shape
        self.client_sizes = np.full(self.n_clients, S)
        d = self.dim
        self.H = np.einsum("vcsd,vcse->vcde", X, X) / S + self.ridge * np.eye(d)
        self.h = np.einsum("vcsd,vcs->vcd", X, y) / S
        self.c = np.einsum("vcs,vcs->vc", y, y) / (2 * S)

    @classmethod
    def identical(cls, X: np.ndarray, y: np.ndarray, n_clients: int, *, ridge: float = 0.0,
                  model: GaussianClientModel | None = None,
                  name: str = "identical_least_squares") -> "LeastSquaresProblem":
        """Every one of ``n_clients`` clients holds the same data: X (S, d), y (S,), so every f_i = f (the
        identical-data setting of local SGD analyses, e.g. Stich 2019: the workers differ only in their stochastic
        gradients, which the oracle draws independently per client). Gamma = 0, B_min = 1, G^2(1) = 0.

        Parameters
        ----------
        X : numpy.ndarray
            The features of the one data set, (S, d).
        y : numpy.ndarray
            Its labels, (S,).
        n_clients : int
            The number of clients holding it (>= 1).
        ridge : float, default 0.0
            The L2 coefficient.
        model : GaussianClientModel, optional
            The data distribution, when known.
        name : str, default "identical_least_squares"
            The problem's name.

        Returns
        -------
        LeastSquaresProblem
            The problem, with ``identical_clients`` True.
        """
        n_clients = check_int("n_clients", n_clients, 1)
        X, y = check_finite("X", X), check_finite("y", y)
        if X.ndim != 2 or y.shape != X.shape[:1]:
            raise ParameterError("X", (X.shape, y.shape), "X of shape (samples, dim) and y of shape (samples,)")
        return cls(np.broadcast_to(X, (n_clients, *X.shape)).copy(), np.broadcast_to(y, (n_clients, len(y))).copy(),
                   ridge=ridge, model=model, name=name)

    @cached_property
    def identical_clients(self) -> bool:
        """Whether every client's objective is the same function f (data variant 0): the same samples, or the same
        quadratic (H_i, h_i, c_i) exactly."""
        X, y, H, h, c = self.X[0], self.y[0], self.H[0], self.h[0], self.c[0]
        same_data = bool(np.all(X == X[:1]) and np.all(y == y[:1]))
        return same_data or bool(np.all(H == H[:1]) and np.all(h == h[:1]) and np.all(c == c[:1]))

    def view(self, clients, variant):
        return _LSView(self, clients, variant)

    @cached_property
    def _mean_quadratic(self):
        """f = w' Hbar w / 2 - hbar' w + cbar per variant: (V, d, d), (V, d), (V,) (client weights 1/C)."""
        return self.H.mean(axis=1), self.h.mean(axis=1), self.c.mean(axis=1)

    def global_loss(self, w, variant=None):
        Hbar, hbar, cbar = self._mean_quadratic
        v = self._variant(w, variant)
        if np.all(v == v[0]):  # one data variant: one (M, d) x (d, d) product
            return 0.5 * np.sum((w @ Hbar[v[0]]) * w, axis=1) - w @ hbar[v[0]] + cbar[v[0]]
        return 0.5 * np.einsum("md,mde,me->m", w, Hbar[v], w) - np.sum(hbar[v] * w, axis=1) + cbar[v]

    def global_grad(self, w, variant=None):
        Hbar, hbar, _ = self._mean_quadratic
        v = self._variant(w, variant)
        if np.all(v == v[0]):
            return w @ Hbar[v[0]] - hbar[v[0]]  # Hbar is symmetric
        return np.einsum("mde,me->md", Hbar[v], w) - hbar[v]

    def sample_losses(self, w, variant=None):
        v = self._variant(w, variant)
        r = np.einsum("rcsd,rd->rcs", self.X[v], w) - self.y[v]
        return 0.5 * r**2 + 0.5 * self.ridge * np.sum(w**2, axis=1)[:, None, None]

    @cached_property
    def _sample_norm2(self) -> np.ndarray:
        """||x_ij||^2 per variant, client and sample: (V, C, S)."""
        return np.sum(self.X ** 2, axis=-1)

    def sample_grad_stats(self, w, variant=None):
        """From the residuals alone, without forming the (points, C, S, d) per-sample gradients g_ij = x_ij r_ij +
        ridge w (the engine asks at every visited point of every round): ||g_ij||^2 = r^2 ||x||^2 + 2 ridge r (r + y) +
        ridge^2 ||w||^2 (x.w = r + y), and the spread around the client's mean m_i = mean_j x_ij r_ij (the ridge term
        is common to every sample: it cancels) is mean_j r^2 ||x||^2 - ||m_i||^2, clipped at 0 against rounding.
        Held to the per-sample definition by tests/test_problems.py."""
        w = np.asarray(w, dtype=float)
        v = self._variant(w, variant)
        gmax, gvar = np.empty(len(w)), np.empty(len(w))
        for u in np.unique(v):  # the data variants (a handful): one product over the points of each
            at = np.flatnonzero(v == u)
            X, y, xn2, wu = self.X[u], self.y[u], self._sample_norm2[u], w[at]
            r = np.einsum("csd,pd->pcs", X, wu) - y  # (P, C, S)
            r2 = r * r
            norm2 = r2 * xn2 + 2.0 * self.ridge * r * (r + y) + self.ridge ** 2 * np.sum(wu * wu, axis=1)[:, None, None]
            m = np.einsum("csd,pcs->pcd", X, r) / X.shape[1]  # (P, C, d)
            var = np.mean(r2 * xn2, axis=2) - np.sum(m * m, axis=2)  # (P, C)
            gmax[at] = np.sqrt(np.max(np.maximum(norm2, 0.0), axis=(1, 2)))
            gvar[at] = np.maximum(var, 0.0).max(axis=1)
        return gmax, gvar

    def sample_smoothness(self) -> Constant:
        if self.ridge < 0:
            return Constant(np.inf, "exact", "a negative ridge: per-sample losses are not convex")
        return Constant(float(np.max(np.sum(self.X ** 2, axis=-1))) + self.ridge, "exact",
                        "max_ij ||x_ij||^2 + ridge: the Hessian of (x.w - y)^2/2 + ridge ||w||^2/2")

    def client_sample_variances(self, w):
        X = self.X[0]
        r = X @ np.asarray(w, dtype=float)[0] - self.y[0]  # (C, S)
        g = X * r[..., None]  # the ridge term is the same for every sample: it cancels
        return np.mean(np.sum((g - g.mean(axis=1, keepdims=True)) ** 2, axis=-1), axis=1)

    def population_loss(self, w):
        if self.model is None:
            raise NotImplementedError(f"{self.name} was built from data without a known distribution")
        m = self.model
        diff = w[:, None, :] - m.w_true[None]  # (R,C,d)
        # E (x.w - y)^2 = (w - w_i)' (A A' + mu mu') (w - w_i) + noise^2
        cov_term = np.einsum("rcd,cdk->rck", diff, m.factor)
        mean_term = np.einsum("rcd,cd->rc", diff, m.mean)
        val = 0.5 * (np.sum(cov_term**2, axis=-1) + mean_term**2 + m.noise_std**2)
        return val.mean(axis=1) + 0.5 * self.ridge * np.sum(w**2, axis=1)

    @cached_property
    def _constants(self) -> dict[str, Constant]:
        Hbar = self.H[0].mean(axis=0)
        eig = np.linalg.eigvalsh(Hbar)
        L = float(np.max(np.linalg.eigvalsh(self.H)))  # over all variants: both coupled runs are L-smooth
        tol = 1e-10 * max(eig.max(), 1e-300)
        if eig.min() > tol:
            mu = Constant(float(eig.min()), "exact", "strong convexity of f: smallest eigenvalue of the mean Hessian")
            strongly_convex = True
        else:
            pos = eig[eig > tol]
            mu = Constant(float(pos.min()), "exact",
                          "PL constant of f (not strongly convex): smallest non-zero eigenvalue")
            strongly_convex = False
        w_star, f_star = self._variant_optimum(0)
        return {
            "L": Constant(L, "exact", "max over clients of the largest Hessian "
                                      "eigenvalue (Assumption 1: each f_i L-smooth)"),
            "mu": mu,
            "strongly_convex": Constant(strongly_convex, "exact"),
            "w_star": Constant(w_star, "exact", "normal equations (min-norm solution when f is only PL)"),
            "f_star": Constant(f_star, "exact"),
            "B_min": Constant(self._B_min(), "exact", "smallest B for which some finite G satisfies Assumption 3"),
        }

    def _variant_optimum(self, variant: int) -> tuple[np.ndarray, float]:
        """The normal equations of variant ``variant``'s mean objective (min-norm where f is only PL)."""
        w_star = np.linalg.lstsq(self.H[variant].mean(axis=0), self.h[variant].mean(axis=0), rcond=None)[0]
        return w_star, float(self.loss(w_star[None], np.array([variant]))[0])

    @cached_property
    def _client_curvature(self):
        eig = np.linalg.eigvalsh(self.H)  # (V, C, d)
        L = eig[..., -1].max(axis=0)
        lo = eig[..., 0].min(axis=0)
        tol = 1e-10 * max(float(np.abs(eig).max()), 1e-300)
        mu = np.where(lo > tol, lo, np.where(lo < -tol, lo, 0.0))
        return {
            "L_clients": Constant(L, "exact", "largest eigenvalue of each client Hessian H_i (max over variants)"),
            "mu_clients": Constant(mu, "exact", "smallest eigenvalue of each client Hessian H_i (min over variants); "
                                                "0: f_i is not strongly convex; < 0: f_i is non-convex (a negative "
                                                "ridge), -mu_i-weakly convex"),
        }

    @cached_property
    def _client_minima(self):
        lam, U = np.linalg.eigh(self.H[0])  # (C, d), (C, d, d)
        keep = lam > 1e-10 * np.maximum(lam[:, -1:], 1e-300)
        inv = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
        w = np.einsum("cde,ce->cd", U, inv * np.einsum("cde,cd->ce", U, self.h[0]))  # H_i^+ h_i
        return {
            "w_star_clients": Constant(w, "exact", "H_i w = h_i per client (min-norm solution where H_i is singular)"),
            "f_star_clients": Constant(self._client_losses_at(w), "exact", "f_i(w_i*)"),
        }

    def sample_gradient_variance(self) -> Constant:
        X = self.X[0]
        D = np.einsum("csd,cse->csde", X, X) - (self.H[0] - self.ridge * np.eye(self.dim))[:, None]
        if np.max(np.abs(D)) > 1e-12 * max(float(np.max(np.abs(self.H[0]))), 1e-300):
            return Constant(np.inf, "exact", "unbounded over w: the deviation (x x' - H_i) w is linear in w; along a "
                                             "run measure 'visited_max_grad_var'")
        r = X * self.y[0][..., None] - self.h[0][:, None, :]  # every x_j x_j' equal: the variance does not depend on w
        return Constant(float(np.max(np.mean(np.sum(r**2, axis=-1), axis=1))), "exact", "independent of w")

    def _B_min(self) -> float:
        return float(quadratic_B_min(self.H[:1])[0])

    def heterogeneity_G2(self, B: float) -> Constant:
        """Exact: sup_w of a quadratic, G^2(B) = c0 + b' A^+ b with A = B^2 Hbar^2 - M (inf if A is not PSD);
        see ``fedtheory.sim.problems.quadratic_G2``."""
        B = check_float("B", B, 0.0, low_inclusive=False)
        G2 = float(quadratic_G2(self.H[:1], self.h[:1], B)[0])
        if not np.isfinite(G2):
            return Constant(np.inf, "exact", f"no finite G for B={B}" + (" (B < B_min)" if B < self._B_min() else ""))
        return Constant(G2, "exact", "sup over w of a concave quadratic, in closed form")

    # ---- what it satisfies (fedtheory.sim.certificates)
    @cached_property
    def _mean_spectrum(self) -> tuple[np.ndarray, float]:
        """Eigenvalues of the mean Hessian (variant 0) and the tolerance below which one counts as zero."""
        eig = np.linalg.eigvalsh(self.H[0].mean(axis=0))
        return eig, 1e-10 * max(float(np.abs(eig).max()), 1e-300)

    def _G_of_B(self, B) -> np.ndarray:
        """The smallest G with the (G, B) dissimilarity at each B (array in, array out): sqrt(G^2(B)), inf below
        B_min."""
        B = np.asarray(B, dtype=float)
        G2 = [quadratic_G2(self.H[:1], self.h[:1], float(b))[0] for b in B.ravel()]
        return np.sqrt(np.asarray(G2, dtype=float)).reshape(B.shape)

    def _certify(self, name: str, visited=None) -> Certificate | None:
        c = self.constants
        eig, tol = self._mean_spectrum
        bounded_below = eig.min() >= -tol
        unbounded = "f is unbounded below: the mean Hessian has a negative eigenvalue (a negative ridge)"
        grads_unbounded = ("least squares: gradients unbounded (grad f_i(w) = H_i w - h_i grows linearly in ||w||)")
        if name == "L_smooth":
            return certified(name, c["L"].note, L=c["L"].value)
        if name == "L_smooth_global":
            return certified(name, "largest eigenvalue of the mean Hessian", L=float(eig.max()))
        if name in ("convex", "strongly_convex_clients"):
            lo = np.asarray(c["mu_clients"].value, float)
            i = int(np.argmin(lo))
            if name == "convex":
                return (certified(name, "every client Hessian H_i is positive semidefinite") if lo[i] >= 0 else
                        refused(name, f"client {i}'s Hessian has the eigenvalue "
                                      f"{lo[i]:.4g} < 0 (ridge {self.ridge:g})"))
            return (certified(name, "smallest eigenvalue over the client Hessians H_i (min over variants)",
                              mu=float(lo[i])) if lo[i] > 0 else
                    refused(name, f"client {i} is not strongly convex: its "
                                  f"Hessian's smallest eigenvalue is {lo[i]:.4g}"))
        if name == "convex_global":
            return (certified(name, "the mean Hessian is positive semidefinite")
                    if bounded_below else refused(name, unbounded))
        if name == "strongly_convex":
            if c["strongly_convex"].value:
                return certified(name, c["mu"].note, mu=c["mu"].value)
            return refused(name, unbounded if not bounded_below else
                           "f is only PL: the mean Hessian is singular (rank-deficient features)")
        if name == "PL":
            return certified(name, c["mu"].note, mu=c["mu"].value) if bounded_below else refused(name, unbounded)
        if name == "lower_bounded":
            return (certified(name, "f at the solution of the normal equations", f_star=c["f_star"].value)
                    if bounded_below else refused(name, unbounded))
        if name == "bounded_grad_norm":
            return self._visited_grad_norm(name, visited, grads_unbounded)
        if name == "lipschitz":
            return self._visited_lipschitz(name, visited, "least squares: the loss is quadratic, not Lipschitz over "
                                                          "every w (per-sample gradients grow linearly in ||w||)")
        if name == "nonnegative_loss":
            return self._visited_loss_range(name, visited)
        if name == "heterogeneity":
            B_min = float(c["B_min"].value)
            return certified(name, "G^2(B) = sup_w (1/C) sum_i ||grad f_i||^2 - B^2 ||grad f||^2 in closed form, for "
                                   f"every B >= B_min = {B_min:.6g}", B=B_min, family=("G", self._G_of_B))
        if name in ("heterogeneity_global", "heterogeneity_max"):
            Hd = self.H[0] - self.H[0].mean(axis=0)
            if np.max(np.abs(Hd)) > 1e-12 * max(float(np.abs(self.H[0]).max()), 1e-300):
                return refused(name, "least squares with client Hessians that differ: ||grad f_i - grad f|| = "
                                     "||(H_i - Hbar) w - (h_i - hbar)|| grows linearly in ||w||")
            dev = np.sum((self.h[0] - self.h[0].mean(axis=0)) ** 2, axis=1)
            if name == "heterogeneity_global":
                return certified(name, "equal client Hessians: (1/C) sum_i ||h_i - hbar||^2, the same at every w",
                                 sigma_g=float(np.sqrt(dev.mean())))
            return certified(name, "equal client Hessians: max_i ||h_i - hbar||^2, the same at every w",
                             zeta=float(np.sqrt(dev.max())))
        if name == "heterogeneity_at_optimum":
            w = np.asarray(c["w_star"].value)[None]
            g = self.client_grads(w, np.zeros(1, dtype=np.int64))[0]
            return certified(name, "(1/C) sum_i ||H_i w* - h_i||^2 at the normal equations' solution w*",
                             zeta_star=float(np.sqrt(np.mean(np.sum(g ** 2, axis=1)))))
        return super()._certify(name, visited)

    def neighbours(self, replacements, random_state=0) -> "LeastSquaresProblem":
        if self.model is None:
            raise ParameterError("problem", self.name,
                                 "a problem with a known data distribution to draw the replacement from")
        def draw(rng, client):
            x, y = self.model.draw(rng, client, 1)
            return x[0], y[0]

        X, y = self._replaced((self.X[0], self.y[0]), replacements, draw, random_state)
        return LeastSquaresProblem(X, y, ridge=self.ridge, model=self.model, name=self.name)


def heterogeneous_least_squares(
    n_clients: int = 10,
    dim: int = 10,
    samples_per_client: int = 50,
    *,
    heterogeneity: float = 1.0,
    condition: float = 10.0,
    rank: int | None = None,
    noise_std: float = 0.5,
    ridge: float = 0.0,
    random_state=0,
) -> LeastSquaresProblem:
    """Client i: x ~ N(m_i, Sigma_i), y = x.w_i + noise. ``heterogeneity`` scales the spread of
    m_i and w_i across clients. ``rank`` < dim confines every client's features to one shared
    rank-r subspace: f is then PL but not strongly convex.

    Parameters
    ----------
    n_clients : int, default 10
        C, the number of clients (>= 1).
    dim : int, default 10
        d, the dimension (>= 1).
    samples_per_client : int, default 50
        S, the samples of each client (>= 2).
    heterogeneity : float, default 1.0
        The spread of the clients' feature means and true models (>= 0; 0: every client draws from the same
        distribution).
    condition : float, default 10.0
        The ratio of the largest to the smallest eigenvalue of the feature covariances' nominal spectrum (>= 1).
    rank : int, optional
        r <= d, the rank of the shared feature subspace (default d).
    noise_std : float, default 0.5
        The label noise's standard deviation (>= 0).
    ridge : float, default 0.0
        The L2 coefficient.
    random_state : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The draw's seed (``check_random_state``): the same seed, the same problem.

    Returns
    -------
    LeastSquaresProblem
        Named ``sc_least_squares`` (full rank) or ``pl_least_squares`` (rank < d), with its data distribution.
    """
    n_clients = check_int("n_clients", n_clients, 1)
    dim = check_int("dim", dim, 1)
    S = check_int("samples_per_client", samples_per_client, 2)
    heterogeneity = check_float("heterogeneity", heterogeneity, 0.0)
    condition = check_float("condition", condition, 1.0)
    noise_std = check_float("noise_std", noise_std, 0.0)
    r = dim if rank is None else check_int("rank", rank, 1, dim)
    rng = check_random_state(random_state)
    basis = np.linalg.qr(rng.standard_normal((dim, dim)))[0][:, :r]  # shared subspace
    factors = np.empty((n_clients, dim, r))
    for i in range(n_clients):
        Q = np.linalg.qr(rng.standard_normal((r, r)))[0]
        spectrum = np.geomspace(1.0, 1.0 / condition, r) * np.exp(0.3 * rng.standard_normal(r))
        factors[i] = basis @ Q @ np.diag(np.sqrt(spectrum))
    means = heterogeneity * 0.5 * rng.standard_normal((n_clients, r)) @ basis.T
    w_common = rng.standard_normal(dim) / np.sqrt(dim)
    w_true = w_common + heterogeneity * rng.standard_normal((n_clients, dim)) / np.sqrt(dim)
    model = GaussianClientModel(means, factors, w_true, noise_std)
    X = np.empty((n_clients, S, dim))
    y = np.empty((n_clients, S))
    for i in range(n_clients):
        X[i], y[i] = model.draw(rng, i, S)
    kind = "pl_least_squares" if r < dim else "sc_least_squares"
    return LeastSquaresProblem(X, y, ridge=ridge, model=model, name=kind)


def identical_least_squares(
    n_clients: int = 10,
    dim: int = 10,
    samples: int = 200,
    *,
    condition: float = 10.0,
    noise_std: float = 0.5,
    ridge: float = 0.0,
    random_state=0,
) -> LeastSquaresProblem:
    """Identical clients: one data set of ``samples`` draws x ~ N(0, Sigma) (spectrum 1 .. 1/condition, a random
    eigenbasis), y = x.w + noise, held by every one of ``n_clients`` clients (every f_i = f; the stochastic gradients
    of an oracle still differ per client). The known distribution gives the population risk.

    Parameters
    ----------
    n_clients : int, default 10
        The number of clients, each holding the same data (>= 1).
    dim : int, default 10
        d, the dimension (>= 1).
    samples : int, default 200
        S, the samples of the one data set (>= 2).
    condition : float, default 10.0
        The ratio of the largest to the smallest eigenvalue of the feature covariance (>= 1).
    noise_std : float, default 0.5
        The label noise's standard deviation (>= 0).
    ridge : float, default 0.0
        The L2 coefficient.
    random_state : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The draw's seed (``check_random_state``): the same seed, the same problem.

    Returns
    -------
    LeastSquaresProblem
        Named ``identical_least_squares``; ``identical_clients`` is True.
    """
    n_clients = check_int("n_clients", n_clients, 1)
    dim = check_int("dim", dim, 1)
    S = check_int("samples", samples, 2)
    condition = check_float("condition", condition, 1.0)
    noise_std = check_float("noise_std", noise_std, 0.0)
    rng = check_random_state(random_state)
    Q = np.linalg.qr(rng.standard_normal((dim, dim)))[0]
    factor = Q @ np.diag(np.sqrt(np.geomspace(1.0, 1.0 / condition, dim)))
    w_true = rng.standard_normal(dim) / np.sqrt(dim)
    model = GaussianClientModel(np.zeros((n_clients, dim)), np.broadcast_to(factor, (n_clients, dim, dim)).copy(),
                                np.broadcast_to(w_true, (n_clients, dim)).copy(), noise_std)
    X, y = model.draw(rng, 0, S)
    return LeastSquaresProblem.identical(X, y, n_clients, ridge=ridge, model=model)


def least_squares_noise_at_optimum(
    n_clients: int = 10,
    dim: int = 5,
    samples_per_client: int = 20,
    *,
    sigma_star2: float = 0.1,
    heterogeneity: float = 1.0,
    condition: float = 10.0,
    random_state=0,
) -> LeastSquaresProblem:
    """Least squares with a controlled noise at the optimum: every client's optimum is the same w* (each client's
    residuals at w*, e_i = X_i w* - y_i, are orthogonal to its features, so grad f_i(w*) = 0: no heterogeneity at
    the optimum), and the one-sample gradient variance at w*, (1/C) sum_i (1/S) sum_j ||x_ij||^2 e_ij^2, equals
    ``sigma_star2`` exactly (0: interpolation). A minibatch of b then has noise sigma_star2 / b at w*; elsewhere its
    variance grows with ||w - w*|| (the clients' features differ: ``heterogeneity`` spreads their means and scales),
    so bounded variance holds only on a visited region while the noise at the optimum is exact.

    Parameters
    ----------
    n_clients : int, default 10
        C, the number of clients (>= 1).
    dim : int, default 5
        d, the dimension (>= 1).
    samples_per_client : int, default 20
        S, the samples of each client (> d).
    sigma_star2 : float, default 0.1
        The one-sample gradient variance at w* (>= 0; 0: interpolation).
    heterogeneity : float, default 1.0
        The spread of the clients' feature means and scales (>= 0).
    condition : float, default 10.0
        The ratio of the largest to the smallest eigenvalue of each client's nominal feature spectrum (>= 1).
    random_state : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        The draw's seed (``check_random_state``): the same seed, the same problem.

    Returns
    -------
    LeastSquaresProblem
        Named ``ls_noise_at_optimum``.
    """
    n_clients = check_int("n_clients", n_clients, 1)
    dim = check_int("dim", dim, 1)
    S = check_int("samples_per_client", samples_per_client, dim + 1)
    sigma_star2 = check_float("sigma_star2", sigma_star2, 0.0)
    heterogeneity = check_float("heterogeneity", heterogeneity, 0.0)
    condition = check_float("condition", condition, 1.0)
    rng = check_random_state(random_state)
    X = np.empty((n_clients, S, dim))
    for i in range(n_clients):
        Q = np.linalg.qr(rng.standard_normal((dim, dim)))[0]
        scale = np.sqrt(np.geomspace(1.0, 1.0 / condition, dim)
                        * np.exp(0.3 * heterogeneity * rng.standard_normal(dim)))
        X[i] = heterogeneity * 0.5 * rng.standard_normal(dim) + rng.standard_normal((S, dim)) @ (Q * scale).T
    w_star = rng.standard_normal(dim) / np.sqrt(dim)
    e = rng.standard_normal((n_clients, S))
    for i in range(n_clients):  # residuals orthogonal to the client's features: X_i' e_i = 0
        e[i] -= X[i] @ np.linalg.lstsq(X[i], e[i], rcond=None)[0]
    v = float(np.mean(np.mean(np.sum(X ** 2, axis=-1) * e ** 2, axis=1)))
    e *= np.sqrt(sigma_star2 / v) if v > 0 else 0.0
    y = np.einsum("csd,d->cs", X, w_star) - e
    return LeastSquaresProblem(X, y, name="ls_noise_at_optimum")
