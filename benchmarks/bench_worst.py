"""Worst-case search throughput: instance evaluations per second for FedInit at C = 10, d = 10, K = 5, T = 100.

An evaluation = decode one parameter vector into a projected quadratic instance (exact G^2(B), mu, L, D) and run
FedInit on it (exact gradients, one deterministic run) to the left side f(w^T) - f* and the bound. Side by side,
interleaved (best of n), on the same parameter vectors: the batched population (ONE simulate call over the P
instances as data variants, what each generation of the search does) against evaluating the same P instances one
at a time (P simulate calls of one run each), wall clock and CPU seconds of the process. Also the whole search
(differential evolution, 4 generations) end to end, its one-time costs (the bound's sympy compilation) excluded by a
warm-up call. Goal (issue 11): >= 200 evaluations per second on the 2-core machine. ``--against REV``: the same at
revision REV and on this tree, each in a fresh interpreter, alternating (issue 38's before and after).
"""
from __future__ import annotations

import json
import time

import numpy as np
from _timing import best_wall_and_cpu

from fedtheory.worst import evaluate, make_spec, worst_case

SETTING = dict(L=2.0, mu=0.6, B=1.3, G=0.3, D=2.0, eta=0.001, K=5, T=100, beta=0.1, sigma_l=0.0, C=10, d=10)


def run(quick: bool = False) -> dict:
    spec = make_spec("fedinit.thm2", SETTING)
    rng = np.random.default_rng(0)
    repeat = 2 if quick else 3
    rows = []
    pops = (32,) if quick else (32, 64, 128)
    evaluate(spec, spec.space.decode(spec.space.random(2, rng)))  # warm-up: compiles the bound once
    for P in pops:
        theta = spec.space.random(P, rng)

        def batched():
            return evaluate(spec, spec.space.decode(theta)).mean

        def one_at_a_time():
            return np.array([evaluate(spec, spec.space.decode(theta[i:i + 1])).mean[0] for i in range(P)])

        (tb, cb, vb), (ts, cs, vs) = best_wall_and_cpu([batched, one_at_a_time], repeat=repeat)
        rel = float(np.max(np.abs(vb - vs) / np.abs(vs)))
        rows.append({"population": P, "batched_s": tb, "one_at_a_time_s": ts, "batched_evals_per_s": P / tb,
                     "one_at_a_time_evals_per_s": P / ts, "speedup": ts / tb, "max_rel_diff": rel,
                     "batched_evals_per_cpu_s": P / cb, "one_at_a_time_evals_per_cpu_s": P / cs})
    # the search end to end
    P = 64
    budget = P * (3 if quick else 5)
    c, t = time.process_time(), time.perf_counter()
    rec = worst_case(spec, budget=budget, popsize=P, seed=0)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    search = {"population": P, "budget": budget, "evaluations": rec["evaluations"], "wall_s": wall,
              "evals_per_s": rec["evaluations"] / wall, "cpu_s": cpu, "evals_per_cpu_s": rec["evaluations"] / cpu,
              "slack": rec["slack"]}
    best = max(rows, key=lambda r: r["batched_evals_per_s"])
    summary = (f"FedInit, C = 10, d = 10, K = 5, T = 100: batched population {best['batched_evals_per_s']:.0f} "
               f"evaluations/s (P = {best['population']}) vs {best['one_at_a_time_evals_per_s']:.0f}/s one at a time "
               f"({best['speedup']:.1f}x); the whole search (DE, P = {P}, {rec['evaluations']} evaluations) "
               f"{search['evals_per_s']:.0f} evaluations/s end to end. Goal >= 200/s. Batched and one-at-a-time "
               f"values agree to {max(r['max_rel_diff'] for r in rows):.1g} (relative).")
    return {"name": "worst-case search throughput", "rows": rows, "search": search, "summary": summary}


def against(rev: str, quick: bool = False, repeats: int = 2) -> dict:
    """``run`` for revision ``rev`` (exported with git archive) and for this tree, each in a fresh interpreter,
    alternating, ``repeats`` times per side; each side's best evaluations per second."""
    import os
    import tempfile
    from pathlib import Path

    from _trees import export, python_in

    here = Path(__file__).resolve()
    sides: dict[str, list[dict]] = {"before": [], "now": []}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": export(rev, Path(tmp)), "now": None}
        for _ in range(repeats):
            for side, tree in trees.items():
                out = python_in(tree, [str(here), "--json"] + (["--quick"] if quick else []),
                                cwd=here.parent, check=True)
                sides[side].append(json.loads(out.stdout))
                loads.append(os.getloadavg()[0])
    best = {side: {**{f"batched_{key}": {r["population"]: max(x["rows"][i][f"batched_{key}"] for x in runs)
                                         for i, r in enumerate(runs[0]["rows"])}
                      for key in ("evals_per_s", "evals_per_cpu_s")},
                   "search_evals_per_s": max(x["search"]["evals_per_s"] for x in runs),
                   "search_evals_per_cpu_s": max(x["search"]["evals_per_cpu_s"] for x in runs),
                   "search_wall_s": min(x["search"]["wall_s"] for x in runs)}
            for side, runs in sides.items()}
    return {"name": "worst-case search throughput, before and now", "before": rev, "repeats": repeats, "best": best,
            "load_average_1min": loads, "runs": sides}


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true", help="print run()'s JSON only (this tree)")
    ap.add_argument("--against", help="also revision REV, alternating with this tree")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", help="write the JSON here")
    args = ap.parse_args()
    res = against(args.against, args.quick, args.repeats) if args.against else run(quick=args.quick)
    text = json.dumps(res, indent=None if args.json else 2)
    if args.out:
        from pathlib import Path

        Path(args.out).write_text(text + "\n")
    print(text)
