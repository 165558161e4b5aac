"""Worst case of Theorem 1 within its assumptions (``fedtheory worst li2020.thm1``): the plug-in's declaration.

Three things are declared, with fedtheory's public API:
* the problem class: quadratics whose every client objective has its spectrum in [mu, L] (Assumptions 1-2),
  arbitrary client optima (non-IID labels), and a start with ||w_1 - w*||^2 up to Delta1_max;
* the measured left side: E[F(w_T)] - F* after every round from the first (T = t E + 1, t >= 1; each round is a
  statement of the theorem, as in the plug-in's check; an instance's value is its worst round);
* how the constants come from an instance: Gamma exactly, Delta1 = ||w_1 - w*||^2, and Assumption 4's G^2 =
  sigma^2 + the largest ||grad F_k||^2 over the iterates the runs visited (as the plug-in's check measures it);
  L, mu, E, the noise and the step-size schedule are the stated ones.
The search maximises (left side) / (bound at the instance's own constants).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.sim import AdditiveNoise, Exact, RunConfig, TrackGradients, fedavg
from fedtheory.worst import QuadraticClass, WorstCaseSpec, register_worst_case


def make(record_id: str = "li2020.thm1", *, L: float, mu: float, E: int = 5, rounds: int = 80, sigma2: float = 0.1,
         C: int = 10, d: int = 10, Delta1_max: float = 100.0, offset_scale: float = 1.0,
         runs: int = 4) -> WorstCaseSpec:
    E, rounds, C, d = int(E), int(rounds), int(C), int(d)
    space = QuadraticClass(C, d, L=L, mu=mu, client_mu=mu, dist2_max=Delta1_max, offset_scale=offset_scale)
    lr, lr_offset = 2.0 / mu, max(8.0 * L / mu, float(E))
    oracle = AdditiveNoise(sigma2) if sigma2 > 0 else Exact()
    config = RunConfig(rounds=rounds, local_steps=E, lr=lr, lr_schedule="inverse_step", lr_offset=lr_offset,
                       oracle=oracle)
    seeds = tuple(range(int(runs))) if sigma2 > 0 else (0,)

    def measure(tr, inst, which):  # (rounds, R): a statement at every T = t E + 1 from the first round on (at T = 1
        return tr["loss"][1:] - inst.f_star[which][None, :]  # it follows from smoothness alone, as in the check)

    def constants(inst, tr, which):
        P = len(inst)
        g2 = np.nanmax(tr["visited_client_grad2"], axis=0).reshape(P, -1).max(axis=1)  # over rounds, then seeds
        k = inst.constants()
        return {"L": L, "mu": mu, "E": float(E), "T": (np.arange(1, rounds + 1) * E + 1.0)[None, :],
                "sum_p2_sigma2": sigma2 / C, "Gamma": np.maximum(k["Gamma"], 0.0)[:, None],
                "G": np.sqrt(sigma2 + g2)[:, None], "Delta1": k["dist2"][:, None],
                "lr": lr, "lr_offset": lr_offset}

    params = {"record_id": record_id, "L": L, "mu": mu, "E": E, "rounds": rounds, "sigma2": sigma2, "C": C, "d": d,
              "Delta1_max": Delta1_max, "offset_scale": offset_scale, "runs": runs}
    return WorstCaseSpec(record_id, space, dataclasses.replace(fedavg(), local=(TrackGradients(),)), config, measure,
                         constants, measures=("loss", "visited_client_grad2"), seeds=seeds,
                         settings={"lr_schedule": "inverse_step", "full_participation": True}, params=params,
                         note="class: client spectra in [mu, L], any client optima, ||w_1 - w*||^2 <= Delta1_max; "
                              "the bound at the instance's own Gamma, G (visited), Delta1")


def reference(seed: int = 0, problem=None):
    """L, mu and the ratio of the plug-in's check at E = 5, heterogeneity 1 (the step-size schedule of the theorem)."""
    from fedtheory.checks import Session

    from . import checks, records

    s = Session(seed=seed)
    r = checks.assess(s, records.THM1, 5, 1.0)
    p = checks.problem(1.0, seed)
    vals = checks.theorem_values(p, 5)
    return {"params": {"record_id": "li2020.thm1", "L": vals["L"], "mu": vals["mu"], "E": 5,
                       "rounds": checks.ITERATIONS // 5, "sigma2": checks.SIGMA2, "C": checks.C, "d": p.dim},
            "random_ratio": r.ratio,
            "label": f"li2020.thm1 check, seed {seed}: E = 5, heterogeneity 1, inverse_step schedule"}


register_worst_case("li2020.thm1", make, reference=reference,
                    description="FedAvg (Li et al. 2020 Thm 1) on quadratics with client spectra in [mu, L]")
