"""Worst-case search throughput for FedInit's Thm 3 (coupled pairs), Thm 4 at partial participation and Lemma 4.

An evaluation = decode a parameter vector into an instance of the spec's class and run it to the left side and
the bound: Thm 3 (``fedinit.thm3.rederived``): a pair of neighbouring data sets (5 clients x 20 samples, d = 5),
8 seeds x 2 coupled runs of single-sample SGD, T = 60, the loss gap on all 101 pooled samples; Thm 4
(``fedinit.thm4.rederived``): 2 of 20 clients per round, d = 10, T = 300, 4 seeds; Lemma 4: 10 clients, T = 300,
4 seeds, the per-round right side from every run's own measurements. Side by side, interleaved (best of n), on the
same parameter vectors: the batched population (ONE simulate call, what each generation of the search does)
against the same P instances one at a time. Batched and one-at-a-time values must agree (to rounding).
Thm 3's evaluation is dominated (~90% in a profile) by the engine's visited-point measures (U, L_G, sigma_l: every
sample's loss and gradient at the global and local models of every run, every round), work that is per run
whether batched or not, so batching gains nothing there.

    python benchmarks/run_all.py worst_fedinit            # full (P = 32 and 64)
    python benchmarks/run_all.py --quick worst_fedinit    # smoke run (P = 16)
"""
from __future__ import annotations

import numpy as np
from _timing import best_of_interleaved

from fedtheory.worst import evaluate, make_spec

SETTINGS = {
    "fedinit.thm3.rederived": dict(L=2.56, c=0.078, client_mu=0.05, K=5, T=60, beta=0.1, S=20, C=5, d=5, runs=8),
    "fedinit.thm4.rederived": dict(L=2.04, mu=0.6, B=1.24, G=0.35, D=1.9, eta=0.00022, K=5, T=300, beta=0.1,
                                   sigma_l=0.2236, C=20, N=2, d=10, runs=4),
    "fedinit.lemma4": dict(L=1.99, mu=0.6, B=6.29, G=0.31, D=1.96, eta=0.00105, K=5, T=300, beta=0.1, sigma_l=0.2236,
                           C=10, d=10, runs=4),
}


def run(quick: bool = False) -> dict:
    rng = np.random.default_rng(0)
    repeat = 2 if quick else 3
    rows = []
    for rid, setting in SETTINGS.items():
        spec = make_spec(rid, setting)
        evaluate(spec, spec.space.decode(spec.space.random(2, rng)))  # warm-up: compiles the bound once
        for P in ((16,) if quick else (32, 64)):
            theta = spec.space.random(P, rng)

            def batched():
                ev = evaluate(spec, spec.space.decode(theta))
                return np.column_stack([ev.mean, ev.bound])

            def one_at_a_time():
                out = []
                for i in range(P):
                    ev = evaluate(spec, spec.space.decode(theta[i:i + 1]))
                    out.append([ev.mean[0], ev.bound[0]])
                return np.array(out)

            (tb, vb), (ts, vs) = best_of_interleaved([batched, one_at_a_time], repeat=repeat)
            rows.append({"record": rid, "population": P, "seeds": len(spec.seeds), "batched_s": tb,
                         "one_at_a_time_s": ts, "batched_evals_per_s": P / tb, "one_at_a_time_evals_per_s": P / ts,
                         "speedup": ts / tb, "max_abs_diff": float(np.max(np.abs(vb - vs)))})
    parts = []
    for rid in SETTINGS:
        r = max((r for r in rows if r["record"] == rid), key=lambda r: r["batched_evals_per_s"])
        parts.append(f"{rid}: {r['batched_evals_per_s']:.0f} evaluations/s batched (P = {r['population']}, "
                     f"{r['seeds']} seeds each) vs {r['one_at_a_time_evals_per_s']:.0f}/s one at a time "
                     f"({r['speedup']:.1f}x)")
    summary = ("; ".join(parts) + f". Batched and one-at-a-time left sides and bounds differ by at most "
               f"{max(r['max_abs_diff'] for r in rows):.1g}.")
    return {"name": "worst-case search throughput (FedInit Thms 3, 4, Lemma 4)", "rows": rows, "summary": summary}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
