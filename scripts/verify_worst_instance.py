"""Re-check a stored FedMRUR / MoFedSAM worst instance (docs/worst-instances/*.json) independently of the search.

The global iterates come from the naive per-client reference (``fedtheory.sim.reference.reference_simulate``, one
client vector at a time), grad f(w^t) from the instance's closed form c (2w + a sin 2w) + mean_i h_i, the left side
and the bound (through the record, at each run's own sum_t d_t for eq. (7)) by explicit loops over runs and
horizons, on 32 seeds; then the paired gap at the worst horizon and how many horizons exceed the search's
threshold. d_t comes from the engine (the reference returns no client updates); the engine's iterates are
compared with the reference's.

    python scripts/verify_worst_instance.py docs/worst-instances/fedmrur.thm1.B.json
"""
from __future__ import annotations

import json
import sys

import numpy as np

from fedtheory.papers.fedmrur import records as TM
from fedtheory.papers.fedmrur.checks import c_max
from fedtheory.sim import simulate
from fedtheory.sim.reference import reference_simulate
from fedtheory.worst import PLInstances, make_spec, z_threshold


def main(path: str, n_seeds: int = 32) -> None:
    pay = json.load(open(path))
    spec = make_spec(pay["id"], pay["params"])
    inst = PLInstances.from_json(pay["instance"])
    seeds = list(range(n_seeds))
    T = spec.config.rounds
    zeros = np.zeros(n_seeds, np.int64)
    _, hist = reference_simulate(inst.problem(), spec.algorithm, spec.config, seeds, variants=zeros, w0=inst.w0[0])
    tr = simulate(inst.problem(), spec.algorithm, spec.config, seeds, variants=zeros, w0=inst.w0[0], measures=("d_t",),
                  keep_iterates=True)
    print(f"{path}: engine vs naive reference iterates, max |diff| {float(np.max(np.abs(tr.iterates - hist))):.2g}")
    c, a, hbar = inst.c[0], inst.a[0], inst.h[0].mean(axis=0)
    g2 = np.array([[np.sum((c * (2 * hist[t, r] + a * np.sin(2 * hist[t, r])) + hbar) ** 2) for r in range(n_seeds)]
                   for t in range(T)])
    p = pay["params"]
    base = {k: p[k] for k in ("L", "sigma_t", "sigma_g", "rho", "alpha", "eta_l", "eta_g", "K", "S", "N", "T", "D")}
    base["r"] = 0.0
    base["C"] = c_max(base)
    normalized = pay["id"] == "fedmrur.thm1"
    lhs, bnd = np.zeros((T, n_seeds)), np.zeros((T, n_seeds))
    for r in range(n_seeds):
        d = tr["d_t"][:, r]
        for t in range(T):
            if normalized:
                lhs[t, r] = np.sum(d[:t + 1] * g2[:t + 1, r]) / np.sum(d[:t + 1])
                bnd[t, r] = float(TM.THM1.evaluate(dict(base, sum_d=float(np.sum(d[:t + 1])))))
            else:
                lhs[t, r] = np.mean(g2[:t + 1, r])
                bnd[t, r] = float(TM.MOFEDSAM.evaluate(dict(base, T=float(t + 1))))
    gap = lhs - bnd
    m, se = gap.mean(axis=1), gap.std(axis=1, ddof=1) / np.sqrt(n_seeds)
    j = int(np.argmax(lhs.mean(axis=1) / bnd.mean(axis=1)))
    z = z_threshold(T, n_seeds)
    rec = TM.THM1 if normalized else TM.MOFEDSAM
    print(f"  conditions failed: {rec.conditions_failed(dict(base, sum_d=float(T))) or 'none'}; C = {base['C']:.6g}")
    print(f"  worst horizon T' = {j + 1}: left side {lhs[j].mean():.6g}, bound {bnd[j].mean():.6g}, gap {m[j]:.4g} +- "
          f"{se[j]:.3g} ({m[j] / se[j]:.1f} SE; threshold {z:.2f}); "
          f"stored: {pay['worst_measured']:.6g} vs {pay['bound']:.6g}")
    print(f"  horizons whose gap exceeds the threshold: {int(np.sum(m - z * se > 0))} of {T}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        main(arg)
