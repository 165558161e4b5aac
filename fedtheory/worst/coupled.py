"""Pairs of neighbouring least-squares data sets (one sample replaced), projected onto a stability class.

Uniform stability (FedInit Thm 3, seed 000 App. A.3) compares the algorithm's outputs on two data sets that differ
in one sample, every random stream shared. An instance here is such a pair plus a start:

* the data set: C clients with S samples each, client i's samples X_i (S x d) with labels
  y_i = X_i w_i + label_noise e_i (e_i in [-1, 1]^S, w_i in [-offset_scale, offset_scale]^d);
* the replaced sample: client i*, index j*, and a new sample (x', y' = x'.w_{i*} + label_noise e');
* the start: w^0 = w* + r u, ||w^0 - w*||^2 = r^2 in [0, dist2_max] (w* the original data set's minimiser).

:meth:`NeighbourClass.decode` maps any parameter vector to a pair that satisfies, with a 1e-9 relative margin:

1. every client Hessian H_i = X_i'X_i/S of the original data set has its spectrum in [client_mu, L]: with the
   thin SVD X_i = U diag(s) V', X_i <- U diag(sqrt(S lam')) V', lam' = s^2/S clipped into the interval (then
   X_i'X_i/S = V diag(lam') V' exactly; needs S >= d);
2. the neighbour's client Hessian H_{i*}' = A + x'x''/S with A = H_{i*} - x_{j*}x_{j*}'/S stays <= L: with
   x' = sqrt(S s) u (u a unit direction), lambda_max(A + s uu') <= L iff s u'(L I - A)^{-1} u <= 1 (rank-one
   update), so s = tau / (u'(L I - A)^{-1} u), tau in [0, 1];
3. both data sets' mean Hessians are positive definite (f is PL): every original client is client_mu-strongly
   convex and only client i* changes, so lambda_min of the neighbour's mean Hessian >= (C - 1) client_mu / C > 0.

Per-sample losses 1/2 (x'w - y)^2 are non-negative; every client has S samples. The constants that Thm 3 takes
over all w and z (U = sup f(w; z), L_G, sigma_l) are measured over the points the coupled runs visit, as the
check does (lower estimates of the true sups; least squares has no finite sup over all w).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import ParameterError
from ..sim import LeastSquaresProblem, simulate
from .quadratic import MARGIN, Instances, check_theta, uniform_in_box


@dataclass
class CoupledInstances(Instances):
    """P pairs of neighbouring data sets: the original (X, y) and the neighbour (X2, y2), which differ in one sample
    (``replaced[p]`` = (client, index)); w0 is shared by both runs of a pair. ``problem()`` holds both as 2P data
    variants (2p the original, 2p + 1 the neighbour); the constants (:class:`Instances`) are the original's, with
    the neighbour's client Hessians ``H2`` (P, C, d, d) built at construction.

    Parameters
    ----------
    X : ndarray
        (P, C, S, d): the original data set's samples.
    y : ndarray
        (P, C, S): their labels.
    w0 : ndarray
        (P, d): the starts.
    theta : ndarray
        (P, n): the parameter vectors the pairs were decoded from ((1, 0) for a pair read from a file).
    ridge : float, default 0.0
        As :class:`Instances`'s; the pairs are plain least squares (``problem()`` passes no ridge): keep 0.
    X2 : ndarray
        (P, C, S, d): the neighbour's samples.
    y2 : ndarray
        (P, C, S): the neighbour's labels.
    replaced : array_like
        (P, 2) int: the replaced sample's client and index per pair.
    """

    X2: np.ndarray = None  # (P, C, S, d)
    y2: np.ndarray = None  # (P, C, S)
    replaced: np.ndarray = None  # (P, 2) int
    H2: np.ndarray = field(init=False)

    def __post_init__(self):
        super().__post_init__()
        self.replaced = np.asarray(self.replaced, dtype=np.int64).reshape(len(self.X), 2)
        self.H2 = np.einsum("pcsd,pcse->pcde", self.X2, self.X2) / self.X2.shape[2]

    def problem(self, name: str = "worst_neighbours") -> LeastSquaresProblem:
        """One problem with 2P variants: variant 2p = pair p's original data set, 2p + 1 = its neighbour."""
        P = len(self)
        X = np.stack([self.X, self.X2], axis=1).reshape(2 * P, *self.X.shape[1:])
        y = np.stack([self.y, self.y2], axis=1).reshape(2 * P, *self.y.shape[1:])
        return LeastSquaresProblem(X, y, name=name)

    def pooled_samples(self) -> tuple[np.ndarray, np.ndarray]:
        """The samples of both data sets, each once: the original's C*S and the neighbour's new one.
        Returns x (P, C*S + 1, d), y (P, C*S + 1)."""
        P, C, S, d = self.X.shape
        ar = np.arange(P)
        i, j = self.replaced[:, 0], self.replaced[:, 1]
        x = np.concatenate([self.X.reshape(P, C * S, d), self.X2[ar, i, j][:, None]], axis=1)
        y = np.concatenate([self.y.reshape(P, C * S), self.y2[ar, i, j][:, None]], axis=1)
        return x, y

    def constants(self, B: float | None = None) -> dict[str, np.ndarray]:
        out = super().constants(B)
        eig2 = np.linalg.eigvalsh(self.H2)
        out.update({"L_neighbour": eig2[..., -1].max(axis=1), "client_mu_neighbour": eig2[..., 0].min(axis=1),
                    "mu_neighbour": np.linalg.eigvalsh(self.H2.mean(axis=1))[:, 0],
                    "replaced_client": self.replaced[:, 0].astype(float),
                    "replaced_index": self.replaced[:, 1].astype(float),
                    "samples_differing": np.sum(np.any(self.X != self.X2, axis=3) | (self.y != self.y2),
                                                axis=(1, 2)).astype(float)})
        return out

    def take(self, i: int) -> "CoupledInstances":
        s = slice(i, i + 1)
        return CoupledInstances(self.X[s], self.y[s], self.w0[s], self.theta[s], X2=self.X2[s], y2=self.y2[s],
                                replaced=self.replaced[s])

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "X_neighbour": self.X2[0].tolist(), "y_neighbour": self.y2[0].tolist(),
                "replaced": [int(v) for v in self.replaced[0]]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CoupledInstances":
        base = Instances.from_json(d)
        try:
            X2 = np.asarray(d["X_neighbour"], float)[None]
            y2 = np.asarray(d["y_neighbour"], float)[None]
            rep = np.asarray(d["replaced"], dtype=np.int64)[None]
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError("instance", str(exc)[:80], "a coupled instance: X, y, w0, X_neighbour, y_neighbour, "
                                                            "replaced [client, index]") from None
        if X2.shape != base.X.shape or y2.shape != base.y.shape or rep.shape != (1, 2):
            raise ParameterError("instance", (X2.shape[1:], y2.shape[1:], rep.shape[1:]),
                                 f"X_neighbour {base.X.shape[1:]}, y_neighbour {base.y.shape[1:]}, replaced (2,)")
        return cls(base.X, base.y, base.w0, base.theta, X2=X2, y2=y2, replaced=rep)


@dataclass(frozen=True)
class NeighbourClass:
    """Pairs of least-squares data sets differing in one sample, for uniform stability: ``decode(theta)`` returns
    :class:`CoupledInstances` inside the class (the module ``fedtheory.worst.coupled``; docs/worst-case.md,
    "FedInit Thm 3: coupled runs on neighbouring data sets").

    Both sides of Thm 3 are homogeneous of degree 2 in a common scale of targets, noise and start, so only the
    relative sizes of ``offset_scale``, ``label_noise`` and ``dist2_max`` matter for the re-derived bound.

    Parameters
    ----------
    n_clients : int
        C, the clients (>= 2).
    dim : int
        d, the dimension (>= 1).
    samples : int
        S, the samples of every client (>= max(2, d): client_mu > 0 needs full-rank client data).
    L : float
        Every client Hessian of both data sets <= L I.
    client_mu : float
        Every original client Hessian >= client_mu I, 0 < client_mu < L (both data sets then have a positive
        definite mean Hessian: f is PL).
    dist2_max : float, default 1.0
        ||w^0 - w*||^2 in [0, dist2_max].
    offset_scale : float, default 1.0
        The box [-offset_scale, offset_scale]^d of the client targets w_i.
    label_noise : float, default 1.0
        The scale of the label noise (labels y_i = X_i w_i + label_noise e_i, e_i in [-1, 1]^S).

    Raises
    ------
    ParameterError
        A size or constant outside its range.
    """

    instance_type = CoupledInstances  # what decode returns (replay reads instance files with it)

    n_clients: int
    dim: int
    samples: int
    L: float
    client_mu: float
    dist2_max: float = 1.0
    offset_scale: float = 1.0
    label_noise: float = 1.0

    def __post_init__(self):
        if self.n_clients < 2 or self.dim < 1 or self.samples < max(2, self.dim):
            raise ParameterError("n_clients", (self.n_clients, self.dim, self.samples),
                                 "C >= 2 clients, d >= 1, S >= max(2, d) samples per client (client_mu > 0 needs "
                                 "full-rank client data)")
        if not 0 < self.client_mu < self.L:
            raise ParameterError("client_mu", self.client_mu, f"0 < client_mu < L = {self.L}")
        for name in ("dist2_max", "offset_scale", "label_noise"):
            if not getattr(self, name) >= 0:
                raise ParameterError(name, getattr(self, name), "a non-negative number")

    # layout: X (C S d), label noise (C S), targets (C d); replacement: client, index, direction (d), size, noise;
    # start direction (d), radius
    @property
    def n_params(self) -> int:
        C, S, d = self.n_clients, self.samples, self.dim
        return C * S * d + C * S + C * d + 2 + d + 2 + d + 1

    @property
    def bounds(self) -> list[tuple[float, float]]:
        C, S, d = self.n_clients, self.samples, self.dim
        o = self.offset_scale
        return ([(-1.0, 1.0)] * (C * S * d) + [(-1.0, 1.0)] * (C * S) + [(-o, o)] * (C * d)
                + [(0.0, 1.0)] * 2 + [(-1.0, 1.0)] * d + [(0.0, 1.0), (-1.0, 1.0)] + [(-1.0, 1.0)] * d + [(0.0, 1.0)])

    def random(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return uniform_in_box(self.bounds, n, rng)

    def decode(self, theta: np.ndarray) -> CoupledInstances:
        theta = check_theta(theta, self.n_params)
        P, C, S, d = theta.shape[0], self.n_clients, self.samples, self.dim
        L_t, lo_t = self.L * (1 - MARGIN), self.client_mu * (1 + MARGIN)
        pos = 0

        def take(n):
            nonlocal pos
            out = theta[:, pos:pos + n]
            pos += n
            return out

        X = take(C * S * d).reshape(P, C, S, d).copy()
        noise = take(C * S).reshape(P, C, S)
        targets = take(C * d).reshape(P, C, d)
        r_client, r_index = take(1)[:, 0], take(1)[:, 0]
        u = take(d)
        tau, noise_new = take(1)[:, 0], take(1)[:, 0]
        u0, rho = take(d), take(1)[:, 0]
        # 1. client spectra into [client_mu, L]: keep the singular vectors of X_i, clip its singular values
        U, sv, Vt = np.linalg.svd(X, full_matrices=False)  # (P,C,S,d), (P,C,d), (P,C,d,d)
        lam_t = np.clip(sv**2 / S, lo_t, L_t)
        X = np.einsum("pcsk,pck,pckd->pcsd", U, np.sqrt(S * lam_t), Vt)
        y = np.einsum("pcsd,pcd->pcs", X, targets) + self.label_noise * noise
        # 2. the replaced sample: the neighbour's client Hessian stays <= L (rank-one update, closed form)
        ar = np.arange(P)
        i = np.minimum((np.clip(r_client, 0, 1) * C).astype(np.int64), C - 1)
        j = np.minimum((np.clip(r_index, 0, 1) * S).astype(np.int64), S - 1)
        xj = X[ar, i, j]
        A = np.einsum("psd,pse->pde", X[ar, i], X[ar, i]) / S - np.einsum("pd,pe->pde", xj, xj) / S
        a, W = np.linalg.eigh(A)
        nu = np.linalg.norm(u, axis=1, keepdims=True)
        u = np.where(nu > 1e-12, u / np.maximum(nu, 1e-300), np.eye(d)[0])
        gap = L_t - a
        q = np.sum(np.einsum("pde,pd->pe", W, u) ** 2 / np.where(gap > 0, gap, 1.0), axis=1)
        q = np.where(np.all(gap > 0, axis=1), q, np.inf)
        s = np.clip(tau, 0.0, 1.0) * (1 - 1e-9) / np.maximum(q, 1e-300)
        x_new = np.sqrt(S * s)[:, None] * u
        y_new = np.einsum("pd,pd->p", x_new, targets[ar, i]) + self.label_noise * noise_new
        X2, y2 = X.copy(), y.copy()
        X2[ar, i, j], y2[ar, i, j] = x_new, y_new
        inst = CoupledInstances(X, y, np.zeros((P, d)), theta.copy(), X2=X2, y2=y2, replaced=np.column_stack([i, j]))
        # 3. the start
        n0 = np.linalg.norm(u0, axis=1, keepdims=True)
        u0 = np.where(n0 > 1e-12, u0 / np.maximum(n0, 1e-300), np.eye(d)[0])
        inst.w0 = inst.w_star + np.sqrt(self.dist2_max * np.clip(rho, 0.0, 1.0))[:, None] * u0
        return inst

    def violations(self, inst: CoupledInstances, rtol: float = 1e-12) -> list[list[str]]:
        """Per pair, the constraints its exact constants break (empty lists: inside the class)."""
        k = inst.constants()
        out = []
        for p in range(len(inst)):
            bad = []
            for name in ("L", "L_neighbour"):
                if k[name][p] > self.L * (1 + rtol):
                    bad.append(f"{name} {k[name][p]:.17g} > {self.L}")
            if k["client_mu"][p] < self.client_mu * (1 - rtol):
                bad.append(f"client_mu {k['client_mu'][p]:.17g} < {self.client_mu}")
            for name in ("mu", "mu_neighbour"):
                if not k[name][p] > 0:
                    bad.append(f"{name} {k[name][p]:.17g} <= 0 (f not PL)")
            if k["dist2"][p] > self.dist2_max * (1 + 1e-9) + 1e-14:
                bad.append(f"dist2 {k['dist2'][p]:.17g} > {self.dist2_max}")
            if k["samples_differing"][p] > 1:
                bad.append(f"{int(k['samples_differing'][p])} samples differ (neighbouring data sets differ in one)")
            out.append(bad)
        return out


def coupled_runner(spec, inst: CoupledInstances, seeds: tuple[int, ...]):
    """A :class:`WorstCaseSpec`'s ``runner`` for coupled runs: ONE simulate call for every pair and seed. Logical
    run r = (pair p, seed s), instance-major, is the two runs 2r (original data) and 2r + 1 (neighbour) with the
    same seed, hence every random stream shared.

    Parameters
    ----------
    spec : WorstCaseSpec
        Its ``algorithm``, ``config`` and ``measures`` run.
    inst : CoupledInstances
        P pairs.
    seeds : tuple of int
        The seeds every pair runs on.

    Returns
    -------
    Trace
        2 P len(seeds) runs, both runs of a logical run from the pair's shared ``w0``.
    """
    P, S = len(inst), len(seeds)
    which = np.repeat(np.arange(P), S)
    run_seeds = np.repeat(np.tile(np.asarray(seeds), P), 2)
    variants = np.ravel(np.column_stack([2 * which, 2 * which + 1]))
    return simulate(inst.problem(), spec.algorithm, spec.config, run_seeds, variants=variants,
                    w0=inst.w0[np.repeat(which, 2)], measures=spec.measures)


def pooled_loss_gaps(tr, inst: CoupledInstances, which: np.ndarray) -> np.ndarray:
    """``|f(w^T; z) - f(w~^T; z)|`` for every pooled sample z (both data sets' samples, each once) and logical run:
    the loss gaps uniform stability bounds.

    Parameters
    ----------
    tr : Trace
        The trace of :func:`coupled_runner` (runs 2r and 2r + 1: logical run r's pair).
    inst : CoupledInstances
        The pairs.
    which : ndarray
        (R,): logical run r's pair.

    Returns
    -------
    ndarray
        (C S + 1, R): the gap of the per-sample loss (x'w - y)^2 / 2 at the two final models; a diverged run gives
        NaN.
    """
    wA, wB = tr.final_w[0::2], tr.final_w[1::2]
    x, y = inst.pooled_samples()
    x, y = x[which], y[which]
    lA = 0.5 * (np.einsum("rnd,rd->rn", x, wA) - y) ** 2
    lB = 0.5 * (np.einsum("rnd,rd->rn", x, wB) - y) ** 2
    return np.abs(lA - lB).T
