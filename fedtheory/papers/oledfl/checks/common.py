"""What several OledFL checks share: the problem and run settings of the gossip simulations (seed 002 Sec. V-A),
the per-topology helpers, and the rows decided on each reading of W (Metropolis, lazy Metropolis) and joined."""
from __future__ import annotations

import numpy as np

from fedtheory.checks import FINDINGS, CheckResult, Session, claim_result, combine_readings
from fedtheory.sim import AdditiveNoise, RunConfig, heterogeneous_least_squares

from .. import records as oledfl_records

PAPER = "oledfl"
BETAS = (0.0, 0.3, 0.6, 0.9, 0.99, 1.0, 1.1)
K_LOCAL = 5
LR, LR_DECAY = 0.1, 0.998  # seed 002 Sec. V-A: 'initialized to 0.1 with a decay rate of 0.998 per communication round'
SIGMA2 = 0.01
EPS_FRACTION = 0.01  # rounds-to-eps: eps = EPS_FRACTION * (f(x^0) - f*)
METROPOLIS, LAZY = (0.0, "Metropolis W"), (0.5, "lazy Metropolis W (a=1/2)")
WEIGHTS = (METROPOLIS, LAZY)
W_READING_OF = {METROPOLIS[1]: "definition1", LAZY[1]: "psd"}  # the records' W_READINGS, by the weights decided on


def join_w(rows_by_w: dict[str, list[CheckResult]]) -> list[CheckResult]:
    """Rows decided on each W (the same settings in the same order under every W) joined setting by setting under
    the records' readings of W (combine_readings: a finding only when both give it, else 'ambiguous'). With one W
    (a negative control runs on Metropolis weights) the rows are returned as they are."""
    if len(rows_by_w) < 2:
        return [r for rows in rows_by_w.values() for r in rows]
    labels = list(rows_by_w)
    out = []
    for group in zip(*rows_by_w.values()):
        row = combine_readings({W_READING_OF[w]: r for w, r in zip(labels, group)})
        setting = str(group[0].params.get("setting", "")).replace(f", {labels[0]}", "")
        row.params = {**row.params, "setting": f"{setting}, W: both readings (Metropolis, lazy)"}
        out.append(row)
    return out
STAB_BETAS = (0.0, 0.3, 0.6, 0.9)
PAPER_M = 100
CONTROL_SEEDS = 10  # a negative control must be able to refute: the statistics policy's min_seeds


# Per-profile sizes, read with ``session.pick(SIZES)``: m clients, R seeds and T rounds of the sweeps, coupled pairs
# and rounds of the stability runs, rounds of the local-steps claim, draws of the random topology for Definition 1.
# R and pairs are >= 10 in both profiles: a claim can be refuted from seeds only with at least 10 (StatsPolicy).
SIZES = {
    "quick": {"m": 25, "R": 10, "T": 150, "pairs": 10, "T_stab": 80, "T_K": 80, "draws": 20},
    "full": {"m": 49, "R": 12, "T": 400, "pairs": 24, "T_stab": 200, "T_K": 200, "draws": 100},
}


def shared_problem(session: Session):
    def make():
        m = session.pick(SIZES)["m"]
        p = heterogeneous_least_squares(m, 5, 20, heterogeneity=1.0, random_state=session.seed)
        w0 = session.initial_point(p)
        return p, w0
    return session.memo(("oledfl", "problem"), make)


def problem_label(p) -> str:
    return f"least_squares(m={p.n_clients}, d={p.dim})"


def run_config(rounds, oracle=None, K=K_LOCAL) -> RunConfig:
    return RunConfig(rounds=rounds, local_steps=K, lr=LR, lr_schedule="exponential", lr_decay=LR_DECAY,
                     oracle=oracle if oracle is not None else AdditiveNoise(SIGMA2))


def finite_mean_along(x, axis=None):
    """Mean of the finite entries of ``x`` along ``axis`` (an array; NaN where a slice has none). Unlike fedinit's
    scalar helper it keeps the other axes, e.g. one value per run from a (rounds, runs) trace."""
    x = np.asarray(x, float)
    with np.errstate(all="ignore"):
        cnt = np.sum(np.isfinite(x), axis=axis)
        tot = np.nansum(np.where(np.isfinite(x), x, 0.0), axis=axis)
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def topology_info(tops):
    out = []
    for t in tops:
        if t.time_varying:
            st = t.lambda_stats(32, random_state=0)
            out.append({"name": t.label(), "lam": st["mean"], "lam2": None, "lam_min": None, "static": False})
        else:
            e = t.eigenvalues()
            out.append({"name": t.label(), "lam": float(max(abs(e[1]), abs(e[-1]))), "lam2": float(e[1]),
                        "lam_min": float(e[-1]), "static": True})
    return out


def derived_text(info) -> str:
    if not info["static"]:
        return f"lambda (mean over draws) {info['lam']:.3g}"
    v = {"lam2": info["lam2"], "lam_min": info["lam_min"]}
    bmax = float(oledfl_records.evaluate_definition(oledfl_records.BETA_MAX, v))
    bcons = float(oledfl_records.evaluate_definition(oledfl_records.BETA_CONS, v))
    return (f"lambda {info['lam']:.3g}, lambda_m {info['lam_min']:.3g}; derived: consensus stable for beta < "
            f"{bmax:.3g}, consensus-optimal beta {bcons:.3g}")


def mark_class(rows, finding_class: str):
    """Set the severity class of the rows that are findings (e.g. 'erratum': a table against its own columns)."""
    for r in rows:
        if r.verdict in FINDINGS:
            r.finding_class = finding_class
    return rows


def beta_grid_rows(session, claim, runs_fn, betas, key, seeds, params_fn, detail_fn, mutation):
    """One row per (weights, topology): the claim decided on that row's beta grid, from runs_fn(session, laziness,
    mutation) (per topology j: run[key][j] the paired samples per beta, run['diverged'][j] the diverged runs);
    params_fn(run, j, weights) and detail_fn(run, j, info) give the row's settings and text. All rows are one
    family, joined over the two W readings (join_w)."""
    p, _ = shared_problem(session)
    weights = WEIGHTS[:1] if mutation else WEIGHTS
    runs = [(runs_fn(session, laziness, mutation), label) for laziness, label in weights]
    n_rows = sum(len(run["info"]) for run, _ in runs)
    mut = f"NEGATIVE CONTROL: {mutation.label}. " if mutation else ""
    out: dict[str, list[CheckResult]] = {}
    for run, label in runs:
        for j, info in enumerate(run["info"]):
            mm = {"beta": np.array(betas), "samples": run[key][j], "diverged": run["diverged"][j].any(axis=1),
                  "paired": True}
            out.setdefault(label, []).append(
                claim_result(claim, mm, problem=problem_label(p), params=params_fn(run, j, label), settings=n_rows,
                             seeds=run[seeds], detail=mut + detail_fn(run, j, info)))
    return join_w(out)
