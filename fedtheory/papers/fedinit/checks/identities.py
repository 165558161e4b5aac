"""FedInit's identities, eq. (15) and eq. (3): both implementation self-checks by design (the simulator's own
construction, a tautology), each saying why."""
from __future__ import annotations

import numpy as np

from fedtheory.checks import check, identity_result
from fedtheory.sim import AdditiveNoise, RunConfig, fedinit, heterogeneous_least_squares, simulate

from .. import records as fedinit_records
from .common import K_LOCAL, PAPER, SIGMA2, bound_runs, problems


@check("fedinit.eq15", PAPER, "identity",
       self_check="eq. (15) is the simulator's own construction: it builds w_{i,0} = w^t + beta (w^t - w_i^last) and "
                  "steps from it, and the residual is computed with that same rule, so the recursion holds whatever "
                  "the paper says")
def eq15(session):
    """Eq. (15), w^{t+1} - w_{i,K}^t = beta (w_{i,K}^{t-1} - w^t) + (w^{t+1} - w^t) + eta sum_{k<K} g_{i,k}^t: its
    largest relative residual over rounds, runs and clients of the admissible and practice runs on heterogeneous
    least squares (common.bound_runs), against the record's tolerance 1e-10."""
    out = []
    for key, p, w0 in problems(session)[:1]:
        for label in ("admissible", "practice"):
            res = float(np.nanmax(bound_runs(session, key, p, w0)[label]["trace"]["eq15_residual"]))
            out.append(identity_result(fedinit_records.EQ15, res, problem=key, params={"setting": label},
                                       detail="max over rounds, runs and clients of the relative residual of eq. (15)"))
    return out


@check("fedinit.eq3", PAPER, "identity",
       self_check="a tautology: F - f* = (F - f) + (f - f*) for any numbers, evaluated in floating point")
def eq3(session):
    """Eq. (3), E[F(w^T)] - f(w*) = E[F(w^T) - f(w^T)] + E[f(w^T) - f(w*)]: both sides at the final models of 4 FedInit
    runs (beta = 0.1, eta = 0.05, 50 rounds) on heterogeneous least squares, F the exact population risk; the
    relative residual against the record's tolerance."""
    p = heterogeneous_least_squares(10, 10, 50, random_state=session.seed)
    w0 = session.initial_point(p)
    tr = simulate(p, fedinit(0.1), RunConfig(rounds=50, local_steps=K_LOCAL, lr=0.05, oracle=AdditiveNoise(SIGMA2)),
                  session.seeds(4), w0=w0)
    w = tr.final_w
    F = p.population_loss(w)
    f = p.loss(w)
    f_star = p.constants["f_star"].value
    lhs = F - f_star
    rhs = (F - f) + (f - f_star)
    res = float(np.max(np.abs(lhs - rhs) / np.maximum(np.abs(lhs), 1e-300)))
    return [identity_result(fedinit_records.EQ3, res, problem="sc_least_squares",
                            detail=f"excess risk {lhs.mean():.4g} = generalization {(F - f).mean():.4g} + optimization "
                                   f"{(f - f_star).mean():.4g}; relative residual {res:.2g}")]
