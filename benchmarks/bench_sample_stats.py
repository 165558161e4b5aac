"""The visited-region per-sample gradient statistics (``visited_max_grad``, ``visited_max_grad_var``) that the engine
computes at every visited point of every round: least squares' ``sample_grad_stats`` from the residuals (issue 42's
budget: it was 6 of FedInit Thm 1's 8 CPU seconds in `make check`) against the per-sample gradient array it replaced
(kept here as the reference), side by side in one process on the points one round of FedInit Thm 1's quick run
visits (runs x (1 + clients) points), with the largest relative difference of the two.

Run: ``python benchmarks/run_all.py sample_stats`` (``--quick`` for a smoke run).
"""
from __future__ import annotations

import numpy as np
from _timing import best_of_interleaved

from fedtheory.sim import heterogeneous_least_squares


def per_sample_reference(p, w, variant):
    """The implementation before: every per-sample gradient g_ij = x_ij r_ij + ridge w materialized."""
    X = p.X[variant]
    r = np.einsum("rcsd,rd->rcs", X, w) - p.y[variant]
    g = X * r[..., None] + p.ridge * w[:, None, None, :]
    norms = np.linalg.norm(g, axis=-1)
    var = np.mean(np.sum((g - g.mean(axis=2, keepdims=True)) ** 2, axis=-1), axis=2)
    return norms.max(axis=(1, 2)), var.max(axis=1)


def run(quick: bool = False) -> dict:
    rows = []
    for runs, clients, dim, samples in ([(4, 10, 5, 20)] if quick else [(4, 10, 5, 20), (16, 20, 20, 50),
                                                                        (64, 10, 10, 100)]):
        p = heterogeneous_least_squares(clients, dim, samples, random_state=0)
        rng = np.random.default_rng(0)
        w = rng.normal(size=(runs * (1 + clients), dim))
        variant = np.zeros(len(w), dtype=int)
        (t_new, new), (t_old, old) = best_of_interleaved([lambda: p.sample_grad_stats(w, variant),
                                                          lambda: per_sample_reference(p, w, variant)],
                                                         repeat=3 if quick else 7)
        diff = max(float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) for a, b in zip(new, old))
        rows.append({"points": len(w), "clients": clients, "dim": dim, "samples": samples,
                     "residuals_s": t_new, "per_sample_s": t_old, "speedup": t_old / t_new,
                     "largest_relative_difference": diff})
    summary = "; ".join(f"{r['points']} points x {r['clients']}x{r['samples']} samples (d={r['dim']}): "
                        f"{r['speedup']:.1f}x, relative difference {r['largest_relative_difference']:.1e}"
                        for r in rows)
    return {"name": "sample_stats", "rows": rows, "summary": summary}
