"""Two local-rule plug-ins from FedMRUR (seed 003_7cb41999359df859.txt), usable in any algorithm: the hyperbolic
representation regularizer (a client objective term on the Lorentz model) and normalized aggregation (the server
mean of the updates rescaled to their mean norm), with the Lorentz-model geometry they rest on and their naive
forms. The FedMRUR and MoFedSAM algorithms built from them, and how they read seed 003's Algorithm 1, are the FedMRUR
plug-in's (``fedtheory.papers.fedmrur.algorithms``).

The hyperbolic regularizer (eqs. 3-5). A representation z of a sample (for logistic regression: its
logits W'x, the pre-softmax activations) is mapped to the Lorentz model (hyperboloid <x, x>_L = -beta,
x_0 > 0, curvature -1/beta) by the lift

    L(z) = (sqrt(beta + ||z||^2), z),

and R_p(w, w_g) = exp(D_p(w)/sigma), D_p(w) = (1/S_p) sum_j ||L(z_j(w)) - L(z_j(w_g))||_L^2 over client p's
samples (all of them: the regularizer is deterministic; 003 uses the sampled batch). With a = sqrt(beta +
||z||^2), ||L(z) - L(z')||_L^2 = -2 beta - 2 <L(z), L(z')>_L = ||z - z'||^2 - (a - a')^2 >= 0 (0 iff z = z'),
evaluated here in the cancellation-free form ||e||^2 - (e.s/(a + a'))^2, e = z - z', s = z + z'.
Its gradient in w is gamma R/sigma sum_j J_j' grad_z d^2_j with grad_z d^2 = 2 a' z/a - 2 z'.
"""
from __future__ import annotations

import numpy as np

from .._validation import ParameterError, check_float, per_run
from .backend import ops
from .certificates import Certificate, from_visited, undeclared, visited_values
from .rules import Aggregator, LocalTransform

__all__ = ["HyperbolicRegularizer", "NormalizedAggregation", "lifted_sqdist", "lorentz_inner", "lorentz_lift",
           "lorentz_sqdist", "r_bound", "reference_regularizer_grad", "regularizer_hessian"]

# ------------------------------------------------------------------------------------ the Lorentz model


def lorentz_lift(z: np.ndarray, beta: float) -> np.ndarray:
    """(..., m) -> (..., m+1): (sqrt(beta + ||z||^2), z), a point of the hyperboloid <x, x>_L = -beta."""
    z = np.asarray(z, float)
    return np.concatenate([np.sqrt(beta + np.sum(z**2, axis=-1, keepdims=True)), z], axis=-1)


def lorentz_inner(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Seed 003 eq. (4): <x, y>_L = -x_0 y_0 + sum_{i>=1} x_i y_i."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    return -x[..., 0] * y[..., 0] + np.sum(x[..., 1:] * y[..., 1:], axis=-1)


def lorentz_sqdist(x: np.ndarray, y: np.ndarray, beta: float) -> np.ndarray:
    """Seed 003 eq. (3) as printed: ||x - y||_L^2 = -2 beta - 2 <x, y>_L (for points on the hyperboloid)."""
    return -2 * beta - 2 * lorentz_inner(x, y)


def _np(x) -> np.ndarray:
    """A float64 numpy copy of a numpy array or a (possibly GPU) torch tensor, for measurements."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=float)


def _rowdot(u, v):
    """sum over the last axis of u * v (a matmul with ones: numpy's reductions over a short last axis are slow)."""
    xp = ops(u)
    return xp.matmul(u * v, xp.zeros((u.shape[-1],), like=u) + 1.0)


def lifted_sqdist(z, z_ref, beta):
    """||L(z) - L(z_ref)||_L^2 without cancellation: ||e||^2 - (e.s/(a + a_ref))^2; numpy or torch."""
    xp = ops(z)
    e, s = z - z_ref, z + z_ref
    a = xp.sqrt(beta + _rowdot(z, z))
    a_ref = xp.sqrt(beta + _rowdot(z_ref, z_ref))
    da = _rowdot(e, s) / (a + a_ref)  # = a - a_ref
    return _rowdot(e, e) - da * da


def r_bound(X, weights, z_ref, beta, sigma, radius) -> np.ndarray:
    """An upper bound on ||Hess_w R_p(w, w_g)|| over the ball ||w - w_g|| <= radius, per (run, client), for a
    representation linear in w (z_j = W'x_j; X (R,N,S,f) the inputs, z_ref (R,N,S,m) the representations under
    w_g, weights (R,N,S) the per-sample weights, beta/sigma scalars or (R,), radius (R,)).

    Hess R = (R/sigma)(Hess D + grad D grad D'/sigma); Hess D = sum_j w_j J_j' H_j J_j with
    0 <= H_j = 2 (a_ref/a)(I - z z'/a^2) <= 2 c_j I, c_j = a_ref,j / min_ball a_j; ||grad D|| <= 4 m2 radius and
    D <= m2 radius^2 with m2 = sum_j w_j ||x_j||^2. Hence
    r <= exp(m2 radius^2/sigma)/sigma * (lambda_max(2 sum_j w_j c_j x_j x_j') + 16 m2^2 radius^2/sigma).
    """
    X, W, Z = (np.asarray(a, float) for a in (X, weights, z_ref))
    R = X.shape[0]
    b = np.broadcast_to(np.asarray(beta, float), (R,))[:, None, None]
    sg = np.broadcast_to(np.asarray(sigma, float), (R,))[:, None]
    rad = np.broadcast_to(np.asarray(radius, float), (R,))
    xn = np.linalg.norm(X, axis=-1)  # (R,N,S)
    zn = np.linalg.norm(Z, axis=-1)
    a_ref = np.sqrt(b + zn**2)
    a_min = np.sqrt(b + np.maximum(0.0, zn - xn * rad[:, None, None]) ** 2)
    c = a_ref / a_min
    M = 2 * np.matmul(np.swapaxes(X * (W * c)[..., None], -1, -2), X)
    lam = np.linalg.eigvalsh(M)[..., -1]
    m2 = np.sum(W * xn**2, axis=-1)  # (R,N)
    rr = rad[:, None] ** 2
    return np.exp(m2 * rr / sg) / sg * (lam + 16 * m2**2 * rr / sg)


def regularizer_hessian(X, weights, w, w_ref, beta: float, sigma: float, n_classes: int) -> np.ndarray:
    """The exact Hessian of R(w, w_ref) = exp(D(w)/sigma) for one client with a linear representation
    z_j = W'x_j (X (S, f) its inputs, weights (S,), w and w_ref flat row-major (f, n_classes)): (d, d).
    Hess R = (R/sigma)(Hess D + grad D grad D'/sigma), Hess D = sum_j w_j (x_j x_j') (x) H_j,
    H_j = 2 (a_ref/a)(I - u u'), u = z/a (closed form of the second derivative of the lifted distance)."""
    X, wts = np.asarray(X, float), np.asarray(weights, float)
    f = X.shape[1]
    Z, Zr = X @ np.reshape(w, (f, n_classes)), X @ np.reshape(w_ref, (f, n_classes))
    a = np.sqrt(beta + np.sum(Z**2, axis=-1))
    ar = np.sqrt(beta + np.sum(Zr**2, axis=-1))
    D = float(np.sum(wts * lifted_sqdist(Z, Zr, beta)))
    gz = 2 * (ar / a)[:, None] * Z - 2 * Zr
    gD = (X.T @ (wts[:, None] * gz)).reshape(-1)
    u = Z / a[:, None]
    Hz = 2 * (ar / a)[:, None, None] * (np.eye(n_classes) - u[:, :, None] * u[:, None, :])
    HD = np.einsum("s,sf,sg,skl->fkgl", wts, X, X, Hz).reshape(f * n_classes, f * n_classes)
    return np.exp(D / sigma) / sigma * (HD + np.outer(gD, gD) / sigma)


# ------------------------------------------------------------------------------------ plug-ins


class HyperbolicRegularizer(LocalTransform):
    """Seed 003 eqs. (2)-(5): adds gamma R(w, w^t) = gamma exp(D_p(w)/sigma) to client p's objective, with
    D_p the mean squared Lorentzian distance between the lifted representations of p's samples under the
    local model w and under the round's global model w^t (module docstring). Needs a problem whose views
    give sample representations (logistic regression: the logits)."""

    name = "hyperbolic"
    objective = True
    measures_on_request = True  # hyp_r_bound takes an eigenvalue per client and round: recorded when named

    def __init__(self, gamma=0.005, sigma=1e4, beta=1.0):
        self.gamma, self.sigma, self.beta = gamma, sigma, beta

    def params(self):
        return {"gamma": self.gamma, "sigma": self.sigma, "beta": self.beta}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("gamma", per_run(check_float("gamma", self.gamma, 0.0, size=runs), runs))
        self.set_param("sigma", per_run(check_float("sigma", self.sigma, 0.0, low_inclusive=False, size=runs), runs))
        self.set_param("beta", per_run(check_float("beta", self.beta, 0.0, low_inclusive=False, size=runs), runs))

    def round_start(self, rs):
        try:
            z_ref = rs.view.representation(rs.anchor)
            weights = rs.view.sample_weights()
        except NotImplementedError:
            raise ParameterError("problem", type(rs.view).__name__, "a problem whose client views give sample "
                                 "representations (e.g. LogisticProblem) when HyperbolicRegularizer is used") from None
        xp = ops(z_ref)
        rs.extra["hyp_zref"] = z_ref
        rs.extra["hyp_aref"] = xp.sqrt(self.param("beta", z_ref) + _rowdot(z_ref, z_ref))
        rs.extra["hyp_weights"] = weights
        rs.extra["hyp_radius"] = xp.zeros((z_ref.shape[0],), like=z_ref)

    def _D(self, rs, z):
        b = self.param("beta", z)  # (R,1,1) broadcasts over (R,N,S)
        return ops(z).sum(rs.extra["hyp_weights"] * lifted_sqdist(z, rs.extra["hyp_zref"], b), axis=-1)

    def objective_grad(self, rs, w):
        xp = ops(w)
        z, z_ref, a_ref = rs.view.representation(w), rs.extra["hyp_zref"], rs.extra["hyp_aref"]
        b = self.param("beta", w)  # (R,1,1) broadcasts over (R,N,S)
        a = xp.sqrt(b + _rowdot(z, z))
        e = z - z_ref
        da = _rowdot(e, z + z_ref) / (a + a_ref)  # a - a_ref
        wts = rs.extra["hyp_weights"]
        D = xp.sum(wts * (_rowdot(e, e) - da * da), axis=-1)  # (R,N)
        Gz = (wts / a)[..., None] * (2 * a_ref[..., None] * z - 2 * a[..., None] * z_ref)  # w_j grad_z d^2_j
        sig = self.param("sigma", w)[:, :, 0]  # (R,1)
        coef = self.param("gamma", w)[:, :, 0] * xp.exp(D / sig) / sig  # gamma R / sigma, (R,N)
        dist = xp.max(xp.norm(w - rs.anchor, axis=-1), axis=1)
        rs.extra["hyp_radius"] = xp.maximum(rs.extra["hyp_radius"], dist)
        return coef[..., None] * rs.view.representation_grad(w, Gz)

    def certify(self, name: str, problem=None, visited=None) -> Certificate:
        """R's smoothness r: R = gamma exp(D/sigma) has no uniform smoothness constant over every w (exp of a
        growing distance), so r is certified on the visited region only: the largest of each round's closed-form
        bound over the ball around w^t that the round's iterates stayed in (measure hyp_r_bound, per run)."""
        if name != "regularizer_smooth":
            return undeclared(name, self)
        values = visited_values(visited, "hyp_r_bound")
        if values is not None and values.ndim == 2:  # (rounds, runs): the largest round per run
            values = {"hyp_r_bound": np.nanmax(values, axis=0)[None]}
        else:
            values = visited
        return from_visited(name, values, "hyp_r_bound", "r", lambda v: v,
                            "r = the largest closed-form bound on ||Hess R|| over the balls around w^t that the "
                            "rounds' iterates stayed in (r_bound)", globally="R = gamma exp(D/sigma) is not uniformly "
                                                                    "smooth over every w")

    def direction(self, rs, g, w, grad_at):
        return g  # the gradient of the term is already in g (objective = True)

    def measures(self):
        return {"hyp_R": "mean over the selected clients of R(w_{p,K}, w^t) = exp(D_p/sigma) (seed 003 eq. 3)",
                "hyp_radius": "max over the round's local iterates and SAM points of ||x - w^t||",
                "hyp_r_bound": "upper bound on R's smoothness r over the ball ||w - w^t|| <= hyp_radius (numpy)"}

    def measure(self, rs):
        z = rs.view.representation(rs.wK)
        D = self._D(rs, z)
        sig = self.param("sigma", D)[:, :, 0]
        out = {"hyp_R": ops(D).mean(ops(D).exp(D / sig), axis=1), "hyp_radius": rs.extra["hyp_radius"]}
        rb = r_bound(_np(rs.view.representation_inputs()), _np(rs.extra["hyp_weights"]), _np(rs.extra["hyp_zref"]),
                     self.param("beta")[:, 0, 0], self.param("sigma")[:, 0, 0], _np(rs.extra["hyp_radius"]))
        out["hyp_r_bound"] = rb.max(axis=1)
        return out


class NormalizedAggregation(Aggregator):
    """Seed 003 Alg. 1 lines 13-16: ``Delta_p = w_{p,0} - w_{p,K}`` (descent sign), ``Delta^{t+1} = (sum_p
    ||Delta_p|| / (|S_t| ||sum_p Delta_p||)) sum_p Delta_p = d_t mean_p Delta_p``, ``w^{t+1} = w^t - eta_g
    Delta^{t+1}``. normalize=False gives the plain mean (MeanUpdates; MoFedSAM's server) with the same measures.
    If sum_p Delta_p = 0 the direction is undefined and the update is 0 (d_t = inf, or 1 if every
    Delta_p = 0).

    Parameters
    ----------
    server_lr : float or array_like, default 1.0
        eta_g, the server step (> 0; one value per run allowed).
    normalize : bool, default True
        True: FedMRUR's normalized aggregate; False: the plain mean of the updates.
    """

    name = "normalized"

    def __init__(self, server_lr=1.0, normalize: bool = True):
        self.server_lr = server_lr
        if not isinstance(normalize, (bool, np.bool_)):
            raise ParameterError("normalize", normalize, "True (FedMRUR) or False (plain mean)")
        self.normalize = bool(normalize)

    def params(self):
        return {"server_lr": self.server_lr, "normalize": self.normalize}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("server_lr", per_run(check_float("server_lr", self.server_lr, 0.0, low_inclusive=False,
                                                         size=runs), runs))

    def aggregate(self, rs):
        xp = ops(rs.sent)
        U = rs.w0 - rs.sent
        if self.normalize:
            total = xp.sum(U, axis=1)
            tnorm = xp.norm(total, axis=-1)
            snorm = xp.sum(xp.norm(U, axis=-1), axis=1)
            ok = tnorm > 0
            scale = xp.where(ok, snorm / (U.shape[1] * xp.where(ok, tnorm, 1.0)), 0.0)
            update = scale[:, None] * total
        else:
            update = xp.mean(U, axis=1)
        rs.extra["global_update"] = update
        return rs.state.w - self.param("server_lr", rs.sent)[:, :, 0] * update

    def measures(self):
        return {
            "d_t": "d_t = sum_p ||Delta_p^t|| / ||sum_p Delta_p^t|| >= 1 (seed 003 Thm 1)",
            "update_norm": "||Delta^{t+1}||, the global update the server applied (before eta_g)",
            "update_norm_plain": "||mean_p Delta_p^t||, the plain mean's norm "
                                 "(equal to update_norm when normalize=False)",
            "cos_pairwise": "mean over pairs p != q of cos(Delta_p^t, Delta_q^t)",
            "cos_to_aggregate": "mean_p cos(theta_p), theta_p the angle between Delta_p^t and sum_q Delta_q^t (Fig. 2)",
            "geometry_residual": "max of the relative residuals of ||Delta^{t+1}|| = mean_p ||Delta_p|| (normalized) "
                                 "or (1/S) sum_p ||Delta_p|| cos(theta_p) (plain), and of 1/d_t = sum_p ||Delta_p|| "
                                 "cos(theta_p) / sum_p ||Delta_p|| (Fig. 2; exact up to rounding)",
        }

    def measure(self, rs):
        U = _np(rs.w0 - rs.sent)
        n = U.shape[1]
        norms = np.linalg.norm(U, axis=-1)  # (R,N)
        total = U.sum(axis=1)
        tnorm = np.linalg.norm(total, axis=-1)
        snorm = norms.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            d_t = np.where(snorm == 0, 1.0, snorm / tnorm)
            unit = np.where(norms[..., None] > 0, U / norms[..., None], 0.0)
            nz = (norms > 0).sum(axis=1)
            cos_pair = (np.sum(unit.sum(axis=1) ** 2, axis=-1)
                        - nz) / (n * (n - 1)) if n > 1 else np.full(len(U), np.nan)
            cos_theta = np.einsum("rnd,rd->rn", unit, total) / tnorm[:, None]  # NaN when the sum is 0
            proj = np.sum(norms * cos_theta, axis=1)  # sum_p ||Delta_p|| cos(theta_p)
            applied = np.linalg.norm(_np(rs.extra["global_update"]), axis=-1)
            target = snorm / n if self.normalize else proj / n
            res1 = np.abs(applied - target) / np.where(snorm > 0, snorm / n, 1.0)
            res2 = np.abs(1 / d_t - proj / snorm)
        return {"d_t": d_t, "update_norm": applied, "update_norm_plain": tnorm / n,
                "cos_pairwise": cos_pair, "cos_to_aggregate": np.mean(cos_theta, axis=1),
                "geometry_residual": np.where(snorm > 0, np.maximum(res1, res2), 0.0)}


# ------------------------------------------------------------------------------------ naive reference
# sim.reference.reference_simulate is the naive per-client reference for this family too; it uses this
# regulariser gradient, written from eqs. (3)-(4) one sample at a time.


def reference_regularizer_grad(problem, v, i, x, wg, gamma, sigma, beta):
    """gamma grad_x exp(D/sigma) for one client, from eqs. (3)-(4) as printed, one sample at a time."""
    S = int(problem.client_sizes[i])
    X = problem.X[v, i, :S]
    f, k = problem.n_features, problem.n_classes
    Wx, Wg = x.reshape(f, k), wg.reshape(f, k)
    D = 0.0
    G = np.zeros((f, k))
    for j in range(S):
        z, zg = X[j] @ Wx, X[j] @ Wg
        Lp, Lg = lorentz_lift(z, beta), lorentz_lift(zg, beta)
        D += lorentz_sqdist(Lp, Lg, beta) / S
        # d/dz of -2 beta - 2(-a a_g + z.z_g) = 2 a_g z / a - 2 z_g
        G += np.outer(X[j], 2 * Lg[0] * z / Lp[0] - 2 * zg) / S
    return (gamma * np.exp(D / sigma) / sigma * G).reshape(-1)
