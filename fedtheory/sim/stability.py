"""Uniform stability by coupled runs, and heterogeneity measured over visited points.

Coupled runs follow the definition of uniform stability: two data sets that differ in one sample,
the algorithm run on each with every random stream shared (same seed: same client sampling, same
minibatch indices, same noise). Each pair replaces a different, randomly chosen sample.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._validation import check_float, check_int
from .algorithms import Algorithm
from .config import RunConfig
from .engine import simulate
from .problems import Constant, Problem
from .trace import Trace


@dataclass
class StabilityResult:
    loss_gap: np.ndarray  # (P,) max over the pooled samples of |f(w^T; z) - f(w'^T; z)|
    param_gap: np.ndarray  # (P,) ||w^T - w'^T||
    trace: Trace  # 2P runs: pair j is runs 2j (original data) and 2j+1 (neighbour j)
    problem: Problem  # the problem with 1 + P variants
    replacements: list[tuple[int, int]]

    @property
    def original(self) -> slice:
        return slice(0, None, 2)


def coupled_runs(problem: Problem, algorithm: Algorithm, config: RunConfig, seeds: Sequence[int], *,
                 w0: np.ndarray | None = None, measures: Sequence[str] = (), random_state=0) -> StabilityResult:
    """One coupled pair per seed. The loss gap is taken over the samples of both data sets (the
    theorem's sup over z, restricted to the samples we have).

    Pair j runs the algorithm on the data and on a neighbouring data set (one sample replaced at random) with the
    same seed, the runs of a uniform-stability bound.

    Parameters
    ----------
    problem : Problem
        The problem; its neighbours are drawn with ``random_replacements`` and ``neighbours``.
    algorithm : Algorithm
        The algorithm.
    config : RunConfig
        The run configuration.
    seeds : sequence of int
        One seed per pair (at least one).
    w0 : numpy.ndarray, optional
        The common starting point.
    measures : sequence of str, default ()
        Measures to record as well.
    random_state : int or numpy.random.Generator, default 0
        Draws the replaced samples.

    Returns
    -------
    StabilityResult
        Per pair (P,): ``loss_gap`` (the largest ``|f(w^T; z) - f(w'^T; z)|`` over the pooled samples) and
        ``param_gap`` (||w^T - w'^T||); the trace of the 2P runs, the problem with its variants, the replacements.
    """
    P = check_int("number of seeds", len(seeds), 1)
    rng = np.random.default_rng(random_state)
    reps = problem.random_replacements(P, random_state=rng)
    pn = problem.neighbours(reps, random_state=rng)
    run_seeds = np.repeat(np.asarray(seeds), 2)
    variants = np.ravel(np.column_stack([np.zeros(P, int), np.arange(1, P + 1)]))
    tr = simulate(pn, algorithm, config, run_seeds, variants=variants, w0=w0, measures=measures)
    wA, wB = tr.final_w[0::2], tr.final_w[1::2]
    vA, vB = variants[0::2], variants[1::2]
    gap_A = np.abs(pn.sample_losses(wA, vA) - pn.sample_losses(wB, vA)).reshape(P, -1)
    gap_B = np.abs(pn.sample_losses(wA, vB) - pn.sample_losses(wB, vB)).reshape(P, -1)
    loss_gap = np.maximum(np.nanmax(gap_A, axis=1), np.nanmax(gap_B, axis=1))
    return StabilityResult(loss_gap, np.linalg.norm(wA - wB, axis=1), tr, pn, reps)


def measured_heterogeneity_G2(client_grad_norm2: np.ndarray, grad_norm2: np.ndarray, B: float) -> Constant:
    """G^2(B) = max over the visited points of (1/C) sum_i ||grad f_i(w)||^2 - B^2 ||grad f(w)||^2, from the
    engine's ``client_grad_norm2`` and ``grad_norm2`` measures. A lower estimate of the sup over all w."""
    B = check_float("B", B, 0.0, low_inclusive=False)
    a = np.asarray(client_grad_norm2, float)
    b = np.asarray(grad_norm2, float)
    ok = np.isfinite(a) & np.isfinite(b)
    G2 = float(np.max(a[ok] - B**2 * b[ok])) if ok.any() else float("nan")
    return Constant(max(G2, 0.0), "measured", f"max over {int(ok.sum())} visited points (a lower estimate of the sup)")
