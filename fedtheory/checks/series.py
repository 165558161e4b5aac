"""The series a report draws: a per-round bound against its measurement (:func:`round_series`) and a claim's
measurements along its swept variable (:func:`compact_measurements`), thinned and rounded to a few digits."""
from __future__ import annotations

import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["SERIES_POINTS", "compact_measurements", "round_series"]


SERIES_POINTS = 60  # at most this many points per stored series (log-spaced over the rounds)


def _sig(v: float, digits: int = 5) -> float | None:
    """``v`` rounded to ``digits`` significant digits; None when not finite (a gap in a drawn series)."""
    v = float(v)
    return float(f"{v:.{digits}g}") if math.isfinite(v) else None


def round_series(lhs: np.ndarray, rhs: np.ndarray, max_points: int = SERIES_POINTS,
                 keep: Sequence[int] = (), labels: Sequence[float] | None = None,
                 label: str = "round t") -> dict[str, Any]:
    """The per-round series a report draws, from (rounds, runs) arrays: ``x`` the rounds (row i is round i + 1; with
    ``labels``, row i is labels[i] and the axis is called ``label``, e.g. the paper's T),
    log-spaced down to at most ``max_points`` (the first and last round and the rows in ``keep`` always kept),
    ``measured`` / ``measured_se`` the mean of the left side over runs and its standard error, ``bound`` the mean
    right side; floats to 5 significant digits, non-finite values as None (JSON null)."""
    lhs = np.asarray(lhs, float)
    rhs = np.broadcast_to(np.asarray(rhs, float), lhs.shape)
    n, runs = lhs.shape
    keep = sorted({int(k) for k in keep if 0 <= int(k) < n})
    budget = max(2, max_points - len(keep))
    if n <= budget:
        idx = np.arange(n)
    else:  # log-spaced rows; more candidates until the distinct ones fill the budget
        k = budget
        while True:
            idx = np.unique(np.round(np.geomspace(1, n, k)).astype(int) - 1)
            if idx.size >= budget or k > 4 * n:
                break
            k += 1
        idx = idx if idx.size <= budget else idx[np.unique(np.round(np.linspace(0, idx.size - 1, budget)).astype(int))]
    idx = np.unique(np.concatenate([idx, np.asarray(keep, int)])).astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = lhs[idx].mean(axis=1)
        se = lhs[idx].std(axis=1, ddof=1) / np.sqrt(runs) if runs > 1 else np.zeros(idx.size)
        b = rhs[idx].mean(axis=1)
    x = [int(i) + 1 for i in idx] if labels is None else [_sig(v) for v in np.asarray(labels, float)[idx]]
    return {"x": x, "measured": [_sig(v) for v in m], "measured_se": [_sig(v, 3) for v in se],
            "bound": [_sig(v) for v in b], "x_label": label, "runs": int(runs)}


_X_KEYS = ("beta", "K", "x", "bits", "lam", "T", "eta", "E")


def compact_measurements(measurements: Mapping[str, Any], max_points: int = SERIES_POINTS,
                         max_series: int = 8) -> dict[str, Any]:
    """A small, drawable summary of a claim's measurements (what `fedtheory report` plots): the swept
    variable ``x`` (the first of beta, K, x, bits, lam, T, eta, E given as a 1-D numeric array, else the index
    0, 1, ...) and, for each other numeric measurement, its values along it: a 1-D array as it is, a 2-D
    array (points, runs) as the mean over runs with its standard error; scalars as they are. Long axes are
    thinned to ``max_points`` (evenly, ends kept); floats to 5 significant digits; at most ``max_series``
    series. Non-numeric or ragged entries are left out."""
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, float] = {}
    for k, v in measurements.items():
        try:
            a = np.asarray(v, float)
        except (TypeError, ValueError):
            continue
        if a.ndim == 0:
            scalars[k] = _sig(a)
        elif a.ndim <= 2 and a.size:
            arrays[k] = a
    xkey = next((k for k in _X_KEYS if k in arrays and arrays[k].ndim == 1 and arrays[k].size > 1), None)
    out: dict[str, Any] = {"x_label": xkey or "index", "series": {}}
    n = arrays[xkey].size if xkey else None
    for k, a in arrays.items():
        if k == xkey or len(out["series"]) >= max_series:
            continue
        if n is not None and a.shape[0] != n:
            continue
        if n is None and a.ndim == 2 and a.shape[0] == 1:
            a = a[0]
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: NaN, drawn as a gap
            mean = a if a.ndim == 1 else np.nanmean(a, axis=1) if np.isfinite(a).any() else a[:, 0]
            se = None if a.ndim == 1 or a.shape[1] < 2 else np.nanstd(a, axis=1, ddof=1) / np.sqrt(a.shape[1])
        out["series"][k] = {"y": mean, "se": se}
    if not out["series"] and not scalars:
        return {}
    length = n or max((v["y"].size for v in out["series"].values()), default=0)
    idx = (np.arange(length) if length <= max_points
           else np.unique(np.round(np.linspace(0, length - 1, max_points)).astype(int)))
    x = arrays[xkey][idx] if xkey else idx.astype(float)
    out["x"] = [_sig(v) for v in x]
    for k, v in list(out["series"].items()):
        y = v["y"]
        if y.size != length:  # without a swept variable, only series of the common length are drawn together
            del out["series"][k]
            continue
        out["series"][k] = {"y": [_sig(t) for t in y[idx]]}
        if v["se"] is not None:
            out["series"][k]["se"] = [_sig(t, 3) for t in v["se"][idx]]
    if scalars:
        out["scalars"] = scalars
    return out
