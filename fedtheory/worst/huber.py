"""A non-quadratic convex class: federated Huber regressions that share one minimiser, with exact constants.

Client i's objective, S samples x_ij in R^d, one kink delta > 0 per instance:

    f_i(w) = (1/S) sum_j huber_delta(x_ij . (w - w*)),   huber_delta(r) = r^2/2 (|r| <= delta), delta (|r| - delta/2),

built as Huber-regression data (``fedtheory.sim.HuberProblem`` with labels y_ij = x_ij . w*, one kink per data
variant), so a population of P instances is one problem with P variants and a generation of the search one batched
``simulate``. Every residual vanishes at w*, so w* minimises every f_i and f: f* = f_i* = 0 and grad f_i(w*) = 0
(exact, by construction). Constants, exact:

* L: f_i's Hessian is (1/S) sum over the samples inside the kink of x_ij x_ij' <= X_i'X_i/S, with equality in the
  neighbourhood of w* where every residual is inside: f_i is L_i-smooth with L_i = lambda_max(X_i'X_i/S), attained;
  ``decode`` scales the data so that max_i L_i = s L (1 - 1e-9), s in [s_min, 1] a parameter;
* convex (a sum of convex functions of affine maps); mu = 0: far from w* every residual is beyond the kink and f
  grows linearly, so no mu > 0 (nor a PL constant) holds; ``mu_local`` = lambda_min(mean X_i'X_i/S), f's strong
  convexity where every residual is inside the kink (a quadratic there);
* ||w^0 - w*||^2 = dist2 exactly (w^0 = w* + sqrt(dist2) u, u a unit parameter direction); f(w^0) - f* = D as
  computed.

The kink ranges log-uniformly over [1e-4, 10] sqrt(S L dist2): at its top, every point a non-expansive run from
distance sqrt(dist2) of w* visits has every residual |x_ij . (w - w*)| <= ||x_ij|| sqrt(dist2) <= sqrt(S L dist2)
inside the kink, so those instances are quadratics over the whole run: the class contains the convex quadratics'
behaviour, and below it the piecewise-quadratic functions that attain Drori and Teboulle's bound (one sample in one
dimension: huber_delta(sqrt(L) w) with delta = sqrt(L) R/(2 N h + 1), attained exactly).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import ParameterError, check_finite
from ..sim import HuberProblem
from .quadratic import MARGIN, check_theta, uniform_in_box

KINK_RANGE = (-4.0, 1.0)  # log10 of the kink over sqrt(S L dist2)


def _huber(r: np.ndarray, delta: np.ndarray) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


@dataclass
class HuberInstances:
    """P federated Huber regressions (the data the engine sees) and their exact constants.

    Client i of instance p has f_i(w) = (1/S) sum_j huber_delta(x_ij . (w - w*)): the labels ``y`` = X w* (every
    residual 0 at w*, so f* = 0, set as ``f_star``) are built at construction.

    Parameters
    ----------
    X : ndarray
        (P, C, S, d): every client's samples.
    w_star : ndarray
        (P, d): the shared minimiser.
    delta : ndarray
        (P,): the Huber kink of each instance (> 0).
    w0 : ndarray
        (P, d): the starts.
    theta : ndarray
        (P, n): the parameter vectors the instances were decoded from ((1, 0) for an instance read from a file).
    """

    X: np.ndarray  # (P, C, S, d)
    w_star: np.ndarray  # (P, d)
    delta: np.ndarray  # (P,)
    w0: np.ndarray  # (P, d)
    theta: np.ndarray  # (P, n) the parameters they were decoded from (empty for a replayed instance)
    y: np.ndarray = field(init=False)
    f_star: np.ndarray = field(init=False)

    def __post_init__(self):
        self.y = np.einsum("pcsd,pd->pcs", self.X, self.w_star)  # every residual 0 at w*
        self.f_star = np.zeros(len(self))

    def __len__(self) -> int:
        return self.X.shape[0]

    @property
    def n_clients(self) -> int:
        return self.X.shape[1]

    @property
    def dim(self) -> int:
        return self.X.shape[3]

    def problem(self, name: str = "worst_huber") -> HuberProblem:
        return HuberProblem(self.X, self.y, delta=self.delta, name=name)

    def loss(self, w: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        """f(w) of instance ``which`` (default: instance r for row r): w (R, d) -> (R,)."""
        which = np.arange(len(w)) if which is None else np.asarray(which)
        r = np.einsum("rcsd,rd->rcs", self.X[which], w) - self.y[which]
        return _huber(r, self.delta[which][:, None, None]).mean(axis=(1, 2))

    def constants(self, B: float | None = None) -> dict[str, np.ndarray]:
        """Exact constants per instance (arrays of length P); ``B`` is accepted for the search's record, unused."""
        S = self.X.shape[2]
        M = np.einsum("pcsd,pcse->pcde", self.X, self.X) / S
        P, C = len(self), self.n_clients
        return {"L": np.linalg.eigvalsh(M)[..., -1].max(axis=1), "mu": np.zeros(P), "client_mu": np.zeros(P),
                "mu_local": np.linalg.eigvalsh(M.mean(axis=1))[:, 0], "delta": self.delta.copy(),
                "D": self.loss(self.w0) - self.f_star, "dist2": np.sum((self.w0 - self.w_star) ** 2, axis=1),
                "Gamma": np.zeros(P), "f_star": self.f_star.copy(), "clients": np.full(P, float(C))}

    def take(self, i: int) -> "HuberInstances":
        s = slice(i, i + 1)
        return HuberInstances(self.X[s], self.w_star[s], self.delta[s], self.w0[s], self.theta[s])

    def to_json(self) -> dict[str, Any]:
        return {"X": self.X[0].tolist(), "w_star": self.w_star[0].tolist(), "delta": float(self.delta[0]),
                "w0": self.w0[0].tolist()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "HuberInstances":
        try:
            X = check_finite("X", np.asarray(d["X"], float))[None]
            w_star = check_finite("w_star", np.asarray(d["w_star"], float))[None]
            w0 = check_finite("w0", np.asarray(d["w0"], float))[None]
            delta = np.array([float(d["delta"])])
        except (KeyError, TypeError, ValueError, ParameterError) as exc:
            raise ParameterError("instance", str(exc)[:80], "an object with arrays X (C,S,d), w_star (d,), w0 (d,) "
                                 "and a kink delta > 0") from None
        if X.ndim != 4 or w_star.shape != (1, X.shape[3]) or w0.shape != w_star.shape or not delta[0] > 0:
            raise ParameterError("instance", (X.shape[1:], w_star.shape[1:], w0.shape[1:], float(delta[0])),
                                 "X (C,S,d), w_star (d,), w0 (d,), delta > 0")
        return cls(X, w_star, delta, w0, np.zeros((1, 0)))


@dataclass(frozen=True)
class HuberClass:
    """Federated Huber regressions with one shared minimiser: convex, L-smooth, mu = 0; ``decode(theta)`` returns
    :class:`HuberInstances` with exact constants (the module ``fedtheory.worst.huber``; docs/worst-case.md, "The
    classes searched for Drori & Teboulle Thm 3.1").

    Parameters
    ----------
    n_clients : int
        C, the clients (>= 1).
    dim : int
        d, the dimension (>= 1).
    samples : int
        S, the samples per client; C S >= d, so that the data span every direction and w* is the only minimiser.
    L : float
        Every f_i L-smooth (> 0).
    dist2 : float
        ||w^0 - w*||^2 exactly (> 0).
    s_min : float, default 0.01
        The smallest curvature scale, in (0, 1]: an instance's L is s L, s in [s_min, 1].
    offset_scale : float, default 1.0
        The range of w*, [-offset_scale, offset_scale]^d (>= 0).

    Raises
    ------
    ParameterError
        A constant outside its range.
    """

    instance_type = HuberInstances  # what decode returns (replay reads instance files with it)

    n_clients: int
    dim: int
    samples: int
    L: float
    dist2: float
    s_min: float = 0.01
    offset_scale: float = 1.0

    def __post_init__(self):
        for name in ("n_clients", "dim", "samples"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ParameterError(name, v, "an integer >= 1")
        if self.n_clients * self.samples < self.dim:
            raise ParameterError("samples", self.samples, f"at least dim / n_clients = {self.dim}/{self.n_clients} "
                                 "(n_clients x samples >= dim: the data span every direction, so w* is the only "
                                 "minimiser)")
        if not (np.isfinite(self.L) and self.L > 0):
            raise ParameterError("L", self.L, "a finite L > 0")
        if not (np.isfinite(self.dist2) and self.dist2 > 0):
            raise ParameterError("dist2", self.dist2, "a finite ||w^0 - w*||^2 > 0")
        if not 0 < self.s_min <= 1:
            raise ParameterError("s_min", self.s_min, "a number in (0, 1]")
        if not (np.isfinite(self.offset_scale) and self.offset_scale >= 0):
            raise ParameterError("offset_scale", self.offset_scale, "a finite number >= 0")

    # layout: per client and sample x_ij (d); the curvature scale s; log10 of the kink; w* (d); the start direction (d)
    @property
    def n_params(self) -> int:
        return self.n_clients * self.samples * self.dim + 2 + 2 * self.dim

    @property
    def bounds(self) -> list[tuple[float, float]]:
        d = self.dim
        return ([(-1.0, 1.0)] * (self.n_clients * self.samples * d) + [(self.s_min, 1.0), KINK_RANGE]
                + [(-self.offset_scale, self.offset_scale)] * d + [(-1.0, 1.0)] * d)

    def random(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n parameter vectors drawn uniformly from the bounds: the class's random instances."""
        return uniform_in_box(self.bounds, n, rng)

    def decode(self, theta: np.ndarray) -> HuberInstances:
        theta = check_theta(theta, self.n_params)
        P, C, S, d = theta.shape[0], self.n_clients, self.samples, self.dim
        n = C * S * d
        X = theta[:, :n].reshape(P, C, S, d).copy()
        lam = np.linalg.eigvalsh(np.einsum("pcsd,pcse->pcde", X, X) / S)[..., -1].max(axis=1)  # (P,)
        flat = ~(lam > 1e-300)
        X[flat] = 0.0
        X[flat, :, :, 0] = 1.0  # an all-zero draw: every sample along e_1
        lam = np.where(flat, 1.0, lam)
        s = np.clip(theta[:, n], self.s_min, 1.0)
        X *= np.sqrt(s * self.L * (1 - MARGIN) / lam)[:, None, None, None]
        R = np.sqrt(self.dist2)
        delta = 10.0 ** np.clip(theta[:, n + 1], *KINK_RANGE) * np.sqrt(S * self.L) * R
        w_star = theta[:, n + 2:n + 2 + d].copy()
        u = theta[:, n + 2 + d:n + 2 + 2 * d]
        nu = np.linalg.norm(u, axis=1, keepdims=True)
        u = np.where(nu > 1e-12, u / np.maximum(nu, 1e-300), np.eye(d)[0])
        return HuberInstances(X, w_star, delta, w_star + R * u, theta.copy())

    def violations(self, inst: HuberInstances, rtol: float = 1e-12) -> list[list[str]]:
        """Per instance, the constraints its exact constants break (empty lists: inside the class)."""
        k = inst.constants()
        at_opt = inst.loss(inst.w_star)
        out = []
        for p in range(len(inst)):
            bad = []
            if k["L"][p] > self.L * (1 + rtol):
                bad.append(f"L {k['L'][p]:.17g} > {self.L}")
            if abs(k["dist2"][p] - self.dist2) > 1e-8 * self.dist2:
                bad.append(f"dist2 {k['dist2'][p]:.17g} != {self.dist2}")
            if not inst.delta[p] > 0:
                bad.append(f"delta {inst.delta[p]} <= 0")
            if not k["mu_local"][p] > 0:
                bad.append("the data do not span every direction: w* is not the only minimiser")
            if at_opt[p] > 1e-12 * max(float(k["D"][p]), 1e-300):
                bad.append(f"f(w*) = {at_opt[p]:.3g} > 0: w* is not the minimiser")
            out.append(bad)
        return out
