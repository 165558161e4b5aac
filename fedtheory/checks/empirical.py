"""Empirical checks: the papers' claims about their CIFAR experiments, on runs logged by ``fedtheory train``.

Active only with ``fedtheory check --runs DIR`` (``session.runs_dir``); without it every check here
returns nothing. DIR may hold several run directories (found recursively); runs from different
directories that share every setting but the relaxed coefficient beta and the seed form one sweep
(FedAvg counts as beta = 0 of FedInit, X as beta = 0 of X+RI).

* fedinit.empirical.gen_vs_divergence: Thm 3's relation between the generalization gap and
  (1 + beta) sum_t sqrt(Delta^t) across a beta sweep (claim fedinit.exp.gen_tracks_divergence);
* fedinit.empirical.table3: Table 3's shape: accuracy over beta (fedinit.exp.table3_accuracy) and
  Delta^T over beta with the divergence threshold (fedinit.claim.divergence_threshold, the sim layer's
  record, applied to the logged Delta^T, paper's and code's definitions);
* fedmrur.empirical.d_t and fedmrur.empirical.near_orthogonality: d_t >= 1 on every logged round, and
  near-orthogonal client updates in late rounds (any algorithm);
* empirical.runs: every run directory is complete, and a resumed run repeated the killed one's rows.

* fedshift.empirical.thm2: FedShift's Theorem 2 each round, measured D_FA^2 - D_FS^2 (the FedShift
  plug-in logs both from the same client models) against the main-text and appendix readings
  (fedshift.thm2, fedshift.thm2.appendix), layer by layer;

More checks plug in with ``@run_check(id, paper, kind, records)`` on ``fn(session, logs) ->
list[CheckResult]`` (it runs only when --runs gave logs). Negative controls run the same function on the same logs
under a mutation (``run_check(..., control=(description, fn(session, logs)))``; ``fedtheory check --controls --runs
DIR``); claims are decided under the statistics policy (``claim_result(..., settings=, seeds=)``: the runs of a
directory or sweep are its seeds).
"""
from __future__ import annotations

import inspect
import json
from typing import Any, Callable

import numpy as np

from ..theory import experiments as experiment_records
from ..theory import fedinit as fedinit_records
from .verdicts import claim_result
from .base import CheckResult, Control, Session, check

# config fields that do not define a sweep point (what may differ between runs of one sweep)
_NOT_KEY = ("algorithm", "hyperparameters", "seeds", "data_dir", "device", "eval_every", "eval_batch_size",
            "checkpoint_every", "path", "client_chunk", "deterministic")


def run_check(id: str, paper: str, kind: str, records=(), *, control: tuple[str, Callable] | None = None,
              self_check: str = ""):
    """Register ``fn(session, logs)`` as an empirical check: it runs only when ``--runs`` gave logs.
    control: (what is mutated, ``mutated(session, logs)``), the negative control run on the same logs;
    self_check: why the check is an implementation self-check by design (see ``check``)."""
    def with_logs(f: Callable) -> Callable:
        def run(session: Session):
            logs = _logs(session)
            return f(session, logs) if logs else []
        return run

    def deco(fn: Callable):
        ctl = Control(control[0], with_logs(control[1])) if control is not None else None
        wrapper = with_logs(fn)
        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        check(id, paper, kind, records=records, needs_runs=True, control=ctl, self_check=self_check)(wrapper)
        return fn
    return deco


def _logs(session: Session):
    if not session.runs_dir:
        return None
    from ..empirical.runs import find_runs

    return session.memo(("empirical", "logs", session.runs_dir), lambda: find_runs(session.runs_dir, errors=[]))


def _unusable(session: Session) -> list[str]:
    """The run directories under --runs that could not be read (named by the CLI, exit 2)."""
    from ..empirical.runs import find_runs

    def scan():
        errors: list[str] = []
        find_runs(session.runs_dir, errors=errors)
        return errors
    return session.memo(("empirical", "unusable", session.runs_dir), scan)


# ------------------------------------------------------------------------------------ per-run values


def _run_values(log, spec) -> dict[str, Any]:
    r = spec["run"]
    f = log.run_frame(r)
    delta = f["delta"].to_numpy(dtype=float)
    rounds = f["round"].to_numpy()
    diverged = log.diverged(r)
    later = rounds >= 1
    n_classes = int(log.manifest.get("dataset", {}).get("n_classes", 10))
    acc = log.final(r, "test_acc")
    final_round = int(rounds.max()) if len(rounds) else 0
    complete = final_round == int(log.config["rounds"])
    return {"beta": float(spec.get("beta", 0.0)), "seed": spec["seed"], "diverged": diverged, "complete": complete,
            "gen_gap": float("nan") if diverged else _at_round(f, "gen_gap", final_round),
            "sum_sqrt_delta": float("nan") if diverged else float(np.sum(np.sqrt(delta[later]))),
            "delta_T": float("nan") if diverged else _at_round(f, "delta", final_round),
            "delta_code_T": float("nan") if diverged else _at_round(f, "delta_code", final_round),
            "acc": 1.0 / n_classes if diverged else acc, "chance": 1.0 / n_classes, "rounds": final_round}


def _at_round(f, col, t):
    v = f.loc[f["round"] == t, col].to_numpy(dtype=float)
    return float(v[0]) if v.size else float("nan")


def _base_algorithm(log, spec) -> tuple[str, dict]:
    from ..empirical import algorithms as A

    name = log.config["algorithm"]
    relaxed = name.lower().endswith("+ri")
    base = name[:-3] if relaxed else name
    try:
        reg = A.resolve(name)[0]
        # the relaxed coefficient is what the sweep varies: FedInit's beta, or +RI's beta / ri_beta
        ri_key = A.ri_name(reg) if relaxed else "beta" if reg.name == "FedInit" else None
        defaults = {k: v for k, v in A.hyperparameter_names(name).items() if k != ri_key
                    and v is not inspect.Parameter.empty}
    except Exception:  # noqa: BLE001 - an algorithm this build does not know: group by its name only
        ri_key, defaults = ("beta" if relaxed or base.lower() == "fedinit" else None), {}
    hp = {k: v for k, v in spec["hyperparameters"].items() if k != ri_key}
    if base.lower() == "fedinit":
        base = "FedAvg"
    return base, {**defaults, **hp}


def _sweeps(logs) -> list[dict[str, Any]]:
    """Groups of runs that differ only in beta and seed."""
    groups: dict[str, dict[str, Any]] = {}
    for lg in logs:
        comm = ((lg.manifest.get("algorithm") or {}).get("classes") or {}).get("comm", "Server")
        if comm != "Server":  # FedInit's statements are about server FL (gossip runs: OledFL's own records)
            continue
        cfg = {k: v for k, v in lg.config.items() if k not in _NOT_KEY}
        for spec in lg.runs:
            base, hp = _base_algorithm(lg, spec)
            key = json.dumps({"cfg": cfg, "alg": base.lower(), "hp": hp}, sort_keys=True, default=str)
            g = groups.setdefault(key, {"base": base, "hp": hp, "cfg": cfg, "runs": [], "dirs": set(), "seen": set(),
                                        "duplicates": 0})
            point = (float(spec.get("beta", 0.0)), int(spec["seed"]))
            if point in g["seen"]:  # the same run logged twice (e.g. a copied directory): count it once
                g["duplicates"] += 1
                continue
            g["seen"].add(point)
            g["runs"].append(_run_values(lg, spec))
            g["dirs"].add(str(lg.path))
    for g in groups.values():
        g["label"] = "FedInit" if g["base"].lower() == "fedavg" else f"{g['base']}+RI"
    return list(groups.values())


def _dup_note(g) -> str:
    return f"; {g['duplicates']} duplicate (beta, seed) run(s) ignored" if g["duplicates"] else ""


def _problem(cfg) -> str:
    part = cfg["partition"]
    if part.startswith("dirichlet"):
        part += f"({cfg['alpha']:g})"
    elif part == "pathological":
        part += f"({cfg['classes_per_client']})"
    n = cfg["clients_per_round"] or cfg["n_clients"]
    return f"{cfg['dataset']}/{cfg['model']}/{part}, {n} of {cfg['n_clients']} clients, T={cfg['rounds']}"


def _per_beta(runs, key):
    betas = np.array(sorted({r["beta"] for r in runs}))
    mean, se, div = [], [], []
    for b in betas:
        v = np.array([r[key] for r in runs if r["beta"] == b], float)
        ok = v[np.isfinite(v)]
        mean.append(ok.mean() if ok.size else np.nan)
        se.append(ok.std(ddof=1) / np.sqrt(ok.size) if ok.size > 1 else 0.0)
        div.append(any(r["diverged"] for r in runs if r["beta"] == b))
    return betas, np.array(mean), np.array(se), np.array(div)


def _beta_sweeps(logs):
    """(group, its complete runs, their betas sorted) for every group of ``_sweeps`` with two betas or more."""
    for g in _sweeps(logs):
        runs = [r for r in g["runs"] if r["complete"]]
        betas = sorted({r["beta"] for r in runs})
        if len(betas) >= 2:
            yield g, runs, betas


# ------------------------------------------------------------------------------------ FedInit


def _by_beta_seed(runs, key, betas) -> np.ndarray:
    """(betas, seeds) values of ``key``, aligned by seed so that a column is one seed across the betas (the runs of a
    sweep share their seeds: paired), NaN where a (beta, seed) run is missing (diverged runs: see _run_values)."""
    seeds = sorted({r["seed"] for r in runs}, key=str)
    out = np.full((len(betas), len(seeds)), np.nan)
    col = {s: j for j, s in enumerate(seeds)}
    row = {float(b): i for i, b in enumerate(betas)}
    for r in runs:
        if float(r["beta"]) in row:
            out[row[float(r["beta"])], col[r["seed"]]] = r[key]
    return out


def _gen_vs_divergence_rows(session, logs, falling_gap: bool = False):
    """falling_gap: the control's mutated sweep, each run's generalization gap replaced by minus its
    sum_t sqrt(Delta^t) (a gap that falls as the divergence grows)."""
    out = []
    sweeps = list(_beta_sweeps(logs))
    for g, runs, betas in sweeps:
        gap = [-r["sum_sqrt_delta"] if falling_gap else r["gen_gap"] for r in runs]
        beta = [r["beta"] for r in runs]
        vs_beta = claim_result(experiment_records.GEN_TRACKS_DIVERGENCE, {"gen_gap": gap, "divergence_term": beta,
                                                                       "beta": beta})
        n_div = sum(r["diverged"] for r in runs)
        for label, x in (("sum_t sqrt(Delta^t)", [r["sum_sqrt_delta"] for r in runs]),
                         ("(1+beta) sum_t sqrt(Delta^t)", [(1 + r["beta"]) * r["sum_sqrt_delta"] for r in runs])):
            res = claim_result(experiment_records.GEN_TRACKS_DIVERGENCE, {"gen_gap": gap, "divergence_term": x, "beta": beta},
                               problem=_problem(g["cfg"]), settings=2 * len(sweeps),
                               seeds=sum(np.isfinite(v) for v in gap),
                               params={"setting": f"{g['label']}: gap vs {label}", "runs": len(runs), "betas": betas},
                               detail=f"for comparison, gap vs beta alone: {vs_beta.detail.split(';')[0]}"
                                      + (f"; {n_div} diverged run(s) left out" if n_div else "") + _dup_note(g)
                                      + ("; control: the gap replaced by -sum_t sqrt(Delta^t)" if falling_gap else ""))
            res.extra["dirs"] = sorted(g["dirs"])
            out.append(res)
    return out


@run_check("fedinit.empirical.gen_vs_divergence", "fedinit", "claim",
           records=("fedinit.exp.gen_tracks_divergence", "fedinit.thm3.rederived"),
           control=("each run's generalization gap replaced by minus its sum_t sqrt(Delta^t): a gap that falls as the "
                    "divergence grows", lambda s, logs: _gen_vs_divergence_rows(s, logs, falling_gap=True)))
def gen_vs_divergence(session, logs):
    """Across each beta sweep, the rank correlation of the generalization gap with Thm 3's divergence term."""
    return _gen_vs_divergence_rows(session, logs)


def _table3_rows(session, logs, chance_positive: bool = False):
    """chance_positive: the control's mutated sweep, every beta > 0 run at chance accuracy (1 / n_classes)."""
    out = []
    sweeps = [(g, runs, betas) for g, runs, betas in _beta_sweeps(logs) if 0.0 in betas]
    for g, runs, betas in sweeps:
        if chance_positive:
            runs = [dict(r, acc=r["chance"]) if r["beta"] > 0 else r for r in runs]
        problem = _problem(g["cfg"])
        b, _, _, div = _per_beta(runs, "acc")
        acc = _by_beta_seed(runs, "acc", b)
        out.append(claim_result(experiment_records.TABLE3_ACCURACY, {"beta": b, "acc": acc}, problem=problem,
                                settings=len(sweeps), seeds=int(np.min(np.sum(np.isfinite(acc), axis=1))),
                                params={"setting": f"{g['label']}: final test accuracy", "runs": len(runs)},
                                detail="diverged runs count at chance accuracy" + _dup_note(g)
                                       + ("; control: every beta > 0 run at chance accuracy" if chance_positive else "")))
        nonneg = b >= 0
        for col, label in (("delta_T", "Delta^T (paper: all clients)"), ("delta_code_T", "Delta^T (authors' code)")):
            _, d, _, _ = _per_beta(runs, col)
            m = {"beta": b[nonneg], "delta": d[nonneg], "delta_runs": _by_beta_seed(runs, col, b)[nonneg],
                 "diverged": div[nonneg]}
            out.append(claim_result(fedinit_records.CLAIM_THRESHOLD, m, problem=problem, settings=2 * len(sweeps),
                                    seeds=int(np.min(np.sum(np.isfinite(acc), axis=1))),
                                    params={"setting": f"{g['label']}: {label}", "runs": len(runs)},
                                    detail="diverged = the trainer flagged a non-finite or exploding model" + _dup_note(g)))
    return out


@run_check("fedinit.empirical.table3", "fedinit", "claim",
           records=("fedinit.exp.table3_accuracy", "fedinit.claim.divergence_threshold"),
           control=("every beta > 0 run at chance accuracy: relaxed initialisation then loses to FedAvg",
                    lambda s, logs: _table3_rows(s, logs, chance_positive=True)))
def table3(session, logs):
    """Table 3's shape on each beta sweep: accuracy over beta, and Delta^T over beta with the threshold."""
    return _table3_rows(session, logs)


# ------------------------------------------------------------------------------------ FedMRUR


@run_check("fedmrur.empirical.d_t", "fedmrur", "identity", records=("fedmrur.exp.d_t",),
           self_check="d_t = sum_i ||Delta_i^t|| / ||sum_i Delta_i^t|| >= 1 for any vectors (the triangle inequality): "
                      "a test of the logging, which no run can make fail")
def d_t(session, logs):
    """d_t >= 1 on every logged round, up to the run's float rounding."""
    out = []
    for lg in logs:
        v = lg.metrics["d_t"].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if not v.size:
            continue
        eps = 1e-5 if lg.config.get("dtype", "float32") == "float32" else 1e-12
        lo = float(v.min())
        out.append(CheckResult(experiment_records.D_T_AT_LEAST_1.id, "fedmrur", "identity", "holds" if lo >= 1 - eps else "violated",
                               measured=lo, bound=1.0, problem=_problem(lg.config), source=experiment_records.D_T_AT_LEAST_1.source,
                               params={"setting": lg.config["algorithm"], "rounds_x_runs": int(v.size)},
                               detail=f"min d_t over {v.size} logged (round, run) pairs = {lo:.6g} (rounding "
                                      f"tolerance {eps:g}); max {float(v.max()):.4g}",
                               extra={"dir": str(lg.path)}))
    return out


def _shared_momentum(lg) -> bool:
    """The logged algorithm adds a server momentum common to every client to each local step (FedCM, MoFedSAM,
    FedMRUR): its client updates are aligned by construction."""
    classes = ((lg.manifest.get("algorithm") or {}).get("classes") or {}).get("local") or []
    return "ClientMomentum" in classes


def _near_orthogonality_rows(session, logs, parallel: bool = False):
    """parallel: the control's mutated logs, every pair of client updates parallel (|cos| = 1 on every round)."""
    out = []
    live = [lg for lg in logs if len(lg.metrics[lg.metrics["round"] >= 1])]
    for lg in live:
        m = lg.metrics[lg.metrics["round"] >= 1]
        piv = lambda c: m.pivot(index="round", columns="run", values=c).to_numpy(dtype=float)
        N = int(lg.manifest.get("clients_per_round") or lg.config["n_clients"])
        cos_abs = piv("cos_abs_mean")
        meas = {"cos_abs_mean": np.ones_like(cos_abs) if parallel else cos_abs, "cos_mean": piv("cos_mean"),
                "d_t_over_sqrtN": piv("d_t") / np.sqrt(N)}
        res = claim_result(experiment_records.NEAR_ORTHOGONAL, meas, problem=_problem(lg.config), settings=len(live),
                           seeds=int(np.sum(np.isfinite(cos_abs).any(axis=0))),
                           params={"setting": lg.config["algorithm"], "runs": len(lg.runs), "clients_per_round": N},
                           detail="control: every |cos| set to 1" if parallel else "")
        if _shared_momentum(lg):
            res.scope = "by_construction"
            res.detail = ("built in, not counted: every client adds the same server momentum to its local steps, so "
                          "the updates share a component by construction. " + res.detail)
        res.extra["dir"] = str(lg.path)
        out.append(res)
    return out


@run_check("fedmrur.empirical.near_orthogonality", "fedmrur", "claim", records=("fedmrur.exp.near_orthogonality",),
           control=("every pair of client updates made parallel (|cos| = 1 on every logged round)",
                    lambda s, logs: _near_orthogonality_rows(s, logs, parallel=True)))
def near_orthogonality(session, logs):
    """Late-round mean |cosine| between client updates, within 0.1 over the runs (statistics policy)."""
    return _near_orthogonality_rows(session, logs)


# ------------------------------------------------------------------------------------ FedShift

# |measured - predicted| / (D_FA^2 + D_FS^2): float rounding of sums over every weight of the network
_SHIFT_TOL = {"float64": 1e-9, "float32": 1e-4}


def _fedshift_thm2_rows(session, logs, printed_only: bool = False):
    """printed_only: the control, the main text's eq. (12) alone (the appendix form's own control: the printed form
    that contradicts the derivation must be found violated on the same logs)."""
    from ..theory import fedshift as fedshift_records
    from .fedshift import EQ12_FINDING

    records = (fedshift_records.THM2_MAIN,) if printed_only else (fedshift_records.THM2_MAIN,
                                                                  fedshift_records.THM2_APPENDIX)
    out = []
    for lg in logs:
        if "shift_D_FA2" not in lg.metrics:
            continue
        info = (lg.manifest.get("plugins") or {}).get("weight_shift", {})
        blocks = info.get("block_sizes")
        if not blocks:
            continue
        m = lg.metrics[lg.metrics["round"] >= 1]
        piv = lambda c: m.pivot(index="round", columns="run", values=c).to_numpy(dtype=float)
        fa, fs, Ii = piv("shift_D_FA2"), piv("shift_D_FS2"), piv("shift_I")
        Kk = float(lg.manifest.get("clients_per_round") or lg.config["n_clients"])
        diff, scale = fa - fs, fa + fs
        dtype = lg.config.get("dtype", "float32")
        tol = _SHIFT_TOL.get(dtype, 1e-4)
        for rec in records:
            pred = np.zeros_like(diff)
            for j, Pb in enumerate(blocks):
                sfx = f"_b{j}" if len(blocks) > 1 else ""
                with np.errstate(divide="ignore", invalid="ignore"):
                    pred = pred + rec.evaluate({"I": Ii, "S": Kk - Ii, "K": Kk, "P": float(Pb),
                                                "m_t": piv(f"shift_m_prev{sfx}"), "m_t1": piv(f"shift_m_next{sfx}")})
            live = np.isfinite(diff)
            undefined = int(np.sum(live & ~np.isfinite(pred)))
            with np.errstate(divide="ignore", invalid="ignore"):
                res = np.where(live & np.isfinite(pred), np.abs(diff - pred) / np.maximum(scale, 1e-300), np.nan)
            worst = float(np.nanmax(res)) if np.isfinite(res).any() else float("nan")
            ok = undefined == 0 and worst <= tol
            detail = (f"max over {int(live.sum())} logged rounds x runs of |measured - predicted| / (D_FA^2 + D_FS^2) = "
                      f"{worst:.3g} (tolerance {tol:g} for {dtype} sums over {int(sum(blocks))} weights, "
                      f"{len(blocks)} layer(s))" + (f"; undefined (m^(t+1) = 0) in {undefined}" if undefined else ""))
            if np.isfinite(res).any() and not ok:
                t, r = np.unravel_index(np.nanargmax(np.where(np.isfinite(res), res, -1)), res.shape)
                detail += f"; worst: round {t + 1}, run {r}: measured {diff[t, r]:.6g}, predicted {pred[t, r]:.6g}"
            printed = rec is fedshift_records.THM2_MAIN
            out.append(CheckResult(rec.id, "fedshift", "identity", "holds" if ok else "violated", measured=worst,
                                   bound=tol, problem=_problem(lg.config), source=rec.source,
                                   params={"setting": lg.config["algorithm"], "runs": len(lg.runs), "K": Kk},
                                   detail=detail, extra={"dir": str(lg.path)},
                                   finding=EQ12_FINDING if printed else "",
                                   finding_class="erratum" if printed and not ok else ""))
    return out


@run_check("fedshift.empirical.thm2", "fedshift", "identity", records=("fedshift.thm2", "fedshift.thm2.appendix"),
           control=("the main text's eq. (12) alone, the printed form that differs from the appendix's derivation "
                    "(eq. 30): it must be found violated on the same logs",
                    lambda s, logs: _fedshift_thm2_rows(s, logs, printed_only=True)))
def fedshift_thm2(session, logs):
    """Theorem 2's divergence difference, measured (D_FA^2 - D_FS^2 of each round, both from the same client models)
    against each encoded reading (main text eq. 12, appendix eq. 30), summed over the layers the shift acts on."""
    return _fedshift_thm2_rows(session, logs)


# ------------------------------------------------------------------------------------ integrity


@check("empirical.runs", "empirical", "identity", records=(), needs_runs=True,
       self_check="an integrity check of the tool's own run directories (complete rounds, bit-identical rows after a "
                  "resume), not a statement of any paper")
def runs_integrity(session):
    """Every run directory completed all its rounds, and a resumed run recomputed bit-identical rows."""
    logs = _logs(session)
    if logs is None:
        return []
    if not logs:
        return [CheckResult("empirical.runs", "empirical", "identity", "inconclusive", problem=str(session.runs_dir),
                            detail="no fedtheory run directories (manifest.json + metrics.csv) found here")]
    out = [CheckResult("empirical.runs", "empirical", "identity", "inconclusive", problem=str(session.runs_dir),
                       detail=f"unusable run directory: {err}") for err in _unusable(session)]
    for lg in logs:
        T = int(lg.config["rounds"])
        R = len(lg.runs)
        rows = lg.metrics
        have = {(int(a), int(b)) for a, b in zip(rows["round"], rows["run"])}
        missing = [(t, r) for t in range(T + 1) for r in range(R) if (t, r) not in have]
        resumes = lg.manifest.get("resumes") or []
        mism = [x for x in resumes if x.get("rows_compared") and not x.get("bit_identical", True)]
        if missing or lg.status != "completed":
            verdict, detail = "inconclusive", (f"status {lg.status}; {len(missing)} of {(T + 1) * R} (round, run) rows "
                                               f"missing (resume it with fedtheory train --out DIR --resume)")
        elif mism:
            det = lg.config.get("deterministic", True)
            verdict = "violated" if det else "inconclusive"
            detail = (f"after a resume the recomputed rows differ from the interrupted run's by up to "
                      f"{max(x['max_abs_difference'] for x in mism):.3g}" + ("" if det else " (non-deterministic kernels "
                                                                                    "were allowed)"))
        else:
            verdict = "holds"
            detail = (f"{R} run(s) x {T} rounds complete" + (f"; {len(resumes)} resume(s), recomputed rows "
                                                              "bit-identical" if resumes else ""))
        out.append(CheckResult("empirical.runs", "empirical", "identity", verdict, problem=_problem(lg.config),
                               params={"setting": lg.config["algorithm"], "runs": R}, detail=detail,
                               extra={"dir": str(lg.path), "versions": lg.manifest.get("versions", {})}))
    return out
