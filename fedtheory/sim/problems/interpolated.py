"""Clients whose objectives are smooth (strongly) convex interpolants (``interpolant.py``): the worst-case instances the
PEP reconstructs from its solution (``fedtheory.worst.pep.instance``), run by the simulator like any problem.

Client j: f_j(x) = (mu/2)||x||^2 + min over the simplex of (L'/2)||x - A_j' lam||^2 - c_j' lam (L' = L - mu), f =
sum_j p_j f_j. Every constant of the class holds by construction: each f_j is L-smooth and mu-strongly convex
(mu = -L: L-smooth, possibly non-convex). The clients' gradients differ by L' (A_i' lam_i - A_j' lam_j), bounded by
L' times the largest distance between two rows of the A_j, which bounds the dissimilarity constants. w* and f* are
computed (gradient descent to a stated gradient norm), and in closed form for one convex client (the conjugate's
maximum at 0)."""
from __future__ import annotations

from functools import cached_property
from typing import Sequence

import numpy as np

from ..._validation import ParameterError, check_float
from ..certificates import Certificate, certified, refused
from .base import ClientView, Constant, Problem
from .interpolant import interpolant, minimize_sum

__all__ = ["InterpolatedProblem"]


class _InterpView(ClientView):
    def __init__(self, p: "InterpolatedProblem", clients):
        self.p, self.clients = p, np.asarray(clients)

    def _each(self, w, what: int):
        R, N, d = w.shape
        out = np.empty((R, N, d) if what == 1 else (R, N))
        for r in range(R):
            for n in range(N):
                A, c = self.p.parts[int(self.clients[r, n])]
                out[r, n] = interpolant(A, c, self.p.L, self.p.mu, w[r, n])[what]
        return out

    def grad(self, w):
        return self._each(w, 1)

    def loss(self, w):
        return self._each(w, 0)


class InterpolatedProblem(Problem):
    """Clients f_j = (mu/2)||x||^2 + h_j, h_j the L'-smooth convex interpolant given by (A_j, c_j) (``interpolant``).

    parts: one (A_j (m_j, d), c_j (m_j,)) per client; L > 0, mu in [-L, L); weights p_j (default 1/C); w_star_hint: a
    start for the minimization of f (the PEP's x*)."""

    nonnegative_losses = False

    def __init__(self, parts: Sequence[tuple[np.ndarray, np.ndarray]], L: float, mu: float = 0.0, *,
                 weights: Sequence[float] | None = None, w_star_hint: np.ndarray | None = None,
                 name: str = "interpolated"):
        self.L = check_float("L", L, 0.0, low_inclusive=False)
        self.mu = check_float("mu", mu, -self.L, self.L, high_inclusive=False)
        self.parts = [(np.asarray(A, dtype=float), np.asarray(c, dtype=float)) for A, c in parts]
        if not self.parts or any(A.ndim != 2 or c.shape != (A.shape[0],) or A.shape[1] != self.parts[0][0].shape[1]
                                 for A, c in self.parts):
            raise ParameterError("parts", len(self.parts), "one (A (m, d), c (m,)) per client, every d equal")
        self.n_clients, self.dim = len(self.parts), self.parts[0][0].shape[1]
        self.client_sizes = np.ones(self.n_clients, dtype=np.int64)
        p = np.full(self.n_clients, 1.0 / self.n_clients) if weights is None else np.asarray(weights, dtype=float)
        if p.shape != (self.n_clients,) or p.min() <= 0:
            raise ParameterError("weights", weights, f"{self.n_clients} positive numbers")
        self._p = p / p.sum()
        self._hint = None if w_star_hint is None else np.asarray(w_star_hint, dtype=float)
        self.name = name

    @property
    def client_weights(self) -> np.ndarray:
        return self._p

    @property
    def identical_clients(self) -> bool:
        """Every client the same interpolant (the same data A_j, c_j; one client trivially)."""
        A0, c0 = self.parts[0]
        return all(A.shape == A0.shape and np.array_equal(A, A0) and np.array_equal(c, c0) for A, c in self.parts[1:])

    def view(self, clients, variant):
        return _InterpView(self, clients)

    def loss(self, w, variant=None):
        return self.client_losses(w, self._variant(w, variant)) @ self._p

    def grad(self, w, variant=None):
        return np.einsum("rcd,c->rd", self.client_grads(w, self._variant(w, variant)), self._p)

    @cached_property
    def minimizer_set(self) -> np.ndarray | None:
        """One convex client: the vertices of the set of minimizers of f, conv{a_k : c_k = max c} (the conjugate's
        subdifferential at 0, in closed form); None otherwise."""
        if self.n_clients != 1 or self.mu != 0:
            return None
        A, c = self.parts[0]
        top = c >= c.max() - 1e-12 * max(1.0, abs(c.max()))
        return A[top]

    @cached_property
    def _constants(self) -> dict[str, Constant]:
        if self.minimizer_set is not None:
            A, c = self.parts[0]
            verts = self.minimizer_set
            w = verts[0]
            how = ("closed form: min h = -h*(0) = -max_k c_k, attained on conv{a_k : c_k = max c}"
                   + (f" ({len(verts)} vertices: not a single point)" if len(verts) > 1 else ""))
            return {"L": Constant(self.L, "exact", "by construction"), "mu": Constant(0.0, "exact", "by construction"),
                    "strongly_convex": Constant(False, "exact"),
                    "w_star": Constant(w, "exact", how), "f_star": Constant(-float(c.max()), "exact", how)}
        start = self._hint if self._hint is not None else np.zeros(self.dim)
        w, f, gn = minimize_sum(self.parts, self._p, self.L, self.mu, start)
        how = f"gradient descent with step 1/L from the PEP's x*, final ||grad f|| = {gn:.1e}"
        return {"L": Constant(self.L, "exact", "by construction"),
                "mu": Constant(max(self.mu, 0.0), "bound", "each f_j is mu-strongly convex, so f is"),
                "strongly_convex": Constant(self.mu > 0, "exact"),
                "w_star": Constant(w, "computed", how), "f_star": Constant(f, "computed", how)}

    @cached_property
    def _client_curvature(self):
        return {"L_clients": Constant(np.full(self.n_clients, self.L), "exact", "by construction"),
                "mu_clients": Constant(np.full(self.n_clients, self.mu), "exact", "by construction")}

    @cached_property
    def _client_minima(self) -> dict[str, Constant]:
        """Each client's minimum: for mu = 0 the closed form of ``minimizer_set`` (min h_j = -max c_j, attained at a
        row a_k with c_k = max c_j); otherwise gradient descent with step 1/L on f_j alone, from the PEP's x*."""
        start = self._hint if self._hint is not None else np.zeros(self.dim)
        W, F, worst = [], [], 0.0
        for A, c in self.parts:
            if self.mu == 0:
                top = c >= c.max() - 1e-12 * max(1.0, abs(c.max()))
                W.append(A[top][0])
                F.append(-float(c.max()))
            else:
                w, f, gn = minimize_sum([(A, c)], np.ones(1), self.L, self.mu, start)
                W.append(w)
                F.append(float(f))
                worst = max(worst, gn)
        if self.mu == 0:
            kind, how = "exact", "closed form: min h_j = -max_k c_jk, attained at a_jk with c_jk = max c_j"
        else:
            kind, how = "computed", f"gradient descent with step 1/L on each f_j, final ||grad f_j|| <= {worst:.1e}"
        return {"w_star_clients": Constant(np.array(W), kind, how), "f_star_clients": Constant(np.array(F), kind, how)}

    @cached_property
    def _dissimilarity(self) -> float:
        """L' max ||a - b|| over rows a of one client's A and b of another's: grad f_i - grad f_j = L' (A_j' lam_j -
        A_i' lam_i), so ||grad f_i - grad f_j|| <= it at every w, and so is ||grad f_i - grad f|| (0 for one client)."""
        far = 0.0
        for i, (Ai, _) in enumerate(self.parts):
            for Aj, _ in self.parts[i + 1:]:
                far = max(far, float(np.max(np.sum((Ai[:, None] - Aj[None]) ** 2, axis=-1))))
        return (self.L - self.mu) * np.sqrt(far)

    def _certify(self, name: str, visited=None) -> Certificate | None:
        c = self.constants
        L, mu = self.L, self.mu
        build = "by construction: (mu/2)||x||^2 plus the conjugate of a 1/(L - mu)-strongly convex function"
        if name in ("L_smooth", "L_smooth_global"):
            return certified(name, build, L=L)
        if name in ("convex", "convex_global"):
            return certified(name, build) if mu >= 0 else refused(name, f"mu = {mu:g} < 0: weakly convex only")
        if name in ("strongly_convex", "strongly_convex_clients", "PL"):
            if mu > 0:
                return certified(name, build + " (strong convexity implies PL)", mu=mu)
            return refused(name, "mu = 0: the interpolant is linear-quadratic far from the data, not strongly convex")
        if name == "lower_bounded":
            return certified(name, c["f_star"].note, kind=c["f_star"].kind, f_star=c["f_star"].value)
        if name in ("bounded_grad_norm", "lipschitz"):
            return refused(name, "the interpolant grows quadratically (its curvature is L far from the data)")
        if name == "nonnegative_loss":
            return refused(name, "the interpolant has no samples and takes negative values")
        z = self._dissimilarity
        how = f"||grad f_i - grad f_j|| <= (L - mu) max ||a - b|| = {z:.4g} at every w (rows of the clients' A)"
        if name == "heterogeneity_global":
            return certified(name, how, kind="bound", sigma_g=z)
        if name == "heterogeneity_max":
            return certified(name, how, kind="bound", zeta=z)
        if name == "heterogeneity":
            return certified(name, how + ": sum_i p_i ||grad f_i||^2 <= ||grad f||^2 + zeta^2 for B = 1", kind="bound",
                             B=1.0, family=("G", lambda B: np.where(np.asarray(B, float) >= 1.0, z, np.inf)))
        if name == "heterogeneity_at_optimum":
            g = self.client_grads(np.asarray(c["w_star"].value)[None], np.zeros(1, dtype=np.int64))[0]
            return certified(name, f"sum_i p_i ||grad f_i(w*)||^2 at w* ({c['w_star'].note})", kind=c["w_star"].kind,
                             zeta_star=float(np.sqrt(self._p @ np.sum(g ** 2, axis=1))))
        return super()._certify(name, visited)
