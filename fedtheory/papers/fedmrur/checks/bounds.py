"""Theorem 1 (eq. 7) and MoFedSAM's Theorem D.7 as Remark 2 states it, at every horizon of the runs and under every
reading (Assumption 3 x the index of the average; the two readings of eta_g joined), Remark 2's comparison, and the
smoothness r of the regularizer the bounds are evaluated with."""
from __future__ import annotations

import numpy as np

from fedtheory.checks import CheckResult, assess_bound, check, combine_readings
from fedtheory.sim.hyperbolic import r_bound, regularizer_hessian

from .. import records as fedmrur_records
from ..algorithms import settings_of, weighted_grad_norm2
from .common import (
    ALPHA,
    HYP,
    K_LOCAL,
    LABEL,
    PAPER,
    SIZES,
    STEP_READINGS,
    bound_problems,
    c_max,
    certification,
    setting_runs,
    setting_slice,
    thm1_values,
)


def _lhs(tr, sl, weighted: bool):
    return weighted_grad_norm2(tr, sl) if weighted else np.mean(tr["grad_norm2"][:-1, sl], axis=0)


# The index readings of eq. (7)'s average: its first round (w^1, as printed, or w^0, as Algorithm 1 runs).
FIRST_ROUND = {"t=1..T": 1, "t=0..T-1": 0}


def _horizons(bound, tr, sl, weighted: bool, first: int = 0):
    """Eq. (7) (or MoFedSAM's bound) at every horizon T' of the run: the theorem holds 'for all T >= 1', so each
    prefix of the run is an instance. first: the first global model in the average, 0 (w^0..w^{T'-1}, each with the
    d_t of the round that starts from it) or 1 (w^1..w^{T'}, as printed; the weighted form then stops at T' = T - 1,
    since d_T needs a round T + 1). Returns values -> (lhs (horizons, R), rhs (horizons, R))."""
    G = tr["grad_norm2"][:, sl]  # (T + 1, R): w^0..w^T
    d = tr["d_t"][:, sl]  # (T, R): rounds 0..T-1

    def fn(vals):
        if weighted:
            g, dd = G[first:-1], d[first:]
            cum_d = np.cumsum(dd, axis=0)
            lhs = np.cumsum(dd * g, axis=0) / cum_d
            rhs = bound.evaluate({**vals, "sum_d": cum_d})
        else:
            g = G[first:G.shape[0] - 1 + first]
            horizon = np.arange(1, g.shape[0] + 1, dtype=float)[:, None]
            lhs = np.cumsum(g, axis=0) / horizon
            rhs = bound.evaluate({**vals, "T": horizon})
        return lhs, np.broadcast_to(rhs, lhs.shape)
    return fn


def _detail(e, run, s, sl, vals):
    tr = run["trace"]
    parts = [f"eta_g = {vals['eta_g']:.3g}, eta_l = {vals['eta_l']:.3g}, C = {vals['C']:.3g}, r = {vals['r']:.3g}",
             f"mean d_t = {np.nanmean(tr['d_t'][:, sl]):.3f} (1/(1-alpha) = {1 / (1 - ALPHA):.3f})",
             f"f(w^T) - f* = {np.nanmean(tr['opt_error'][-1, sl]):.3g}",
             f"sigma_g^2 = {e['sigma_g2']:.3g} (client mean) / "
             f"{e['sigma_g2_max']:.3g} (client max), {e['sigma_g2_kind']}"]
    if s in ("A", "B"):
        server = vals["eta_g"] if s == "A" else vals["eta_g"] / (K_LOCAL * vals["eta_l"])
        parts.append(f"simulator server step {server:.3g} x displacement")
    parts.append("Algorithm 1 run with the descent sign, Delta_p = w^{t,0} - w^{t,K} (as printed, lines 13 and 16 step "
                 "uphill: fedmrur.alg1)")
    if tr.diverged[sl].any():
        parts.append(f"{int(tr.diverged[sl].sum())} of {run['R']} runs diverged")
    return "; ".join(parts)


EQ6_QUOTE = ("003_7cb41999359df859.txt:126-128: 'Assumption 3. The dissimilarity of the dataset among the local "
             "clients is bounded by the local and global gradients, i.e., E||grad F_p(x) - grad F(x)||^2 <= sigma_g^2'")


# The unit reading of eta_g each setting realises: A (and the paper's practice, eta_g = 1 on the displacement) runs
# eta_g times a displacement; B runs eta_g/(K eta_l) times it, eta_g a step on a gradient-sized update.
STEP_UNITS = {"A": "A", "B": "B", "P": "A"}


def _rederive_c(vals):
    """On a rescaled instance (rule 8) the check's own choice C = C_max is made again: C_max carries '1 - alpha L',
    which is not invariant under a change of units."""
    cm = c_max(vals)
    return {**vals, "C": cm if cm > 0 else 1e-3}


def _rescaled_note(x) -> str:
    if x.get("verdict") == "violated":
        return (f"the ratio and horizons above are on the rescaled instance (rule 8: loss x {x['c']:.3g}, parameters "
                f"x {x['s']:.3g}; C = C_max = {x['values'].get('C', float('nan')):.3g} there; inside the regime, the "
                f"largest move x{x['regime']['moved']:.3g}, {x['regime']['by']})")
    if x.get("verdict") == "holds":
        edge = (f"; the regime ends at t = {x['regime']['left_at']:g} ({x['regime']['by']})"
                if x.get("regime", {}).get("left_at") is not None else "")
        return ((f"rescaled instances inside rule 8's regime (values within x{x['regime']['factor']:g}; 10^t, t = "
                 f"{x['tested'][0]:g}..{x['tested'][-1]:g}): hold" if x.get("tested") else
                 "no rescaled instance inside rule 8's regime meets the conditions") + edge)
    return "rescaled instance not tested"


def _horizon_text(r: CheckResult) -> str:
    """One reading's verdict in numbers: the tightest horizon and what survives Holm."""
    x = r.extra
    return (f"ratio {r.ratio:.3g} at T' = {x['tightest_round'] + 1}; {x['rounds_significant_holm']} of "
            f"{x['family_size']} horizons significant after Holm ({x['rounds_violated']} with a negative mean gap, "
            f"{x['rounds_significant_uncorrected']} at 3 SE uncorrected)"
            + (f", {x['runs_violating_at_worst']} of {x['runs']} seeds below the bound at T' = {x['worst_round'] + 1}"
               if r.verdict == "violated" and "worst_round" in x else "")
            + f"; sigma_g^2 = {r.params['sigma_g'] ** 2:.3g}")


def _decide_readings(bound, e, run, s, weighted) -> CheckResult:
    """Setting s of a batch decided under every reading of the record (Assumption 3 x the index of the average) and
    joined by combine_readings. A setting whose conditions fail is not applicable whatever the reading (the
    readings change sigma_g and the average, not the step-size conditions): one row."""
    tr = run["trace"]
    sl = setting_slice(run, s)
    variant = run["alg"].name
    cert = certification(bound, e, run, sl)
    if not cert.applicable:  # an assumption the runs do not certify: not applicable, whatever the reading
        return assess_bound(bound, [{}], np.zeros(run["R"]), problem=e["key"], certification=cert,
                            params={"setting": f"{LABEL[s]}, {variant}", "algorithm": variant, "runs": run["R"]})
    base = thm1_values(e, run, s, sl, cert)
    params = {"setting": f"{LABEL[s]}, {variant}", "algorithm": variant, "runs": run["R"], "rounds": run["T"],
              "sum_d_mean": float(np.mean(base["sum_d"]))}
    trivial = {"L": e["L"], "visited_max_dist2": tr["visited_max_dist2"][0, sl]}
    rows = {}
    for name in bound.readings:
        a3, index = name.split(", ")
        vals = thm1_values(e, run, s, sl, cert, a3.replace("-", "_"))
        r = assess_bound(bound, [vals], _horizons(bound, tr, sl, weighted, FIRST_ROUND[index]), problem=e["key"],
                         per_round=True, settings=settings_of(run["alg"]), params=params, trivial=trivial,
                         certification=cert, units_reading={"eta_g": STEP_UNITS[s]}, rederive=_rederive_c)
        if r.verdict == "not_applicable":
            r.measured = float(np.nanmean(_lhs(tr, sl, weighted)))
            r.detail = (f"measured at T = {run['T']} (not compared): {r.measured:.4g}; {r.detail}; "
                        + _detail(e, run, s, sl, vals))
            r.quote = bound.quote
            return r
        rescaled = r.extra.get("rescaled_instance") or r.extra.get("rescaled")
        r.detail = _horizon_text(r) + (f". {_rescaled_note(rescaled)}" if rescaled else "")
        rows[name] = r
    res = combine_readings(rows)
    res.extra["sigma_g2_readings"] = {"client_mean": e["sigma_g2"], "client_max": e["sigma_g2_max"],
                                      "kind": e["sigma_g2_kind"], "quote": EQ6_QUOTE}
    res.extra["step_reading"] = STEP_UNITS[s]
    res.detail += ". " + _detail(e, run, s, sl, base)
    if res.verdict == "violated":
        res.extra["robustness"] = _robustness(bound, e, run, s, sl, weighted, cert, params, rows)
        # rule 8: the units erratum, false as stated where every reading fails
        res.finding = fedmrur_records.UNITS_FINDING
    violated = [k for k, r in rows.items() if r.verdict == "violated"]
    if res.verdict == "ambiguous":
        res.detail = ((f"ambiguous, not counted: violated under {len(violated)} of {len(rows)} readings ("
                       + "; ".join(violated) + "), not under the others. ") if violated else
                      "no reading gives a violation (the readings differ only between holds and inconclusive). "
                      ) + res.detail
    return res


def join_step_readings(rows: dict[str, CheckResult]) -> dict[str, CheckResult]:
    """The two readings of eta_g (A: a displacement, B: a gradient-sized update; the seed does not say which) are
    readings of the text like any other (rule 3): a violation under one of them counts only where the other gives it
    too. rows: setting ('A', 'B', 'P') -> its row (each already joined over Assumption 3 x the index). A row violated
    under one reading of eta_g and not under the other becomes 'ambiguous', naming both; both violated: both count
    (one finding, the units finding's key)."""
    a, b = rows.get("A"), rows.get("B")
    if a is None or b is None or a.verdict == "not_applicable" or b.verdict == "not_applicable":
        return rows
    va, vb = a.verdict == "violated", b.verdict == "violated"
    if va and vb:  # the finding needs both: each row states the weaker robustness of the two
        ra, rb = a.extra.get("robustness"), b.extra.get("robustness")
        if isinstance(ra, dict) and isinstance(rb, dict):
            def weakness(x):
                m = x.get("margin")
                return (bool(x.get("fragile")), -(m if isinstance(m, (int, float)) else float("inf")))
            weaker, which = max((ra, "A"), (rb, "B"), key=lambda p: weakness(p[0]))
            joined = {**weaker, "text": f"{weaker.get('text', '')} (from reading {which} of eta_g: the finding needs "
                                        "both readings, so it is as robust as the weaker)"}
            a.extra["robustness"], b.extra["robustness"] = joined, dict(joined)
        return rows
    if va == vb:
        return rows
    out = dict(rows)
    for key, row, other, other_key in (("A", a, b, "B"), ("B", b, a, "A")):
        if row.verdict != "violated":
            continue
        amb = combine_readings({f"eta_g reading {key}": row, f"eta_g reading {other_key}": other})
        amb.params = dict(row.params)
        amb.extra = {**row.extra, "readings": row.extra.get("readings", {}),
                     "step_readings": {key: row.verdict, other_key: other.verdict}}
        amb.extra.pop("robustness", None)
        amb.detail = (f"ambiguous, not counted (rule 3 over the readings of eta_g): violated under reading {key} of "
                      f"eta_g (every reading of Assumption 3 and of the index), {other.verdict} under reading "
                      f"{other_key} on the same problem and algorithm. " + row.detail)
        out[key] = amb
    return out


C_FRACTIONS = (0.5, 0.8, 0.9, 0.95, 1.0)  # C as a fraction of C_max: the paper never defines C (module note)
R_ADDED = (0.0, 0.01, 0.05, 0.1, 0.2)  # r raised by this fraction of L: any r above R's smoothness is admissible


def _robustness(bound, e, run, s, sl, weighted, cert, params, rows) -> dict:
    """The free choices a violated row of eq. (7) (or MoFedSAM's bound) rests on, each swept with the others at the
    row's values (the row's finding holds at a value when every reading is still violated there): C, which the paper
    never defines (C = f C_max, f in C_FRACTIONS; the checks take C = C_max); r, which any larger value also bounds
    (r + a L, a in R_ADDED); and the horizon (each T' alone, a single comparison). Rule 8's rescaled instance, where
    the row rests on one, is decided again at each value (assess_bound does it); a row violated as measured survives a
    value only as measured."""
    from fedtheory.checks import robustness as make_robustness, sweep

    tr = run["trace"]
    L = float(e["L"])
    # a finding on the run as measured (every reading violated without rule 8's rescaled run) survives a value only
    # as measured too; one that rests on a rescaled instance may rest on one at every value
    as_measured = not any("rescaled_instance" in (r.extra or {}) for r in rows.values())

    def verdict_at(c_frac=1.0, r_add=0.0, horizon=None):
        ratios = []
        for name in bound.readings:
            a3, index = name.split(", ")
            vals = thm1_values(e, run, s, sl, cert, a3.replace("-", "_"))
            vals["r"] = vals["r"] + r_add * L

            def rederive(v, f=c_frac):
                cm = c_max(v)
                return {**v, "C": f * cm if cm > 0 else 1e-3}

            fn = _horizons(bound, tr, sl, weighted, FIRST_ROUND[index])
            if horizon is not None:
                n = fn(vals)[0].shape[0]
                if horizon > n:
                    return False, None
                fn = (lambda v, fn=fn, i=horizon - 1: tuple(np.asarray(a)[i:i + 1] for a in fn(v)))
            r = assess_bound(bound, [rederive(vals)], fn, problem=e["key"], per_round=True,
                             settings=settings_of(run["alg"]), params=params, certification=cert,
                             units_reading={"eta_g": STEP_UNITS[s]}, rederive=rederive, robustness=False)
            if r.verdict != "violated" or (as_measured and "rescaled_instance" in (r.extra or {})):
                return False, None if r.ratio is None else 1.0 - float(r.ratio)
            ratios.append(r.ratio)
        good = [x for x in ratios if x is not None and np.isfinite(x)]
        return True, (1.0 - max(good)) if good else None

    first = next(iter(rows.values()))
    base_h = int(first.extra.get("worst_round", first.extra.get("tightest_round", 0))) + 1
    n_h = int(first.extra.get("family_size") or run["T"])
    horizons = sorted({int(h) for h in np.unique(np.round(np.geomspace(1, n_h, 12)))}
                      | {max(1, int(round(0.9 * base_h))), min(n_h, int(round(1.1 * base_h)))})
    ok, margin = verdict_at()
    choices = [
        sweep("C/C_max", 1.0, C_FRACTIONS, lambda f: verdict_at(c_frac=f), kind="a constant the paper leaves undefined",
              note="C is never defined: 'satisfying ...' has no comparison (003:134); the checks take C = C_max"),
        sweep("(r - r_0)/L", 0.0, R_ADDED, lambda a: verdict_at(r_add=a), kind="a problem parameter", scale=1.0,
              note="r bounds the regularizer's smoothness; any larger r is admissible (r_0 = the row's r)"),
        sweep("T' (horizon)", base_h, horizons, lambda h: verdict_at(horizon=int(h)), kind="the horizon",
              note="each horizon alone, one comparison (no correction over horizons)"),
    ]
    return make_robustness(margin, (f"the bound {100 * margin:.3g}% below the measurement at the least violated "
                                    "reading's tightest horizon") if margin is not None else "", choices)


def _bound_results(session, bound, variants, weighted):
    out = []
    for e in bound_problems(session):
        run = setting_runs(session, e, variants[e["key"]])
        rows = join_step_readings({s: _decide_readings(bound, e, run, s, weighted) for s in run["settings"]})
        out.extend(rows[s] for s in run["settings"])
    return out



# ------------------------------------------------------------------------------------ bounds


@check("fedmrur.thm1", PAPER, "bound", records=("fedmrur.thm1", "fedmrur.Phi", "fedmrur.C_max"))
def thm1(session):
    """Theorem 1 (003 eq. (7)): the measured d_t-weighted average (1/sum_t d_t) sum_t d_t ||grad F(w^t)||^2 of
    FedMRUR (FedMRUR-N on the PL problem, FedMRUR with the hyperbolic regularizer on synthetic logistic regression),
    N = 10, S = 5, K = 5, at every horizon T' against D/(C alpha eta_g sum_t d_t) + Phi, C = C_max: admissible steps
    under each reading of eta_g (A, B; joined) and the paper's practice, every reading of Assumption 3 and of the
    average's index decided and joined; L, sigma_g, sigma_t and r certified."""
    return _bound_results(session, fedmrur_records.THM1,
                          {"pl_nonconvex": "FedMRUR-N", "synthetic_logistic": "FedMRUR"}, True)


@check("fedmrur.mofedsam_thmD7", PAPER, "bound", records=("fedmrur.mofedsam_thmD7",))
def mofedsam_bound(session):
    """MoFedSAM's Theorem D.7 as Remark 2 states it (003:146): the measured plain average (1/T') sum_t
    ||grad F(w^t)||^2 of MoFedSAM at every horizon T' against (F^0 - F^*)/(C alpha eta_g T') + Phi, Phi eq. (7)'s, on
    the problems and settings of fedmrur.thm1 (both readings of eta_g, every reading of Assumption 3 and the index)."""
    return _bound_results(session, fedmrur_records.MOFEDSAM,
                          {"pl_nonconvex": "MoFedSAM", "synthetic_logistic": "MoFedSAM"}, False)


@check("fedmrur.remark2", PAPER, "bound", records=("fedmrur.remark2",))
def remark2(session):
    """Eq. (7)'s right side vs MoFedSAM's at the same constants, on FedMRUR's runs (measured sum_d)."""
    out = []
    for e in bound_problems(session):
        variant = "FedMRUR" if e["hyperbolic"] else "FedMRUR-N"
        run = setting_runs(session, e, variant)
        for s in STEP_READINGS:
            sl = setting_slice(run, s)
            cert = certification(fedmrur_records.THM1, e, run, sl)
            if not cert.applicable:
                continue
            vals = thm1_values(e, run, s, sl, cert)
            if fedmrur_records.THM1.conditions_failed(vals):
                continue
            lhs = fedmrur_records.THM1.evaluate(vals)
            phi = float(fedmrur_records.THM1.evaluate_expr(fedmrur_records.PHI_EXPR, vals))
            first_eq7 = float(np.mean(lhs - phi))
            first_mofedsam = float(fedmrur_records.MOFEDSAM.evaluate_expr(fedmrur_records.MOFEDSAM_FIRST, vals))
            out.append(assess_bound(fedmrur_records.REMARK2, [vals], lhs, problem=e["key"],
                                    params={"setting": LABEL[s], "algorithm": variant, "runs": run["R"]},
                                    self_check=True,
                                    detail="implementation self-check: the two right sides differ by D (sum_d - T)/"
                                           "(C alpha eta_g T sum_d) >= 0 because every d_t >= 1 (a tautology of the "
                                           "encoding; fedmrur.remark2.symbolic proves it for every value). first terms "
                                           f"{first_eq7:.4g} (eq. 7) vs {first_mofedsam:.4g} (MoFedSAM); Phi "
                                           f"{phi:.4g} in both"))
    return out


@check("fedmrur.assumption1_r", PAPER, "bound", records=("fedmrur.eq3",))
def assumption1_r(session):
    """R's smoothness on the logistic problem: the exact Hessian norm of R(., w^t) at points of the region the
    runs visited (||w - w^t|| <= measured radius) against the r bound the checks plug into Theorem 1."""
    e = [x for x in bound_problems(session) if x["hyperbolic"]][0]
    p = e["problem"]
    run = setting_runs(session, e, "FedMRUR")
    tr = run["trace"]
    sl = setting_slice(run, "B")
    rng = np.random.default_rng(session.seed)
    n_pts = session.pick(SIZES)["regulariser_points"]
    radius = float(np.nanmax(tr["hyp_radius"][:, sl]))
    centres = np.concatenate([e["w0"][None], tr.final_w[sl][np.all(np.isfinite(tr.final_w[sl]), axis=1)]])
    measured, bound = 0.0, 0.0
    sizes = p.client_sizes
    for j in range(n_pts):
        w_g = centres[j % len(centres)]
        i = int(rng.integers(p.n_clients))
        X = p.X[0, i, :sizes[i]]
        wts = np.full(sizes[i], 1.0 / sizes[i])
        u = rng.standard_normal(p.dim)
        w = w_g + radius * rng.uniform() ** (1 / p.dim) * u / np.linalg.norm(u)
        H = regularizer_hessian(X, wts, w, w_g, HYP["beta"], HYP["sigma"], p.n_classes)
        measured = max(measured, float(np.max(np.abs(np.linalg.eigvalsh(H)))))
        zr = X @ w_g.reshape(-1, p.n_classes)
        bound = max(bound, float(r_bound(X[None, None], wts[None, None], zr[None, None], HYP["beta"], HYP["sigma"],
                                         np.array([radius]))[0, 0]))
    verdict = "holds" if measured <= bound else "violated"
    return [CheckResult("fedmrur.assumption1_r", PAPER, "bound", verdict, measured=measured, bound=bound,
                        ratio=bound / measured if measured > 0 else None, problem=e["key"],
                        params={"setting": "regularizer of the bound checks", **HYP, "radius": radius,
                                "points": n_pts},
                        source=f"{fedmrur_records.SEED}, Assumption 1 and eqs. (3)-(5)", self_check=True,
                        extra={"vacuity": "none: the left side, the spectral norm of R's Hessian, has no trivial "
                                          "bound; the row validates the tool's own r (an implementation self-check)"},
                        detail="implementation self-check of the tool's closed-form r (the constant the bound checks "
                               "plug into Theorem 1), not a statement of the paper: "
                               f"max spectral norm of the exact Hessian of R at {n_pts} random points of the balls "
                               f"||w - w_g|| <= {radius:.3g} (the measured radius) around w^0 and the final global "
                               "models, vs the closed-form r bound "
                               "(fedtheory.sim.hyperbolic.r_bound) at the same centres")]
