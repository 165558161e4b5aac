"""Worst cases of Yuan, Ling & Yin's Lemma 1 and Theorem 1 (``fedtheory worst yuan2016.lemma1``): DGD on federated
quadratics whose every agent objective is convex and L-smooth (the class of Assumption 1 with f_i quadratic; the mean
mu-strongly convex only so that x* is unique), on a fixed topology, one exact-gradient run per instance.

The start: each instance starts every agent at its own w0 (the search's start parameter). DGD commutes with shifts
(x -> x - w0 for every agent and f_i(. + w0)), so the run is DGD from x(0) = 0 on the shifted, equally quadratic
agents: Lemma 1 and Theorem 1 apply as stated, with f_i(0) read as f_i(w0) of the unshifted data.
* Lemma 1: max_i ||x_i(k) - xbar(k)|| against alpha D/(1 - beta) at every k, D = the run's largest ||h(k)||;
* Theorem 1: ||h(k)|| (k >= 1) against sqrt(2 L_h sum_i (f_i(w0) - f_i^o)), at a step inside (9).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.sim import Exact, RunConfig, d_psgd
from fedtheory.worst import QuadraticClass, WorstCaseSpec, register_worst_case

from . import checks, records as R
from .measures import StackedGradient


def _setup(n: int, d: int, L: float, mu: float, topology: str, alpha: float, rounds: int, dist2_max: float):
    top = checks.TOPOLOGIES[topology](n)
    space = QuadraticClass(n, d, L=L, mu=mu, client_mu=0.0, dist2_max=dist2_max, offset_scale=3.0)
    alg = dataclasses.replace(d_psgd(top), local=(StackedGradient(),))
    cfg = RunConfig(rounds=rounds, local_steps=1, lr=alpha, oracle=Exact())
    return top, space, alg, cfg


def make_lemma1(record_id: str = "yuan2016.lemma1", *, n: int = 8, d: int = 2, L: float = 1.0, mu: float = 0.05,
                topology: str = "complete", alpha: float = 0.5, rounds: int = 40, dist2_max: float = 25.0) -> WorstCaseSpec:
    n, d, rounds = int(n), int(d), int(rounds)
    top, space, alg, cfg = _setup(n, d, L, mu, topology, alpha, rounds, dist2_max)

    def measure(tr, inst, which):  # (rounds, R): row k - 1 is the models after k rounds
        return tr["consensus_max"]

    def constants(inst, tr, which):
        D = np.nanmax(tr["dgd_stacked_grad"], axis=0).reshape(len(inst), -1).max(axis=1)  # the run's largest ||h(k)||
        return {"alpha": alpha, "beta": top.lam, "D": D[:, None]}

    params = {"record_id": record_id, "n": n, "d": d, "L": L, "mu": mu, "topology": topology, "alpha": alpha,
              "rounds": rounds, "dist2_max": dist2_max}
    return WorstCaseSpec(record_id, space, alg, cfg, measure, constants, measures=("consensus_max",),
                         settings=dict(R.REQUIRES), params=params,
                         note="agents' objectives convex quadratics with spectra in [0, L]; D the run's largest "
                              "stacked gradient (the lemma's hypothesis (10) on the run)")


def make_thm1(record_id: str = "yuan2016.thm1", *, n: int = 8, d: int = 2, L: float = 1.0, mu: float = 0.05,
              topology: str = "complete", alpha: float = 0.05, rounds: int = 40, dist2_max: float = 25.0) -> WorstCaseSpec:
    n, d, rounds = int(n), int(d), int(rounds)
    top, space, alg, cfg = _setup(n, d, L, mu, topology, alpha, rounds, dist2_max)

    def measure(tr, inst, which):  # k = 1..rounds-1
        return tr["dgd_stacked_grad"][1:]

    def constants(inst, tr, which):
        w0 = inst.w0
        fi0 = (0.5 * np.einsum("pd,pcde,pe->pc", w0, inst.H, w0) - np.einsum("pcd,pd->pc", inst.h, w0) + inst.c)
        fi_star = inst.c - 0.5 * np.einsum("pcd,pcd->pc", inst.h, inst.client_optima())
        return {"alpha": alpha, "L_h": L, "lam_n": float(top.eigenvalues()[-1]),
                "gap0": np.sum(fi0 - fi_star, axis=1)[:, None]}

    params = {"record_id": record_id, "n": n, "d": d, "L": L, "mu": mu, "topology": topology, "alpha": alpha,
              "rounds": rounds, "dist2_max": dist2_max}
    return WorstCaseSpec(record_id, space, alg, cfg, measure, constants, measures=(), settings=dict(R.REQUIRES),
                         params=params, note="agents' objectives convex quadratics with spectra in [0, L] (L_h = L, "
                                             "the class's); f_i^o each agent's exact minimum")


register_worst_case("yuan2016.lemma1", make_lemma1,
                    description="DGD consensus (Yuan et al. 2016 Lemma 1) on convex quadratic agents, fixed topology")
register_worst_case("yuan2016.thm1", make_thm1,
                    description="DGD stacked gradient bound (Yuan et al. 2016 Thm 1, (10)) on convex quadratic agents")
