"""FedShift's Theorem 2 on runs logged by ``fedtheory train`` (active only with ``fedtheory check --runs DIR``):
fedshift.exp.thm2, each round's measured D_FA^2 - D_FS^2 (the FedShift plug-in logs both from the same client
models) against the main-text and appendix readings (fedshift.thm2, fedshift.thm2.appendix), layer by layer."""
from __future__ import annotations

import numpy as np

from fedtheory.checks import CheckResult, Control, logged_runs_check, run_label

from . import records as fedshift_records
from .checks.theorem2 import EQ12_FINDING

# |measured - predicted| / (D_FA^2 + D_FS^2): float rounding of sums over every weight of the network
_SHIFT_TOL = {"float64": 1e-9, "float32": 1e-4}


def _fedshift_thm2_rows(session, logs, printed_only: bool = False):
    """printed_only: the control, the main text's eq. (12) alone (the appendix form's own control: the printed form
    that contradicts the derivation must be found violated on the same logs)."""
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
            detail = (f"max over {int(live.sum())} logged rounds x runs of |measured - predicted| / (D_FA^2 + D_FS^2) "
                      f"= {worst:.3g} (tolerance {tol:g} for {dtype} sums over {int(sum(blocks))} weights, "
                      f"{len(blocks)} layer(s))" + (f"; undefined (m^(t+1) = 0) in {undefined}" if undefined else ""))
            if np.isfinite(res).any() and not ok:
                t, r = np.unravel_index(np.nanargmax(np.where(np.isfinite(res), res, -1)), res.shape)
                detail += f"; worst: round {t + 1}, run {r}: measured {diff[t, r]:.6g}, predicted {pred[t, r]:.6g}"
            printed = rec is fedshift_records.THM2_MAIN
            out.append(CheckResult(rec.id, "fedshift", "identity", "holds" if ok else "violated", measured=worst,
                                   bound=tol, problem=run_label(lg.config), source=rec.source,
                                   params={"setting": lg.config["algorithm"], "runs": len(lg.runs), "K": Kk},
                                   detail=detail, extra={"dir": str(lg.path)},
                                   finding=EQ12_FINDING if printed else "",
                                   finding_class="erratum" if printed and not ok else ""))
    return out


@logged_runs_check("fedshift.exp.thm2", "fedshift", "identity", records=("fedshift.thm2", "fedshift.thm2.appendix"),
           control=Control("the main text's eq. (12) alone, the printed form that differs from the appendix's "
                    "derivation (eq. 30): it must be found violated on the same logs",
                    lambda s, logs: _fedshift_thm2_rows(s, logs, printed_only=True)))
def fedshift_thm2(session, logs):
    """Theorem 2's divergence difference, measured (D_FA^2 - D_FS^2 of each round, both from the same client models)
    against each encoded reading (main text eq. 12, appendix eq. 30), summed over the layers the shift acts on."""
    return _fedshift_thm2_rows(session, logs)
