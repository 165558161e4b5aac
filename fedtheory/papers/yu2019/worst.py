"""Worst case of Yu, Yang & Zhu's Theorem 1 (``fedtheory worst yu2019.thm1``): PR-SGD (every worker, I local steps,
models averaged) on federated quadratics with client spectra in [client_mu, L] (non-convex clients allowed: client_mu
< 0; the mean f strongly convex, so f* exists), additive noise sigma^2. Assumption 1's G is taken on the region the
runs visit (G^2 = sigma^2 + the largest ||grad f_i||^2 at the workers' iterates: quadratics have no global gradient
bound), as the least-squares rows of a check would.

The PEP (``yu_pep``): the theorem at sigma = 0 over its own non-convex class (bounded gradients at the queried points:
a relaxation, so an upper bound on the worst case)."""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.sim import AdditiveNoise, RunConfig, TrackGradients, fedavg
from fedtheory.validation import ParameterError
from fedtheory.worst import PEPSpec, ProtocolSetting, QuadraticClass, WorstCaseSpec, register_pep, register_worst_case

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


# ------------------------------------------------------------------------------------ the PEP


def yu_pep(record_id: str = "yu2019.thm1", *, L: float = 1.0, G: float = 1.0, Df0: float = 1.0, step: float = 0.25,
           N: int = 8, I: int = 4, rounds: int = 16) -> PEPSpec:
    """Theorem 1 at sigma = 0: PR-SGD with exact gradients (local GD), N workers, I steps between averagings, gamma =
    step/L. Class: every f_i L-smooth, possibly non-convex, ||grad f_i(x)||^2 <= G^2 at every point where it is queried
    (a relaxation of 'for every x'), f(xbar^0) - f(z) <= Df0 at every queried point z (implied by f(xbar^0) - f* <=
    Df0: a relaxation); measure (1/T) sum_{t<T} ||grad f(xbar^t)||^2 over every local step (T = I rounds): an upper
    bound on the worst case."""
    N, I, rounds = int(N), int(I), int(rounds)
    gamma = step / L
    setting = ProtocolSetting(C=N, K=I, T=rounds, eta=gamma, L=L, function_class="smooth",
                              heterogeneity="bounded_gradient", G=G, initial="function", D=Df0,
                              metric="step_avg_grad_norm2")
    values = {"gamma": gamma, "L": L, "sigma": 0.0, "G": G, "N": N, "I": I, "T": I * rounds, "Df0": Df0}
    return PEPSpec(record_id, setting, values, settings=dict(R.THM1.requires), algorithm=fedavg(),
                   params={"record_id": record_id, "L": L, "G": G, "Df0": Df0, "step": step, "N": N, "I": I,
                           "rounds": rounds},
                   note="sigma = 0 (exact gradients); G is the clients' gradient bound (the check's G^2 less its "
                        "sigma^2); T = I rounds local steps")


def yu_reference(seed: int = 0) -> dict:
    """The constants of today's check's row I = 4, gamma = 0.25/L (``fedtheory check --only yu2019.thm1``): L and
    the clients' gradient bound certified on its Huber regression, f(xbar^0) - f* of its start."""
    from fedtheory.checks import Session, run_checks

    from . import checks

    rows = [r for r in run_checks(only=["yu2019.thm1"], seed=seed, parallel_symbolic=False)
            if r.id == "yu2019.thm1" and r.ratio is not None and r.params.get("setting") == "I=4 gamma=0.25/L"]
    if not rows:
        raise ParameterError("reference", "yu2019.thm1 I=4 gamma=0.25/L", "today's check row")
    p = rows[0].params
    df0 = float(np.max(checks.run(Session("quick", seed), 4, 0.25)["values"]["Df0"]))
    G = float(np.sqrt(p["G"] ** 2 - p["sigma"] ** 2))
    return {"params": {"record_id": "yu2019.thm1", "L": float(p["L"]), "G": G, "Df0": df0, "step": 0.25,
                       "N": int(p["N"]), "I": 4, "rounds": checks.SIZES["quick"]["iterations"] // 4},
            "random_ratio": float(rows[0].ratio),
            "label": (f"fedtheory check --only yu2019.thm1 --seed {seed}: {rows[0].problem}, I=4 gamma=0.25/L (ratio "
                      "bound/measured on the check's instance); G = the check's gradient bound without its sigma^2")}


register_pep("yu2019.thm1", yu_pep, reference=yu_reference,
             sizes={"quick": {"N": 3, "I": 4, "rounds": 3}, "full": {"N": 3, "I": 4, "rounds": 4}})  # measured
