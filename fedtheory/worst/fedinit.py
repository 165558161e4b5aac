"""Worst-case declarations of FedInit's records (the same public calls a plug-in uses; the FedInit plug-in,
``fedtheory.papers.fedinit``, imports this module): the instance search (``register_worst_case``) and the PEP
(``register_pep``).

FedInit Thms 1 and 2 on federated quadratics inside Assumptions 1 (each f_i L-smooth), 3 (heterogeneity at the
stated (G, B), exact G^2(B)) and 5 (PL(mu): here f mu-strongly convex, a subclass), with f(w^0) - f* = D exactly,
full participation, FedInit (Algorithm 1's server rule) at the stated (eta, beta, K, T), and Assumption 2 with the
additive-noise oracle of exact variance sigma_l^2 (sigma_l = 0: exact gradients, deterministic runs).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import ParameterError
from ..sim import AdditiveNoise, Exact, RunConfig, fedinit
from .pep import PEPSetting, PEPSpec, register_pep
from .space import QuadraticClass
from .spec import WorstCaseSpec, register_worst_case

_FEDINIT_REFERENCE = {"problem": "sc_least_squares_mild", "setting": "admissible", "beta": 0.1}


def _lhs_opt_error(tr, inst, which):
    out = inst.loss(tr.final_w, which) - inst.f_star[which]
    return np.where(tr.diverged, np.inf, out)


def _lhs_avg_grad(tr, inst, which):
    out = np.mean(tr["grad_norm2"][:-1], axis=0)
    return np.where(tr.diverged, np.inf, out)


def best_lambda(*, eta: float, K: int, L: float, B: float, N: int, beta: float) -> float:
    """The best admissible lambda of Thms 1-2 (App. A.2.2), as the check uses: lambda_max when it lies in (0, 1),
    else 1e-9 (then the condition lambda_admissible fails and names the numbers)."""
    from ..theory import fedinit as TF

    lam_max = float(TF.LAMBDA_MAX_EXPR.subs({TF.eta: eta, TF.K: K, TF.L: L, TF.B: B, TF.N: N, TF.beta: beta}))
    return lam_max if 0 < lam_max < 1 else 1e-9


def fedinit_spec(record_id: str = "fedinit.thm2", *, L: float, mu: float, B: float, G: float, D: float, eta: float,
                 K: int = 5, T: int = 300, beta: float = 0.1, sigma_l: float = 0.0, C: int = 10, N: int | None = None,
                 d: int = 10, lam: float | None = None, runs: int = 4, client_mu: float = 0.0) -> WorstCaseSpec:
    """FedInit Thm 1 (``fedinit.thm1``: (1/T) sum_t ||grad f(w^t)||^2) or Thm 2 (``fedinit.thm2``: f(w^T) - f*).

    runs: seeds per instance when sigma_l > 0 (ignored for exact gradients: one deterministic run)."""
    if record_id not in ("fedinit.thm1", "fedinit.thm2"):
        raise ParameterError("record_id", record_id, "fedinit.thm1 or fedinit.thm2")
    C, d, K, T = int(C), int(d), int(K), int(T)
    N = C if N is None else int(N)
    if N != C:
        raise ParameterError("N", N, f"C = {C} (the search covers full participation)")
    if sigma_l < 0:
        raise ParameterError("sigma_l", sigma_l, "a non-negative number")
    if lam is None:
        lam = best_lambda(eta=eta, K=K, L=L, B=B, N=N, beta=beta)
    params = {"record_id": record_id, "L": L, "mu": mu, "B": B, "G": G, "D": D, "eta": eta, "K": K, "T": T, "beta": beta,
              "sigma_l": sigma_l, "C": C, "N": N, "d": d, "lam": lam, "runs": runs, "client_mu": client_mu}
    space = QuadraticClass(C, d, L=L, mu=mu, client_mu=client_mu, B=B, G2=G**2, D=D)
    stochastic = sigma_l > 0
    oracle = AdditiveNoise(sigma_l**2) if stochastic else Exact()
    config = RunConfig(rounds=T, local_steps=K, lr=eta, oracle=oracle)
    values = {"L": L, "mu": mu, "sigma_l": sigma_l, "N": N, "C": C, "K": K, "T": T, "eta": eta, "beta": beta, "D": D,
              "B": B, "G": G, "lam": lam}
    thm2 = record_id == "fedinit.thm2"
    return WorstCaseSpec(
        record_id=record_id, space=space, algorithm=fedinit(beta), config=config,
        measure=_lhs_opt_error if thm2 else _lhs_avg_grad, measures=() if thm2 else ("grad_norm2",),
        constants_from_instance=lambda inst, tr, which: values,
        seeds=tuple(range(int(runs))) if stochastic else (0,), settings={"full_participation": True}, params=params,
        note="class: quadratics with client spectra in [client_mu, L], lambda_min(mean Hessian) >= mu (strong "
             "convexity, a subclass of PL), exact G^2(B) <= G^2, f(w^0) - f* = D; the bound at the stated constants")


def fedinit_reference(record_id: str):
    def reference(seed: int = 0, problem: str | None = None, beta: float | None = None) -> dict[str, Any]:
        """Today's check of ``record_id``: its constants on one problem (default the mild least-squares problem,
        admissible setting, beta = 0.1) and its ratio bound / measured."""
        from ..checks import run_checks

        sel = dict(_FEDINIT_REFERENCE, **({"problem": problem} if problem else {}),
                   **({"beta": beta} if beta is not None else {}))
        rows = [r for r in run_checks(only=[record_id], seed=seed, parallel_symbolic=False)
                if r.id == record_id and r.problem == sel["problem"] and r.params.get("setting") == sel["setting"]
                and abs(float(r.params.get("beta", -1)) - sel["beta"]) < 1e-12 and r.ratio is not None]
        if not rows:
            raise ParameterError("problem", sel, f"a problem/beta of {record_id}'s admissible check rows")
        r = rows[0]
        p = r.params
        params = {k: p[k] for k in ("L", "mu", "B", "G", "D", "eta", "K", "T", "beta", "sigma_l", "C", "N", "lam")}
        params = {k: (int(v) if k in ("K", "T", "C", "N") else float(v)) for k, v in params.items()}
        params["record_id"] = record_id
        return {"params": params, "random_ratio": float(r.ratio),
                "label": f"fedtheory check --only {record_id} --seed {seed}: {sel['problem']}, {sel['setting']}, "
                         f"beta={sel['beta']} (ratio bound/measured on the check's random instance)"}
    return reference


def fedinit_pep(record_id: str = "fedinit.thm2", *, L: float, mu: float, B: float, G: float, D: float, eta: float,
                K: int, T: int, beta: float = 0.1, sigma_l: float = 0.0, C: int = 3, N: int | None = None,
                lam: float | None = None, client_mu: float = 0.0, server_rule: str = "algorithm1",
                server_lr: float = 1.0, function_class: str | None = None, d: int | None = None,
                runs: int | None = None) -> PEPSpec:
    """The PEP of FedInit Thm 2 (``fedinit.thm2``: f(w^T) - f*, class ``convex``: clients L-smooth and
    client_mu-strongly convex, f's mu-strong convexity imposed between the queried points, f(w^0) - f* <= D) or
    Thm 1 (``fedinit.thm1``: (1/T) sum_{t<T} ||grad f(w^t)||^2, class ``smooth``: clients L-smooth, possibly
    non-convex, f(w^0) - f(z) <= D at every queried z), Assumption 3 at (G, B) at every queried point; full
    participation, exact gradients. d, runs: the search's parameters, accepted and unused (the PEP is
    dimension-free and deterministic)."""
    if record_id not in ("fedinit.thm1", "fedinit.thm2"):
        raise ParameterError("record_id", record_id, "fedinit.thm1 or fedinit.thm2")
    if sigma_l != 0:
        raise ParameterError("sigma_l", sigma_l, "0 (the PEP covers exact gradients: --set sigma_l=0)")
    C, K, T = int(C), int(K), int(T)
    N = C if N is None else int(N)
    if N != C:
        raise ParameterError("N", N, f"C = {C} (the PEP covers full participation)")
    thm2 = record_id == "fedinit.thm2"
    function_class = function_class or ("convex" if thm2 else "smooth")
    if thm2 and function_class != "convex":
        raise ParameterError("function_class", function_class, "convex for fedinit.thm2 (f* needs a minimizer)")
    convex = function_class == "convex"
    setting = PEPSetting(C=C, K=K, T=T, L=L, eta=eta, mu=mu if convex else 0.0, client_mu=client_mu if convex else 0.0,
                         function_class=function_class, beta=beta, server_rule=server_rule, server_lr=server_lr,
                         B=B, G=G, D=D, initial="function", metric="opt_error" if thm2 else "avg_grad_norm2")
    if lam is None:
        lam = best_lambda(eta=eta, K=K, L=L, B=B, N=N, beta=beta)
    values = {"L": L, "mu": mu, "sigma_l": 0.0, "N": N, "C": C, "K": K, "T": T, "eta": eta, "beta": beta, "D": D,
              "B": B, "G": G, "lam": lam}
    params = {"record_id": record_id, "L": L, "mu": mu, "B": B, "G": G, "D": D, "eta": eta, "K": K, "T": T,
              "beta": beta, "sigma_l": 0.0, "C": C, "N": N, "lam": lam, "client_mu": client_mu,
              "server_rule": server_rule, "server_lr": server_lr, "function_class": function_class}
    return PEPSpec(record_id, setting, values, settings={"full_participation": True}, params=params,
                   note="Thm 2 assumes PL(mu) of f and L-smooth clients; this class (convex clients, f mu-strongly "
                        "convex between the queried points) is a subclass up to the relaxations named in 'class'"
                   if thm2 else "Thm 1's D = f(w^0) - inf f; the PEP uses f(w^0) - f(z) <= D at every queried z")


for _rid in ("fedinit.thm2", "fedinit.thm1"):
    register_worst_case(_rid, fedinit_spec, reference=fedinit_reference(_rid),
                        description="FedInit on federated quadratics inside Assumptions 1, 3 (exact G^2(B)), 5")
    register_pep(_rid, fedinit_pep)
