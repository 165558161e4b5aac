"""Checks of Taylor, Hendrickx & Glineur (2018) Thm 3.1 (f_2 = 0): exact gradient descent, one client, the distance
to x* at every horizon.

Problems (each certifies L-smoothness and mu-strong convexity; L and mu come from the certificates):
* ``two_eigenvalue_quadratic``: f(w) = (L w_1^2 + mu w_2^2)/2 as least squares (two samples sqrt(2 L) e_1,
  sqrt(2 mu) e_2, labels 0): the class's extreme spectrum; at gamma = 2/(L + mu) both coordinates contract by
  (L - mu)/(L + mu), so the bound is attained from every start at every N; at 1/L the mu-direction attains it;
* a least-squares problem (one client, d = 10, condition 10).
Steps gamma = 2/(L + mu) (the step where both factors are equal), 1/L, and 1.9/L (near the edge 2/L, where the
factor tends to 1). Deterministic runs, every N = 1..T a statement.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.checks import CheckResult, Control, Session, assess_bound, certify, check, run_settings
from fedtheory.sim import (
    ClientSampling,
    Exact,
    LeastSquaresProblem,
    RunConfig,
    fedavg,
    heterogeneous_least_squares,
    simulate,
)

from . import records as R

SIZES = {"quick": {"horizon": 100, "steps": ("2/(L+mu)", "1/L", "1.9/L")},
         "full": {"horizon": 400, "steps": ("2/(L+mu)", "1/L", "1.9/L", "0.5/L")}}
MEASURES = ("dist2_opt", "visited_max_dist2")
STEPS = {"2/(L+mu)": lambda L, mu: 2.0 / (L + mu), "1/L": lambda L, mu: 1.0 / L, "1.9/L": lambda L, mu: 1.9 / L,
         "0.5/L": lambda L, mu: 0.5 / L}


def two_eigenvalue_quadratic(L: float = 4.0, mu: float = 0.5) -> LeastSquaresProblem:
    """f(w) = (L w_1^2 + mu w_2^2)/2: least squares with two samples (sqrt(2 L), 0) and (0, sqrt(2 mu)), labels 0."""
    X = np.diag([np.sqrt(2 * L), np.sqrt(2 * mu)])[None]
    return LeastSquaresProblem(X, np.zeros((1, 2)), name=f"two_eigenvalue_quadratic(L={L:g}, mu={mu:g})")


def _problem(session: Session, key: str):
    if key == "two_eigenvalue":
        p = two_eigenvalue_quadratic()
        return p, np.array([1.5, -2.0])
    p = heterogeneous_least_squares(1, 10, 50, condition=10.0, random_state=session.seed)
    return p, session.initial_point(p, scale=3.0)


def assess(session: Session, record, key: str, step: str, label: str = "") -> CheckResult:
    N = session.pick(SIZES)["horizon"]
    p, w0 = _problem(session, key)
    cfg = RunConfig(rounds=N, local_steps=1, oracle=Exact(), lr=1.0)
    alg = fedavg()
    sampling = ClientSampling(p.n_clients, cfg.clients_per_round)
    vals = certify(record, problem=p, oracle=cfg.oracle, sampling=sampling).values
    L, mu = float(vals["L"]), float(vals["mu"])
    cfg = dataclasses.replace(cfg, lr=STEPS[step](L, mu))
    tr = session.memo(("taylor2018", key, N, step, session.seed),
                      lambda: simulate(p, alg, cfg, [session.seed], w0=w0, measures=MEASURES))
    cert = certify(record, problem=p, oracle=cfg.oracle, sampling=sampling, visited=tr)
    T = np.arange(1, N + 1)
    values = {"L": L, "mu": mu, "lr": cfg.lr, "D0": float(np.sum((w0 - p.constants["w_star"].value) ** 2))}
    settings = run_settings(p, alg, cfg)

    def per_round(v):
        lhs = tr["dist2_opt"][1:]
        return lhs, np.broadcast_to(record.evaluate({**v, "N": T[:, None]}), lhs.shape)

    return assess_bound(record, [values], per_round, per_round=True, certification=cert, settings=settings,
                        trivial={"visited_max_dist2": tr["visited_max_dist2"][0]}, rounds=T, round_name="N",
                        problem=p.name, params={"setting": f"gamma={step}{label}", "N": N},
                        detail="exact gradients, one client: the run is GD on f; L, mu certified (exact for least "
                               "squares)")


def _control(session: Session) -> list[CheckResult]:
    """The bound divided by 1.001 (measured tightness 1: attained) on the two-eigenvalue quadratic at 2/(L + mu): must
    be reported violated."""
    weaker = dataclasses.replace(R.THM31, id="taylor2018.thm3_1.scaled", expr=R.THM31.expr / 1.001)
    return [assess(session, weaker, "two_eigenvalue", "2/(L+mu)", label=" (bound / 1.001)")]


@check("taylor2018.thm3_1", R.PAPER, "bound", measures=MEASURES,
       problems=("the two-eigenvalue quadratic (L w_1^2 + mu w_2^2)/2, L = 4, mu = 1/2 (the bound attained)",
                 "least squares, one client, d = 10, condition 10"),
       algorithms=("gradient descent x_{k+1} = x_k - gamma grad f(x_k) (FedAvg, one client, one local step, exact "
                   "gradients)",),
       seeds="deterministic: one run per setting; N = 100 (quick), 400 (full)",
       control=Control("Thm 3.1 divided by 1.001 on the two-eigenvalue quadratic at gamma = 2/(L + mu): must be "
                       "reported violated", _control))
def thm3_1(session: Session) -> list[CheckResult]:
    """||x_N - x*||^2 of gradient descent at every N against Thm 3.1, at gamma = 2/(L + mu), 1/L and 1.9/L, on the
    two-eigenvalue quadratic (where the bound is attained) and on least squares."""
    sz = session.pick(SIZES)
    return [assess(session, R.THM31, key, step) for key in ("two_eigenvalue", "least_squares") for step in sz["steps"]]
