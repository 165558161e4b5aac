"""A bound against its measurement, per run (:func:`compare_mean`: E[lhs] <= E[rhs] from per-run samples) or per
round (:func:`compare_rounds`: Holm-Bonferroni over the family of rounds); a gap within the rounding tolerance
(``checks.rounding``) is equality."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .._validation import check_choice
from .rounding import ROUNDING_RTOL, rounding_tolerance

__all__ = ["Z3_ALPHA", "compare_mean", "compare_rounds", "holm_reject"]


def compare_mean(lhs_runs: np.ndarray, rhs_runs: np.ndarray | float, z: float = 3.0,
                 rounding_scale: float = 0.0) -> tuple[str, dict]:
    """Decide ``E[lhs] <= E[rhs]`` from per-run samples (both estimated by their mean over runs).

    holds: mean(rhs - lhs) >= 0, or below 0 by no more than the rounding tolerance (equality: ``rounding_tolerance``);
    violated: below minus the tolerance and significantly negative, i.e. below minus the one-sided Student-t
    critical value (n - 1 degrees of freedom) at the level of a z-SE normal test (z = 3: 1.35e-3) times the
    standard error; exact (se = 0, e.g. one deterministic run): any gap beyond the tolerance; inconclusive otherwise.
    rounding_scale: the magnitude of the quantities the measurement was computed from (``rounding_scale_of``: loss
    values, points, gradients of the run); the tolerance is ROUNDING_RTOL times the largest of it, the measurement
    and the bound. A non-finite measurement where the bound is finite is a divergence: 'violated', with which runs,
    and no number (measured and ratio None).

    Parameters
    ----------
    lhs_runs : array_like
        The measured left side, one value per run.
    rhs_runs : float or array_like
        The bound, one value or one per run.
    z : float, default 3.0
        The level, as the number of standard errors of a one-sided normal test.
    rounding_scale : float, default 0.0
        The magnitude of what the measurement was computed from.

    Returns
    -------
    tuple of (str, dict)
        The verdict (``"holds"``, ``"violated"`` or ``"inconclusive"``) and what it rests on: ``measured``,
        ``bound``, ``ratio``, ``runs``, the standard error and critical value, and a ``detail`` where there is one.
    """
    from scipy import stats

    lhs = np.asarray(lhs_runs, float)
    rhs = np.broadcast_to(np.asarray(rhs_runs, float), lhs.shape)
    diverged = ~np.isfinite(lhs) & np.isfinite(rhs)
    if diverged.any():  # a diverged run contradicts a finite bound: never dropped, never 'holds'
        runs = np.flatnonzero(diverged.ravel())
        nan = int(np.isnan(lhs.ravel()[runs]).sum())
        return "violated", {"measured": None, "bound": float(np.mean(rhs[np.isfinite(rhs)])), "ratio": None,
                            "runs": lhs.size, "diverged_runs": int(runs.size), "diverged_run_index": runs.tolist()[:20],
                            "detail": f"the measurement is non-finite (diverged: {nan} NaN, {runs.size - nan} "
                                      f"infinite) in {runs.size} of {lhs.size} runs (runs "
                                      f"{', '.join(map(str, runs[:8]))}{' ...' if runs.size > 8 else ''}) where the "
                                      "bound is finite"}
    if not np.all(np.isfinite(rhs)):
        return "inconclusive", {"runs": lhs.size, "detail": "the bound is not finite (undefined) at these values"}
    gap = rhs - lhs
    n = gap.size
    mean = float(np.mean(gap))
    se = float(np.std(gap, ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    m_l, m_r = float(np.mean(lhs)), float(np.mean(rhs))
    deterministic = bool(np.all(gap == gap.flat[0]))  # one run, or every run the same: no statistics to do
    crit = float(stats.t.isf(0.5 * math.erfc(z / math.sqrt(2.0)), n - 1)) if n > 1 and not deterministic else z
    info = {"measured": m_l, "measured_se": float(np.std(lhs, ddof=1) / np.sqrt(n)) if n > 1 else 0.0,
            "bound": m_r, "ratio": (m_r / m_l) if m_l > 0 else (math.inf if m_r > 0 else None), "runs": n,
            "t_critical": None if deterministic else crit}
    tol = float(rounding_tolerance(m_l, m_r, rounding_scale))
    if deterministic:
        info["deterministic"] = True
        info["detail"] = (f"deterministic: {'the run' if n == 1 else f'every one of the {n} runs'} gives the same "
                          f"measurement, decided on it without statistics (measured {m_l:.4g} vs bound {m_r:.4g})")
        if mean < -tol:
            return "violated", info
        if mean < 0:
            _equal_to_rounding(info, mean, tol, rounding_scale)
        return "holds", info
    if mean >= 0:
        return "holds", info
    if mean >= -tol:  # a gap no larger than the rounding of what was computed: equality, whatever its spread
        _equal_to_rounding(info, mean, tol, rounding_scale)
        return "holds", info
    if mean + crit * se < 0:
        return "violated", info
    return "inconclusive", info


def holm_reject(pvalues: Sequence[float], alpha: float) -> np.ndarray:
    """Holm-Bonferroni step-down: which of a family of one-sided tests reject at family-wise level ``alpha``."""
    p = np.asarray(pvalues, float)
    m = p.size
    order = np.argsort(p)
    reject = np.zeros(m, bool)
    for rank, i in enumerate(order):
        if p[i] <= alpha / (m - rank):
            reject[i] = True
        else:
            break
    return reject


Z3_ALPHA = 0.5 * math.erfc(3.0 / math.sqrt(2.0))  # one-sided level of a single 3-SE test (~1.35e-3)


def _rounds_text(labels: np.ndarray, rows: np.ndarray, name: str, most: int = 10) -> str:
    shown = ", ".join(f"{float(v):g}" for v in labels[rows[:most]])
    return f"{name} = {shown}" + (f", ... ({rows.size} in all)" if rows.size > most else "")


def _rounding_below(mean, m_l, m_r, scale=0.0) -> np.ndarray:
    """Gaps (bound - measured) below zero by more than the rounding tolerance."""
    return np.asarray(mean) < -rounding_tolerance(m_l, m_r, scale)


def _equal_to_rounding(info: dict, gap: float, tol: float, scale: float) -> None:
    """Say in ``info`` that a negative gap was counted as equality: within the rounding tolerance."""
    info["rounding"] = {"gap": float(gap), "tolerance": float(tol), "scale": float(np.max(scale))}
    text = (f"equal to rounding: the measurement exceeds the bound by {-gap:.3g}, within the rounding tolerance "
            f"{tol:.3g} = {ROUNDING_RTOL:g} x {tol / ROUNDING_RTOL:.4g} (the largest of the measurement, the bound and "
            f"the magnitude of what the run computed)")
    info["detail"] = (info["detail"] + "; " if info.get("detail") else "") + text


def _deterministic_rounds(lhs, rhs, mean, m_l, m_r, ratios, j, index, excluded, n, labels, label,
                          scale=0.0) -> tuple[str, dict]:
    """compare_rounds when every run follows the same trajectory (or there is one): each round is decided on it,
    exactly, without statistics (a gap within the rounding tolerance is equality: attained, not violated); the worst
    round is the one with the largest gap (measured above the bound)."""
    m_fam = int(lhs.shape[0])
    lab = (np.asarray(labels, float)[index] if labels is not None else index + 1.0)
    runs = "the run" if n == 1 else f"every one of the {n} runs (identical at every compared round)"
    over = _rounding_below(mean, m_l, m_r, scale)
    info = {"measured": float(m_l[j]), "bound": float(m_r[j]), "ratio": float(ratios[j]),
            "tightest_round": int(index[j]), "rounds_excluded": excluded, "rounds": m_fam, "runs": n,
            "rounds_violated": int(np.sum(over)), "family_size": m_fam, "correction": "none (deterministic)",
            "family_alpha": None, "deterministic": True, "rounds_significant_uncorrected": int(np.sum(over)),
            "rounds_significant_holm": int(np.sum(over))}
    below = np.flatnonzero(over)
    info["rounds_below"] = [float(v) for v in lab[below]]
    if below.size == 0:
        _rounds_equal_to_rounding(info, mean, m_l, m_r, scale, lab, label)
        return "holds", info
    w = int(below[np.argmin(mean[below])])
    info["worst_round"] = int(index[w])
    info["runs_violating_at_worst"] = n
    info["rounds_failed"] = [float(v) for v in lab[below]]
    info["detail"] = (f"deterministic: {runs} gives the same trajectory, decided on it without statistics; the "
                      f"measurement is above the bound at {below.size} of {m_fam} compared rounds "
                      f"({_rounds_text(lab, below, label)}); the largest gap at {label} = {float(lab[w]):g}: measured "
                      f"{m_l[w]:.4g} vs bound {m_r[w]:.4g}, gap {mean[w]:.3g}")
    return "violated", info


def _rounds_equal_to_rounding(info: dict, mean, m_l, m_r, scale, lab, label: str) -> np.ndarray:
    """The rounds whose negative gap is within the rounding tolerance (equality); said in ``info`` when there are
    any. Returns their mask."""
    tol = rounding_tolerance(m_l, m_r, scale)
    within = (np.asarray(mean) < 0) & ~(np.asarray(mean) < -tol)
    if np.any(within):
        w = int(np.argmin(np.where(within, mean, np.inf)))
        _equal_to_rounding(info, float(mean[w]), float(np.broadcast_to(tol, np.shape(mean))[w]), scale)
        info["rounding"]["rounds"] = [float(v) for v in lab[np.flatnonzero(within)]][:20]
        info["detail"] = info["detail"].replace("equal to rounding:", f"equal to rounding at {int(within.sum())} "
                                                f"{label}(s) ({_rounds_text(lab, np.flatnonzero(within), label)}):", 1)
    return within


def compare_rounds(lhs: np.ndarray, rhs: np.ndarray, z: float = 3.0, correction: str = "holm",
                   family_alpha: float | None = None, labels: Sequence[float] | None = None,
                   label: str = "round", rounding_scale: float = 0.0) -> tuple[str, dict]:
    """A per-round inequality over (rounds, runs) (e.g. a bound checked at every horizon T' = 1..T).

    holds: every round's mean satisfies it. violated: some round is significantly violated after a
    simultaneous correction over the family of rounds: ``correction='holm'`` (default) runs Holm-Bonferroni
    on the one-sided Student-t p-values (n - 1 degrees of freedom over n runs) of the per-round mean gaps at
    family-wise level ``family_alpha`` (default: the one-sided level of one z-SE normal test, z = 3: 1.35e-3);
    ``'none'`` is the uncorrected per-round z-SE rule. Otherwise inconclusive.
    info: the tightest round's ratio, the family size, the number of rounds significant without and with the
    correction, and at the worst round how many runs (seeds) have a negative gap themselves. A violated or
    inconclusive verdict also gets ``detail``: the rounds whose mean is above the bound (``rounds_failed``: the
    significant ones), the corrected threshold, and the worst round's gap. labels: what each row is called in that
    text, e.g. the paper's T of every compared round (default: row i is round i + 1); label: its name ('T').
    rounding_scale: as in :func:`compare_mean`: a round whose mean gap is within the rounding tolerance is equality,
    never counted against the bound (said in ``info['rounding']``).

    Parameters
    ----------
    lhs : array_like
        The measured left side, (rounds, runs).
    rhs : array_like
        The bound, broadcastable to ``lhs``.
    z : float, default 3.0
        The level, as the number of standard errors of a one-sided normal test.
    correction : {"holm", "none"}, default "holm"
        The multiple-testing correction over the rounds.
    family_alpha : float, optional
        The family-wise level (default: the level of one z-SE test).
    labels : sequence of float, optional
        What each row is called in the text (the paper's T of every compared round).
    label : str, default "round"
        The name of the labels.
    rounding_scale : float, default 0.0
        The magnitude of what the measurement was computed from.

    Returns
    -------
    tuple of (str, dict)
        The verdict (``"holds"``, ``"violated"`` or ``"inconclusive"``) and ``info``: the tightest round's measured,
        bound and ratio, the family size, the rounds significant without and with the correction, and ``detail``.
    """
    from scipy import stats

    check_choice("correction", correction, ("holm", "none"))
    lhs = np.asarray(lhs, float)
    rhs = np.broadcast_to(np.asarray(rhs, float), lhs.shape)
    rhs_ok = np.all(np.isfinite(rhs), axis=1)
    diverged = ~np.isfinite(lhs) & np.isfinite(rhs)
    if diverged.any():  # non-finite measurements where the bound is finite: a divergence, reported, never dropped
        rounds_d, runs_d = np.nonzero(diverged)
        return "violated", {"measured": None, "bound": float(rhs[rounds_d[0], runs_d[0]]), "ratio": None,
                            "rounds": int(lhs.shape[0]), "runs": int(lhs.shape[1]),
                            "diverged_runs": int(np.unique(runs_d).size), "first_diverged_round": int(rounds_d.min()),
                            "detail": f"the measurement is non-finite (diverged) from round {int(rounds_d.min())} in "
                                      f"{int(np.unique(runs_d).size)} of "
                                      f"{lhs.shape[1]} runs, where the bound is finite"}
    index = np.flatnonzero(rhs_ok)  # rounds where the bound is defined; the others are counted, not judged
    excluded = int(lhs.shape[0] - index.size)
    lhs, rhs = lhs[rhs_ok], rhs[rhs_ok]
    if lhs.size == 0:
        return "inconclusive", {"detail": "the bound is not finite at any round", "rounds_excluded": excluded}
    gap = rhs - lhs
    n = gap.shape[1]
    mean = gap.mean(axis=1)
    se = gap.std(axis=1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)
    m_l, m_r = lhs.mean(axis=1), rhs.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(m_l > 0, m_r / m_l, np.inf)
        tstat = np.where(se > 0, mean / se, np.where(mean < 0, -np.inf, np.inf))
    j = int(np.argmin(ratios))
    if bool(np.all(gap == gap[:, :1])):  # one run, or every run the same trajectory: decided on it
        return _deterministic_rounds(lhs, rhs, mean, m_l, m_r, ratios, j, index, excluded, n, labels, label,
                                     rounding_scale)
    alpha = 0.5 * math.erfc(z / math.sqrt(2.0)) if family_alpha is None else float(family_alpha)
    equal = ~_rounding_below(mean, m_l, m_r, rounding_scale)  # at most the rounding below 0: equality, never counted
    naive = ((mean + z * se < 0) & (se > 0) | ((se == 0) & (mean < 0))) & ~equal
    pvals = stats.t.cdf(tstat, df=max(n - 1, 1)) if n > 1 else np.where(mean < 0, 0.0, 1.0)
    pvals = np.where(equal, 1.0, pvals)
    holm = holm_reject(pvals, alpha)
    sig = holm if correction == "holm" else naive
    info = {"measured": float(m_l[j]), "bound": float(m_r[j]), "ratio": float(ratios[j]),
            "tightest_round": int(index[j]), "rounds_excluded": excluded, "rounds": int(lhs.shape[0]), "runs": n,
            "rounds_violated": int(np.sum((mean < 0) & ~equal)), "family_size": int(lhs.shape[0]),
            "correction": correction, "family_alpha": alpha, "rounds_significant_uncorrected": int(np.sum(naive)),
            "rounds_significant_holm": int(np.sum(holm))}
    lab = (np.asarray(labels, float)[index] if labels is not None else index + 1.0)
    if np.all(equal):
        _rounds_equal_to_rounding(info, mean, m_l, m_r, rounding_scale, lab, label)
        return "holds", info
    m_fam = int(lhs.shape[0])
    if correction == "holm":
        first = alpha / m_fam
        tcrit = float(stats.t.isf(first, max(n - 1, 1))) if n > 1 else math.inf
        rule = (f"Holm-Bonferroni over the {m_fam} at family-wise level {alpha:.3g} (a round counts when its "
                f"one-sided Student-t p-value, {n - 1} df, is <= alpha/(m - rank); the first threshold alpha/m = "
                f"{first:.3g} is a mean gap below -{tcrit:.3g} standard errors)")
    else:
        rule = f"the uncorrected rule (a round counts when its mean gap is below -{z:g} standard errors)"
    below = np.flatnonzero((mean < 0) & ~equal)
    info["rounds_below"] = [float(v) for v in lab[below]]
    if np.any(sig):
        rows = np.flatnonzero(sig)
        w = int(rows[np.lexsort((mean[rows], tstat[rows]))[0]])  # the most significant; ties: the largest gap
        info["worst_round"] = int(index[w])
        info["runs_violating_at_worst"] = int(np.sum(gap[w] < 0))
        info["rounds_failed"] = [float(v) for v in lab[rows]]
        info["detail"] = (f"violated at {rows.size} of {m_fam} compared rounds ({_rounds_text(lab, rows, label)}) by "
                          f"{rule}; the worst, {label} = {float(lab[w]):g}: measured {m_l[w]:.4g} vs bound "
                          f"{m_r[w]:.4g}, mean gap {mean[w]:.3g} +- {se[w]:.2g} (t = {tstat[w]:.3g}), "
                          f"{info['runs_violating_at_worst']} of {n} runs above the bound")
        return "violated", info
    j_min = int(np.argmin(pvals)) if np.size(pvals) else 0
    info["rounds_failed"] = []
    info["detail"] = (f"the mean measurement is above the bound at {below.size} of {m_fam} compared rounds "
                      f"({_rounds_text(lab, below, label)}), none significantly by {rule}; the smallest p-value "
                      f"{float(np.atleast_1d(pvals)[j_min]):.3g} ({label} = {float(lab[j_min]):g}, mean gap "
                      f"{mean[j_min]:.3g} +- {se[j_min]:.2g})")
    return "inconclusive", info
