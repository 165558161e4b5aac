"""The step measures of issue 23 (the averaged iterate at every local step and its running averages): what they
cost when asked for, that they cost nothing when not, and the vectorized recorder against a naive loop.

1. A 64-run sweep (FedAvg, C = 20 clients, d = 20, K = 10, T = 30, additive noise): ``simulate`` with no step
   measure, with ``step_opt_error``, and with all eight, side by side (interleaved, best of 3): the ratios to the run
   without them.
2. The same workload without step measures at the revision before them (BASE, ``git archive``) and at the working
   tree, alternately in subprocesses (best of 3 each): the ratio shows the engine pays nothing for the step measures
   it is not asked for; the final models are compared bit for bit.
3. The recorder against the naive per-run loop a user would write from ``keep_step_iterates`` (one run, one step at
   a time: the running averages, then f and ||x - x*||^2 at each point): same numbers, the speed-up.

Run: ``python benchmarks/run_all.py step_measures`` (``--quick`` for a smoke run); FEDTHEORY_BENCH_BASE (default
BASE below; empty: skip part 2).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from _timing import best_of_interleaved

from fedtheory.sim import AdditiveNoise, RunConfig, StepWeights, fedavg, heterogeneous_least_squares, simulate
from fedtheory.sim.measure_tables import STEP_MEASURES

ROOT = Path(__file__).resolve().parents[1]
BASE = "d3eb005"  # main before issue 23's step measures

WORKLOAD = r'''
import json, sys, time
import numpy as np
from fedtheory.sim import AdditiveNoise, RunConfig, fedavg, heterogeneous_least_squares, simulate
p = heterogeneous_least_squares(20, 20, 30, random_state=0)
cfg = RunConfig(rounds=int(sys.argv[1]), local_steps=10, lr=0.01, oracle=AdditiveNoise(0.1))
best = float("inf")
for _ in range(3):
    t0 = time.perf_counter()
    tr = simulate(p, fedavg(), cfg, list(range(64)), w0=p.initial_point(0), measures=("opt_error",))
    best = min(best, time.perf_counter() - t0)
json.dump({"s": best, "digest": tr.final_w.tobytes().hex()}, sys.stdout)
'''


def _at(src: Path, rounds: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", WORKLOAD, str(rounds)], capture_output=True, text=True, env=env,
                         check=True, timeout=1800)
    return json.loads(out.stdout)


def _naive(xbar: np.ndarray, problem, a: float) -> dict[str, np.ndarray]:
    """xbar (S, R, d) -> the running averages and f - f*, ||x - x*||^2 at every point, one run and step at a time."""
    S, R, _ = xbar.shape
    w_star, f_star = problem.constants["w_star"].value, problem.constants["f_star"].value
    out = {k: np.empty((S, R)) for k in ("step_opt_error", "avg_opt_error", "wavg_opt_error", "step_dist2",
                                        "avg_dist2", "wavg_dist2")}
    for r in range(R):
        tot, wtot, wsum = np.zeros(xbar.shape[2]), np.zeros(xbar.shape[2]), 0.0
        for s in range(S):
            x = xbar[s, r]
            tot = tot + x
            wsum += (a + s) ** 2
            wtot = wtot + (a + s) ** 2 * x
            for name, pt in (("step", x), ("avg", tot / (s + 1)), ("wavg", wtot / wsum)):
                out[f"{name}_opt_error"][s, r] = problem.loss(pt[None])[0] - f_star
                out[f"{name}_dist2"][s, r] = np.sum((pt - w_star) ** 2)
    return out


def run(quick: bool = False) -> dict:
    rows = []
    T = 10 if quick else 30
    p = heterogeneous_least_squares(20, 20, 30, random_state=0)
    w0 = p.initial_point(0)
    cfg = RunConfig(rounds=T, local_steps=10, lr=0.01, oracle=AdditiveNoise(0.1))
    seeds = list(range(64))
    weights = StepWeights(power=2, offset=50.0)
    variants = {"no step measure": ("opt_error",), "step_opt_error": ("opt_error", "step_opt_error"),
                f"all {len(STEP_MEASURES)} step measures": ("opt_error", *STEP_MEASURES)}
    timed = best_of_interleaved([lambda m=m: simulate(p, fedavg(), cfg, seeds, w0=w0, measures=m, step_weights=weights)
                                 for m in variants.values()], repeat=3)
    t0 = timed[0][0]
    for (name, _), (t, tr) in zip(variants.items(), timed):
        rows.append({"benchmark": f"64 runs, C=20 d=20 K=10 T={T}", "variant": name, "seconds": t,
                     "ratio to no step measure": t / t0,
                     "same final models": bool(np.array_equal(tr.final_w, timed[0][1].final_w))})
    base = os.environ.get("FEDTHEORY_BENCH_BASE", BASE)
    if base:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "base"
            src.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", base], capture_output=True, check=True).stdout
            with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
                tar.extractall(src)
            runs = {"base": [], "tree": []}
            for _ in range(2):  # alternate the two sides
                runs["base"].append(_at(src, T))
                runs["tree"].append(_at(ROOT, T))
        tb, tt = min(r["s"] for r in runs["base"]), min(r["s"] for r in runs["tree"])
        rows.append({"benchmark": f"64 runs, C=20 d=20 K=10 T={T}, no step measure", "variant": f"{base} vs this tree",
                     "seconds": tt, "ratio to no step measure": tt / tb,
                     "same final models": runs["base"][0]["digest"] == runs["tree"][0]["digest"]})
    # 3. the recorder vs a naive per-run loop over keep_step_iterates
    R3 = 4 if quick else 16
    names = tuple(k for k in STEP_MEASURES if k.endswith(("opt_error", "dist2")))
    (t_eng, tr), = best_of_interleaved([lambda: simulate(p, fedavg(), cfg, seeds[:R3], w0=w0, measures=names,
                                                         step_weights=weights, keep_step_iterates=True)], repeat=3)
    (t_nv, ref), = best_of_interleaved([lambda: _naive(tr.step_iterates, p, 50.0)], repeat=1)
    err = max(float(np.max(np.abs(tr[k] - ref[k]) / (1e-12 + np.abs(ref[k])))) for k in ref)
    rows.append({"benchmark": f"{R3} runs, C=20 d=20 K=10 T={T}: 6 step measures", "variant": "naive loop / engine",
                 "seconds": t_eng, "ratio to no step measure": t_nv / t_eng, "same final models": err < 1e-9})
    summary = ("Rows 1-3: simulate with no step measure, one, and all of them (ratio = seconds / seconds without; the "
               "same final models: the measures change nothing). Row 4: the same workload without step measures at "
               f"{base or '(skipped)'} and at this tree, in subprocesses (ratio = this tree / base; same final models "
               "bit for bit). Row 5: the naive per-run loop over the averaged iterates (the running averages and the "
               "six values at every step, one run at a time) against the whole engine run that recorded them (the "
               "simulation included, so the recorder's own speed-up is larger; ratio = naive / engine; the last "
               "column: the same numbers, largest relative difference < 1e-9).")
    return {"name": "step measures: cost when asked, none otherwise", "rows": rows, "summary": summary}


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
