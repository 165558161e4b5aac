"""Worst case of SCAFFOLD's strongly convex bound (``fedtheory worst karimireddy2020.scaffold_sc``): federated
quadratics whose every client spectrum lies in [mu, beta] (each f_i beta-smooth and mu-strongly convex), any client
optima, a start within sqrt(dist2_max) of x*; SCAFFOLD option II with controls from 0, S of N clients per round,
additive noise sigma^2, at the largest step h = 1/(81 beta). The left side at every horizon T is the geometrically
weighted average of f(x^r) - f* over r < T, and the bound takes ||x^0 - x*||^2 and C_0 = (1/N) sum_i ||grad f_i(x*)||^2
from the instance."""
from __future__ import annotations

import numpy as np

from fedtheory.sim import AdditiveNoise, RunConfig, scaffold
from fedtheory.validation import ParameterError
from fedtheory.worst import (
    PEPSpec,
    ProtocolSetting,
    QuadraticClass,
    WorstCaseSpec,
    check_reference,
    register_pep,
    register_worst_case,
)

from . import records as R


def make(record_id: str = "karimireddy2020.scaffold_sc", *, beta: float = 1.0, mu: float = 0.1, N: int = 10,
         S: int = 5, K: int = 5, eta_g: float = 1.0, rounds: int = 120, sigma2: float = 0.1, d: int = 3,
         dist2_max: float = 25.0, runs: int = 4) -> WorstCaseSpec:
    N, S, K, rounds, d = int(N), int(S), int(K), int(rounds), int(d)
    space = QuadraticClass(N, d, L=beta, mu=mu, client_mu=mu, dist2_max=dist2_max, offset_scale=3.0)
    h = 1.0 / (81.0 * beta)
    eta_l = h / (K * eta_g)
    cfg = RunConfig(rounds=rounds, local_steps=K, lr=eta_l, clients_per_round=S, oracle=AdditiveNoise(sigma2))
    w = (1.0 - mu * h / 2.0) ** (-(np.arange(rounds) + 1.0))

    def measure(tr, inst, which):  # (rounds, R): row T - 1 = the weighted average over r < T
        gap = tr["loss"][:-1] - inst.f_star[which][None, :]
        return np.cumsum(w[:, None] * gap, axis=0) / np.cumsum(w)[:, None]

    def constants(inst, tr, which):
        g = np.einsum("pcde,pe->pcd", inst.H, inst.w_star) - inst.h  # grad f_i(x*)
        return {"beta": beta, "mu": mu, "sigma": float(np.sqrt(sigma2)), "N": N, "S": S, "K": K, "eta_l": eta_l,
                "eta_g": eta_g, "T": np.arange(1, rounds + 1, dtype=float)[None, :],
                "dist0": np.sum((inst.w0 - inst.w_star) ** 2, axis=1)[:, None],
                "C0": np.mean(np.sum(g ** 2, axis=-1), axis=1)[:, None]}

    params = {"record_id": record_id, "beta": beta, "mu": mu, "N": N, "S": S, "K": K, "eta_g": eta_g, "rounds": rounds,
              "sigma2": sigma2, "d": d, "dist2_max": dist2_max, "runs": runs}
    return WorstCaseSpec(record_id, space, scaffold(server_lr=eta_g), cfg, measure, constants, measures=("loss",),
                         seeds=tuple(range(int(runs))), settings=dict(R.SCAFFOLD_SC.requires), params=params,
                         note="client spectra in [mu, beta], any client optima, "
                              "||x^0 - x*||^2 <= dist2_max; h = 1/(81 beta)")


register_worst_case("karimireddy2020.scaffold_sc", make,
                    description="SCAFFOLD (Karimireddy et al. 2020, Lemma 15 "
                                "summed) on strongly convex quadratic clients")


def scaffold_pep(record_id: str = "karimireddy2020.scaffold_sc", *, beta: float = 1.0, mu: float = 0.1, N: int = 3,
                 S: int | None = None, K: int = 3, eta_g: float = 1.0, T: int = 4, sigma2: float = 0.0,
                 dist0: float = 1.0, C0: float = 0.25) -> PEPSpec:
    """The PEP of SCAFFOLD's strongly convex bound: N clients every beta-smooth and mu-strongly convex,
    ||x^0 - x*||^2 <= dist0 and C_0 = (1/N) sum_i ||grad f_i(x*)||^2 <= C0 (heterogeneity at the optimum, the
    controls starting at 0: an exact class), SCAFFOLD option II with every client each round (S = N) and exact
    gradients (sigma = 0), h = 1/(81 beta); the left side the q^{-(r+1)}-weighted average of f(x^r) - f* over r < T."""
    N, K, T = int(N), int(K), int(T)
    S = N if S is None else int(S)
    if S != N:
        raise ParameterError("S", S, f"N = {N} (the PEP covers full participation; sampling is random)")
    if sigma2 != 0:
        raise ParameterError("sigma2", sigma2, "0 (the PEP covers exact gradients)")
    h = 1.0 / (81.0 * beta)
    eta_l = h / (K * eta_g)
    q = 1.0 - mu * h / 2.0
    weights = tuple(q ** (-(np.arange(T) + 1.0)))
    setting = ProtocolSetting(C=N, K=K, T=T, eta=eta_l, L=beta, mu=mu, client_mu=mu, heterogeneity="optimum",
                              zeta=float(np.sqrt(C0)), initial="distance", D=dist0, metric="weighted_opt_error",
                              metric_weights=weights)
    values = {"beta": beta, "mu": mu, "sigma": 0.0, "N": N, "S": S, "K": K, "eta_l": eta_l, "eta_g": eta_g, "T": T,
              "dist0": dist0, "C0": C0}
    params = {"record_id": record_id, "beta": beta, "mu": mu, "N": N, "S": S, "K": K, "eta_g": eta_g, "T": T,
              "sigma2": 0.0, "dist0": dist0, "C0": C0}
    return PEPSpec(record_id, setting, values, settings=dict(R.SCAFFOLD_SC.requires), params=params,
                   algorithm=scaffold(server_lr=eta_g), initial_symbol="dist0", instance_symbols={"C0": "zeta2"},
                   note="S = N and sigma = 0: the deterministic case of the bound, over its exact class")


# the constants of today's check's first row (S = 5 of N = 20, eta_g = 1): beta, mu, K, eta_g certified on its least
# squares, its ||x^0 - x*||^2 and C_0; the PEP at S = N and sigma = 0 over T rounds (the check's 200), sizes capped
register_pep("karimireddy2020.scaffold_sc", scaffold_pep,  # sizes measured: benchmarks/pep_rows.py --sizes
             sizes={"quick": {"N": 3, "K": 3, "T": 6}, "full": {"N": 4, "K": 5, "T": 10}},
             reference=check_reference("karimireddy2020.scaffold_sc", "karimireddy2020.scaffold_sc",
                                       ("beta", "mu", "N", "K", "eta_g", "dist0", "C0"), setting="S=5 eta_g=1",
                                       convert={"N": int, "K": int}, fixed={"T": 200}))
