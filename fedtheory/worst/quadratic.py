"""Parametrised federated quadratics, projected onto an assumption class.

Client i's objective is f_i(w) = 1/2 w' H_i w - h_i' w + c_i with H_i = Q_i diag(lam_i) Q_i', built
as least-squares data X_i = sqrt(S) diag(sqrt(lam_i - r)) Q_i' (S = d samples, so X_i' X_i / S + r I = H_i)
and y_i = X_i w_i (w_i: client i's linear-term parameter; its optimum when f_i is convex). r is the
problem's ridge: 0 for convex clients (client_mu >= 0: the data alone, the instances of earlier versions bit
for bit), and r = client_mu < 0 for the non-convex class, so that client spectra reach down to client_mu >= -L
while the data part stays positive semi-definite. A population of P instances is ONE
:class:`~fedtheory.sim.LeastSquaresProblem` with P data variants (run r uses variant r), so a generation of
the search is one batched ``simulate`` call.

:meth:`QuadraticClass.decode` maps a parameter vector theta (any point of ``bounds``) to an instance
that satisfies the class's constraints *by construction* (every constraint is met with a relative margin
of 1e-9 or more, so floating-point rounding in the data cannot push it out):

* every H_i has its spectrum in [client_mu, L]                      (each f_i L-smooth; client_mu-strongly convex,
                                                                    or for client_mu < 0 non-convex: |client_mu|-weakly
                                                                    convex, f_i unbounded below)
* lambda_min((1/C) sum_i H_i) >= mu >= 0                            (f is mu-strongly convex, hence mu-PL; for a
                                                                    quadratic, PL with a minimiser means a PSD mean
                                                                    Hessian, so strong convexity is the PL class
                                                                    up to flat directions; mu = 0: f convex, the
                                                                    plain convex quadratics)
* (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 for all w  (heterogeneity (G, B), exact G^2(B))
* f(w^0) - f* = D exactly, or ||w^0 - w*||^2 = dist2 exactly          (the start)

Projection steps (each keeps what the earlier ones established; none assumes H_i >= 0, so they hold as they
are for non-convex clients):
1. eigenvalues clipped into [client_mu, L]; Q_i a Householder reflection of a parameter vector v_i;
2. mu: if lambda_min(Hbar) = m < mu, every H_i <- H_i + s (L I - H_i), s = (mu - m)/(L - m): a convex
   combination of H_i and L I, so spectra stay in [client_mu, L] (for either sign of client_mu and of m), and
   lambda_min of the mean becomes exactly (1 - s) m + s L = mu;
3. B: if B_min(H) > B, every H_i <- (1 - a) H_i + a Hbar with the smallest a giving B_min <= B, in closed form
   (B_min(a)^2 = 1 + (1-a)^2 (B_min^2 - 1), from M(a) = (1-a)^2 M + (1 - (1-a)^2) Hbar^2 with Hbar invertible):
   the mean (hence mu) is unchanged and spectra stay in the interval (convex combinations);
4. G: the linear terms h_i = (H_i - r I) w_i scaled by sqrt(G^2 / G^2(B)) (the parameters w_i scaled about 0)
   when G^2(B) exceeds G^2: G^2(B) = sup_w (1/C) sum_i ||H_i w - h_i||^2 - B^2 ||Hbar w - hbar||^2 is
   homogeneous of degree 2 in (h_1..h_C) (substitute w = s w'), whatever the sign of the H_i;
5. start: w^0 = w* + r u with the parameter direction u and r set by D (or dist2).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import ParameterError
from ..sim import LeastSquaresProblem
from ..sim.problems import quadratic_B_min, quadratic_G2

MARGIN = 1e-9  # relative margin inside every constraint


def uniform_in_box(bounds, n: int, rng: np.random.Generator) -> np.ndarray:
    """n parameter vectors drawn uniformly from ``bounds``: the random instances of a class, and the search's first
    population.

    Parameters
    ----------
    bounds : sequence of (float, float)
        (low, high) per parameter (a class's ``bounds``).
    n : int
        How many vectors.
    rng : numpy.random.Generator
        The random stream.

    Returns
    -------
    ndarray
        (n, len(bounds)): row r uniform in the box.
    """
    lo, hi = np.array(bounds, float).T
    return lo + (hi - lo) * rng.random((n, len(lo)))


def check_theta(theta: Any, n_params: int) -> np.ndarray:
    """``theta`` as a (P, n_params) float array, one row per instance (a single vector becomes one row).

    Parameters
    ----------
    theta : array_like
        Parameter vectors of a class.
    n_params : int
        The class's number of parameters.

    Returns
    -------
    ndarray
        (P, n_params) float array.

    Raises
    ------
    ParameterError
        ``theta`` is not of that shape (named ``theta``).
    """
    theta = np.atleast_2d(np.asarray(theta, float))
    if theta.ndim != 2 or theta.shape[1] != n_params:
        raise ParameterError("theta", theta.shape, f"(P, {n_params}) parameter vectors")
    return theta


# ------------------------------------------------------------------------------------ exact constants, batched


# The exact constants of a population of quadratics, batched over instances: the problem layer's formulas (one
# implementation, shared with LeastSquaresProblem), under the names this module has always exported.
def B_min(H: np.ndarray) -> np.ndarray:
    """The smallest B for which some finite G satisfies (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2
    for all w, per instance, of quadratic clients with Hessians H.

    B_min^2 = lambda_max(Hbar^+ M Hbar^+) = 1 + lambda_max(Hbar^+ D Hbar^+) on the range of Hbar, with
    M = (1/C) sum_i H_i^2 and D = (1/C) sum_i (H_i - Hbar)^2 the Hessians' dispersion; within 1e-12 of 1 it is 1
    (identical clients). The problem layer's formula (``fedtheory.sim.problems.quadratic_B_min``).

    Parameters
    ----------
    H : ndarray
        (P, C, d, d): the client Hessians of P instances.

    Returns
    -------
    ndarray
        (P,) B_min per instance.
    """
    return quadratic_B_min(H)


def heterogeneity_G2(H: np.ndarray, h: np.ndarray, B: float) -> np.ndarray:
    """The exact smallest G^2 with (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 for all w, per
    instance, of quadratic clients f_i(w) = w'H_i w / 2 - h_i'w + c_i.

    G^2(B) = sup_w (1/C) sum_i ||H_i w - h_i||^2 - B^2 ||Hbar w - hbar||^2, in closed form; inf where the supremum
    is infinite (e.g. B below the instance's :func:`B_min`). The problem layer's formula
    (``fedtheory.sim.problems.quadratic_G2``).

    Parameters
    ----------
    H : ndarray
        (P, C, d, d): the client Hessians.
    h : ndarray
        (P, C, d): the client linear terms.
    B : float
        The heterogeneity assumption's B.

    Returns
    -------
    ndarray
        (P,) G^2(B) per instance (>= 0, or inf).
    """
    return quadratic_G2(H, h, B)


# ------------------------------------------------------------------------------------ instances


@dataclass
class Instances:
    """P federated quadratics (the data the engine sees) and their exact constants.

    Client i of instance p has f_i(w) = (1/S) sum_j (x_ij . w - y_ij)^2 / 2 + ridge ||w||^2 / 2, i.e. Hessian
    H_i = X_i'X_i/S + ridge I and linear term h_i = X_i'y_i/S; built at construction: ``H`` (P, C, d, d), ``h``
    (P, C, d), ``c`` (P, C), the minimiser ``w_star`` (P, d) of f = mean_i f_i (the min-norm one where the mean
    Hessian is singular) and ``f_star`` (P,).

    Parameters
    ----------
    X : ndarray
        (P, C, S, d): every client's samples.
    y : ndarray
        (P, C, S): their labels.
    w0 : ndarray
        (P, d): the starts.
    theta : ndarray
        (P, n): the parameter vectors the instances were decoded from ((1, 0) for an instance read from a file).
    ridge : float, default 0.0
        The problem's ridge r (r < 0: non-convex clients, the class's ``client_mu``).
    """

    X: np.ndarray  # (P, C, S, d)
    y: np.ndarray  # (P, C, S)
    w0: np.ndarray  # (P, d)
    theta: np.ndarray  # (P, n) the parameters they were decoded from (empty for a replayed instance)
    ridge: float = 0.0  # the problem's ridge r: H_i = X_i'X_i/S + r I (r < 0: non-convex clients)
    H: np.ndarray = field(init=False)
    h: np.ndarray = field(init=False)
    c: np.ndarray = field(init=False)
    w_star: np.ndarray = field(init=False)
    f_star: np.ndarray = field(init=False)

    def __post_init__(self):
        S, d = self.X.shape[2], self.X.shape[3]
        self.H = np.einsum("pcsd,pcse->pcde", self.X, self.X) / S  # exactly as LeastSquaresProblem computes them
        if self.ridge:
            self.H = self.H + self.ridge * np.eye(d)
        self.h = np.einsum("pcsd,pcs->pcd", self.X, self.y) / S
        self.c = np.einsum("pcs,pcs->pc", self.y, self.y) / (2 * S)
        Hbar, hbar = self.H.mean(axis=1), self.h.mean(axis=1)
        try:
            self.w_star = np.linalg.solve(Hbar, hbar[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a flat direction of the mean (the convex class, mu = 0): the min-norm minimiser
            self.w_star = np.einsum("pde,pe->pd", np.linalg.pinv(Hbar, hermitian=True), hbar)
        self.f_star = self.loss(self.w_star)

    def __len__(self) -> int:
        return self.X.shape[0]

    @property
    def n_clients(self) -> int:
        return self.X.shape[1]

    @property
    def dim(self) -> int:
        return self.X.shape[3]

    def problem(self, name: str = "worst_quadratic") -> LeastSquaresProblem:
        return LeastSquaresProblem(self.X, self.y, ridge=self.ridge, name=name)

    def loss(self, w: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        """f(w) of instance ``which`` (default: instance r for row r): w (R, d) -> (R,)."""
        which = np.arange(len(w)) if which is None else np.asarray(which)
        H, h, c = self.H[which], self.h[which], self.c[which]
        Hw = np.einsum("rcde,re->rcd", H, w)
        return (0.5 * np.einsum("rcd,rd->rc", Hw, w) - np.einsum("rcd,rd->rc", h, w) + c).mean(axis=1)

    def client_optima(self) -> np.ndarray:
        try:
            return np.linalg.solve(self.H, self.h[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a client Hessian exactly singular (client_mu = 0): the min-norm minimiser
            return np.einsum("pcde,pce->pcd", np.linalg.pinv(self.H, hermitian=True), self.h)

    def constants(self, B: float | None = None) -> dict[str, np.ndarray]:
        """Exact constants per instance (arrays of length P)."""
        eig = np.linalg.eigvalsh(self.H)  # (P, C, d)
        Hbar = self.H.mean(axis=1)
        fi_star = self.c - 0.5 * np.einsum("pcd,pcd->pc", self.h, self.client_optima())  # f_i(w_i*)
        fi_star = np.where(eig[..., 0] < 0, -np.inf, fi_star)  # a non-convex quadratic client is unbounded below
        out = {"L": eig[..., -1].max(axis=1), "client_mu": eig[..., 0].min(axis=1),
               "mu": np.linalg.eigvalsh(Hbar)[:, 0], "B_min": B_min(self.H),
               "D": self.loss(self.w0) - self.f_star, "dist2": np.sum((self.w0 - self.w_star) ** 2, axis=1),
               "Gamma": self.f_star - fi_star.mean(axis=1), "f_star": self.f_star}
        if B is not None:
            out["G2"] = heterogeneity_G2(self.H, self.h, B)
        return out

    def take(self, i: int) -> "Instances":
        return Instances(self.X[i:i + 1], self.y[i:i + 1], self.w0[i:i + 1], self.theta[i:i + 1], self.ridge)

    def to_json(self) -> dict[str, Any]:
        out = {"X": self.X[0].tolist(), "y": self.y[0].tolist(), "w0": self.w0[0].tolist()}
        if self.ridge:
            out["ridge"] = float(self.ridge)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Instances":
        try:
            X = np.asarray(d["X"], float)[None]
            y = np.asarray(d["y"], float)[None]
            w0 = np.asarray(d["w0"], float)[None]
            ridge = float(d.get("ridge", 0.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError("instance", str(exc)[:80],
                                 "an object with arrays X (C,S,d), y (C,S), w0 (d,)") from None
        if X.ndim != 4 or y.shape != X.shape[:3] or w0.shape != (1, X.shape[3]):
            raise ParameterError("instance", (X.shape[1:], y.shape[1:], w0.shape[1:]), "X (C,S,d), y (C,S), w0 (d,)")
        return cls(X, y, w0, np.zeros((1, 0)), ridge)


# ------------------------------------------------------------------------------------ the class


@dataclass(frozen=True)
class QuadraticClass:
    """Federated quadratics inside an assumption class: ``decode(theta)`` maps any point of ``bounds`` to P
    instances (:class:`Instances`) that meet every constraint by construction, with a relative margin of 1e-9
    (the projection steps: the module ``fedtheory.worst.quadratic``; docs/worst-case.md, "The class searched").

    Parameters
    ----------
    n_clients : int
        C, the clients.
    dim : int
        d, the dimension (also the samples per client).
    L : float
        Every client Hessian H_i <= L I.
    mu : float
        lambda_min(mean_i H_i) >= mu, in [0, L) (0: the plain convex quadratics, f not strongly convex; the
        minimiser is then the min-norm one where the mean Hessian is singular).
    client_mu : float, default 0.0
        Every H_i >= client_mu I, in [-L, mu] (0: clients may be flat in some direction; < 0: non-convex clients,
        built with the ridge client_mu, while the mean f stays mu-strongly convex, or convex at mu = 0).
    B : float, optional
        The heterogeneity assumption's B (>= 1), with ``G2``; None: not imposed (then the client optima range over
        [-offset_scale, offset_scale]^d). Needs mu > 0.
    G2 : float, optional
        Its G^2 (>= 0): every instance has G^2(B) <= G2 exactly. Given with ``B``.
    D : float, optional
        f(w^0) - f* = D exactly.
    dist2 : float, optional
        ||w^0 - w*||^2 = dist2 exactly.
    dist2_max : float, optional
        ||w^0 - w*||^2 in [0, dist2_max] (one more parameter). Exactly one of ``D``, ``dist2``, ``dist2_max``.
    offset_scale : float, default 1.0
        The range of the client optima's parameters.
    aligned_fraction : float, default 0.0
        The share, in [0, 1], of :meth:`random`'s draws made *aligned*: every client of the instance shares one
        Householder reflection (one eigenbasis) and has curvature in [client_mu, mu] along one shared eigenvector,
        the start direction (a uniform draw rarely makes the mean Hessian's smallest eigenvalue approach mu, so a
        rate exp(-mu eta K T) is never exercised). It shapes only where a search starts; ``decode`` and the class
        are unchanged. 0 when mu = 0.

    Raises
    ------
    ParameterError
        The constants break one of the ranges above.
    """

    instance_type = Instances  # what decode returns (replay reads instance files with it)

    n_clients: int
    dim: int
    L: float
    mu: float
    client_mu: float = 0.0
    B: float | None = None
    G2: float | None = None
    D: float | None = None
    dist2: float | None = None
    dist2_max: float | None = None
    offset_scale: float = 1.0
    aligned_fraction: float = 0.0

    def __post_init__(self):
        if not 0.0 <= self.aligned_fraction <= 1.0:
            raise ParameterError("aligned_fraction", self.aligned_fraction, "a number in [0, 1]")
        if not (0 <= self.mu < self.L) or not (-self.L <= self.client_mu <= self.mu):
            raise ParameterError("client_mu" if 0 <= self.mu < self.L else "mu", (self.client_mu, self.mu, self.L),
                                 "-L <= client_mu <= mu and 0 <= mu < L")
        if self.mu == 0 and self.aligned_fraction > 0:
            raise ParameterError("aligned_fraction", self.aligned_fraction, "0 when mu = 0 (an aligned draw puts "
                                 "curvature in [client_mu, mu] along its start: none is left at mu = 0)")
        if self.mu == 0 and self.B is not None:
            raise ParameterError("B", self.B, "None when mu = 0 (the heterogeneity projection needs an invertible "
                                 "mean Hessian)")
        if (self.B is None) != (self.G2 is None):
            raise ParameterError("G2", (self.B, self.G2), "B and G2 both given or both None")
        if self.B is not None and (self.B < 1 or self.G2 < 0):
            raise ParameterError("B", self.B, "B >= 1 and G2 >= 0")
        if sum(x is not None for x in (self.D, self.dist2, self.dist2_max)) != 1:
            raise ParameterError("D", (self.D, self.dist2, self.dist2_max), "exactly one of D, dist2, dist2_max")

    # layout: per client lam (d), Householder v (d), optimum (d); then the start direction (d) [and radius]
    @property
    def n_params(self) -> int:
        return 3 * self.n_clients * self.dim + self.dim + (1 if self.dist2_max is not None else 0)

    @property
    def bounds(self) -> list[tuple[float, float]]:
        C, d = self.n_clients, self.dim
        per_client = [(self.client_mu, self.L)] * d + [(-1.0, 1.0)] * d + [(-self.offset_scale, self.offset_scale)] * d
        out = per_client * C + [(-1.0, 1.0)] * d
        if self.dist2_max is not None:
            out.append((0.0, 1.0))
        return out

    def random(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n parameter vectors drawn uniformly from the bounds (the 'random instances' of the class); the first
        round(aligned_fraction * n) of them then aligned (see the class docstring)."""
        theta = uniform_in_box(self.bounds, n, rng)
        m = int(round(self.aligned_fraction * n))
        if m:
            C, d = self.n_clients, self.dim
            blocks = theta[:m, :3 * C * d].reshape(m, C, 3, d)
            v = rng.uniform(-1.0, 1.0, (m, d))
            j0 = rng.integers(0, d, m)
            blocks[:, :, 1] = v[:, None, :]  # one reflection for every client
            blocks[np.arange(m), :, 0, j0] = rng.uniform(self.client_mu, self.mu, (m, C))  # soft along e_j0
            Q = np.eye(d) - 2 * np.einsum("pd,pe->pde", v, v) / np.sum(v**2, axis=1)[:, None, None]
            theta[:m, :3 * C * d] = blocks.reshape(m, -1)
            theta[:m, 3 * C * d:3 * C * d + d] = Q[np.arange(m), :, j0]  # start along the soft eigenvector
        return theta

    def decode(self, theta: np.ndarray) -> Instances:
        theta = check_theta(theta, self.n_params)
        P, C, d = theta.shape[0], self.n_clients, self.dim
        L_t, mu_t = self.L * (1 - MARGIN), self.mu * (1 + MARGIN)
        lo_t = min(self.client_mu * (1 + MARGIN), mu_t) if self.client_mu >= 0 else self.client_mu * (1 - MARGIN)
        ridge = lo_t if self.client_mu < 0 else 0.0  # the data part X'X/S = H - ridge I stays PSD
        blocks = theta[:, :3 * C * d].reshape(P, C, 3, d)
        lam = np.clip(blocks[:, :, 0], lo_t, L_t)
        v = blocks[:, :, 1]
        nv = np.sum(v**2, axis=-1, keepdims=True)
        eye = np.eye(d)
        Q = eye - 2 * np.einsum("pcd,pce->pcde", v, v) / np.maximum(nv, 1e-300)[..., None]
        Q = np.where(nv[..., None] > 1e-24, Q, eye)
        H = np.einsum("pcde,pce,pcfe->pcdf", Q, lam, Q)
        # 2. mu: shift towards L I
        m = np.linalg.eigvalsh(H.mean(axis=1))[:, 0]
        s = np.clip((mu_t - m) / (L_t - m), 0.0, 1.0)
        H = H + s[:, None, None, None] * (L_t * eye - H)
        # 3. B: blend towards the mean Hessian
        if self.B is not None:
            B_t = 1.0 + (self.B - 1.0) * (1 - 1e-6) if self.B > 1 else 1.0
            bm = B_min(H)
            need = bm > B_t
            if need.any():
                # closed form: with H_i(a) = (1-a) H_i + a Hbar the mean is unchanged and
                # (1/C) sum_i H_i(a)^2 = (1-a)^2 M + (1 - (1-a)^2) Hbar^2, so B_min(a)^2 = 1 + (1-a)^2 (B_min^2 - 1)
                keep = np.sqrt((B_t**2 - 1.0) / (bm[need] ** 2 - 1.0)) * (1 - 1e-12)  # 1 - a
                Hn = H[need]
                H[need] = (keep[:, None, None, None] * Hn
                           + (1 - keep)[:, None, None, None] * Hn.mean(axis=1, keepdims=True))
        # data: X_i = sqrt(S) diag(sqrt(lam_i)) Q_i' from the final H_i
        H = 0.5 * (H + np.swapaxes(H, -1, -2))
        lam, V = np.linalg.eigh(H)
        lam = np.clip(lam, lo_t, L_t)
        S = d
        X = np.sqrt(S) * np.sqrt(lam - ridge)[..., :, None] * np.swapaxes(V, -1, -2)  # (P,C,d,d): rows are samples
        Hx = np.einsum("pcsd,pcse->pcde", X, X) / S  # the data part; the Hessians are Hx + ridge I
        # 4. client optima (linear terms h_i = Hx_i w_i) within G^2(B)
        wopt = blocks[:, :, 2].copy()
        if self.B is not None:
            Hfull = Hx + ridge * eye if ridge else Hx
            G2 = heterogeneity_G2(Hfull, np.einsum("pcde,pce->pcd", Hx, wopt), self.B)
            target = self.G2 * (1 - MARGIN)
            scale = np.where(G2 > target, np.sqrt(target / np.where(G2 > 0, G2, 1.0)), 1.0)
            wopt = wopt * scale[:, None, None]
        y = np.einsum("pcsd,pcd->pcs", X, wopt)
        inst = Instances(X, y, np.zeros((P, d)), theta.copy(), ridge)
        # 5. the start
        u = theta[:, 3 * C * d:3 * C * d + d]
        nu = np.linalg.norm(u, axis=1, keepdims=True)
        u = np.where(nu > 1e-12, u / np.maximum(nu, 1e-300), eye[0])
        if self.D is not None:
            Hbar = inst.H.mean(axis=1)
            r = np.sqrt(2 * self.D / np.maximum(np.einsum("pd,pde,pe->p", u, Hbar, u), 1e-300))
        elif self.dist2 is not None:
            r = np.full(P, np.sqrt(self.dist2))
        else:
            r = np.sqrt(self.dist2_max * np.clip(theta[:, -1], 0.0, 1.0))
        inst.w0 = inst.w_star + r[:, None] * u
        return inst

    def violations(self, inst: Instances, rtol: float = 1e-12) -> list[list[str]]:
        """Per instance, the constraints its exact constants break (empty lists: inside the class)."""
        k = inst.constants(self.B)
        out = []
        for p in range(len(inst)):
            bad = []
            if k["L"][p] > self.L * (1 + rtol):
                bad.append(f"L {k['L'][p]:.17g} > {self.L}")
            if k["mu"][p] < self.mu * (1 - rtol) - (1e-14 * self.L if self.mu == 0 else 0.0):
                bad.append(f"mu {k['mu'][p]:.17g} < {self.mu}")
            lo = self.client_mu * (1 - rtol) if self.client_mu >= 0 else self.client_mu * (1 + rtol)
            if k["client_mu"][p] < lo - 1e-14 * self.L:
                bad.append(f"client_mu {k['client_mu'][p]:.17g} < {self.client_mu}")
            if self.B is not None and not k["G2"][p] <= self.G2 * (1 + rtol) + 1e-14:
                bad.append(f"G^2({self.B}) = {k['G2'][p]:.17g} > {self.G2}")
            if self.D is not None and abs(k["D"][p] - self.D) > 1e-8 * max(self.D, 1e-12):
                bad.append(f"D {k['D'][p]:.17g} != {self.D}")
            if self.dist2 is not None and abs(k["dist2"][p] - self.dist2) > 1e-8 * max(self.dist2, 1e-12):
                bad.append(f"dist2 {k['dist2'][p]:.17g} != {self.dist2}")
            out.append(bad)
        return out
