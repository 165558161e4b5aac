"""What Theorem 4 of FedProx is about, measured at every round of a run in which every device solves its local
problem from w^t (full participation): the expectation over K devices drawn with replacement (uniform p_k) of
f(w^{t+1}), w^{t+1} the mean of the drawn devices' local solutions, computed exactly rather than sampled.

For a quadratic f, with w_k the devices' local solutions and wbar their mean, the mean m of K independent uniform
draws has E f(m) = f(wbar) + (1/K) ((1/N) sum_k f(w_k) - f(wbar)) (f(wbar + d) = f(wbar) + grad f(wbar).d + d'Hd/2,
E d = 0, E d d' = Sigma/K, and (1/N) sum_k f(w_k) - f(wbar) = tr(H Sigma)/2). The identity needs f quadratic: the check
runs it on least squares only.

Round measures (row t: at w^t, the round's start):
* ``prox_expected_change``: E_{S_t}[f(w^{t+1})] - f(w^t);
* ``prox_grad2``: ||grad f(w^t)||^2;
* ``prox_B``: B(w^t) = (mean_k ||grad F_k(w^t)||^2)^(1/2) / ||grad f(w^t)|| (Definition 3);
* ``prox_gamma``: max_k ||grad F_k(w_k) + mu (w_k - w^t)|| / ||grad F_k(w^t)|| (Definition 2, reached by the solver).
"""
from __future__ import annotations

import numpy as np

from fedtheory.sim import LocalTransform, register_measure

register_measure("prox_expected_change", "f", "E_S[f(w^{t+1})] - f(w^t), K devices drawn with replacement (exact for "
                 "quadratic f)")
register_measure("prox_grad2", "f^2/w^2", "||grad f(w^t)||^2 at the round's start")
register_measure("prox_B", "1", "B(w^t): (mean_k ||grad F_k(w^t)||^2)^(1/2)/||grad f(w^t)|| (FedProx Definition 3)")
register_measure("prox_gamma", "1", "max_k ||grad h_k(w_k; w^t)||/||grad F_k(w^t)|| (FedProx Definition 2)")


class ExpectedDecrease(LocalTransform):
    """A measuring rule (the step is unchanged) for a FedProx run with every device: see the module docstring.
    ``draws``: K, the number of devices Theorem 4 draws; ``mu``: the proximal coefficient of the run."""

    name = "fedprox_expected_decrease"

    def __init__(self, draws: int, mu: float):
        self.draws, self.mu = int(draws), float(mu)

    def params(self):
        return {"draws": self.draws}

    def direction(self, rs, g, w, grad_at):
        return g

    def measures(self) -> dict[str, str]:
        return {"prox_expected_change": "E_S[f(w^{t+1})] - f(w^t)", "prox_grad2": "||grad f(w^t)||^2",
                "prox_B": "B(w^t)", "prox_gamma": "the largest inexactness gamma reached"}

    def measure(self, rs) -> dict[str, np.ndarray]:
        view, w0, wK = rs.view, np.asarray(rs.w0), np.asarray(rs.wK)
        R, N, _ = wK.shape

        def f(points):  # f at one point per run, (R, d): the mean of every device's loss
            return np.asarray(view.loss(np.broadcast_to(points[:, None, :], wK.shape))).mean(axis=1)

        wbar = wK.mean(axis=1)
        f_bar = f(wbar)
        f_each = np.stack([f(wK[:, k]) for k in range(N)], axis=1).mean(axis=1)
        expected = f_bar + (f_each - f_bar) / self.draws
        g0 = np.asarray(view.grad(w0))  # (R, N, d): grad F_k(w^t)
        gK = np.asarray(view.grad(wK)) + self.mu * (wK - w0)  # grad h_k(w_k; w^t)
        grad_f = g0.mean(axis=1)
        g2 = np.sum(grad_f ** 2, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            B = np.sqrt(np.mean(np.sum(g0 ** 2, axis=-1), axis=1) / g2)
            gamma = np.max(np.linalg.norm(gK, axis=-1) / np.linalg.norm(g0, axis=-1), axis=1)
        return {"prox_expected_change": expected - f(w0[:, 0]), "prox_grad2": g2, "prox_B": B, "prox_gamma": gamma}
