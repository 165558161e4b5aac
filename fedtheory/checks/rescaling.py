"""Rule 8 on one instance (docs/verdict-rules.md): a bound inconsistent in units under every reading that holds on the
run is decided again on the run rescaled so that its inconsistent terms shrink, inside ``RESCALE_REGIME``
(:func:`rescaled_test`)."""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..theory.core import Bound, MissingValuesError
from .comparisons import compare_mean, compare_rounds

__all__ = ["RESCALE_STEPS", "rescaled_test", "verdict_before"]


def verdict_before(numbers: Mapping[str, Any]) -> str:
    m, b, r = numbers.get("measured"), numbers.get("bound"), numbers.get("ratio")
    return (f"measured {m:.4g} vs bound {b:.4g} (ratio {r:.3g})" if None not in (m, b, r)
            else "no finite comparison")


# t: the inconsistent terms shrink by at least 10^t against the left side; the steps outside the regime are skipped
RESCALE_STEPS = tuple(round(0.1 * k, 1) for k in range(1, 31))


def _regime_factor(vals: Mapping[str, Any], v2: Mapping[str, Any], lhs_factor: float) -> tuple[float, str]:
    """The largest factor (>= 1) by which a value of the statement, or the left side, moved between the run
    (``vals``) and its rescaled copy (``v2``), and the name of that value."""
    worst, name = max(lhs_factor, 1.0 / lhs_factor) if lhs_factor > 0 else math.inf, "the left side"
    for k, v in vals.items():
        if k not in v2:
            continue
        try:
            a, b = np.asarray(v, float), np.asarray(v2[k], float)
        except (TypeError, ValueError):
            continue
        if a.shape != b.shape or not a.size:
            continue
        with np.errstate(all="ignore"):
            r = np.abs(b / a)
        r = r[np.isfinite(r) & (np.abs(a) > 0)]
        if not r.size:
            continue
        f = float(max(np.max(r), 1.0 / np.min(r))) if np.min(r) > 0 else math.inf
        if f > worst:
            worst, name = f, k
    return worst, name


def rescaled_test(bound: Bound, vals, measured_runs, per_round: bool, units_reading, rederive, labels,
                   round_name, sweep_units: bool = True, rounding_scale: float = 0.0) -> dict[str, Any] | None:
    """Rule 8 on one instance: None when the bound is not inconsistent in units under every reading; else the outcome
    on the run rescaled along ``units_check.shrink_direction`` by 10^t, t in RESCALE_STEPS, inside rule 8's regime
    (``RESCALE_REGIME``: the steps that move a value of the statement by more than that factor are not tested): the
    first scale where the comparison is violated, or 'holds' with what was tested, with 'text' in words."""
    from .dimensions import RESCALE_REGIME, regime_text, rescaled_values, units_consequence

    cons = units_consequence(bound, units_reading)
    if cons is None:
        return None
    head = (f"rule 8 (inconsistent in units under every reading; finding {cons['finding']}): ")
    if "needs_reading" in cons:
        return {"verdict": "not_tested", "finding": cons["finding"],
                "text": head + "not tested on a rescaled instance: the check did not say which unit reading of "
                        f"{', '.join(cons['needs_reading'])} the run realises (assess_bound(units_reading=...))"}
    direction, dims, lhs = cons["direction"], cons["dims"], cons["lhs"]
    if direction is None or lhs is None:
        return {"verdict": "not_tested", "finding": cons["finding"],
                "text": head + "no rescaling of loss and parameters shrinks every inconsistent term of the statement, "
                        "so no rescaled instance tests it"}
    x, y = direction

    def at(t, bounded: bool = True):
        """The comparison on the run rescaled by 10^t along the direction; None where a condition fails there, or
        (bounded) where the rescaling leaves rule 8's regime."""
        c, s = 10.0 ** (x * t), 10.0 ** (y * t)
        v2 = rescaled_values(vals, dims, c, s)
        if rederive is not None:
            v2 = dict(rederive(v2))
        fac = c ** float(lhs.f) * s ** float(lhs.w)  # the left side's factor
        if bounded and _regime_factor(vals, v2, fac)[0] > RESCALE_REGIME * (1 + 1e-9):
            return None
        try:
            failed = bound.conditions_failed(v2)
        except MissingValuesError:
            failed = ["(a condition's values are missing)"]
        if failed:
            return None
        with np.errstate(all="ignore"):
            if per_round:
                lhs_r, rhs_r = measured_runs(v2)
                verdict, info = compare_rounds(lhs_r, np.asarray(rhs_r, float) / fac, labels=labels, label=round_name,
                                               rounding_scale=rounding_scale)  # in the run's own units, as lhs_r
            else:
                verdict, info = compare_mean(np.asarray(measured_runs, float),
                                             np.asarray(bound.evaluate(v2), float) / fac, rounding_scale=rounding_scale)
        return verdict, info, v2, c, s, fac

    tried, outside, skipped = [], [], []
    for t in RESCALE_STEPS:
        c, s = 10.0 ** (x * t), 10.0 ** (y * t)
        v2 = rescaled_values(vals, dims, c, s)
        if rederive is not None:
            v2 = dict(rederive(v2))
        moved, what = _regime_factor(vals, v2, c ** float(lhs.f) * s ** float(lhs.w))
        if moved > RESCALE_REGIME * (1 + 1e-9):
            outside.append((t, moved, what))
            break  # farther along the direction the values only move more
        got = at(t)
        if got is None:
            skipped.append(t)
            continue
        verdict, info, v2, c, s, fac = got
        tried.append(t)
        if verdict == "violated":
            shown = {k: float(v) for k, v in v2.items() if np.ndim(v) == 0 and isinstance(v, (int, float))
                     and k in vals and np.ndim(vals[k]) == 0 and not np.isclose(float(v), float(vals[k]), rtol=1e-12)}
            for k in ("measured", "bound"):
                if info.get(k) is not None:
                    info[k] = info[k] * fac
            text = (head + f"false as stated on a rescaled instance inside {regime_text()} (largest move here "
                    f"x{moved:.3g}, {what}): the same run with the loss in units 1/c and the parameters in units 1/s, "
                    f"c = {c:.3g}, s = {s:.3g} (every inconsistent term of the statement shrunk by at least 10^{t:g} "
                    "against the left side; there " + ", ".join(
                        f"{k} = {v:.4g}" for k, v in sorted(shown.items())) + "), where every condition holds: "
                    + (info.get("detail") or f"measured {info['measured']:.4g} vs bound {info['bound']:.4g}")
                    + " (measurement and bound in the rescaled units)")
            info.pop("detail", None)

            def decide(F):
                g = at(math.log10(F))
                if g is None:
                    return False, None
                r = g[1].get("ratio")
                return g[0] == "violated", (None if r is None or not np.isfinite(r) else 1.0 - float(r))

            from .robustness import sweep

            shrink = sweep("the shrink of the inconsistent terms (the units)", 10.0 ** t,
                           ([10.0 ** u for u in RESCALE_STEPS] + [0.9 * 10.0 ** t, 1.1 * 10.0 ** t]) if sweep_units
                           else [], decide, kind="units (a statement inconsistent in units has none fixed), inside "
                                                 "rule 8's regime",
                           note="1/x of the slowest-shrinking inconsistent term against the left side; a value "
                                "outside rule 8's regime counts as lost")
            r0 = info.get("ratio")
            return {"verdict": "violated", "finding": cons["finding"], "t": t, "c": c, "s": s,
                    "reading": cons["reading"], "values": shown, "measured": info.get("measured"),
                    "bound": info.get("bound"), "ratio": r0, "lhs_factor": fac, "shrink_sweep": shrink,
                    "regime": {"factor": RESCALE_REGIME, "moved": moved, "by": what},
                    "margin": None if r0 is None or not np.isfinite(r0) else 1.0 - float(r0),
                    "info": {k: v for k, v in info.items() if k != "series"}, "text": text}
    edge = (f"; beyond t = {outside[0][0]:g} the rescaling leaves the regime ({outside[0][2]} moves x"
            f"{outside[0][1]:.3g})") if outside else ""
    return {"verdict": "holds", "finding": cons["finding"], "tested": tried, "conditions_failed_at": skipped,
            "direction": direction, "regime": {"factor": RESCALE_REGIME,
                                               "left_at": outside[0][0] if outside else None,
                                               "by": outside[0][2] if outside else None},
            "text": head + (f"the bound also holds on the run rescaled inside {regime_text()} (tested 10^t, t = "
                            f"{', '.join(f'{u:g}' for u in tried)}"
                            + (f"; conditions fail at t = {', '.join(f'{u:g}' for u in skipped)}" if skipped else "")
                            + f"{edge}): its units finding stays an erratum" if tried else
                            f"no rescaled instance inside {regime_text()} meets the statement's conditions"
                            f"{edge}: its units finding stays an erratum")}
