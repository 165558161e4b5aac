"""A non-quadratic non-convex class with a PL mean: the separable PL family, projected onto an assumption class.

Client i's objective is f_i(w) = g(w) + h_i.w with g(w) = sum_j c_j (w_j^2 + a_j sin^2 w_j) (the engine's
:class:`~fedtheory.sim.SeparablePLProblem`; ``pl_nonconvex`` is c = 1, a = 3). Every client is L-smooth with its
Hessian in [min_j c_j (2 - 2 a_j), L] (non-convex where a_j > 1), the mean f = g is PL (mu = min_j c_j m(a_j) > 0),
w* = 0, f* = 0, and the heterogeneity is exactly the linear terms: grad f_i - grad f = h_i for every w.

Why this class (and not the quadratic one) for non-convex bounds stated with a heterogeneity bound sigma_g^2
that holds for every w (Assumption 3 of FedMRUR, MoFedSAM): for quadratics, (1/C) sum_i ||grad f_i(w) -
grad f(w)||^2 = (1/C) sum_i ||(H_i - Hbar) w - (h_i - hbar)||^2 is bounded over all w only if every H_i = Hbar,
so a quadratic instance of such an assumption has identical client Hessians (no non-convex client next to a
PL mean); the separable PL family has non-convex clients and meets the assumption with equality.

:meth:`SeparablePLClass.decode` maps a parameter vector (any point of ``bounds``) to an instance inside the
class, with a 1e-9 relative margin:
1. h_i centred (their mean subtracted: f = g), then scaled about 0 so that (1/C) sum_i ||h_i||^2 <= sigma_g^2
   (``reading="mean"``) or max_i ||h_i||^2 <= sigma_g^2 (``reading="max"``, the per-client reading);
2. a_j in [a_min, a_max] within [0, 3]; c_j = s_j L / (2 + 2 a_j) with s_j in [s_min, 1], so max_j g'' = L max_j s_j
   <= L;
3. the start w^0 = r u with the parameter direction u and r by bisection so that f(w^0) - f* = g(r u) = D
   (g(r u) increases strictly in r: x (2x + a sin 2x) > 0 for x != 0 when a <= 3), to 1e-13 relative.
``encode`` maps an instance of the family (e.g. the check's ``pl_nonconvex`` problem and start) back to a parameter
vector, so a search can start from it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import ParameterError
from ..sim import SeparablePLProblem
from ..sim.problems import AMPLITUDE_MAX, pl_ratio_infimum
from .quadratic import check_theta, uniform_in_box

MARGIN = 1e-9


@dataclass
class PLInstances:
    """P instances of the separable PL family: client i's f_i(w) = g(w) + h_i . w with
    g(w) = sum_j c_j (w_j^2 + a_j sin^2 w_j); ``SeparablePLClass.decode`` centres the h_i, so f = g, w* = 0
    and f* = 0 (``f_star``).

    Parameters
    ----------
    c : ndarray
        (P, d): the curvature coefficients (> 0).
    a : ndarray
        (P, d): the sine amplitudes, in [0, 3] (a_j > 1: non-convex clients).
    h : ndarray
        (P, C, d): the clients' linear terms.
    w0 : ndarray
        (P, d): the starts.
    theta : ndarray
        (P, n): the parameter vectors the instances were decoded from ((1, 0) for an instance read from a file).
    """

    c: np.ndarray
    a: np.ndarray
    h: np.ndarray
    w0: np.ndarray
    theta: np.ndarray

    def __len__(self) -> int:
        return self.h.shape[0]

    @property
    def n_clients(self) -> int:
        return self.h.shape[1]

    @property
    def dim(self) -> int:
        return self.h.shape[2]

    @property
    def f_star(self) -> np.ndarray:
        return np.zeros(len(self))

    def problem(self, name: str = "worst_separable_pl") -> SeparablePLProblem:
        return SeparablePLProblem(self.c, self.a, self.h, name=name)

    def loss(self, w: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        """f(w) = g(w) of instance ``which`` (default: instance r for row r): w (R, d) -> (R,)."""
        which = np.arange(len(w)) if which is None else np.asarray(which)
        c, a = self.c[which], self.a[which]
        return np.sum(c * (w**2 + a * np.sin(w) ** 2), axis=1) + np.einsum("rd,rd->r", self.h[which].mean(axis=1), w)

    def constants(self, B: float | None = None) -> dict[str, np.ndarray]:
        """Exact constants per instance (arrays of length P)."""
        hn = np.sum(self.h**2, axis=2)  # (P, C)
        out = {"L": np.max(self.c * (2 + 2 * self.a), axis=1), "client_mu": np.min(self.c * (2 - 2 * self.a), axis=1),
               "mu": np.min(self.c * pl_ratio_infimum(self.a), axis=1), "B_min": np.ones(len(self)),
               "sigma_g2": hn.mean(axis=1), "sigma_g2_max": hn.max(axis=1), "D": self.loss(self.w0),
               "dist2": np.sum(self.w0**2, axis=1), "f_star": self.f_star}
        if B is not None:
            out["G2"] = np.where(B >= 1, out["sigma_g2"], np.inf)
        return out

    def take(self, i: int) -> "PLInstances":
        return PLInstances(self.c[i:i + 1], self.a[i:i + 1], self.h[i:i + 1], self.w0[i:i + 1], self.theta[i:i + 1])

    def to_json(self) -> dict[str, Any]:
        return {"family": "separable_pl", "c": self.c[0].tolist(), "a": self.a[0].tolist(), "h": self.h[0].tolist(),
                "w0": self.w0[0].tolist()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "PLInstances":
        try:
            c, a = np.asarray(d["c"], float)[None], np.asarray(d["a"], float)[None]
            h, w0 = np.asarray(d["h"], float)[None], np.asarray(d["w0"], float)[None]
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError("instance", str(exc)[:80],
                                 "an object with arrays c (d,), a (d,), h (C,d), w0 (d,)") from None
        if h.ndim != 3 or c.shape != (1, h.shape[2]) or a.shape != c.shape or w0.shape != c.shape:
            raise ParameterError("instance", (c.shape[1:], a.shape[1:], h.shape[1:], w0.shape[1:]),
                                 "c (d,), a (d,), h (C,d), w0 (d,)")
        return cls(c, a, h, w0, np.zeros((1, 0)))


@dataclass(frozen=True)
class SeparablePLClass:
    """The separable PL family inside an assumption class: ``decode(theta)`` returns :class:`PLInstances` with
    non-convex clients, a PL mean and the heterogeneity bound met (the module ``fedtheory.worst.nonconvex``;
    docs/worst-case.md, "The class searched for FedMRUR eq. (7) and MoFedSAM Thm D.7").

    Parameters
    ----------
    n_clients : int
        C, the clients.
    dim : int
        d, the dimension.
    L : float
        Every f_i L-smooth (> 0).
    sigma_g2 : float
        The heterogeneity bound (>= 0), read per ``reading``.
    D : float
        f(w^0) - f* exactly (> 0).
    reading : {"mean", "max"}, default "mean"
        "mean": (1/C) sum_i ||grad f_i - grad f||^2 <= sigma_g2 for every w; "max": every client's
        ||grad f_i - grad f||^2 <= sigma_g2.
    s_min : float, default 0.01
        The smallest curvature scale, in (0, 1]: c_j = s_j L / (2 + 2 a_j), s_j in [s_min, 1].
    a_min : float, default 0.0
        The smallest sine amplitude.
    a_max : float, default 3.0
        The largest sine amplitude (0 <= a_min <= a_max <= 3; a > 1: non-convex clients).
    offset_scale : float, default 2.0
        The parameter range of the linear terms h_i.

    Raises
    ------
    ParameterError
        A constant outside its range.
    """

    instance_type = PLInstances  # what decode returns (replay reads instance files with it)

    n_clients: int
    dim: int
    L: float
    sigma_g2: float
    D: float
    reading: str = "mean"
    s_min: float = 0.01
    a_min: float = 0.0
    a_max: float = AMPLITUDE_MAX
    offset_scale: float = 2.0

    def __post_init__(self):
        if not self.L > 0:
            raise ParameterError("L", self.L, "a positive number")
        if not self.sigma_g2 >= 0:
            raise ParameterError("sigma_g2", self.sigma_g2, "a non-negative number")
        if not self.D > 0:
            raise ParameterError("D", self.D, "a positive number")
        if self.reading not in ("mean", "max"):
            raise ParameterError("reading", self.reading, "'mean' or 'max'")
        if not (0 < self.s_min <= 1):
            raise ParameterError("s_min", self.s_min, "0 < s_min <= 1")
        if not (0 <= self.a_min <= self.a_max <= AMPLITUDE_MAX):
            raise ParameterError("a_max", (self.a_min, self.a_max), f"0 <= a_min <= a_max <= {AMPLITUDE_MAX}")

    # layout: per client h (d); then s (d), a (d), the start direction u (d)
    @property
    def n_params(self) -> int:
        return (self.n_clients + 3) * self.dim

    @property
    def bounds(self) -> list[tuple[float, float]]:
        d = self.dim
        return ([(-self.offset_scale, self.offset_scale)] * (self.n_clients * d) + [(self.s_min, 1.0)] * d
                + [(self.a_min, self.a_max)] * d + [(-1.0, 1.0)] * d)

    def random(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return uniform_in_box(self.bounds, n, rng)

    def decode(self, theta: np.ndarray) -> PLInstances:
        theta = check_theta(theta, self.n_params)
        P, C, d = theta.shape[0], self.n_clients, self.dim
        h = theta[:, :C * d].reshape(P, C, d)
        h = h - h.mean(axis=1, keepdims=True)
        hn = np.sum(h**2, axis=2)
        size = hn.mean(axis=1) if self.reading == "mean" else hn.max(axis=1)
        target = self.sigma_g2 * (1 - MARGIN)
        scale = np.where(size > target, np.sqrt(target / np.where(size > 0, size, 1.0)), 1.0)
        h = h * scale[:, None, None]
        rest = theta[:, C * d:]
        s = np.clip(rest[:, :d], self.s_min, 1.0) * (1 - MARGIN)
        a = np.clip(rest[:, d:2 * d], self.a_min, self.a_max)
        c = s * self.L / (2 + 2 * a)
        u = rest[:, 2 * d:3 * d]
        nu = np.linalg.norm(u, axis=1, keepdims=True)
        u = np.where(nu > 1e-12, u / np.maximum(nu, 1e-300), np.eye(d)[0])
        r = self._radius(c, a, u)
        return PLInstances(c, a, h, r[:, None] * u, theta.copy())

    def _radius(self, c, a, u) -> np.ndarray:
        """r with g(r u) = D for each instance (bisection; g(r u) >= min_j c_j r^2, so r <= sqrt(D / min c))."""
        g = lambda r: np.sum(c * ((r[:, None] * u) ** 2 + a * np.sin(r[:, None] * u) ** 2), axis=1)  # noqa: E731
        lo, hi = np.zeros(len(c)), np.sqrt(self.D / c.min(axis=1)) * (1 + 1e-9)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            below = g(mid) < self.D
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
            if np.all(hi - lo <= 1e-15 * hi):
                break
        return 0.5 * (lo + hi)

    def encode(self, c: np.ndarray, a: np.ndarray, h: np.ndarray, w0: np.ndarray) -> np.ndarray:
        """The parameter vector of the instance (c, a, h, w0) of the family: c (d,), a (d,), h (C, d), w0 (d,). It
        decodes to that instance up to the class's 1e-9 margins (and the projection where it lies outside)."""
        c, a, h, w0 = (np.asarray(x, float) for x in (c, a, h, w0))
        s = c * (2 + 2 * a) / self.L
        return np.concatenate([h.ravel(), s, a, w0 / max(np.linalg.norm(w0), 1e-300)])

    def violations(self, inst: PLInstances, rtol: float = 1e-12) -> list[list[str]]:
        """Per instance, the constraints its exact constants break (empty lists: inside the class)."""
        k = inst.constants()
        out = []
        for p in range(len(inst)):
            bad = []
            if k["L"][p] > self.L * (1 + rtol):
                bad.append(f"L {k['L'][p]:.17g} > {self.L}")
            het = k["sigma_g2"][p] if self.reading == "mean" else k["sigma_g2_max"][p]
            if het > self.sigma_g2 * (1 + rtol) + 1e-15:
                bad.append(f"sigma_g^2 ({self.reading}) {het:.17g} > {self.sigma_g2}")
            if abs(k["D"][p] - self.D) > 1e-8 * self.D:
                bad.append(f"D {k['D'][p]:.17g} != {self.D}")
            if np.abs(inst.h[p].mean(axis=0)).max() > 1e-12 * max(float(np.abs(inst.h[p]).max()), 1e-300):
                bad.append("sum_i h_i != 0")
            if not (np.all(inst.a[p] >= 0) and np.all(inst.a[p] <= AMPLITUDE_MAX) and np.all(inst.c[p] > 0)):
                bad.append("a outside [0, 3] or c <= 0")
            out.append(bad)
        return out
