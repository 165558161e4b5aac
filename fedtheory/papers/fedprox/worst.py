"""Worst case of FedProx's Theorem 4 (``fedtheory worst fedprox.thm4``): federated convex quadratics whose local
dissimilarity is at most B_max at every point (the class's heterogeneity (G, B) with G = 0: every client's optimum is
the global one, and (1/N) sum_k ||grad F_k||^2 <= B_max^2 ||grad f||^2 everywhere), client spectra in [0, L]. Each round
of a FedProx run with every device supplies a point w^t; the expectation over K devices drawn with replacement is
exact (``measures.ExpectedDecrease``). The bound at each round uses the run's own B(w^t) and gamma (one bound per run
and round: ``bound_per_run``).

The PEP (``fedprox_pep``): Theorem 4 over its own class, one round from w^t, at gamma = 0 (each device returns its
exact proximal point, the theorem's smallest inexactness): every F_k L-smooth and convex (L_- = 0), B-locally
dissimilar at w^t (Definition 3, exactly where it is assumed), the expectation over K devices drawn with replacement
exact (every multiset of draws a point of the PEP, with its multinomial probability). The statement
E f(w^{t+1}) <= f(w^t) - rho ||grad f(w^t)||^2 is homogeneous in f, so the PEP fixes ||grad f(w^t)||^2 = 1 and
maximizes E f(w^{t+1}) - f(w^t): the bound is the record at gap_t = 0 (f(w^t) - f* subtracted from both sides),
g2_t = 1, i.e. -rho, and the PEP's value is -rho*, rho* the exact worst-case decrease: the statement holds iff
rho <= rho*. Exact; K is capped (C + K - 1 choose K points)."""
from __future__ import annotations

import dataclasses

from fedtheory.sim import Exact, RunConfig, fedprox
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
from .measures import ExpectedDecrease


def make(record_id: str = "fedprox.thm4", *, L: float = 1.0, mu_L: float = 50.0, draws: int = 64, B_max: float = 1.3,
         N: int = 5, d: int = 3, local_steps: int = 3, rounds: int = 20, dist2_max: float = 25.0) -> WorstCaseSpec:
    N, d, draws, local_steps, rounds = int(N), int(d), int(draws), int(local_steps), int(rounds)
    space = QuadraticClass(N, d, L=L, mu=0.05 * L, client_mu=0.0, B=B_max, G2=0.0, dist2_max=dist2_max)
    mu = mu_L * L
    base = fedprox(mu=mu, server_rule="algorithm1")
    alg = dataclasses.replace(base, local=(*base.local, ExpectedDecrease(draws, mu)))
    cfg = RunConfig(rounds=rounds, local_steps=local_steps, lr=1.0 / (L + mu), oracle=Exact())

    def measure(tr, inst, which):  # (rounds, R): E f(w^{t+1}) - f* at every round's w^t
        return tr["loss"][:-1] - inst.f_star[which][None, :] + tr["prox_expected_change"]

    def constants(inst, tr, which):  # per run (R, rounds): each round's own point
        return {"mu": mu, "L": L, "L_minus": 0.0, "K": draws, "B": tr["prox_B"].T, "gamma": tr["prox_gamma"].T,
                "g2_t": tr["prox_grad2"].T, "gap_t": (tr["loss"][:-1] - inst.f_star[which][None, :]).T}

    params = {"record_id": record_id, "L": L, "mu_L": mu_L, "draws": draws, "B_max": B_max, "N": N, "d": d,
              "local_steps": local_steps, "rounds": rounds, "dist2_max": dist2_max}
    return WorstCaseSpec(record_id, space, alg, cfg, measure, constants, measures=("loss",),
                         settings=dict(R.THM4.requires), params=params, bound_per_run=True,
                         note="convex quadratic clients sharing their optimum, B(w) <= B_max everywhere; B(w^t), gamma "
                              "the run's own")


register_worst_case("fedprox.thm4", make, description="FedProx (Li et al. 2020, Thm 4) on convex quadratics of bounded "
                                                      "local dissimilarity")


def fedprox_pep(record_id: str = "fedprox.thm4", *, L: float = 1.0, mu: float = 50.0, K: int = 2, B: float = 1.3,
                N: int = 3) -> PEPSpec:
    """Theorem 4 at gamma = 0 over its class: N devices (every F_k L-smooth convex, B-locally dissimilar at w^t), the
    exact proximal point with coefficient mu, K devices drawn with replacement (the expectation exact); measure
    E f(w^{t+1}) - f(w^t) at ||grad f(w^t)||^2 = 1 against -rho."""
    N, K = int(N), int(K)
    setting = ProtocolSetting(C=N, K=1, T=1, eta=1.0 / (L + mu), L=L, heterogeneity="local_dissimilarity", B=B,
                              initial="gradient", D=1.0, metric="expected_sampled_change", draws=K)
    values = {"mu": mu, "L": L, "L_minus": 0.0, "B": B, "gamma": 0.0, "K": K, "gap_t": 0.0, "g2_t": 1.0}
    return PEPSpec(record_id, setting, values, settings=dict(R.THM4.requires),
                   algorithm=fedprox(mu=mu, server_rule="algorithm1", solve="exact"),
                   params={"record_id": record_id, "L": L, "mu": mu, "K": K, "B": B, "N": N},
                   note="gamma = 0 (exact proximal points); E f(w^{t+1}) - f(w^t) at ||grad f(w^t)||^2 = 1 against "
                        "-rho (the statement less f(w^t) - f* on both sides); its value is -rho*, the exact worst-case "
                        "decrease, so slack = rho*/rho")


register_pep("fedprox.thm4", fedprox_pep, sizes={"quick": {"N": 3, "K": 5}, "full": {"N": 3, "K": 6}},
             reference=check_reference("fedprox.thm4", "fedprox.thm4", ("L", "mu", "K"), setting="mu=50L K=64",
                                       convert={"K": int}, fixed={"B": 1.3, "N": 5}))
