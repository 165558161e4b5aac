"""Federated problems whose constants are known exactly, or say how they are known.

Every problem is a set of C client objectives f_i built from client samples, with the global
objective f = (1/C) sum_i f_i (the seeds' definition, seed 000 eq. (2)). Data arrays carry a
leading *variant* axis: variant 0 is the data set, and ``neighbour`` adds variant 1, the same
data with one sample replaced, for coupled stability runs.

Each constant is a :class:`Constant` whose ``kind`` says how it is known:
  exact     closed form (eigenvalues of the exact Hessians, a 1-D minimisation to 1e-12, ...)
  bound     a valid bound, not necessarily attained (e.g. logistic L from the Hessian bound)
  computed  the result of a numerical solve to a stated tolerance (e.g. logistic w*)
  measured  measured over the region a run visited (L_G, U, logistic heterogeneity)

Every problem also states per-client constants (arrays of length C, variant 0 unless said):
``L_clients`` (smoothness of each f_i), ``mu_clients`` (strong convexity of each f_i, or what is known),
``w_star_clients`` (C, d) and ``f_star_clients`` (client minimisers and minima), and ``Gamma`` =
f* - sum_i p_i f_i* (Li et al. 2020's heterogeneity, p_i = ``client_weights``). They are computed on
first access (logistic client minima cost one solve per client).
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from functools import cached_property
from typing import Any, Callable, Iterator

import numpy as np
import scipy.optimize

from .._validation import ParameterError, check_finite, check_float, check_int, check_random_state


@dataclass(frozen=True)
class Constant:
    """A problem constant: ``value`` and how it is known (``kind``: exact | bound | computed | measured;
    ``note``: the method, e.g. the solver and its final gradient norm)."""

    value: Any
    kind: str  # exact | bound | computed | measured
    note: str = ""


CLIENT_CONSTANTS = ("L_clients", "mu_clients", "w_star_clients", "f_star_clients", "Gamma")


class Constants(Mapping):
    """A problem's constants by name (a read-only mapping); the lazy ones are computed on first access."""

    def __init__(self, eager: Mapping[str, Constant], lazy: Mapping[str, Callable[[], Constant]]):
        self._values = dict(eager)
        self._lazy = {k: f for k, f in lazy.items() if k not in self._values}
        self._order = list(self._values) + list(self._lazy)

    def __getitem__(self, key: str) -> Constant:
        if key not in self._values:
            if key not in self._lazy:
                raise KeyError(key)
            self._values[key] = self._lazy[key]()
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"Constants({', '.join(self._order)})"


# --------------------------------------------------------------------------------------------
# base classes


class ClientView:
    """The data of the clients selected for one round, gathered once: clients (R, N)."""

    def grad(self, w: np.ndarray) -> np.ndarray:  # exact local gradient, (R,N,d) -> (R,N,d)
        raise NotImplementedError

    def grad_batch(self, w: np.ndarray, idx: np.ndarray) -> np.ndarray:  # minibatch, idx (R,N,b)
        raise NotImplementedError

    def loss(self, w: np.ndarray) -> np.ndarray:  # (R,N,d) -> (R,N)
        raise NotImplementedError

    # Representations of the clients' samples under a model (seed 003's hyperbolic regularizer compares them
    # under the local and the global model). Only problems with a natural representation provide them.
    def representation(self, w: np.ndarray) -> np.ndarray:
        """z_j(w) for every sample of every selected client: (R,N,d) -> (R,N,S,m); padded samples give 0."""
        raise NotImplementedError(f"{type(self).__name__} has no sample representation")

    def representation_grad(self, w: np.ndarray, G: np.ndarray) -> np.ndarray:
        """Pull back G (R,N,S,m), a gradient with respect to the representations, to w: sum_j J_j(w)' G_j, (R,N,d)."""
        raise NotImplementedError(f"{type(self).__name__} has no sample representation")

    def sample_weights(self) -> np.ndarray:
        """(R,N,S): 1/S_i for client i's samples, 0 for padding (a client's mean over samples is a weighted sum)."""
        raise NotImplementedError(f"{type(self).__name__} has no sample representation")

    def representation_inputs(self) -> np.ndarray:
        """For a representation linear in w, z_j = W' x_j: the inputs x_j, (R,N,S,f) (used to bound curvature)."""
        raise NotImplementedError(f"{type(self).__name__} has no linear sample representation")


class Problem:
    """Base class. Shapes: w (R, d); clients (R, N); variant (R,) ints into the variant axis."""

    name: str = "problem"
    dim: int
    n_clients: int
    n_variants: int = 1
    client_sizes: np.ndarray  # (C,) samples per client
    nonnegative_losses: bool = True  # per-sample losses >= 0 (Lemma 5 of seed 000 needs it)

    # ---- oracles
    def view(self, clients: np.ndarray, variant: np.ndarray) -> ClientView:
        raise NotImplementedError

    def client_losses(self, w: np.ndarray, variant: np.ndarray) -> np.ndarray:
        """f_i(w) for every client: (R, C)."""
        C = self.n_clients
        R = w.shape[0]
        clients = np.broadcast_to(np.arange(C), (R, C))
        return self.view(clients, variant).loss(np.broadcast_to(w[:, None, :], (R, C, self.dim)))

    def client_grads(self, w: np.ndarray, variant: np.ndarray) -> np.ndarray:
        """grad f_i(w) for every client: (R, C, d)."""
        C = self.n_clients
        R = w.shape[0]
        clients = np.broadcast_to(np.arange(C), (R, C))
        return self.view(clients, variant).grad(np.broadcast_to(w[:, None, :], (R, C, self.dim)))

    def loss(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        return self.client_losses(w, self._variant(w, variant)).mean(axis=1)

    def grad(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        return self.client_grads(w, self._variant(w, variant)).mean(axis=1)

    def sample_losses(self, w: np.ndarray, variant: np.ndarray | None = None) -> np.ndarray:
        """Per-sample losses f(w; z_ij) of every client: (R, C, S_max), NaN where no sample."""
        raise NotImplementedError

    def sample_grad_stats(self, w: np.ndarray, variant: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per run: (max_ij ||grad f(w; z_ij)||, max_i (1/S_i) sum_j ||grad f(w;z_ij) - grad f_i(w)||^2)."""
        raise NotImplementedError

    def population_loss(self, w: np.ndarray) -> np.ndarray:
        """F(w) = (1/C) sum_i E_{z ~ D_i} f(w; z) where the distribution is known."""
        raise NotImplementedError(f"{self.name} has no known population risk")

    # ---- constants
    @property
    def _constants(self) -> dict[str, Constant]:  # the global constants; subclasses compute them once
        raise NotImplementedError

    @cached_property
    def _all_constants(self) -> Constants:
        lazy = {"L_clients": lambda: self._client_curvature["L_clients"],
                "mu_clients": lambda: self._client_curvature["mu_clients"],
                "w_star_clients": lambda: self._client_minima["w_star_clients"],
                "f_star_clients": lambda: self._client_minima["f_star_clients"],
                "Gamma": self._gamma}
        return Constants(self._constants, lazy)

    @property
    def constants(self) -> Constants:
        """Every constant by name (see the module docstring); per-client ones are computed on first access."""
        return self._all_constants

    @property
    def client_weights(self) -> np.ndarray:
        """p_i of the global objective f = sum_i p_i f_i: 1/C for every client (seed 000 eq. (2))."""
        return np.full(self.n_clients, 1.0 / self.n_clients)

    @cached_property
    def _client_curvature(self) -> dict[str, Constant]:  # L_clients, mu_clients
        raise NotImplementedError(f"{self.name} states no per-client curvature")

    @cached_property
    def _client_minima(self) -> dict[str, Constant]:  # w_star_clients, f_star_clients
        raise NotImplementedError(f"{self.name} states no per-client minima")

    def _client_losses_at(self, W: np.ndarray) -> np.ndarray:
        """f_i(W_i) for every client i at its own point, variant 0: W (C, d) -> (C,)."""
        clients = np.arange(self.n_clients)[None]
        return self.view(clients, np.zeros(1, dtype=np.int64)).loss(np.asarray(W, dtype=np.float64)[None])[0]

    def _gamma(self) -> Constant:
        f_star, fi = self.constants["f_star"], self.constants["f_star_clients"]
        gamma = float(f_star.value - self.client_weights @ np.asarray(fi.value))
        kind = "exact" if f_star.kind == fi.kind == "exact" else "computed"
        return Constant(gamma, kind, "f* - sum_i p_i f_i* (Li et al. 2020), from f_star and f_star_clients")

    def sample_gradient_variance(self) -> Constant:
        """sup_w max_i (1/S_i) sum_j ||grad f(w; z_ij) - grad f_i(w)||^2: the variance of a one-sample gradient
        (variant 0); the value at given points is ``sample_grad_stats(w)[1]``."""
        raise NotImplementedError(f"{self.name} states no one-sample gradient variance")

    def heterogeneity_G2(self, B: float) -> Constant:
        """Smallest G^2 with (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 for all w."""
        raise NotImplementedError

    def neighbour(self, client: int, index: int, random_state=0) -> "Problem":
        """This problem with a second variant: sample ``index`` of ``client`` replaced by a fresh one."""
        return self.neighbours([(client, index)], random_state)

    def neighbours(self, replacements, random_state=0) -> "Problem":
        """Variant 0 = this data; variant j+1 = this data with replacement j = (client, index) done."""
        raise NotImplementedError

    def random_replacements(self, n: int, random_state=0) -> list[tuple[int, int]]:
        """n (client, index) pairs drawn uniformly over all samples."""
        rng = check_random_state(random_state)
        sizes = self.client_sizes
        flat = rng.integers(0, int(sizes.sum()), size=n)
        edges = np.cumsum(sizes)
        clients = np.searchsorted(edges, flat, side="right")
        starts = np.concatenate([[0], edges[:-1]])
        return [(int(c), int(f - starts[c])) for c, f in zip(clients, flat)]

    def _check_replacement(self, client, index):
        client = check_int("client", client, 0, self.n_clients - 1)
        index = check_int("index", index, 0, int(self.client_sizes[client]) - 1)
        return client, index

    def initial_point(self, random_state=0, scale: float = 1.0) -> np.ndarray:
        rng = check_random_state(random_state)
        w_star = np.asarray(self.constants["w_star"].value)
        return w_star + scale * rng.standard_normal(self.dim) / np.sqrt(self.dim)

    def describe(self) -> dict[str, Any]:
        out = {"name": self.name, "dim": self.dim, "n_clients": self.n_clients}
        for k, c in self.constants.items():
            if np.ndim(c.value) == 0:
                out[k] = {"value": float(c.value), "kind": c.kind}
        return out

    def _variant(self, w: np.ndarray, variant) -> np.ndarray:
        if variant is None:
            return np.zeros(w.shape[0], dtype=np.int64)
        return np.asarray(variant, dtype=np.int64)


def _gather(arr: np.ndarray, variant: np.ndarray, clients: np.ndarray) -> np.ndarray:
    """arr (V, C, ...) -> (R, N, ...) for variant (R,), clients (R, N)."""
    return arr[variant[:, None], clients]


def _sample_rows(arr: np.ndarray, variant: np.ndarray, clients: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Flat row numbers into arr (V, C, S, ...) of samples idx (R, N, b) of clients (R, N), variant (R,)."""
    _, C, S = arr.shape[:3]
    return (variant[:, None, None] * C + clients[..., None]) * S + idx


def _shared_index(variant: np.ndarray, clients: np.ndarray, n_clients: int):
    """When every run uses the same variant and the same client list: the index that maps an array
    (V, C, ...) to the (N, ...) block all runs share (a basic index, so a view, when the list is all
    clients in order); else None."""
    v0 = int(variant[0])
    if not ((variant == v0).all() and (clients == clients[0]).all()):
        return None
    row = clients[0]
    if row.size == n_clients and (row == np.arange(n_clients)).all():
        return v0
    return (v0, row)


# --------------------------------------------------------------------------------------------
# least squares: f(w; (x, y)) = (x.w - y)^2 / 2  (+ ridge/2 ||w||^2)


class _LSView(ClientView):
    def __init__(self, p: "LeastSquaresProblem", clients, variant):
        self.p, self.clients, self.variant = p, clients, variant
        index = _shared_index(variant, clients, p.H.shape[1])
        self.shared = index is not None
        if self.shared:  # every run: the same clients and data; one (N, d, d) stack serves all runs
            self.H, self.h, self.c = p.H[index], p.h[index], p.c[index]
        else:
            self.H = _gather(p.H, variant, clients)  # (R,N,d,d)
            self.h = _gather(p.h, variant, clients)  # (R,N,d)
            self.c = _gather(p.c, variant, clients)  # (R,N)

    def _Hw(self, w):
        if self.shared:  # (N,d,d) @ (N,d,R): one batched matmul with R columns per client
            return np.matmul(self.H, w.transpose(1, 2, 0)).transpose(2, 0, 1)
        return np.matmul(self.H, w[..., None])[..., 0]

    def grad(self, w):
        return self._Hw(w) - self.h

    def loss(self, w):
        return 0.5 * np.sum(w * self._Hw(w), axis=-1) - np.sum(self.h * w, axis=-1) + self.c

    def grad_batch(self, w, idx):
        rows = _sample_rows(self.p.X, self.variant, self.clients, idx)
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
    """Heterogeneous least squares. Exact: L, mu (strong convexity or PL), w*, f*, G^2(B), F."""

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

    def view(self, clients, variant):
        return _LSView(self, clients, variant)

    def sample_losses(self, w, variant=None):
        v = self._variant(w, variant)
        r = np.einsum("rcsd,rd->rcs", self.X[v], w) - self.y[v]
        return 0.5 * r**2 + 0.5 * self.ridge * np.sum(w**2, axis=1)[:, None, None]

    def sample_grad_stats(self, w, variant=None):
        v = self._variant(w, variant)
        X = self.X[v]
        r = np.einsum("rcsd,rd->rcs", X, w) - self.y[v]
        g = X * r[..., None] + self.ridge * w[:, None, None, :]  # (R,C,S,d)
        norms = np.linalg.norm(g, axis=-1)
        var = np.mean(np.sum((g - g.mean(axis=2, keepdims=True)) ** 2, axis=-1), axis=2)  # (R,C)
        return norms.max(axis=(1, 2)), var.max(axis=1)

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
        hbar = self.h[0].mean(axis=0)
        eig = np.linalg.eigvalsh(Hbar)
        L = float(np.max(np.linalg.eigvalsh(self.H)))  # over all variants: both coupled runs are L-smooth
        tol = 1e-10 * max(eig.max(), 1e-300)
        if eig.min() > tol:
            mu = Constant(float(eig.min()), "exact", "strong convexity of f: smallest eigenvalue of the mean Hessian")
            strongly_convex = True
        else:
            pos = eig[eig > tol]
            mu = Constant(float(pos.min()), "exact", "PL constant of f (not strongly convex): smallest non-zero eigenvalue")
            strongly_convex = False
        w_star = np.linalg.lstsq(Hbar, hbar, rcond=None)[0]
        f_star = float(self.loss(w_star[None])[0])
        return {
            "L": Constant(L, "exact", "max over clients of the largest Hessian eigenvalue (Assumption 1: each f_i L-smooth)"),
            "mu": mu,
            "strongly_convex": Constant(strongly_convex, "exact"),
            "w_star": Constant(w_star, "exact", "normal equations (min-norm solution when f is only PL)"),
            "f_star": Constant(f_star, "exact"),
            "B_min": Constant(self._B_min(), "exact", "smallest B for which some finite G satisfies Assumption 3"),
        }

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
            return Constant(np.inf, "exact", "unbounded over w: the deviation (x x' - H_i) w is linear in w; along a run "
                                             "measure 'visited_max_grad_var'")
        r = X * self.y[0][..., None] - self.h[0][:, None, :]  # every x_j x_j' equal: the variance does not depend on w
        return Constant(float(np.max(np.mean(np.sum(r**2, axis=-1), axis=1))), "exact", "independent of w")

    def _moments(self, variant: int = 0):
        H, h = self.H[variant], self.h[variant]
        Hbar, hbar = H.mean(axis=0), h.mean(axis=0)
        M = np.einsum("cde,cef->df", H, H) / self.n_clients
        m = np.einsum("cde,ce->d", H, h) / self.n_clients
        s = float(np.mean(np.sum(h**2, axis=1)))
        return Hbar, hbar, M, m, s

    def _B_min(self) -> float:
        Hbar, _, M, _, _ = self._moments()
        P = np.linalg.pinv(Hbar, rcond=1e-10, hermitian=True)
        return float(np.sqrt(max(np.max(np.linalg.eigvalsh(P @ M @ P)), 0.0)))

    def heterogeneity_G2(self, B: float) -> Constant:
        """Exact: sup_w of a quadratic, G^2(B) = c0 + b' A^+ b with A = B^2 Hbar^2 - M (inf if A is not PSD)."""
        B = check_float("B", B, 0.0, low_inclusive=False)
        Hbar, hbar, M, m, s = self._moments()
        A = B**2 * Hbar @ Hbar - M
        b = m - B**2 * Hbar @ hbar
        c0 = s - B**2 * float(hbar @ hbar)
        lam, U = np.linalg.eigh(A)
        scale = max(np.abs(lam).max(), 1e-300)
        if lam.min() < -1e-10 * scale:
            return Constant(np.inf, "exact", f"no finite G for B={B} (B < B_min)")
        proj = U.T @ b
        null = lam <= 1e-10 * scale
        if np.any(np.abs(proj[null]) > 1e-8 * max(np.linalg.norm(b), 1e-300)):
            return Constant(np.inf, "exact", f"no finite G for B={B}")
        G2 = c0 + float(np.sum(proj[~null] ** 2 / lam[~null]))
        return Constant(max(G2, 0.0), "exact", "sup over w of a concave quadratic, in closed form")

    def neighbours(self, replacements, random_state=0) -> "LeastSquaresProblem":
        if self.model is None:
            raise ParameterError("problem", self.name, "a problem with a known data distribution to draw the replacement from")
        rng = check_random_state(random_state)
        Xs, ys = [self.X[0]], [self.y[0]]
        for client, index in replacements:
            client, index = self._check_replacement(client, index)
            X2, y2 = self.X[0].copy(), self.y[0].copy()
            x, yy = self.model.draw(rng, client, 1)
            X2[client, index], y2[client, index] = x[0], yy[0]
            Xs.append(X2)
            ys.append(y2)
        return LeastSquaresProblem(np.stack(Xs), np.stack(ys), ridge=self.ridge, model=self.model, name=self.name)


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
    rank-r subspace: f is then PL but not strongly convex."""
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


# --------------------------------------------------------------------------------------------
# PL non-convex: f(w; z) = sum_j (w_j^2 + 3 sin^2 w_j) + z.w, client data centred so sum_i h_i = 0


def _pl_ratio(x):
    g = x**2 + 3 * np.sin(x) ** 2
    dg = 2 * x + 3 * np.sin(2 * x)
    return dg**2 / (2 * g)


def _tightest_pl_constant() -> float:
    """inf_x g'(x)^2 / (2 g(x)) for g = x^2 + 3 sin^2 x (Karimi et al. 2016 give 1/32 as a valid mu).

    The ratio tends to 8 at 0 and to 2 at infinity; the infimum is interior. Grid + bounded
    scalar minimisation to 1e-12.
    """
    xs = np.linspace(1e-3, 20.0, 200_001)
    x0 = xs[np.argmin(_pl_ratio(xs))]
    res = scipy.optimize.minimize_scalar(_pl_ratio, bounds=(x0 - 1e-3, x0 + 1e-3), method="bounded",
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


def linear_shift_G2(h: np.ndarray, B: float) -> Constant:
    """Assumption 3's G^2 at ``B`` for clients f_i = g + h_i.w with sum_i h_i = 0 (h: (C, d)): for every w,
    (1/C) sum_i ||grad f_i||^2 = ||grad f||^2 + (1/C) sum_i ||h_i||^2, so G^2 = (1/C) sum_i ||h_i||^2 for any B >= 1."""
    B = check_float("B", B, 0.0, low_inclusive=False)
    if B < 1.0:
        return Constant(np.inf, "exact", "B < 1 is never valid (Jensen)")
    return Constant(float(np.mean(np.sum(h ** 2, axis=1))), "exact",
                    "(1/C) sum_i ||grad g + h_i||^2 = ||grad g||^2 + (1/C) sum_i ||h_i||^2 exactly")


class _PLView(ClientView):
    def __init__(self, p: "PLNonconvexProblem", clients, variant):
        self.p, self.clients, self.variant = p, clients, variant
        self.shift = _gather(p.h, variant, clients)  # (R,N,d)

    def grad(self, w):
        return 2 * w + 3 * np.sin(2 * w) + self.shift

    def loss(self, w):
        return np.sum(w**2 + 3 * np.sin(w) ** 2, axis=-1) + np.einsum("rnd,rnd->rn", self.shift, w)

    def grad_batch(self, w, idx):
        rows = _sample_rows(self.p.Z, self.variant, self.clients, idx)
        zb = np.take(self.p.Z.reshape(-1, self.p.dim), rows, axis=0).mean(axis=2)
        return 2 * w + 3 * np.sin(2 * w) + zb


class PLNonconvexProblem(Problem):
    """Non-convex but PL: f_i(w) = g(w) + h_i.w with g(w) = sum_j (w_j^2 + 3 sin^2 w_j).

    h_i = mean of client i's samples z_ij, centred so that sum_i h_i = 0, hence f = g.
    Exact: L = 8 (|g''| <= 8), mu = tightest PL constant of g (1-D minimisation), w* = 0,
    f* = 0, and Assumption 3 with B = 1 and G^2 = (1/C) sum_i ||h_i||^2 (an equality for all w).
    Minibatch noise has a variance independent of w: exact. Per-sample losses can be negative.
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

    @cached_property
    def _client_curvature(self):
        C = self.n_clients
        return {
            "L_clients": Constant(np.full(C, 8.0), "exact", "each f_i = g + h_i.w has the Hessian of g: |2 + 6 cos 2x| <= 8"),
            "mu_clients": Constant(np.full(C, -4.0), "exact",
                                   "f_i is non-convex: inf_w lambda_min(Hessian) = 2 - 6 = -4 (4-weakly convex, no strong "
                                   "convexity); only the global f is PL, with constant mu"),
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

    def sample_gradient_variance(self) -> Constant:
        return Constant(self.constants["minibatch_variance_1"].value, "exact",
                        "max_i (1/S) sum_j ||z_ij - h_i||^2, independent of w")

    def heterogeneity_G2(self, B: float) -> Constant:
        return linear_shift_G2(self.h[0], B)

    def neighbours(self, replacements, random_state=0):
        rng = check_random_state(random_state)
        Zs = [self.Z[0]]
        for client, index in replacements:
            client, index = self._check_replacement(client, index)
            Z2 = self.Z[0].copy()
            Z2[client, index] = self.h[0, client] + rng.standard_normal(self.dim) * np.std(self.Z[0, client])
            Zs.append(Z2)
        return PLNonconvexProblem(np.stack(Zs), name=self.name)


def pl_nonconvex(n_clients: int = 10, dim: int = 10, samples_per_client: int = 50, *, heterogeneity: float = 1.0,
                 sample_std: float = 1.0, random_state=0) -> PLNonconvexProblem:
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


# --------------------------------------------------------------------------------------------
# separable PL family: f_i(w) = sum_j c_j (w_j^2 + a_j sin^2 w_j) + h_i.w, sum_i h_i = 0 (pl_nonconvex: c = 1, a = 3)

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
        self.shift = _gather(p.h, variant, clients)  # (R,N,d)

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
            raise ParameterError("h", float(np.abs(h.mean(axis=1)).max()), "client terms with sum_i h_i = 0 (centre them)")
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

    @cached_property
    def _client_curvature(self):
        C = self.n_clients
        lo = float(np.min(self.c * (2 - 2 * self.a)))
        return {
            "L_clients": Constant(np.full(C, self.constants["L"].value), "exact", "every f_i has the Hessian of g"),
            "mu_clients": Constant(np.full(C, lo), "exact", "inf_w lambda_min(Hessian of g) = min_j c_j (2 - 2 a_j) "
                                                            "(< 0: non-convex clients)"),
        }

    def sample_gradient_variance(self) -> Constant:
        return Constant(0.0, "exact", "one sample per client")

    def heterogeneity_G2(self, B: float) -> Constant:
        return linear_shift_G2(self.h[0], B)


# --------------------------------------------------------------------------------------------
# multinomial logistic regression with L2: f(W; x, y) = logsumexp(x'W) - x'W_y + reg/2 ||W||^2


def _softmax(z):
    k = z.shape[-1]
    if k > 16:
        z = z - z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)
    # few classes: numpy's reductions over a short last axis are slow; fold the class slices instead
    m = z[..., 0].copy()
    for c in range(1, k):
        np.maximum(m, z[..., c], out=m)
    e = np.exp(z - m[..., None])
    s = e[..., 0].copy()
    for c in range(1, k):
        s += e[..., c]
    return e / s[..., None]


class _LogView(ClientView):
    def __init__(self, p: "LogisticProblem", clients, variant):
        self.p = p
        self.X = _gather(p.X, variant, clients)  # (R,N,S,f)
        self.Y = _gather(p.Yoh, variant, clients)  # (R,N,S,k)
        self.mask = p.mask[clients]  # (R,N,S)
        self.size = p.client_sizes[clients].astype(float)  # (R,N)

    def _W(self, w):
        return w.reshape(*w.shape[:-1], self.p.n_features, self.p.n_classes)

    def grad(self, w):
        W = self._W(w)
        P = _softmax(np.matmul(self.X, W))  # (R,N,S,k)
        E = (P - self.Y) * self.mask[..., None]
        G = np.matmul(np.swapaxes(self.X, -1, -2), E) / self.size[..., None, None]
        return G.reshape(w.shape) + self.p.reg * w

    def loss(self, w):
        W = self._W(w)
        Z = np.matmul(self.X, W)
        lse = _logsumexp(Z)
        ce = (lse - np.sum(Z * self.Y, axis=-1)) * self.mask
        return ce.sum(axis=-1) / self.size + 0.5 * self.p.reg * np.sum(w**2, axis=-1)

    def representation(self, w):
        """The logits (pre-softmax activations) z_j = W' x_j of every sample: (R,N,S,k)."""
        return np.matmul(self.X, self._W(w))

    def representation_grad(self, w, G):
        return np.matmul(np.swapaxes(self.X, -1, -2), G).reshape(w.shape)

    def sample_weights(self):
        return self.mask / self.size[..., None]

    def representation_inputs(self):
        return self.X

    def grad_batch(self, w, idx):
        W = self._W(w)
        Xb = np.take_along_axis(self.X, idx[..., None], axis=2)
        Yb = np.take_along_axis(self.Y, idx[..., None], axis=2)
        P = _softmax(np.matmul(Xb, W))
        G = np.matmul(np.swapaxes(Xb, -1, -2), P - Yb) / idx.shape[-1]
        return G.reshape(w.shape) + self.p.reg * w


def _logsumexp(Z):
    k = Z.shape[-1]
    if k > 16:
        m = Z.max(axis=-1, keepdims=True)
        return (m + np.log(np.sum(np.exp(Z - m), axis=-1, keepdims=True)))[..., 0]
    m = Z[..., 0].copy()  # few classes: fold the class slices (see _softmax)
    for c in range(1, k):
        np.maximum(m, Z[..., c], out=m)
    e = np.exp(Z - m[..., None])
    s = e[..., 0].copy()
    for c in range(1, k):
        s += e[..., c]
    return m + np.log(s)


class LogisticProblem(Problem):
    """Multinomial logistic regression, clients of unequal sizes (padded and masked).

    L: bound  max_i lambda_max(X_i'X_i/S_i)/2 + reg (softmax Hessian <= I/2 in the Loewner order).
    mu: bound reg (strong convexity from the L2 term). w*, f*: computed by L-BFGS to ||grad|| <= 1e-10.
    Heterogeneity: measured over visited points (no closed form).
    """

    def __init__(self, X_clients: list[np.ndarray], y_clients: list[np.ndarray], n_classes: int, *, reg: float = 1e-2,
                 test: tuple[np.ndarray, np.ndarray] | None = None, name: str = "logistic",
                 _variants: tuple[np.ndarray, np.ndarray] | None = None):
        self.name = name
        self.reg = check_float("reg", reg, 0.0, low_inclusive=False)
        self.n_classes = check_int("n_classes", n_classes, 2)
        sizes = np.array([len(y) for y in y_clients])
        if np.any(sizes == 0):
            raise ParameterError("clients", sizes.tolist(), "every client must have at least one sample")
        for i, x in enumerate(X_clients):
            check_finite(f"X_clients[{i}]", x)
        self.client_sizes = sizes
        self.n_clients = len(y_clients)
        self.n_features = X_clients[0].shape[1]
        self.dim = self.n_features * self.n_classes
        Smax = int(sizes.max())
        if _variants is None:
            X = np.zeros((1, self.n_clients, Smax, self.n_features))
            Y = np.zeros((1, self.n_clients, Smax), dtype=np.int64)
            for i, (x, y) in enumerate(zip(X_clients, y_clients)):
                X[0, i, : len(y)] = x
                Y[0, i, : len(y)] = y
        else:
            X, Y = _variants
        self.X, self.Y = X, Y
        self.n_variants = X.shape[0]
        self.mask = (np.arange(Smax)[None, :] < sizes[:, None]).astype(float)
        self.Yoh = np.eye(self.n_classes)[Y] * self.mask[None, :, :, None]
        self.test = test
        self._clients_raw = (X_clients, y_clients)

    def view(self, clients, variant):
        return _LogView(self, clients, variant)

    def sample_losses(self, w, variant=None):
        v = self._variant(w, variant)
        W = w.reshape(-1, self.n_features, self.n_classes)
        Z = np.einsum("rcsf,rfk->rcsk", self.X[v], W)
        ce = _logsumexp(Z) - np.sum(Z * self.Yoh[v], axis=-1) + 0.5 * self.reg * np.sum(w**2, axis=1)[:, None, None]
        return np.where(self.mask[None] > 0, ce, np.nan)

    def sample_grad_stats(self, w, variant=None):
        v = self._variant(w, variant)
        W = w.reshape(-1, self.n_features, self.n_classes)
        X = self.X[v]
        P = _softmax(np.einsum("rcsf,rfk->rcsk", X, W))
        E = P - self.Yoh[v]
        G = np.einsum("rcsf,rcsk->rcsfk", X, E).reshape(*E.shape[:3], -1) + self.reg * w[:, None, None, :]
        m = self.mask[None]
        norms = np.where(m > 0, np.linalg.norm(G, axis=-1), 0.0)
        mean = np.sum(G * m[..., None], axis=2, keepdims=True) / self.client_sizes[None, :, None, None]
        var = np.sum(np.sum((G - mean) ** 2, axis=-1) * m, axis=2) / self.client_sizes[None]
        return norms.max(axis=(1, 2)), var.max(axis=1)

    def test_loss(self, w):
        if self.test is None:
            raise NotImplementedError(f"{self.name} has no held-out set")
        Xt, yt = self.test
        W = w.reshape(-1, self.n_features, self.n_classes)
        Z = np.matmul(Xt, W)  # (R, S, k)
        ce = _logsumexp(Z) - np.take_along_axis(Z, np.broadcast_to(yt[None, :, None], (Z.shape[0], len(yt), 1)), -1)[..., 0]
        return ce.mean(axis=1) + 0.5 * self.reg * np.sum(w**2, axis=1)

    def test_accuracy(self, w):
        Xt, yt = self.test
        W = w.reshape(-1, self.n_features, self.n_classes)
        return (np.argmax(np.einsum("sf,rfk->rsk", Xt, W), axis=-1) == yt[None]).mean(axis=1)

    @cached_property
    def _constants(self):
        lam = [np.linalg.eigvalsh(self.X[0, i, :s].T @ self.X[0, i, :s] / s).max() for i, s in enumerate(self.client_sizes)]
        L = 0.5 * float(max(lam)) + self.reg
        f = lambda w: float(self.loss(w[None])[0])
        g = lambda w: self.grad(w[None])[0]
        res = scipy.optimize.minimize(f, np.zeros(self.dim), jac=g, method="L-BFGS-B",
                                      options={"gtol": 1e-11, "ftol": 0, "maxiter": 20000})
        w = res.x
        gn = float(np.linalg.norm(g(w)))
        return {
            "L": Constant(L, "bound", "max_i lambda_max(X_i'X_i/S_i)/2 + reg (softmax Hessian <= I/2)"),
            "mu": Constant(self.reg, "bound", "strong convexity from the L2 term"),
            "strongly_convex": Constant(True, "exact"),
            "w_star": Constant(w, "computed", f"L-BFGS, final ||grad f|| = {gn:.1e}"),
            "f_star": Constant(f(w), "computed", f"L-BFGS, final ||grad f|| = {gn:.1e}"),
        }

    @cached_property
    def _client_curvature(self):
        X = self.X[0]  # padded rows are 0 and add nothing
        lam = np.linalg.eigvalsh(np.einsum("csf,csg->cfg", X, X) / self.client_sizes[:, None, None])[:, -1]
        return {
            "L_clients": Constant(0.5 * lam + self.reg, "bound", "lambda_max(X_i'X_i/S_i)/2 + reg (softmax Hessian <= I/2)"),
            "mu_clients": Constant(np.full(self.n_clients, self.reg), "exact",
                                   "reg: the cross-entropy is flat along W + v 1' (a shift common to all classes), so "
                                   "the L2 term's reg is each f_i's exact strong convexity"),
        }

    @cached_property
    def _client_minima(self):
        zero = np.zeros(1, dtype=np.int64)
        W, F, gmax = np.empty((self.n_clients, self.dim)), np.empty(self.n_clients), 0.0
        for i in range(self.n_clients):  # once per problem, not on a hot path
            v = self.view(np.array([[i]]), zero)
            f = lambda w: float(v.loss(w[None, None])[0, 0])
            g = lambda w: v.grad(w[None, None])[0, 0]
            res = scipy.optimize.minimize(f, np.zeros(self.dim), jac=g, method="L-BFGS-B",
                                          options={"gtol": 1e-7, "ftol": 0, "maxiter": 20000})
            w = res.x
            x = self.X[0, i, : self.client_sizes[i]]
            for _ in range(6):  # Newton from there: quadratic convergence to rounding (L-BFGS stalls near 1e-9)
                step = np.linalg.solve(self._client_hessian(x, w), g(w))
                if not np.linalg.norm(g(w - step)) < np.linalg.norm(g(w)):
                    break
                w = w - step
            W[i], F[i] = w, f(w)
            gmax = max(gmax, float(np.linalg.norm(g(w))))
        how = (f"L-BFGS + Newton per client, final max_i ||grad f_i|| = {gmax:.1e} (so ||w - w_i*|| <= {gmax / self.reg:.1e} "
               f"and f_i - f_i* <= {gmax**2 / (2 * self.reg):.1e} by reg-strong convexity)")
        return {"w_star_clients": Constant(W, "computed", how), "f_star_clients": Constant(F, "computed", how)}

    def _client_hessian(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Hessian of (1/S) sum_j CE(x_j' W) + reg/2 ||w||^2 over the rows x (S, f), flat features-major: (d, d)."""
        P = _softmax(x @ w.reshape(self.n_features, self.n_classes))  # (S, k)
        D = np.einsum("sk,kl->skl", P, np.eye(self.n_classes)) - np.einsum("sk,sl->skl", P, P)
        Y = x[:, None, :, None] * D[:, :, None, :]  # (S, k, g, l) = x_sg D_skl
        H = (x.T @ Y.reshape(len(x), -1)).reshape(self.dim, self.dim) / len(x)  # sum_s x_sf x_sg D_skl
        return H + self.reg * np.eye(self.dim)

    def sample_gradient_variance(self) -> Constant:
        sq = np.einsum("csf,csf->c", self.X[0], self.X[0]) / self.client_sizes
        return Constant(float(2 * sq.max()), "bound",
                        "max_i (2/S_i) sum_j ||x_ij||^2: the variance is at most the mean of ||x_j||^2 ||p_j - e_y||^2, "
                        "and ||p - e_y||^2 <= 2")

    def heterogeneity_G2(self, B: float) -> Constant:
        raise NotImplementedError("logistic regression: G^2(B) has no closed form; measure it over visited points "
                                  "with fedtheory.sim.stability.measured_heterogeneity_G2")

    def neighbours(self, replacements, random_state=0):
        if self.test is None:
            raise ParameterError("problem", self.name, "a problem with a held-out pool to draw the replacement from")
        rng = check_random_state(random_state)
        Xs, Ys = [self.X[0]], [self.Y[0]]
        for client, index in replacements:
            client, index = self._check_replacement(client, index)
            j = rng.integers(len(self.test[1]))
            X2, Y2 = self.X[0].copy(), self.Y[0].copy()
            X2[client, index], Y2[client, index] = self.test[0][j], self.test[1][j]
            Xs.append(X2)
            Ys.append(Y2)
        return LogisticProblem(*self._clients_raw, self.n_classes, reg=self.reg, test=self.test, name=self.name,
                               _variants=(np.stack(Xs), np.stack(Ys)))


def digits_split(test_fraction: float, random_state=0):
    """scikit-learn's bundled digits as (X, y, train_idx, test_idx): pixels / 16 plus a bias feature, a random
    ``test_fraction`` held out (no download)."""
    from sklearn.datasets import load_digits

    test_fraction = check_float("test_fraction", test_fraction, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    rng = check_random_state(random_state)
    data = load_digits()
    X = np.hstack([data.data / 16.0, np.ones((len(data.target), 1))])
    y = data.target.astype(np.int64)
    perm = rng.permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    return X, y, perm[n_test:], perm[:n_test]


def digits_logistic(n_clients: int = 10, alpha: float = 0.5, *, reg: float = 1e-2, test_fraction: float = 0.2,
                    random_state=0) -> LogisticProblem:
    """scikit-learn's bundled digits (1797 8x8 images, 10 classes; no download), pixels / 16 plus a bias
    feature, split across clients by Dirichlet label skew; ``test_fraction`` is held out."""
    n_clients = check_int("n_clients", n_clients, 1)
    rng = check_random_state(random_state)
    X, y, train_idx, test_idx = digits_split(test_fraction, rng)
    from .partition import dirichlet_label_skew

    parts = dirichlet_label_skew(y[train_idx], n_clients, alpha, random_state=rng)
    Xc = [X[train_idx][p] for p in parts]
    yc = [y[train_idx][p] for p in parts]
    return LogisticProblem(Xc, yc, 10, reg=reg, test=(X[test_idx], y[test_idx]), name="digits_logistic")


def synthetic_logistic(n_clients: int = 10, n_features: int = 10, n_classes: int = 3, samples_per_client: int = 60, *,
                       alpha: float = 0.5, shift: float = 1.0, reg: float = 1e-2, random_state=0) -> LogisticProblem:
    """Gaussian class-conditional features; client i adds its own feature shift (scaled by ``shift``)
    and draws labels with Dirichlet(alpha) proportions."""
    n_clients = check_int("n_clients", n_clients, 1)
    n_features = check_int("n_features", n_features, 1)
    n_classes = check_int("n_classes", n_classes, 2)
    S = check_int("samples_per_client", samples_per_client, 1)
    rng = check_random_state(random_state)
    centers = rng.standard_normal((n_classes, n_features))
    shifts = shift * rng.standard_normal((n_clients, n_features)) / np.sqrt(n_features)

    def draw(i, n):
        q = rng.dirichlet(np.full(n_classes, alpha))
        y = rng.choice(n_classes, size=n, p=q)
        x = centers[y] + shifts[i] + rng.standard_normal((n, n_features))
        return np.hstack([x / np.sqrt(n_features), np.ones((n, 1))]), y

    Xc, yc = zip(*(draw(i, S) for i in range(n_clients)))
    pool = [draw(i, 20) for i in range(n_clients)]
    test = (np.vstack([p[0] for p in pool]), np.concatenate([p[1] for p in pool]))
    return LogisticProblem(list(Xc), list(yc), n_classes, reg=reg, test=test, name="synthetic_logistic")
