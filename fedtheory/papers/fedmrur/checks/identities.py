"""FedMRUR's identities: Fig. 2's norm identities with d_t >= 1, and eq. (3)'s Lorentz distance (both implementation
self-checks by design, each saying why)."""
from __future__ import annotations

import numpy as np
import sympy as sp

from fedtheory.checks import check, identity_result
from fedtheory.sim.hyperbolic import lifted_sqdist, lorentz_inner, lorentz_lift, lorentz_sqdist

from .. import records as fedmrur_records
from .common import HYP, PAPER, bound_problems, setting_runs

D_T_ROUNDING = 1e-12  # d_t >= 1 up to rounding (its defining ratio is computed in floating point)
SHELL_ROUNDING = 1e-12  # |<L, L>_L + beta| / (1 + ||z||^2) of a lifted point: on the hyperboloid up to rounding


@check("fedmrur.eq_dt", PAPER, "identity", records=("fedmrur.eq_dt", "fedmrur.d_t"),
       self_check="the simulator's aggregation builds Delta^{t+1} = d_t mean_p Delta_p (Alg. 1 line 15), and "
                  "1/d_t = sum_p ||Delta_p|| cos(theta_p) / sum_p ||Delta_p|| <= 1 holds for any vectors (the "
                  "triangle inequality): no run can make it fail")
def eq_dt(session):
    """Fig. 2's norm identities and d_t >= 1 on every round of the bound checks' runs."""
    out = []
    for e in bound_problems(session):
        for variant in (("FedMRUR" if e["hyperbolic"] else "FedMRUR-N"), "MoFedSAM"):
            tr = setting_runs(session, e, variant)["trace"]
            res = float(np.nanmax(tr["geometry_residual"]))
            dmin = float(np.nanmin(tr["d_t"]))
            out.append(identity_result(fedmrur_records.EQ_DT, res, ok=dmin >= 1 - D_T_ROUNDING, problem=e["key"],
                                       params={"algorithm": variant},
                                       detail=f"max relative residual of Fig. 2's norm identities and of 1/d_t = "
                                          f"sum_p ||Delta_p|| cos(theta_p)/sum_p ||Delta_p|| over all rounds and runs; "
                                          f"min d_t = {dmin:.12f}"))
    return out


@check("fedmrur.eq3", PAPER, "identity", records=("fedmrur.eq3",),
       self_check="the lift L(z) = (sqrt(beta + ||z||^2), z) puts every point on the hyperboloid <x, x>_L = -beta by "
                  "construction, and for such points eq. (3) equals ||z - z'||^2 - (a - a')^2 >= 0 (an algebraic "
                  "identity): no run can make it fail")
def eq3(session):
    """Symbolically: ||L(z) - L(z')||_L^2 = ||z - z'||^2 - (a - a')^2 for the lift; numerically on the logits of the
    visited models: the lifted points lie on the hyperboloid, the distance is >= 0 and 0 at equal points."""
    z = sp.symbols("z0:3", real=True)
    y = sp.symbols("y0:3", real=True)
    b = sp.Symbol("beta", positive=True)
    a, ay = sp.sqrt(b + sum(v**2 for v in z)), sp.sqrt(b + sum(v**2 for v in y))
    eq3_expr = -2 * b - 2 * (-a * ay + sum(u * v for u, v in zip(z, y)))
    ident = sp.simplify(sp.expand(eq3_expr - (sum((u - v) ** 2 for u, v in zip(z, y)) - (a - ay) ** 2))) == 0
    e = [x for x in bound_problems(session) if x["hyperbolic"]][0]
    p = e["problem"]
    run = setting_runs(session, e, "FedMRUR")
    W = np.concatenate([e["w0"][None], np.nan_to_num(run["trace"].final_w)])
    Xall = p.X[0][p.mask > 0]  # (n, f) every training sample
    beta = HYP["beta"]
    worst_shell, worst_neg, worst_self, worst_form = 0.0, 0.0, 0.0, 0.0
    Z0 = Xall @ W[0].reshape(-1, p.n_classes)
    for w in W[1:]:
        Z = Xall @ w.reshape(-1, p.n_classes)
        Lz, L0 = lorentz_lift(Z, beta), lorentz_lift(Z0, beta)
        scale = 1 + np.sum(Z**2, axis=1)
        worst_shell = max(worst_shell, float(np.max(np.abs(lorentz_inner(Lz, Lz) + beta) / scale)))
        d_printed = lorentz_sqdist(Lz, L0, beta)
        d_stable = lifted_sqdist(Z, Z0, beta)
        worst_neg = max(worst_neg, float(np.max(-d_stable)))
        worst_self = max(worst_self, float(np.max(np.abs(lifted_sqdist(Z, Z, beta)))))
        worst_form = max(worst_form, float(np.max(np.abs(d_printed - d_stable) / scale)))
    facts = ident and worst_shell <= SHELL_ROUNDING and worst_neg <= 0 and worst_self == 0
    return [identity_result(fedmrur_records.EQ3, worst_form, ok=facts, problem=e["key"],
                            params={"beta": beta, "models": len(W) - 1},
                            detail=f"symbolic identity {'verified' if ident else 'FAILED'}; on the logits of "
                               f"{len(W) - 1} final models vs w^0 over all samples: max |<L,L>_L + beta|/(1+||z||^2) = "
                               f"{worst_shell:.2g}, min distance {-worst_neg:.3g} (>= 0), distance to itself "
                               f"{worst_self:.2g}, eq. (3) as printed vs the stable form {worst_form:.2g} (relative)")]
