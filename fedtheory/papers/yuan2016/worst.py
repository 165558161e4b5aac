"""Worst cases of Yuan, Ling & Yin's Lemma 1 and Theorem 1 (``fedtheory worst yuan2016.lemma1``): DGD on federated
quadratics whose every agent objective is convex and L-smooth (the class of Assumption 1 with f_i quadratic; the mean
mu-strongly convex only so that x* is unique), on a fixed topology, one exact-gradient run per instance.

The start: each instance starts every agent at its own w0 (the search's start parameter). DGD commutes with shifts
(x -> x - w0 for every agent and f_i(. + w0)), so the run is DGD from x(0) = 0 on the shifted, equally quadratic
agents: Lemma 1 and Theorem 1 apply as stated, with f_i(0) read as f_i(w0) of the unshifted data.
* Lemma 1: max_i ||x_i(k) - xbar(k)|| against alpha D/(1 - beta) at every k, D = the run's largest ||h(k)||;
* Theorem 1: ||h(k)|| (k >= 1) against sqrt(2 L_h sum_i (f_i(w0) - f_i^o)), at a step inside (9).

The PEPs (``lemma1_pep``, ``thm1_pep``, ``thm3_pep``): DGD on a fixed topology through the round protocol's PEP, at
k = T, with the measures the text bounds (an agent's distance to the mean, the stacked gradient, the mean's distance
to x*) and its constants as class constraints ((10) at every round's start; each agent's gap to its own minimum).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.sim import Exact, RunConfig, d_psgd
from fedtheory.worst import (
    PEPSpec,
    ProtocolSetting,
    QuadraticClass,
    WorstCaseSpec,
    check_reference,
    register_pep,
    register_worst_case,
)

from . import checks, records as R
from .measures import StackedGradient


def _setup(n: int, d: int, L: float, mu: float, topology: str, alpha: float, rounds: int, dist2_max: float):
    top = checks.TOPOLOGIES[topology](n)
    space = QuadraticClass(n, d, L=L, mu=mu, client_mu=0.0, dist2_max=dist2_max, offset_scale=3.0)
    alg = dataclasses.replace(d_psgd(top), local=(StackedGradient(),))
    cfg = RunConfig(rounds=rounds, local_steps=1, lr=alpha, oracle=Exact())
    return top, space, alg, cfg


def make_lemma1(record_id: str = "yuan2016.lemma1", *, n: int = 8, d: int = 2, L: float = 1.0, mu: float = 0.05,
                topology: str = "complete", alpha: float = 0.5, rounds: int = 40,
                dist2_max: float = 25.0) -> WorstCaseSpec:
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
              topology: str = "complete", alpha: float = 0.05, rounds: int = 40,
              dist2_max: float = 25.0) -> WorstCaseSpec:
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


# ------------------------------------------------------------------------------------ the PEPs

def _dgd(topology: str, n: int):
    top = checks.TOPOLOGIES[topology](int(n))
    return top, dataclasses.replace(d_psgd(top), local=(StackedGradient(),))


def _stacked(problem, w0, setting, algorithm, rounds):
    """||h(k)||^2 for k = 0..rounds on the simulator's re-run (StackedGradient's measure: row k, the models starting
    round k; one round more than the PEP's so that row T is the agents' models after T rounds)."""
    from fedtheory.sim import simulate

    cfg = RunConfig(rounds=rounds + 1, local_steps=1, lr=setting.eta, oracle=Exact())
    tr = simulate(problem, algorithm, cfg, [0], w0=w0, measures=("dgd_stacked_grad", "consensus_max"))
    return tr


def lemma1_pep(record_id: str = "yuan2016.lemma1", *, alpha: float = 0.1, topology: str = "complete", n: int = 16,
               T: int = 120, D: float = 1.0) -> PEPSpec:
    """Lemma 1 at (alpha, the topology on n agents, k = T): DGD (4) from one start, every agent L-smooth and convex
    (any L: the lemma and its hypothesis (10) involve none), (10) ||h(k)|| <= D at the agents' models starting every
    round k = 0..T (the hypothesis up to the horizon: a relaxation of 'for every k', so an upper bound); the measure
    ||x_0(T) - xbar(T)|| (agent 0; every agent alike on the complete graph and the ring, vertex-transitive), D = 1
    (both sides are proportional to D)."""
    top, alg = _dgd(topology, n)
    setting = ProtocolSetting(C=int(n), K=1, T=int(T), eta=alpha, L=1.0 / alpha, initial="none",
                              metric="consensus2", stacked_grad_bound=D)

    def measured(problem, w0, s, algorithm):
        tr = _stacked(problem, w0, s, algorithm, s.T)
        # the lemma's D bounds ||h(k)|| for every k; the re-run sees k <= T only, so the instance cannot decide it
        return (float(tr["consensus_max"][s.T - 1, 0] ** 2),
                {"D": float(np.max(tr["dgd_stacked_grad"][: s.T + 1, 0])),
                 "_not_in_class": "(10) is known on the instance up to k = T only; the lemma assumes it at every k"})

    return PEPSpec(record_id, setting, {"alpha": alpha, "beta": float(top.lam), "D": D, "k": int(T), "n": int(n)},
                   settings=dict(R.REQUIRES), algorithm=alg, lhs_root=True, instance_measure=measured,
                   params={"record_id": record_id, "alpha": alpha, "topology": topology, "n": int(n), "T": int(T),
                           "D": D},
                   note=f"the {topology} graph on {n} agents (its Metropolis W, beta = {top.lam:.4g}); the lemma holds "
                        "for any smoothness, the PEP's L = 1/alpha (alpha L = 1) is one choice; x(0) is any start "
                        "(DGD commutes with translations)")


def thm1_pep(record_id: str = "yuan2016.thm1", *, alpha: float = 0.25, L_h: float = 1.0, topology: str = "complete",
             n: int = 16, T: int = 120, gap0: float = 1.0) -> PEPSpec:
    """Theorem 1 at k = T: DGD (4), every agent L_h-smooth and convex with a minimum f_i^o it attains,
    sum_i (f_i(x(0)) - f_i^o) <= gap0, measure ||h(T)||^2 = sum_i ||grad f_i(x_i(T))||^2 against D^2 = 2 L_h gap0
    (the square root compared): exact over agents that attain their minima."""
    top, alg = _dgd(topology, n)
    setting = ProtocolSetting(C=int(n), K=1, T=int(T), eta=alpha, L=L_h, initial="agents_gap", D=gap0,
                              metric="stacked_grad2")

    def measured(problem, w0, s, algorithm):
        tr = _stacked(problem, w0, s, algorithm, s.T)
        return float(tr["dgd_stacked_grad"][s.T, 0] ** 2), {}

    lam_n = float(top.eigenvalues()[-1])
    return PEPSpec(record_id, setting, {"alpha": alpha, "L_h": L_h, "lam_n": lam_n, "gap0": gap0, "k": int(T),
                                        "n": int(n)},
                   settings=dict(R.REQUIRES), algorithm=alg, lhs_root=True, instance_measure=measured,
                   instance_symbols={"gap0": "agents_gap"},
                   params={"record_id": record_id, "alpha": alpha, "L_h": L_h, "topology": topology, "n": int(n),
                           "T": int(T), "gap0": gap0},
                   note=f"the {topology} graph on {n} agents (lambda_n(W) = {lam_n:.4g}); f_i^o attained (the check's "
                        "problems attain theirs)")


def thm3_pep(record_id: str = "yuan2016.thm3", *, alpha: float = 0.2, L_h: float = 1.0, mu_fbar: float = 0.1,
             topology: str = "complete", n: int = 16, T: int = 120, gap0: float = 1.0, e0: float = 1.0) -> PEPSpec:
    """Theorem 3 at k = T: DGD (4), every agent L_h-smooth and convex with an attained minimum, fbar = mean f_i
    mu_fbar-strongly convex between the queried points (a relaxation), ||xbar(0) - x*|| <= e0 and
    sum_i (f_i(x(0)) - f_i^o) <= gap0 (D = sqrt(2 L_h gap0)); L_fbar = L_h (every agent of the class is L_h-smooth,
    so the theorem applies with L_{f_i} = L_h); measure ||xbar(T) - x*|| (the square root of dist2): an upper bound."""
    top, alg = _dgd(topology, n)
    setting = ProtocolSetting(C=int(n), K=1, T=int(T), eta=alpha, L=L_h, mu=mu_fbar, client_mu=0.0,
                              initial="distance", D=e0 ** 2, agents_gap=gap0, metric="dist2")
    lam_n = float(top.eigenvalues()[-1])
    return PEPSpec(record_id, setting, {"alpha": alpha, "L_h": L_h, "L_fbar": L_h, "mu_fbar": mu_fbar,
                                        "beta": float(top.lam), "lam_n": lam_n, "gap0": gap0, "e0": e0, "k": int(T),
                                        "n": int(n)},
                   settings=dict(R.REQUIRES), algorithm=alg, lhs_root=True,
                   instance_symbols={"gap0": "agents_gap", "e0": "start_root"},
                   params={"record_id": record_id, "alpha": alpha, "L_h": L_h, "mu_fbar": mu_fbar,
                           "topology": topology, "n": int(n), "T": int(T), "gap0": gap0, "e0": e0},
                   note=f"the {topology} graph on {n} agents; L_fbar = L_h (the class's agents are all L_h-smooth)")


def _thm_reference(record_id: str, setting: str = "k = 1..120"):
    """Today's check's first row of ``record_id`` on least squares and the complete graph: alpha, L_h, mu_fbar, gap0,
    e0 (Theorem 3: alpha capped at c1 = 1/(mu_fbar + L_h), the step its condition allows with L_fbar = L_h)."""
    names = ("alpha", "L_h", "gap0") + (("mu_fbar", "e0") if record_id.endswith("thm3") else ())
    base = check_reference(record_id, record_id, names, problem="heterogeneous_least_squares", setting=setting)

    def reference(seed: int = 0) -> dict:
        ref = base(seed)
        p = ref["params"]
        p["topology"] = "complete"
        if record_id.endswith("thm3"):
            cap = 1.0 / (p["mu_fbar"] + p["L_h"])
            if p["alpha"] > cap:
                p["alpha"] = cap
                ref["label"] += f"; alpha -> c1 = 1/(mu_fbar + L_h) = {cap:.4g} (L_fbar = L_h in the PEP's class)"
        return ref
    return reference


# measured (benchmarks/pep_rows.py --sizes): the largest that solve in seconds (quick) and within a minute (full)
register_pep("yuan2016.lemma1", lemma1_pep, sizes={"quick": {"n": 4, "T": 8}, "full": {"n": 4, "T": 16}},
             reference=check_reference("yuan2016.lemma1", "yuan2016.lemma1", ("alpha", "topology"),
                                       problem="opposed_huber", setting="k = 1..120"))
register_pep("yuan2016.thm1", thm1_pep, sizes={"quick": {"n": 8, "T": 16}, "full": {"n": 8, "T": 30}},
             reference=_thm_reference("yuan2016.thm1"))
register_pep("yuan2016.thm3", thm3_pep, sizes={"quick": {"n": 4, "T": 8}, "full": {"n": 4, "T": 16}},
             reference=_thm_reference("yuan2016.thm3"))
