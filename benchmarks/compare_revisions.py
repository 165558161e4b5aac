"""The engine at two git revisions, side by side: ``python benchmarks/compare_revisions.py OLD NEW``.

Checks out both revisions into temporary worktrees and times the same ``simulate`` workloads in each,
alternating between the two (best of N per side), so a refactor of the round loop can be shown to keep
the engine's speed. Also compares the final models bit for bit. Writes results/compare_revisions.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WORKLOAD = r'''
import json, sys, time
import numpy as np
from fedtheory.sim import Minibatch, RunConfig, fedavg, fedinit, heterogeneous_least_squares, simulate
from fedtheory.sim import dfedavg, ring
cases = {
    "fedavg C=100 d=20 K=10 T=30, 1 run": (heterogeneous_least_squares(100, 20, 30, random_state=0), fedavg(), 1, 30,
                                         None, ("opt_error",)),
    "fedavg C=100 d=100 K=10 T=10, 64 runs": (heterogeneous_least_squares(100, 100, 120, random_state=0), fedavg(), 64,
                                            10, None, ("opt_error",)),
    "fedinit C=100 d=20 K=10 T=30, 64 runs, minibatch 10, 6 measures": (
        heterogeneous_least_squares(100, 20, 30, random_state=0), fedinit(0.1), 64, 30, Minibatch(10),
        ("opt_error", "grad_norm2", "delta", "delta_code", "drift", "unbiased_gap")),
    "dfedavg ring m=100 d=20 K=10 T=30, 16 runs": (heterogeneous_least_squares(100, 20, 30, random_state=0),
                                                  dfedavg(ring(100)), 16, 30, None, ("opt_error",)),
}
out = {}
for name, (p, alg, R, T, oracle, measures) in cases.items():
    cfg = RunConfig(rounds=T, local_steps=10, lr=0.01, **({"oracle": oracle} if oracle else {}))
    w0 = p.initial_point(0)
    t0 = time.perf_counter()
    tr = simulate(p, alg, cfg, list(range(R)), w0=w0, measures=measures)
    out[name] = {"s": time.perf_counter() - t0, "final": float(np.sum(tr.final_w)), "digest": tr.final_w.tobytes().hex()[:64]}
json.dump(out, sys.stdout)
'''  # noqa: E501 - the text of the code it writes, kept as it runs


def _worktree(rev: str, where: Path) -> Path:
    path = where / rev.replace("/", "_")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(path), rev], check=True,
                   capture_output=True)
    return path


def _run(tree: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", WORKLOAD], capture_output=True, text=True, env=env,
                         cwd=tree, check=True)
    return json.loads(out.stdout)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"old": _worktree(args.old, Path(tmp)), "new": _worktree(args.new, Path(tmp))}
        try:
            best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
            digests: dict[str, dict[str, str]] = {"old": {}, "new": {}}
            for _ in range(args.repeats):
                for side in ("old", "new"):  # interleaved: both sides see the same machine load
                    for name, r in _run(trees[side]).items():
                        best[side][name] = min(best[side].get(name, float("inf")), r["s"])
                        digests[side][name] = r["digest"]
        finally:
            for t in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(t)], capture_output=True)
    rows = [{"case": n, "old_s": best["old"][n], "new_s": best["new"][n],
             "new_over_old": best["new"][n] / best["old"][n], "same_bits": digests["old"][n] == digests["new"][n]}
            for n in best["old"]]
    res = {"name": "compare_revisions", "old": args.old, "new": args.new, "repeats": args.repeats, "rows": rows}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "compare_revisions.json").write_text(json.dumps(res, indent=2))
    print(f"| case | {args.old} (s) | {args.new} (s) | new/old | same bits |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['old_s']:.3f} | {r['new_s']:.3f} | {r['new_over_old']:.3f} | {r['same_bits']} |")


if __name__ == "__main__":
    main()
