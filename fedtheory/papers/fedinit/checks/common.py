"""What several FedInit checks share: the problems, the admissible step, the runs at the admissible and practice
settings, the values a bound is evaluated at, and the decision under both readings of eq. (14)."""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from fedtheory.checks import Session, cached_symbolic, combine_readings
from fedtheory.checks.symbolic_cache import expr_from_srepr, symbolic_part
from fedtheory.sim import (
    AdditiveNoise,
    RunConfig,
    digits_logistic,
    fedinit,
    heterogeneous_least_squares,
    pl_nonconvex,
    simulate,
)

from .. import records as fedinit_records
from ..records import under_reading

PAPER = "fedinit"
K_LOCAL = 5
SIGMA2 = 0.05
BETAS = (0.0, 0.05, 0.1)
PRACTICE = {"eta": 0.1, "beta": 0.1}
# Per-profile sizes, read with ``session.pick(SIZES)``. runs / rounds: the admissible, practice, partial-participation
# and claim runs (the digits problem always uses the quick sizes: full-batch gradients are costly); few_runs: the
# (S, K, beta, T') grid and the divergence-threshold sweep; stability_*: Thm 3's coupled runs; rate_doublings: how many
# horizons T_min 2^j of Thm 1's measured rate; extra_problems: the PL least-squares and digits problems; claim_runs: the
# seeds of the claims a measurement could refute (the statistics policy refutes on no fewer than 10).
SIZES = {
    "quick": {"runs": 8, "rounds": 300, "few_runs": 4, "stability_runs": 12, "stability_rounds": 60,
              "horizons": (100, 500, 2000), "rate_doublings": 4, "extra_problems": False, "claim_runs": 10},
    "full": {"runs": 32, "rounds": 1000, "few_runs": 16, "stability_runs": 48, "stability_rounds": 300,
             "horizons": (100, 500, 2000, 8000), "rate_doublings": 6, "extra_problems": True, "claim_runs": 32},
}


# ------------------------------------------------------------------------------------ the step all conditions allow


@symbolic_part
def _lambda_max_roots():
    """(target, the roots in eta of lambda_max(eta) = target): sympy's solve (a quadratic in eta: one positive, one
    negative root), cached and shipped like every symbolic result (it took ~0.9 s of every run)."""
    r = fedinit_records
    target = sp.Symbol("lam_target", positive=True)

    def compute():
        return {"roots": [sp.srepr(x) for x in sp.solve(sp.Eq(r.LAMBDA_MAX.expr, target), r.eta)]}

    out = cached_symbolic(["fedinit.admissible_eta", "v1", sp.srepr(r.LAMBDA_MAX.expr), sp.srepr(r.eta),
                           sp.srepr(target)], compute)
    return target, [expr_from_srepr(t) for t in out["roots"]]


@functools.lru_cache(maxsize=None)
def _step_limits():
    """The step-size limits of Thms 1-6 and the positive root of lambda_max(eta) = target, lambdified from the
    records (ETA_NC, ETA_NKL, ETA_SQRT, ETA_GRAD, LAMBDA_MAX): nothing here re-types a formula."""
    r = fedinit_records
    args = (r.L, r.N, r.C, r.K, r.beta, r.B)
    limits = [sp.lambdify(args, c.relation.rhs, "numpy") for c in (r.ETA_NC, r.ETA_NKL, r.ETA_SQRT, r.ETA_GRAD)]
    target, roots = _lambda_max_roots()
    return limits, [sp.lambdify(args + (target,), root, "numpy") for root in roots]


def admissible_eta(L, N, C, K, beta, B, lam_target=0.5) -> float:
    """The largest eta that satisfies every step-size condition of Thms 1-6 (seed 000) at these values
    and leaves lambda_max(eta) >= lam_target (the bounds scale like 1/lambda), from the records."""
    limits, roots = _step_limits()
    args = (L, N, C, K, beta, B)
    eta_lam = max(float(f(*args, lam_target)) for f in roots)
    return float(min([float(f(*args)) for f in limits] + [eta_lam]))


def B_ref(problem) -> float:
    """The B at which the runs' step is chosen: 1.3 times the problem's exact smallest B of Assumption 3 (at least 1),
    1.5 where it has no closed form."""
    return 1.3 * max(1.0, float(problem.constants["B_min"].value)) if exact_heterogeneity(problem) else 1.5


# ------------------------------------------------------------------------------------ problems and runs


def problems(session: Session):
    """(key, problem, w0) for the bound checks: heterogeneous least squares (B_min ~ 2: the lambda condition forces a
    tiny step), a mildly heterogeneous well-conditioned one, the PL non-convex problem; the full profile adds a
    PL-but-not-strongly-convex least squares and logistic regression on digits."""
    def make():
        out = [("sc_least_squares", heterogeneous_least_squares(10, 10, 50, random_state=session.seed)),
               ("sc_least_squares_mild", heterogeneous_least_squares(10, 10, 50, heterogeneity=0.3, condition=2.0,
                                                                     random_state=session.seed))]
        out.append(("pl_nonconvex", pl_nonconvex(10, 10, 50, heterogeneity=0.5, random_state=session.seed)))
        if session.pick(SIZES)["extra_problems"]:
            out.append(("pl_least_squares",
                        heterogeneous_least_squares(10, 10, 50, rank=6, random_state=session.seed + 1)))
            out.append(("digits_logistic", digits_logistic(10, alpha=0.5, random_state=session.seed)))
        return [(key, p, session.initial_point(p)) for key, p in out]
    return session.memo(("fedinit", "problems"), make)


def exact_heterogeneity(problem) -> bool:
    """Whether the problem has Assumption 3's (G, B) family in closed form (else a certified bound)."""
    return "B_min" in problem.constants


MEASURES = ("opt_error", "grad_norm2", "client_grad_norm2", "delta", "V1", "V2", "local_grad_sum2", "unbiased_gap",
            "init_offset", "eq15_residual", "delta_code", "drift", "visited_max_dist2")
# the visited region's per-sample gradient and loss maxima, from which Thm 6's L_G and U are certified (on the problem
# the composed check runs on)
VISITED = ("visited_max_grad", "visited_max_loss")


def bound_runs(session: Session, key, problem, w0):
    """The runs every bound of Thms 1, 2, 4, 5 and Lemmas 2-4 is checked on, one problem: 'admissible', R runs per beta
    in BETAS (a slice of R each) at the largest constant step all of Thms 1-6's conditions allow at max(BETAS)
    (admissible_eta); 'practice', R runs at the paper's eta = 0.1, beta = 0.1 (000 App. B.1, Table 6), where they
    fail. Every client trains, K = 5, additive gradient noise sigma_l^2 = 0.05. One batch on the same seeds: a run's
    numbers depend on its seed alone, and the paired seeds draw their noise once; read with ``Trace.select``."""
    def run():
        big = problem.dim > 100  # logistic regression on digits: full-batch gradients are costly
        z = SIZES["quick"] if big else session.pick(SIZES)
        R, Tn = z["runs"], z["rounds"]
        C = problem.n_clients
        eta = admissible_eta(problem.constants["L"].value, C, C, K_LOCAL, max(BETAS), B_ref(problem))
        betas = np.repeat(BETAS + (PRACTICE["beta"],), R)
        lrs = np.repeat([eta] * len(BETAS) + [PRACTICE["eta"]], R)
        seeds = np.tile(session.seeds(R), len(BETAS) + 1)
        oracle = AdditiveNoise(SIGMA2)
        measures = MEASURES + (VISITED if key == "sc_least_squares" else ())
        tr = simulate(problem, fedinit(betas), RunConfig(rounds=Tn, local_steps=K_LOCAL, lr=lrs, oracle=oracle),
                      seeds, w0=w0, measures=measures, progress=session.progress)
        n = len(BETAS) * R
        return {"admissible": {"trace": tr.select(slice(0, n)), "eta": eta, "R": R, "T": Tn, "C": C, "oracle": oracle,
                               "betas": BETAS},
                "practice": {"trace": tr.select(slice(n, None)), "eta": PRACTICE["eta"], "R": R, "T": Tn, "C": C,
                             "oracle": oracle, "betas": (PRACTICE["beta"],)}}
    return session.memo(("fedinit", "bound_runs", key), run)


def slices(R, n):
    """The n consecutive slices of R runs each of a batch (one per setting)."""
    return [slice(j * R, (j + 1) * R) for j in range(n)]


def finite_mean(x) -> float:
    """Mean of the finite entries of ``x`` (diverged runs' NaN / inf left out) as a float; NaN if none."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


def finite_se(x) -> float:
    """Standard error of the mean of the finite entries of ``x``; NaN with fewer than two."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")


# ------------------------------------------------------------------------------------ values


def _B_grid(cert) -> list[tuple[float, float]]:
    """(B, G(B)) pairs with finite G, B >= 1 (Assumption 8), from the certified (G, B) family of Assumption 3: each is
    a valid instance of it (exact where the problem has a closed form, a certified bound otherwise)."""
    h = next(e.certificate for e in cert.entries if e.ref.name == "heterogeneity")
    bmin = max(1.0, float(h.constants["B"]))
    Bs = [bmin * f for f in (1.0, 1.02, 1.1, 1.3, 1.6, 2.0, 3.0, 5.0)]
    return [(B, float(G)) for B, G in zip(Bs, h.family[1](np.asarray(Bs))) if np.isfinite(G)]


def base_values(problem, w0, cert, *, N, C, K, T, eta, beta):
    """The values every FedInit bound is evaluated at: L and sigma_l as the run certifies them (and mu, the problem's
    certified PL constant), the run's settings, and D = f(w^0) - f*."""
    c = problem.constants
    D = float(problem.loss(w0[None])[0] - c["f_star"].value)
    certified = cert.values
    return {"L": certified["L"], "mu": problem.certify("PL").constants["mu"], "sigma_l": certified["sigma_l"], "N": N,
            "C": C, "K": K, "T": T, "eta": eta, "beta": beta, "D": D}


@functools.lru_cache(maxsize=None)
def _lambda_max():
    """lambda_max(eta, K, L, B, N, beta) from the record (fedinit.lambda_max), lambdified once."""
    r = fedinit_records
    return sp.lambdify((r.eta, r.K, r.L, r.B, r.N, r.beta), r.LAMBDA_MAX_EXPR, "numpy")


def candidates(base, cert):
    """The candidate values of the bounds: ``base`` with every certified (B, G) pair of Assumption 3 (``_B_grid``) and
    lambda = lambda_max there (evaluated once over all pairs); the smallest valid bound over them counts."""
    grid = _B_grid(cert)
    if not grid:
        return []
    Bs = np.array([B for B, _ in grid], dtype=float)
    with np.errstate(all="ignore"):
        lam = np.broadcast_to(_lambda_max()(base["eta"], base["K"], base["L"], Bs, base["N"], base["beta"]), Bs.shape)
    cands = []
    for (B, G), lam_max in zip(grid, lam.tolist()):
        v = dict(base, B=B, G=G)
        v["lam"] = lam_max if 0 < lam_max < 1 else 1e-9  # no admissible lambda: lambda_admissible fails, reported
        cands.append(v)
    return cands


def trivial_values(problem, tr, sl, K):
    """The run quantities every lhs_kind's trivial bound needs (fedtheory.checks.TRIVIAL_BOUNDS): the smoothness L,
    the local steps K and, per run, the largest ||w - w*||^2 the run visited."""
    return {"L": problem.constants["L"].value, "K": K, "visited_max_dist2": tr["visited_max_dist2"][0, sl]}


def by_reading(record, decide):
    """``decide(record)`` -> one row, once per reading of eq. (14)'s divergence factor when the record declares them
    (joined by combine_readings: a verdict only when every reading gives it, else 'ambiguous'), else once. A bound row
    is vacuous only when it is vacuous under every reading."""
    if not record.readings:
        return decide(record)
    rows = {name: decide(under_reading(record, name)) for name in record.readings}
    out = combine_readings(rows)
    if out.kind == "bound":
        for name, r in rows.items():
            out.extra["readings"][name].update(vacuity=r.extra.get("vacuity"), trivial_bound=r.trivial_bound)
        known = [r.extra.get("vacuity") in ("informative", "vacuous") for r in rows.values()]
        if all(known):
            out.vacuous = all(r.vacuous for r in rows.values())
            out.extra["vacuity"] = "vacuous" if out.vacuous else "informative"
            out.trivial_bound = next(iter(rows.values())).trivial_bound
    return out
