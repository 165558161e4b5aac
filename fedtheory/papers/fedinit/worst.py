"""Worst-case declarations of FedInit's records (the same public calls a plug-in uses; the FedInit plug-in,
``fedtheory.papers.fedinit``, imports this module): the instance search (``register_worst_case``) and the PEP
(``register_pep``).

Thms 1, 2, 4, 5 and Lemma 4 (:func:`fedinit_spec`): federated quadratics inside Assumptions 1 (each f_i L-smooth),
3 (heterogeneity at the stated (G, B), exact G^2(B)) and, where the record assumes it, 5 (PL(mu): here f
mu-strongly convex, a subclass; Thms 1, 4 and Lemma 4 do not assume it, and the class keeps lambda_min(mean
Hessian) >= mu only as a floor), with f(w^0) - f* = D exactly; FedInit (Algorithm 1's server rule) at the stated
(eta, beta, K, T); N of C clients per round through the engine's participation setting (N < C: the client
sampling makes every run stochastic); Assumption 2 with the additive-noise oracle of exact variance sigma_l^2.
Lemma 4 is a statement per round whose right side holds the run's own Delta^t, ||grad f(w^t)||^2 and
||sum_i sum_k grad f_i(w_{i,k}^t)||^2 (a per-run bound; the statement is about expectations and linear in them).

Thm 3 (:func:`fedinit_stability_spec`): uniform stability by coupled runs on neighbouring data sets (one sample
replaced, every random stream shared; :mod:`fedtheory.worst.coupled`), single-sample SGD with eta_tau = c/tau.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.checks import run_checks
from fedtheory.sim import AdditiveNoise, Exact, Minibatch, RunConfig, fedinit
from fedtheory.validation import ParameterError
from fedtheory.worst import (
    NeighbourClass,
    PEPSetting,
    PEPSpec,
    QuadraticClass,
    WorstCaseSpec,
    coupled_runner,
    pooled_loss_gaps,
    register_pep,
    register_worst_case,
)

from . import records as TF
from .checks.stability import stability_problem, stability_settings


def _lhs_opt_error(tr, inst, which):  # Thm 2: f(w^T) - f*
    out = inst.loss(tr.final_w, which) - inst.f_star[which]
    return np.where(tr.diverged, np.inf, out)


def _lhs_avg_grad(tr, inst, which):  # Thm 1: (1/T) sum_{t<T} ||grad f(w^t)||^2
    out = np.mean(tr["grad_norm2"][:-1], axis=0)
    return np.where(tr.diverged, np.inf, out)


def _lhs_avg_delta(tr, inst, which):  # Thm 4: (1/T) sum_{t<T} Delta^t
    out = np.mean(tr["delta"][:-1], axis=0)
    return np.where(tr.diverged, np.inf, out)


def _lhs_final_delta(tr, inst, which):  # Thm 5: Delta^T
    return np.where(tr.diverged, np.inf, tr["delta"][-1])


def _lhs_next_delta(tr, inst, which):  # Lemma 4: Delta^{t+1}, one statement per round t = 0..T-1: (T, R)
    return tr["delta"][1:]


# record id -> (left side, measures, what it is)
_QUADRATIC = {
    "fedinit.thm1": (_lhs_avg_grad, ("grad_norm2",), "(1/T) sum_t ||grad f(w^t)||^2"),
    "fedinit.thm2": (_lhs_opt_error, (), "f(w^T) - f*"),
    "fedinit.thm4": (_lhs_avg_delta, ("delta",), "(1/T) sum_{t<T} Delta^t"),
    "fedinit.thm4.rederived": (_lhs_avg_delta, ("delta",), "(1/T) sum_{t<T} Delta^t"),
    "fedinit.thm5": (_lhs_final_delta, ("delta",), "Delta^T"),
    "fedinit.lemma4": (_lhs_next_delta, ("delta", "grad_norm2", "local_grad_sum2"), "Delta^{t+1} at every round t"),
}
_STABILITY = ("fedinit.thm3", "fedinit.thm3.rederived")


def best_lambda(*, eta: float, K: int, L: float, B: float, N: int, beta: float) -> float:
    """The best admissible lambda of Thms 1-2 (App. A.2.2), as the check uses: lambda_max when it lies in (0, 1),
    else 1e-9 (then the condition lambda_admissible fails and names the numbers)."""

    lam_max = float(TF.LAMBDA_MAX_EXPR.subs({TF.eta: eta, TF.K: K, TF.L: L, TF.B: B, TF.N: N, TF.beta: beta}))
    return lam_max if 0 < lam_max < 1 else 1e-9


def fedinit_spec(record_id: str = "fedinit.thm2", *, L: float, mu: float, B: float, G: float, D: float, eta: float,
                 K: int = 5, T: int = 300, beta: float = 0.1, sigma_l: float = 0.0, C: int = 10, N: int | None = None,
                 d: int = 10, lam: float | None = None, runs: int = 4, client_mu: float = 0.0,
                 aligned_fraction: float = 0.5) -> WorstCaseSpec:
    """FedInit Thm 1 (``fedinit.thm1``), Thm 2 (``fedinit.thm2``), Thm 4 as printed and as re-derived
    (``fedinit.thm4``, ``fedinit.thm4.rederived``: (1/T) sum_{t<T} Delta^t), Thm 5 (``fedinit.thm5``: Delta^T) or
    Lemma 4 (``fedinit.lemma4``: Delta^{t+1} at every round) on the quadratic class at the stated constants.

    N: clients per round (default C; N < C runs partial participation, the sampling's randomness over seeds).
    runs: seeds per instance when the runs are stochastic (sigma_l > 0 or N < C; else one deterministic run).
    mu: lambda_min of the mean Hessian is kept >= mu (the PL constant where the record assumes PL).
    aligned_fraction: the share of the search's random start drawn with one eigenbasis for every client and a soft
    direction shared by all (QuadraticClass.random): where the bound decays like exp(-lambda mu eta K T), uniform
    draws rarely come near the slowest decay the class allows."""

    if record_id not in _QUADRATIC:
        raise ParameterError("record_id", record_id, ", ".join(_QUADRATIC))
    C, d, K, T = int(C), int(d), int(K), int(T)
    N = C if N is None else int(N)
    if not 1 <= N <= C:
        raise ParameterError("N", N, f"an integer in [1, C = {C}] (clients per round)")
    if sigma_l < 0:
        raise ParameterError("sigma_l", sigma_l, "a non-negative number")
    if int(runs) < 1:
        raise ParameterError("runs", runs, "an integer >= 1")
    if lam is None:
        lam = best_lambda(eta=eta, K=K, L=L, B=B, N=N, beta=beta)
    params = {"record_id": record_id, "L": L, "mu": mu, "B": B, "G": G, "D": D, "eta": eta, "K": K, "T": T,
              "beta": beta, "sigma_l": sigma_l, "C": C, "N": N, "d": d, "lam": lam, "runs": runs,
              "client_mu": client_mu, "aligned_fraction": aligned_fraction}
    space = QuadraticClass(C, d, L=L, mu=mu, client_mu=client_mu, B=B, G2=G**2, D=D, aligned_fraction=aligned_fraction)
    stochastic = sigma_l > 0 or N < C
    oracle = AdditiveNoise(sigma_l**2) if sigma_l > 0 else Exact()
    config = RunConfig(rounds=T, local_steps=K, lr=eta, clients_per_round=N if N < C else None, oracle=oracle)
    values = {"L": L, "mu": mu, "sigma_l": sigma_l, "N": N, "C": C, "K": K, "T": T, "eta": eta, "beta": beta, "D": D,
              "B": B, "G": G, "lam": lam}
    measure, measures, lhs_text = _QUADRATIC[record_id]
    per_round = record_id == "fedinit.lemma4"

    def constants(inst, tr, which):
        if not per_round:
            return values
        # Lemma 4's right side at round t holds the run's own Delta^t, ||grad f(w^t)||^2 and the local gradient sum
        return {**values, "Delta_t": tr["delta"][:-1].T, "grad_norm2_t": tr["grad_norm2"][:-1].T,
                "local_grad_sum2": tr["local_grad_sum2"].T}

    pl = "PL(mu)" in next(r for r in vars(TF).values() if getattr(r, "id", None) == record_id).assumptions
    return WorstCaseSpec(
        record_id=record_id, space=space, algorithm=fedinit(beta), config=config, measure=measure, measures=measures,
        constants_from_instance=constants, seeds=tuple(range(int(runs))) if stochastic else (0,),
        settings={"full_participation": N == C}, params=params, bound_per_run=per_round,
        note=f"left side {lhs_text}; class: quadratics with client spectra in [client_mu, L], lambda_min(mean Hessian) "
             f">= mu ({'strong convexity, a subclass of PL' if pl else 'a floor: the record does not assume PL'}), "
             f"exact G^2(B) <= G^2, f(w^0) - f* = D; {N} of {C} clients per round; the bound at the stated constants"
             + ("; per round, the right side at the run's own Delta^t, ||grad f(w^t)||^2, local gradient sum "
                "(mean over seeds; the verdict's SE is that of the paired difference)" if per_round else ""))


def _lhs_stability(tr, inst, which):  # (C S + 1, R): |f(w^T; z) - f(w~^T; z)| per pooled sample z
    return pooled_loss_gaps(tr, inst, which)


def fedinit_stability_spec(record_id: str = "fedinit.thm3", *, L: float, c: float, client_mu: float, K: int = 5,
                           T: int = 60, beta: float = 0.1, S: int = 20, C: int = 5, d: int = 5, dist2_max: float = 1.0,
                           offset_scale: float = 1.0, label_noise: float = 1.0, runs: int = 8) -> WorstCaseSpec:
    """FedInit Thm 3 as printed (``fedinit.thm3``) or as re-derived (``fedinit.thm3.rederived``): the left side
    sup_z E|f(w^T; z) - f(w~^T; z)| over coupled runs on neighbouring data sets (one statement per pooled sample z,
    the expectation a mean over ``runs`` seeds that each pair shares), single-sample SGD (Minibatch(1)), step
    eta_tau = c/tau (``lr_schedule='inverse'``), FedInit(beta), full participation.

    The class (:class:`~fedtheory.worst.coupled.NeighbourClass`) pins L, S, C, d; U, L_G and sigma_l are the
    instance's own, measured over the points its coupled runs visit (max over both runs and every seed), and
    sum_t sqrt(Delta^t) is the mean over seeds of the original run's, as the check measures them."""
    if record_id not in _STABILITY:
        raise ParameterError("record_id", record_id, " or ".join(_STABILITY))
    K, T, S, C, d, runs = int(K), int(T), int(S), int(C), int(d), int(runs)
    if runs < 2:
        raise ParameterError("runs", runs, "an integer >= 2 (the left side is an expectation over the SGD's draws)")
    if not c > 0:
        raise ParameterError("c", c, "a positive step-size constant (eta_tau = c/tau)")
    space = NeighbourClass(C, d, S, L=L, client_mu=client_mu, dist2_max=dist2_max, offset_scale=offset_scale,
                           label_noise=label_noise)
    config = RunConfig(rounds=T, local_steps=K, lr=c, lr_schedule="inverse", oracle=Minibatch(1))
    fixed = {"L": L, "K": K, "T": T, "c": c, "beta": beta, "S": S}

    def constants(inst, tr, which):
        P = len(inst)

        def visited(name):  # (1, 2 P runs) -> (P, 1): max over both runs of every seed of the pair
            return np.nanmax(tr[name].reshape(P, -1), axis=1)[:, None]

        sq = np.sum(np.sqrt(tr["delta"][1:, 0::2]), axis=0)  # the original runs' sum_{t=1}^T sqrt(Delta^t)
        return {**fixed, "L_G": visited("visited_max_grad"), "U": visited("visited_max_loss"),
                "sigma_l": np.sqrt(visited("visited_max_grad_var")),
                "sum_sqrt_Delta": sq.reshape(P, -1).mean(axis=1)[:, None]}

    params = {"record_id": record_id, "L": L, "c": c, "client_mu": client_mu, "K": K, "T": T, "beta": beta, "S": S,
              "C": C, "d": d, "dist2_max": dist2_max, "offset_scale": offset_scale, "label_noise": label_noise,
              "runs": runs}
    return WorstCaseSpec(
        record_id=record_id, space=space, algorithm=fedinit(beta), config=config, measure=_lhs_stability,
        measures=("delta", "visited_max_loss", "visited_max_grad", "visited_max_grad_var"),
        constants_from_instance=constants, seeds=tuple(range(runs)), runner=coupled_runner, params=params,
        settings={"lr_schedule": "inverse", "nonnegative_losses": True, "equal_client_sizes": True,
                  "full_participation": True},
        note="left side sup_z E|f(w^T;z) - f(w~^T;z)| over the pooled samples z of both data sets (E: mean over the "
             "seeds a coupled pair shares); class: least-squares data sets with C clients x S samples, client "
             "Hessians <= L on both, original clients >= client_mu (both f PL), one sample replaced, "
             "||w^0 - w*||^2 <= dist2_max; U, L_G, sigma_l measured over the visited points (lower estimates of the "
             "sups the theorem takes), sum_t sqrt(Delta^t) measured; L, c, K, T, beta, S stated")


# ------------------------------------------------------------------------------------ references: today's check

# record id -> (check id, default row: problem, setting (a substring of the row's; None: the value below), beta)
_REFERENCE_ROWS = {
    "fedinit.thm1": ("fedinit.thm1", "sc_least_squares_mild", "admissible", 0.1),
    "fedinit.thm2": ("fedinit.thm2", "sc_least_squares_mild", "admissible", 0.1),
    "fedinit.thm4": ("fedinit.thm4", "sc_least_squares_mild", "partial participation 2 of 20", 0.1),
    "fedinit.thm4.rederived": ("fedinit.thm4.partial", "sc_least_squares_mild", "partial participation 2 of 20", 0.1),
    "fedinit.thm5": ("fedinit.thm5", "sc_least_squares_mild", "admissible", 0.1),
    "fedinit.lemma4": ("fedinit.lemma4", "sc_least_squares_mild", "admissible", 0.1),
    "fedinit.thm3": ("fedinit.thm3", None, None, 0.1),
    "fedinit.thm3.rederived": ("fedinit.thm3", None, None, 0.1),
}


def _default_c(record_id: str, seed: int) -> float | None:
    """Thm 3's default row by its value, not its label: c = 1/(L K), the step constant of the check's settings at
    beta = 0.1 (checks.stability.stability_settings); None for the other records."""
    if record_id not in _STABILITY:
        return None
    L = stability_problem(seed)[0].constants["L"].value
    return next(c for beta, c in stability_settings(L) if beta == 0.1)


def _reference_row(record_id: str, seed: int, problem: str | None, setting: str | None, beta: float | None):

    check_id, p0, s0, b0 = _REFERENCE_ROWS[record_id]
    sel = {"problem": problem or p0, "setting": setting or s0, "beta": b0 if beta is None else float(beta)}
    c0 = _default_c(record_id, seed) if sel["setting"] is None else None
    rows = [r for r in run_checks(only=[check_id], seed=seed, parallel_symbolic=False)
            if r.id == record_id and (sel["problem"] is None or r.problem == sel["problem"])
            and (sel["setting"] is None or sel["setting"] in str(r.params.get("setting", "")))
            and (c0 is None or abs(float(r.params.get("c", np.nan)) - c0) <= 1e-12 * c0)
            and abs(float(r.params.get("beta", -1)) - sel["beta"]) < 1e-12 and r.ratio is not None]
    if not rows:
        raise ParameterError("problem/setting/beta", sel, f"a problem, setting and beta of {record_id}'s check rows "
                                                          f"that compare a bound (`fedtheory check --only {check_id}`)")
    label = (f"fedtheory check --only {check_id} --seed {seed}: {rows[0].problem}, {rows[0].params.get('setting')}, "
             f"beta={sel['beta']} (ratio bound/measured on the check's instance)")
    return rows[0], label


def fedinit_reference(record_id: str):
    """``reference(seed, problem=None, setting=None, beta=None)`` for a quadratic-class record: today's check row
    (default: see _REFERENCE_ROWS) -> its constants and its ratio bound / measured."""
    def reference(seed: int = 0, problem: str | None = None, setting: str | None = None,
                  beta: float | None = None) -> dict[str, Any]:
        r, label = _reference_row(record_id, seed, problem, setting, beta)
        p = r.params
        params = {k: p[k] for k in ("L", "mu", "B", "G", "D", "eta", "K", "T", "beta", "sigma_l", "C", "N", "lam")}
        params = {k: (int(v) if k in ("K", "T", "C", "N") else float(v)) for k, v in params.items()}
        params["record_id"] = record_id
        return {"params": params, "random_ratio": float(r.ratio), "label": label}
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
    if record_id in _DIVERGENCE_PEP:
        return _divergence_pep(record_id, L=L, mu=mu, B=B, G=G, D=D, eta=eta, K=K, T=T, beta=beta, C=C, N=N, lam=lam,
                               client_mu=client_mu, server_rule=server_rule, server_lr=server_lr)
    if record_id not in ("fedinit.thm1", "fedinit.thm2"):
        raise ParameterError("record_id", record_id, "fedinit.thm1, fedinit.thm2 or " + ", ".join(_DIVERGENCE_PEP))
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
    return PEPSpec(record_id, setting, values, settings={"full_participation": True}, params=params, initial_symbol="D",
                   note="Thm 2 assumes PL(mu) of f and L-smooth clients; this class (convex clients, f mu-strongly "
                        "convex between the queried points) is a subclass up to the relaxations named in 'class'"
                   if thm2 else "Thm 1's D = f(w^0) - inf f; the PEP uses f(w^0) - f(z) <= D at every queried z")


# the divergence theorems' PEPs (the round protocol's: the measure Delta^t the hand-written PEP does not write)
_DIVERGENCE_PEP = {"fedinit.thm4": "avg_divergence", "fedinit.thm4.rederived": "avg_divergence",
                   "fedinit.thm5": "divergence"}


def _divergence_pep(record_id: str, *, L: float, mu: float, B: float, G: float, D: float, eta: float, K: int, T: int,
                    beta: float, C: int, N: int, lam: float | None, client_mu: float, server_rule: str,
                    server_lr: float) -> PEPSpec:
    """Thm 4 ((1/T) sum_{t<T} Delta^t) and Thm 5 (Delta^T), Delta^t = (1/C) sum_i ||w_i^last - w^t||^2 (the engine's
    delta), at sigma_l = 0 and N = C: FedInit through the round protocol's PEP. Thm 4's class: every f_i L-smooth,
    possibly non-convex, Assumption 3 at (G, B) at every queried point, f(w^0) - f(z) <= D at every queried z (both
    relaxations: an upper bound). Thm 5's: every f_i L-smooth and client_mu-strongly convex, f mu-strongly convex
    between the queried points (PL is assumed; this is the convex part of it), Assumption 3 at the points,
    f(w^0) - f* <= D: an upper bound on the worst case over {convex clients, f strongly convex}, Thm 5 assumes more
    (PL, non-convex clients)."""
    from fedtheory.worst import ProtocolSetting

    thm5 = record_id == "fedinit.thm5"
    setting = ProtocolSetting(C=C, K=K, T=T, eta=eta, L=L, mu=mu if thm5 else 0.0,
                              client_mu=client_mu if thm5 else 0.0, function_class="convex" if thm5 else "smooth",
                              heterogeneity="GB", G=G, B=B, initial="function", D=D,
                              metric=_DIVERGENCE_PEP[record_id])
    if lam is None:
        lam = best_lambda(eta=eta, K=K, L=L, B=B, N=N, beta=beta)
    values = {"L": L, "mu": mu, "sigma_l": 0.0, "N": N, "C": C, "K": K, "T": T, "eta": eta, "beta": beta, "D": D,
              "B": B, "G": G, "lam": lam}
    params = {"record_id": record_id, "L": L, "mu": mu, "B": B, "G": G, "D": D, "eta": eta, "K": K, "T": T,
              "beta": beta, "sigma_l": 0.0, "C": C, "N": N, "lam": lam, "client_mu": client_mu,
              "server_rule": server_rule, "server_lr": server_lr}
    return PEPSpec(record_id, setting, values, settings={"full_participation": True}, params=params,
                   algorithm=fedinit(beta, server_rule=server_rule, server_lr=server_lr), initial_symbol="D",
                   note="sigma_l = 0, N = C; Delta^t over every client's latest local model (Delta^0 = 0)")


def fedinit_stability_reference(record_id: str):
    """``reference(seed, problem=None, setting=None, beta=None)`` for Thm 3: the stability check's row (default
    beta = 0.1, c = 1/(L K)): L, c, K, T, beta, S and the check problem's shape and smallest client eigenvalue."""
    def reference(seed: int = 0, problem: str | None = None, setting: str | None = None,
                  beta: float | None = None) -> dict[str, Any]:

        r, label = _reference_row(record_id, seed, problem, setting, beta)
        p = r.params
        prob, w0 = stability_problem(seed)
        params = {"record_id": record_id, "L": float(p["L"]), "c": float(p["c"]), "K": int(p["K"]), "T": int(p["T"]),
                  "beta": float(p["beta"]), "S": int(p["S"]), "C": int(prob.n_clients), "d": int(prob.dim),
                  "client_mu": float(np.min(prob.constants["mu_clients"].value))}
        return {"params": params, "random_ratio": float(r.ratio), "label": label}
    return reference


for _rid in ("fedinit.thm2", "fedinit.thm1", "fedinit.thm4", "fedinit.thm4.rederived", "fedinit.thm5",
             "fedinit.lemma4"):
    register_worst_case(_rid, fedinit_spec, reference=fedinit_reference(_rid),
                        description=f"FedInit on federated quadratics inside the record's assumptions (exact "
                                    f"G^2(B)): {_QUADRATIC[_rid][2]}")
for _rid in ("fedinit.thm2", "fedinit.thm1", *_DIVERGENCE_PEP):
    register_pep(_rid, fedinit_pep)
for _rid in _STABILITY:
    register_worst_case(_rid, fedinit_stability_spec, reference=fedinit_stability_reference(_rid),
                        description="FedInit uniform stability: coupled runs on neighbouring least-squares data sets")
