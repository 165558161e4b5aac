"""Two-curvature instances against the worst-case search, for FedInit Thm 2 at beta = 0 (FedAvg under PL with the
heterogeneity (G, B)), at the constants of today's check (docs/worst-case.md, 'Published lower bounds').

The instances: two groups of clients with isotropic Hessians lam_A I and lam_B I and linear terms of opposite
sign along e1 (scaled to the largest heterogeneity the class allows), started along e1, -e1, (e1 + e2)/sqrt(2)
or e2, with 1 or C/2 clients in group A. Clients that differ in curvature are what makes local steps drift (the
fixed point of FedAvg with K > 1 local steps is not w*); with equal curvature (B = 1) FedAvg's mean iterate is
minibatch SGD on f and the heterogeneity has no effect on quadratics at all. Each instance is a parameter vector
of the search's own class (QuadraticClass), so it is projected onto the assumptions exactly as the search's
instances are (mu shift, B blend, G scaling) and evaluated by the same code.

    python scripts/two_curvature_instances.py [--budget 1024] [--seed 0] [--out results/two_curvature.json]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import time

import numpy as np

from fedtheory.papers.fedinit.worst import fedinit_reference
from fedtheory.worst import evaluate, make_spec, worst_case


def family(space, lam_grid, splits, starts):
    C, d = space.n_clients, space.dim
    thetas, labels = [], []
    for lam_a, lam_b, n_a, s in itertools.product(lam_grid, lam_grid, splits, starts):
        th = np.zeros(space.n_params)
        blocks = th[:3 * C * d].reshape(C, 3, d)
        blocks[:, 1] = 0.0  # no reflection: every Hessian diagonal in the same basis
        for i in range(C):
            a = i < n_a
            blocks[i, 0] = lam_a if a else lam_b
            blocks[i, 2] = 0.0
            blocks[i, 2, 0] = 100.0 * (1.0 if a else -n_a / (C - n_a))  # far out: the G projection sets G^2(B) = G^2
        u = {"e1": [1.0, 0.0], "-e1": [-1.0, 0.0], "diag": [1.0, 1.0], "e2": [0.0, 1.0]}[s]
        th[3 * C * d:3 * C * d + 2] = u
        thetas.append(th)
        labels.append({"lam_A": lam_a, "lam_B": lam_b, "clients_A": n_a, "start": s})
    return np.array(thetas), labels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=1024, help="the search's instance evaluations (default 1024)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--grid", type=int, default=6, help="curvature values per group (default 6)")
    ap.add_argument("--out", default=None, help="write the JSON record here")
    args = ap.parse_args(argv)
    ref = fedinit_reference("fedinit.thm2")(args.seed, beta=0.0)
    spec = make_spec("fedinit.thm2", ref["params"])
    space = spec.space
    lam_grid = np.geomspace(space.mu / 16, 0.999 * space.L, args.grid)
    thetas, labels = family(space, lam_grid, (1, space.n_clients // 2), ("e1", "-e1", "diag", "e2"))
    t0 = time.perf_counter()
    inst = space.decode(thetas)
    assert space.violations(inst) == [[] for _ in range(len(inst))]
    ev = evaluate(spec, inst)
    fam_s = time.perf_counter() - t0
    i = int(np.argmax(ev.ratio))
    k = {n: float(v[i]) for n, v in inst.constants(space.B).items()}
    rec = worst_case(spec, budget=args.budget, popsize=32, seed=args.seed, final_seeds=32)
    fam_final = evaluate(spec, inst.take(i), tuple(range(32)))
    out = {
        "setting": ref["label"], "params": ref["params"], "random_ratio": ref["random_ratio"],
        "family": {"instances": len(inst), "elapsed_s": round(fam_s, 2), "best": labels[i],
                   "best_slack": float(1 / ev.ratio[i]), "best_measured": float(fam_final.mean[0]),
                   "best_measured_se": float(fam_final.se[0]), "bound": float(fam_final.bound[0]),
                   "median_slack": float(np.median(1 / ev.ratio)), "instance_constants": k},
        "search": {k2: rec[k2] for k2 in ("worst_measured", "worst_measured_se", "bound", "slack", "verdict",
                                          "random_start", "evaluations", "elapsed_s", "instance_constants")},
    }
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
