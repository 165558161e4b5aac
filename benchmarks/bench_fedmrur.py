"""FedMRUR's plug-ins in the vectorized engine vs the naive per-run, per-client reference
(``fedtheory.sim.reference.reference_simulate``), and what each component costs.

1. A seed sweep (R runs at once) of FedMRUR, FedMRUR-N and MoFedSAM on synthetic logistic regression
   (10 clients, 5 per round, K = 5, additive noise): engine time vs the naive reference on the same draws;
   the last column shows both compute the same models.
2. Per-round cost of each variant in the engine, relative to MoFedSAM (the regularizer adds two
   representation passes per gradient evaluation, and SAM evaluates the gradient twice).
"""
from __future__ import annotations

import numpy as np
from _timing import best_of

from fedtheory.papers.fedmrur.algorithms import fedmrur, fedmrur_n, mofedsam
from fedtheory.sim import AdditiveNoise, RunConfig, simulate, synthetic_logistic
from fedtheory.sim.reference import reference_simulate


def run(quick: bool = False) -> dict:
    p = synthetic_logistic(10, 10, 3, 30, random_state=0)
    K, T = 5, (5 if quick else 20)
    R = 8 if quick else 32
    cfg = RunConfig(rounds=T, local_steps=K, lr=0.05, clients_per_round=5, oracle=AdditiveNoise(0.05))
    variants = {"FedMRUR": lambda: fedmrur(rho=0.05, gamma=0.5, sigma=2.0), "FedMRUR-N": lambda: fedmrur_n(rho=0.05),
                "MoFedSAM": lambda: mofedsam(rho=0.05)}
    rows, per_round = [], {}
    for name, make in variants.items():
        t_eng, tr = best_of(lambda: simulate(p, make(), cfg, list(range(R)), measures=()), repeat=3)
        n_ref = 2 if quick else 4  # the reference is timed on n_ref seeds and scaled (each seed costs the same)
        t_one, ref = best_of(lambda: reference_simulate(p, make(), cfg, list(range(n_ref)))[0], repeat=1)
        t_ref = t_one * R / n_ref
        per_round[name] = t_eng / T
        rows.append({"benchmark": f"{name}, {R}-run sweep, logistic d={p.dim}, S=5 of 10, K={K}, T={T}",
                     "naive s": t_ref, "engine s": t_eng, "speed-up": t_ref / t_eng,
                     "max |w_engine - w_naive|": float(np.abs(tr.final_w[:n_ref] - ref).max())})
    for name in variants:
        rows.append({"benchmark": f"{name}: engine time per round ({R} runs)", "naive s": float("nan"),
                     "engine s": per_round[name], "speed-up": per_round[name] / per_round["MoFedSAM"],
                     "max |w_engine - w_naive|": float("nan")})
    summary = ("rows 1-3: speed-up = naive reference time / engine time on the same draws (the reference timed on a "
               "few seeds and scaled to the sweep); rows 4-6: engine seconds per round and, in the speed-up column, "
               "the cost relative to MoFedSAM.")
    return {"name": "FedMRUR plug-ins: engine vs naive reference", "rows": rows, "summary": summary}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=False), indent=2))
