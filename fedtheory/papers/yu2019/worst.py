"""Worst case of Yu, Yang & Zhu's Theorem 1 (``fedtheory worst yu2019.thm1``): PR-SGD (every worker, I local steps,
models averaged) on federated quadratics with client spectra in [client_mu, L] (non-convex clients allowed: client_mu
< 0; the mean f strongly convex, so f* exists), additive noise sigma^2. Assumption 1's G is taken on the region the
runs visit (G^2 = sigma^2 + the largest ||grad f_i||^2 at the workers' iterates: quadratics have no global gradient
bound), as the least-squares rows of a check would."""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.sim import AdditiveNoise, RunConfig, TrackGradients, fedavg
from fedtheory.worst import QuadraticClass, WorstCaseSpec, register_worst_case

from . import records as R


def make(record_id: str = "yu2019.thm1", *, L: float = 1.0, mu: float = 0.1, client_mu: float = -0.5, N: int = 8,
         I: int = 1, step: float = 0.25, iterations: int = 64, sigma2: float = 0.25, d: int = 3,
         dist2_max: float = 25.0, runs: int = 4) -> WorstCaseSpec:
    N, I, iterations, d = int(N), int(I), int(iterations), int(d)
    space = QuadraticClass(N, d, L=L, mu=mu, client_mu=client_mu, dist2_max=dist2_max, offset_scale=3.0)
    gamma = step / L
    cfg = RunConfig(rounds=iterations // I, local_steps=I, lr=gamma, oracle=AdditiveNoise(sigma2))
    Ts = np.arange(1, cfg.rounds + 1) * I

    def measure(tr, inst, which):  # (rounds, R): the running mean of ||grad f(xbar_s)||^2 over s < T at T = R I
        return tr["step_grad_norm2_mean"][Ts - 1]

    def constants(inst, tr, which):
        P = len(inst)
        g2 = np.nanmax(tr["visited_client_grad2"], axis=0).reshape(P, -1).max(axis=1)
        return {"gamma": gamma, "L": L, "sigma": float(np.sqrt(sigma2)), "G": np.sqrt(sigma2 + g2)[:, None], "N": N,
                "I": I, "T": Ts[None, :].astype(float), "Df0": (inst.loss(inst.w0) - inst.f_star)[:, None]}

    params = {"record_id": record_id, "L": L, "mu": mu, "client_mu": client_mu, "N": N, "I": I, "step": step,
              "iterations": iterations, "sigma2": sigma2, "d": d, "dist2_max": dist2_max, "runs": runs}
    return WorstCaseSpec(record_id, space, dataclasses.replace(fedavg(), local=(TrackGradients(),)), cfg, measure,
                         constants, measures=("step_grad_norm2_mean",), seeds=tuple(range(int(runs))),
                         settings={"aggregation": R.THM1.requires["aggregation"], "full_participation": True},
                         params=params, note="client spectra in [client_mu, L]; G on the visited region")


register_worst_case("yu2019.thm1", make, description="PR-SGD / local SGD (Yu et al. 2019, Thm 1) on quadratic clients, "
                                                     "non-convex ones allowed")
