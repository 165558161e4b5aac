"""Checks of Li et al. (ICLR 2020) Theorem 1 on heterogeneous least squares with exact constants."""
from __future__ import annotations

import dataclasses

import numpy as np

from fedtheory.checks import CheckResult, Control, Session, assess_bound, check, faster_order, rate_check
from fedtheory.sim import AdditiveNoise, LeastSquaresProblem, RunConfig, TrackGradients, fedavg, simulate

from . import records as R

SIGMA2 = 0.1  # E||g - grad F_k||^2 of the additive-noise oracle, the same for every client
C = 10  # clients, all taking part every round, equal weights p_k = 1/C
ITERATIONS = 400  # SGD iterations per run: rounds = ITERATIONS / E


def problem(heterogeneity: float, seed: int) -> LeastSquaresProblem:
    """Least squares, 10 clients x 500 samples in d = 10, every client's features drawn from one covariance
    (spectrum 1 .. 1/3) and labels from its own model w_k = w + heterogeneity * noise: non-IID in the labels,
    every F_k strongly convex, L_k close to L (so the common L of Assumption 1 is not loose by construction)."""
    rng = np.random.default_rng(seed)
    d, n = 10, 500
    scale = np.sqrt(np.geomspace(1.0, 1.0 / 3.0, d))
    X = rng.standard_normal((C, n, d)) * scale
    w_k = rng.standard_normal(d) / np.sqrt(d) + heterogeneity * rng.standard_normal((C, d)) / np.sqrt(d)
    y = np.einsum("cnd,cd->cn", X, w_k) + 0.5 * rng.standard_normal((C, n))
    return LeastSquaresProblem(X, y, name=f"label_shift_ls(heterogeneity={heterogeneity})")


def worst_start(p, scale: float) -> np.ndarray:
    """w_1 = w* + scale * (top eigenvector of F's Hessian): where F(w_1) - F* is largest for its distance to w*,
    so the bound is tested where it can be tight (at T = 1 it reads F(w_1) - F* <= L/2 ||w_1 - w*||^2 + ...)."""
    hessian = p.H[0].mean(axis=0)  # F = mean_k F_k (equal client sizes)
    top = np.linalg.eigh(hessian)[1][:, -1]
    return p.constants["w_star"].value + scale * top


def theorem_values(p, E: int) -> dict[str, float]:
    """The constants Theorem 1 needs that the problem knows exactly; G and Delta1 come from the run."""
    c = p.constants
    L, mu = float(np.max(c["L_clients"].value)), float(np.min(c["mu_clients"].value))
    return {"L": L, "mu": mu, "E": float(E), "sum_p2_sigma2": SIGMA2 / C, "Gamma": float(c["Gamma"].value),
            "lr": 2.0 / mu, "lr_offset": max(8.0 * L / mu, float(E))}


def run(session: Session, E: int, heterogeneity: float, schedule: str = "inverse_step"):
    """Measure E[F(w_T)] - F* at every round; returns (values for the bound, per-round lhs, T per round, settings)."""
    def compute():
        p = problem(heterogeneity, session.seed)
        vals = theorem_values(p, E)
        w0 = worst_start(p, scale=10.0)
        if schedule == "inverse_step":
            cfg = RunConfig(rounds=ITERATIONS // E, local_steps=E, lr=vals["lr"], lr_schedule="inverse_step",
                            lr_offset=vals["lr_offset"], oracle=AdditiveNoise(SIGMA2))
        else:  # a constant step, as people run FedAvg in practice
            cfg = RunConfig(rounds=ITERATIONS // E, local_steps=E, lr=1.0 / (4 * vals["L"]), oracle=AdditiveNoise(SIGMA2))
            vals = {**vals, "lr": cfg.lr, "lr_offset": 0.0}
        alg = dataclasses.replace(fedavg(), local=(TrackGradients(),))
        runs = 8 if session.quick else 32
        tr = simulate(p, alg, cfg, session.seeds(runs), w0=w0, measures=("opt_error", "visited_max_dist2"))
        w_star = p.constants["w_star"].value
        vals["Delta1"] = float(np.sum((w0 - w_star) ** 2))
        vals["G"] = float(np.sqrt(SIGMA2 + np.nanmax(tr["visited_client_grad2"])))  # Assumption 4 on the visited region
        T = np.arange(cfg.rounds + 1)[:, None] * E + 1.0  # w_T after each round
        settings = {"lr_schedule": cfg.lr_schedule, "full_participation": True}
        # the trivial bound of an optimality gap, (L/2) R^2 over the visited region (docs/verdict-rules.md, rule 2)
        trivial = {"L": float(p.constants["L"].value), "visited_max_dist2": tr["visited_max_dist2"][0]}
        return vals, tr["opt_error"], T, settings, trivial
    return session.memo(("li2020", E, heterogeneity, schedule), compute)


def assess(session: Session, record, E: int, heterogeneity: float, schedule: str = "inverse_step") -> CheckResult:
    """Compare a Theorem-1-shaped record with the measured optimality gap at every round (each T is a statement)."""
    vals, lhs, T, settings, trivial = run(session, E, heterogeneity, schedule)
    # At T = 1 (the start) the statement reads F(w_1) - F* <= L/2 ||w_1 - w*||^2 + ..., true by smoothness alone:
    # it is compared from the first round on, where the theorem has something to say.
    lhs, T = lhs[1:], T[1:]

    def per_round(values):
        return lhs, np.broadcast_to(record.evaluate({**values, "T": T}), lhs.shape)

    return assess_bound(record, [vals], per_round, per_round=True, settings=settings, trivial=trivial,
                        rounds=T[:, 0], round_name="T",
                        problem=f"label_shift_ls(C={C}, d=10, heterogeneity={heterogeneity})",
                        params={"setting": f"{schedule} E={E} het={heterogeneity}", "E": E, "heterogeneity": heterogeneity},
                        detail="L = max_k L_k, mu = min_k mu_k, Gamma exact; G^2 = sigma^2 + max visited ||grad F_k||^2")


def _halved(session: Session) -> list[CheckResult]:
    halved = dataclasses.replace(R.THM1, id="li2020.thm1.halved", expr=R.THM1.expr / 2)
    return [assess(session, halved, 1, 0.3)]


@check("li2020.thm1", R.PAPER, "bound", measures=("opt_error", "visited_client_grad2", "visited_max_dist2"),
       problems=("least squares with label shift, 10 clients x 500 samples, d = 10, heterogeneity 0.1 / 1 / 3",),
       algorithms=("FedAvg, full participation, eta_t = 2/(mu (gamma + t))", "FedAvg, constant step 1/(4L)"),
       seeds="8 runs per setting (quick), 32 (full)",
       control=Control("Theorem 1 with its bound halved, at E = 1 (where the bound is within 2x of the measurement): "
                       "must be reported violated", _halved))
def thm1(session: Session) -> list[CheckResult]:
    """E[F(w_T)] - F* at every round against Theorem 1, across local steps E and heterogeneity; a constant step,
    outside the theorem's schedule, is reported not_applicable."""
    Es = (1, 5) if session.quick else (1, 5, 10, 20)
    out = [assess(session, R.THM1, E, h) for E in Es for h in (0.1, 1.0, 3.0)]
    out.append(assess(session, R.THM1, 5, 1.0, schedule="constant"))
    return out


@check("li2020.thm1.rate", R.PAPER, "rate", records=("li2020.thm1",), cost="symbolic",
       control=Control("the same record with a stated order one power of T faster, O(1/T^2)",
                       lambda session: [rate_check(R.THM1, order=faster_order(R.THM1))]))
def thm1_rate(session: Session) -> list[CheckResult]:
    """Symbolic: every term of Theorem 1's bound is O(1/T)."""
    return [rate_check(R.THM1)]
