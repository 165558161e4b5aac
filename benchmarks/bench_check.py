"""The main job at two revisions, side by side: ``python benchmarks/bench_check.py [--old REV] [--new REV] [--repeats
N] [--full]`` (``run_all.py check`` runs it with the defaults).

What is timed, each command in a fresh interpreter, alternating old / new so that a slow spell of a shared machine
hits both sides alike (best of N per side, wall clock and CPU seconds of the process and its children):

* ``fedtheory list`` and ``fedtheory explain fedinit.thm1``: start-up, the plug-ins loaded, one answer printed;
* ``fedtheory check --profile quick`` (seed 0), as a user runs it (on this machine's cores);
* with ``--full``: ``fedtheory check --profile full`` (seed 0), once per side;
* each check of the quick profile alone, serially in one process (CPU seconds per check: where the time goes).

The records of both sides are compared field by field (``compare_results.py``): verdicts, scopes, findings and texts
identical, numbers within 1e-9 relative. The old side is the revision before issue 26 unless ``--old`` names another;
the new side is this working tree unless ``--new`` names a revision. Both are exported with ``git archive`` into a
temporary folder. The load average before and after is recorded: on a shared machine it is part of the result.
Writes results/check.json (with ``--full``; results/quick/check.json from run_all's smoke run).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _trees import export, python_in  # noqa: E402
from compare_results import compare  # noqa: E402

BASELINE = "f4cdcd6"  # main before issue 26: the shipped symbolic cache of issue 27, nothing of issue 26

PER_CHECK = r'''
import json, sys, time
w0, c0 = time.perf_counter(), time.process_time()
from fedtheory.checks import all_checks, select
from fedtheory.checks import Session
from fedtheory.checks.execution import run_spec
all_checks()
out = {"load": [time.perf_counter() - w0, time.process_time() - c0], "checks": {}}
try:
    from fedtheory.checks.execution import one_blas_thread  # what run_checks does on the new side
except ImportError:
    import contextlib
    one_blas_thread = contextlib.nullcontext
session = Session(profile=sys.argv[1], seed=0)
with one_blas_thread():
    for s in select(None, None, sys.argv[1]):
        w, c = time.perf_counter(), time.process_time()
        run_spec(s, session)
        out["checks"][s.id] = [time.perf_counter() - w, time.process_time() - c]
json.dump(out, sys.stdout)
'''


def _timed(tree: Path, args: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the process and its children, the process) of ``python args`` in ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = python_in(tree, args, cwd=tree)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0, 1):  # 1: findings about the papers
        raise RuntimeError(f"{' '.join(args)} in {tree} exited {p.returncode}: {p.stderr[-2000:]}")
    return wall, cpu, p


def _side_by_side(trees: dict[str, Path], name: str, args, repeats: int) -> dict:
    best = {s: [float("inf"), float("inf")] for s in trees}
    for _ in range(repeats):
        for side, tree in trees.items():
            wall, cpu, _ = _timed(tree, args(side) if callable(args) else args)
            best[side][0] = min(best[side][0], wall)
            best[side][1] = min(best[side][1], cpu)
    (ow, oc), (nw, nc) = best["old"], best["new"]
    return {"command": name, "old_wall_s": round(ow, 3), "new_wall_s": round(nw, 3),
            "wall_new_over_old": round(nw / ow, 3), "old_cpu_s": round(oc, 3), "new_cpu_s": round(nc, 3),
            "cpu_new_over_old": round(nc / oc, 3), "repeats": repeats}


def bench(old: str = BASELINE, new: str | None = None, repeats: int = 3, full: bool = False) -> dict:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"old": export(old, Path(tmp)), "new": export(new, Path(tmp)) if new else ROOT}
        outs = {s: Path(tmp) / f"{s}-quick.json" for s in trees}
        check = lambda profile, files: (  # noqa: E731
            lambda side: ["-m", "fedtheory.cli", "check", "--profile", profile, "--seed", "0", "--format", "json",
                          "--no-progress", "--out", str(files[side])])
        rows = [_side_by_side(trees, "fedtheory list", ["-m", "fedtheory.cli", "list"], max(repeats, 5)),
                _side_by_side(trees, "fedtheory explain fedinit.thm1",
                              ["-m", "fedtheory.cli", "explain", "fedinit.thm1"], max(repeats, 5)),
                _side_by_side(trees, "fedtheory check --profile quick", check("quick", outs), repeats)]
        records = {"quick": compare(*(json.loads(outs[s].read_text()) for s in ("old", "new")))}
        if full:
            fulls = {s: Path(tmp) / f"{s}-full.json" for s in trees}
            rows.append(_side_by_side(trees, "fedtheory check --profile full", check("full", fulls), 1))
            records["full"] = compare(*(json.loads(fulls[s].read_text()) for s in ("old", "new")))
        per_check = {}
        for side, tree in trees.items():
            _, _, p = _timed(tree, ["-c", PER_CHECK, "quick"])
            per_check[side] = json.loads(p.stdout)
    checks = [{"check": c, "old_cpu_s": round(per_check["old"]["checks"][c][1], 3),
               "new_cpu_s": round(per_check["new"]["checks"].get(c, [0, float("nan")])[1], 3)}
              for c in per_check["old"]["checks"]]
    checks.sort(key=lambda r: -r["old_cpu_s"])
    for r in checks:
        r["new_over_old"] = round(r["new_cpu_s"] / r["old_cpu_s"], 3) if r["old_cpu_s"] > 0 else None
    summary = "; ".join(f"{r['command']}: {r['old_wall_s']:.2f} -> {r['new_wall_s']:.2f} s wall "
                        f"({r['old_cpu_s']:.2f} -> {r['new_cpu_s']:.2f} s CPU)" for r in rows)
    for profile, c in records.items():
        summary += (f"; {profile} records: {c['identical_records']} of {c['records']} identical, "
                    f"{len(c['verdict_differences'])} verdict/text differences, largest relative difference of a "
                    f"number {c['max_rel']:.2g}")
    return {"name": "check", "old": old, "new": new or "working tree", "rows": rows,
            "records": {p: {k: v for k, v in c.items() if k != "differences"} | {"differences": c["differences"][:50]}
                        for p, c in records.items()},
            "per_check_quick": {"old_load_s": [round(x, 3) for x in per_check["old"]["load"]],
                                "new_load_s": [round(x, 3) for x in per_check["new"]["load"]],
                                "old_total_cpu_s": round(sum(v[1] for v in per_check["old"]["checks"].values()), 2),
                                "new_total_cpu_s": round(sum(v[1] for v in per_check["new"]["checks"].values()), 2),
                                "checks": checks},
            "load_average": {"before": [round(x, 2) for x in load_before],
                             "after": [round(x, 2) for x in os.getloadavg()]},
            "summary": summary}


def run(quick: bool) -> dict:
    """run_all.py's entry: side by side against the revision before issue 26 (one repetition in a smoke run)."""
    return bench(repeats=1 if quick else 3)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default=BASELINE, help=f"the old revision (default {BASELINE}: main before issue 26)")
    ap.add_argument("--new", help="the new revision (default: this working tree)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="also the full profile, once per side")
    ap.add_argument("--out", help="the JSON written (default results/check.json)")
    args = ap.parse_args(argv)
    res = bench(args.old, args.new, args.repeats, args.full)
    res["machine"] = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()}
    out = Path(args.out) if args.out else HERE / "results" / "check.json"
    out.write_text(json.dumps(res, indent=2) + "\n")
    for r in res["rows"]:
        print(f"{r['command']:36s} old {r['old_wall_s']:8.2f} s ({r['old_cpu_s']:7.2f} CPU)   new "
              f"{r['new_wall_s']:8.2f} s ({r['new_cpu_s']:7.2f} CPU)   new/old wall {r['wall_new_over_old']:.3f}, CPU "
              f"{r['cpu_new_over_old']:.3f}")
    print(res["summary"])
    print(f"load average before {res['load_average']['before']}, after {res['load_average']['after']}; wrote {out}")


if __name__ == "__main__":
    main()
