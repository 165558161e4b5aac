"""FedInit's convergence and divergence bounds on the shared runs (common.bound_runs): Thms 1, 2, 4, 5 and Lemmas 2-4
at the admissible and practice settings; Thm 4 also at partial participation."""
from __future__ import annotations

import numpy as np

from fedtheory.checks import Session, assess_bound, certify, check
from fedtheory.sim import AdditiveNoise, ClientSampling, RunConfig, fedinit, heterogeneous_least_squares, simulate

from .. import records as fedinit_records
from .common import (
    BETAS,
    K_LOCAL,
    PAPER,
    SIGMA2,
    SIZES,
    B_ref,
    admissible_eta,
    base_values,
    bound_runs,
    candidates,
    exact_heterogeneity,
    problems,
    slices,
    trivial_values,
)

PROBLEMS = ("heterogeneous_least_squares", "heterogeneous_least_squares(heterogeneity=0.3, condition=2)",
            "pl_nonconvex", "full: rank-6 least squares, logistic regression on digits")
SEEDS = "8 (quick) / 32 (full) per beta"


def bound_rows(session: Session, bound, lhs):
    """``bound`` against its left side ``lhs(trace, runs)`` on each problem of common.problems: one row per beta at
    the admissible step and one at the practice setting (common.bound_runs), the assumptions certified by the problem,
    the oracle and the sampling, the bound at every certified (B, G) of Assumption 3 with lambda = lambda_max
    (common.candidates); ``lhs`` returning a function of the values compares round by round."""
    out = []
    for key, p, w0 in problems(session):
        for label in ("admissible", "practice"):
            run = bound_runs(session, key, p, w0)[label]
            tr = run["trace"]
            for beta, sl in zip(run["betas"], slices(run["R"], len(run["betas"]))):
                cert = certify(bound, problem=p, oracle=run["oracle"], sampling=ClientSampling(run["C"], run["C"]))
                base = base_values(p, w0, cert, N=run["C"], C=run["C"], K=K_LOCAL, T=run["T"], eta=run["eta"],
                                   beta=beta)
                measured = lhs(tr, sl)
                res = assess_bound(bound, candidates(base, cert), measured, problem=key, per_round=callable(measured),
                                   settings={"full_participation": True}, params={"setting": label, "runs": run["R"]},
                                   trivial=trivial_values(p, tr, sl, K_LOCAL), certification=cert)
                if tr.diverged[sl].any():
                    res.detail += f" {int(tr.diverged[sl].sum())} of {run['R']} runs diverged."
                if not exact_heterogeneity(p):
                    res.detail += " G(B) a certified bound (no closed form)."
                out.append(res)
    return out


# ------------------------------------------------------------------------------------ Theorems 1, 2, 4, 5


@check("fedinit.thm1", PAPER, "bound", measures=("grad_norm2",), problems=PROBLEMS, algorithms=("FedInit",),
       seeds=SEEDS)
def thm1(session):
    """FedInit's measured (1/T) sum_{t<T} ||grad f(w^t)||^2 against Thm 1's bound (000 eq. (9)/(27)), N = C = 10,
    K = 5, sigma_l^2 = 0.05, on the least-squares and PL problems: per beta in {0, 0.05, 0.1} at the largest step
    Thms 1-6 allow, and at the paper's practice (eta = 0.1), where the step conditions fail; L, sigma_l and
    Assumption 3's (G, B) certified, lambda = lambda_max."""
    return bound_rows(session, fedinit_records.THM1, lambda tr, sl: np.nanmean(tr["grad_norm2"][:-1, sl], axis=0))


@check("fedinit.thm2", PAPER, "bound", measures=("opt_error",), problems=PROBLEMS, algorithms=("FedInit",),
       seeds=SEEDS)
def thm2(session):
    """The measured f(w^T) - f* at the last round against Thm 2's bound (000 eq. (11)/(29)), mu the problem's
    certified PL constant, on the runs of fedinit.thm1 (admissible per beta, and practice)."""
    return bound_rows(session, fedinit_records.THM2, lambda tr, sl: tr["opt_error"][-1, sl])


@check("fedinit.thm4", PAPER, "bound", measures=("delta",), problems=PROBLEMS, algorithms=("FedInit",), seeds=SEEDS)
def thm4(session):
    """The measured average divergence (1/T) sum_{t<T} Delta^t, Delta^t = (1/C) sum_i ||w_{i,K}^{t-1} - w^t||^2,
    against Thm 4's explicit bound (000 eq. (16), the proof's last display), on the runs of fedinit.thm1; at partial
    participation see fedinit.thm4.partial."""
    return bound_rows(session, fedinit_records.THM4, lambda tr, sl: np.nanmean(tr["delta"][:-1, sl], axis=0))


@check("fedinit.thm5", PAPER, "bound", measures=("delta",), problems=PROBLEMS, algorithms=("FedInit",), seeds=SEEDS)
def thm5(session):
    """The measured final divergence Delta^T against Thm 5's explicit bound under PL (000 eq. (17), the proof's last
    display, with its loosened geometric sum), on the runs of fedinit.thm1; the condition 96 beta^2 <=
    e^{-lambda mu eta K} is decided per row."""
    return bound_rows(session, fedinit_records.THM5, lambda tr, sl: tr["delta"][-1, sl])


# ------------------------------------------------------------------------------- Theorem 4 at partial participation


PARTIAL = ((10, 5), (20, 2))  # (C, N): half of the clients, and the paper's 10% participation (000 l. 535)


def _partial_runs(session: Session, C, N):
    """FedInit at partial participation N of C on a mildly heterogeneous least-squares problem, per beta, at the
    largest step all of Thms 1-6's conditions allow at (N, C, beta = max BETAS)."""
    def run():
        R = session.pick(SIZES)["runs"]
        p = heterogeneous_least_squares(C, 10, 50, heterogeneity=0.3, condition=2.0, random_state=session.seed)
        w0 = session.initial_point(p)
        eta = admissible_eta(p.constants["L"].value, N, C, K_LOCAL, max(BETAS), B_ref(p))
        mu = p.constants["mu"].value
        Tn = int(min(3000, max(300, np.ceil(5.0 / (0.5 * mu * eta * K_LOCAL) / 100.0) * 100)))  # lambda mu eta K T >= 5
        oracle = AdditiveNoise(SIGMA2)
        tr = simulate(p, fedinit(np.repeat(BETAS, R)),
                      RunConfig(rounds=Tn, local_steps=K_LOCAL, lr=eta, clients_per_round=N, oracle=oracle),
                      np.tile(session.seeds(R), len(BETAS)), w0=w0,
                      measures=("opt_error", "grad_norm2", "delta", "visited_max_dist2"))
        return {"trace": tr, "eta": eta, "R": R, "T": Tn, "C": C, "N": N, "problem": p, "w0": w0, "oracle": oracle}
    return session.memo(("fedinit", "partial", C, N), run)


@check("fedinit.thm4.partial", PAPER, "bound", records=("fedinit.thm4", "fedinit.thm4.rederived"),
       measures=("delta",), problems=("heterogeneous_least_squares(heterogeneity=0.3, condition=2)",),
       algorithms=("FedInit",), seeds="8 (quick) / 32 (full) per beta")
def thm4_partial(session):
    """Thm 4 as printed and as re-derived (the 6 (C/N) eta^2 K^2 E||grad f||^2 term kept) at partial participation
    N of C (1 < N < C, as Thms 1-6 state): N = 5 of 10 and the paper's ratio N/C = 0.1 (2 of 20), every beta in
    BETAS, at the largest step all of Thms 1-6's conditions allow."""
    out = []
    for C, N in PARTIAL:
        run = _partial_runs(session, C, N)
        tr, p, w0 = run["trace"], run["problem"], run["w0"]
        for j, sl in enumerate(slices(run["R"], len(BETAS))):
            cert = certify(fedinit_records.THM4, problem=p, oracle=run["oracle"], sampling=ClientSampling(C, N))
            base = base_values(p, w0, cert, N=N, C=C, K=K_LOCAL, T=run["T"], eta=run["eta"], beta=BETAS[j])
            cands = candidates(base, cert)
            measured = np.nanmean(tr["delta"][:-1, sl], axis=0)
            pair = []
            for rec in (fedinit_records.THM4, fedinit_records.THM4_REDERIVED):
                res = assess_bound(rec, cands, measured, check_id=rec.id, problem="sc_least_squares_mild",
                                   certification=certify(rec, problem=p, oracle=run["oracle"],
                                                         sampling=ClientSampling(C, N)),
                                   params={"setting": f"partial participation {N} of {C}", "runs": run["R"],
                                           "rounds": run["T"]}, trivial=trivial_values(p, tr, sl, K_LOCAL),
                                   detail=f"N/C = {N / C:g}; measured (1/T) sum_t Delta^t over all C clients' latest "
                                          "models")
                pair.append(res)
            if pair[0].bound is not None and pair[1].bound is not None:
                rel = pair[1].bound / pair[0].bound - 1
                for res in pair:
                    res.detail += (f"; the re-derived bound (dropped 6 (C/N) eta^2 K^2 E||grad f||^2 kept) is "
                                   f"{100 * rel:.2f}% above the printed one here")
                    res.extra["rederived_over_printed"] = 1 + rel
            out.extend(pair)
    return out


# ------------------------------------------------------------------------------------ Lemmas 2-4, round by round


def _per_round(bound, lhs):
    """Lemma ``bound`` round by round on a slice of runs: ``lhs(trace, runs, T)`` against its right side at the run's
    own measured Delta^t, ||grad f(w^t)||^2 and ||sum_{i in C} sum_k grad f_i(w_{i,k}^t)||^2 of the same round."""
    def measured(tr, sl):
        def fn(vals):
            Tn = tr["V1"].shape[0]
            m = {"Delta_t": tr["delta"][:Tn, sl], "grad_norm2_t": tr["grad_norm2"][:Tn, sl],
                 "local_grad_sum2": tr["local_grad_sum2"][:, sl]}
            rhs = bound.evaluate({**vals, **m})
            left = lhs(tr, sl, Tn)
            return left, np.broadcast_to(rhs, left.shape)
        return fn
    return measured


@check("fedinit.lemma2", PAPER, "bound", measures=("V1", "delta", "grad_norm2"), problems=PROBLEMS,
       algorithms=("FedInit",), seeds=SEEDS)
def lemma2(session):
    """Round by round, the measured V_1^t = (1/C) sum_i sum_{k<K} ||w_{i,k}^t - w^t||^2 against Lemma 2's right side
    (000 eq. (24)) at the same round's measured Delta^t and ||grad f(w^t)||^2, on the runs of fedinit.thm1 (every
    client trains, as the lemma's average over all C needs)."""
    return bound_rows(session, fedinit_records.LEMMA2,
                      _per_round(fedinit_records.LEMMA2, lambda tr, sl, T: tr["V1"][:, sl]))


@check("fedinit.lemma3", PAPER, "bound", measures=("V2", "delta", "grad_norm2", "local_grad_sum2"), problems=PROBLEMS,
       algorithms=("FedInit",), seeds=SEEDS)
def lemma3(session):
    """Round by round, the measured V_2^t = ||w^{t+1} - w^t||^2 against Lemma 3's right side (000 eq. (25)) at the
    same round's measured Delta^t, ||grad f(w^t)||^2 and ||sum_i sum_k grad f_i(w_{i,k}^t)||^2, on the runs of
    fedinit.thm1."""
    return bound_rows(session, fedinit_records.LEMMA3,
                      _per_round(fedinit_records.LEMMA3, lambda tr, sl, T: tr["V2"][:, sl]))


@check("fedinit.lemma4", PAPER, "bound", measures=("delta", "grad_norm2", "local_grad_sum2"), problems=PROBLEMS,
       algorithms=("FedInit",), seeds=SEEDS)
def lemma4(session):
    """Round by round, the measured Delta^{t+1} against Lemma 4's right side (000 eq. (26)) at round t's measured
    Delta^t, ||grad f(w^t)||^2 and ||sum_i sum_k grad f_i(w_{i,k}^t)||^2, on the runs of fedinit.thm1."""
    return bound_rows(session, fedinit_records.LEMMA4,
                      _per_round(fedinit_records.LEMMA4, lambda tr, sl, T: tr["delta"][1:T + 1, sl]))
