"""What the zoo of trusted theorems costs (issue 34, section 5): ``python benchmarks/bench_zoo.py [--repeats N]``.

Side by side in one run, each command in a fresh interpreter, alternating so that a slow spell of a shared machine
hits every side alike (best of N, wall clock and CPU seconds of the process and its children):

* ``fedtheory check --profile quick --only <the four seeds>``: the seeds alone;
* ``fedtheory check --profile quick``: the seeds and the zoo (the main job);
* ``fedtheory check --profile quick --only <the zoo>``: the zoo alone;
* ``fedtheory check --mutants --profile quick --only <the zoo>``: the zoo's mutation score (once per repeat).

The budget is a difference, not a timed assertion: the zoo adds (main job - seeds alone) seconds to the quick
profile; the issue asks at most 10 s on two cores, and the mutants within 10 minutes. The load average before and
after is recorded. Writes results/zoo.json.
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
SEEDS = ("fedinit", "oledfl", "fedmrur", "fedshift")


def zoo_papers() -> list[str]:
    from fedtheory.plugins import BUILTIN_PAPERS, load_plugins
    from fedtheory.theory import paper_info

    load_plugins()
    return [p for p in BUILTIN_PAPERS if paper_info(p).collection == "zoo"]


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, exit status) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT).returncode
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rc


def run(quick: bool = False, repeats: int | None = None) -> dict:
    """The sides of the module docstring, best of ``repeats`` (1 with ``quick``, else 2); run_all's protocol."""
    repeats = repeats or (1 if quick else 2)
    zoo = zoo_papers()
    ft = [sys.executable, "-m", "fedtheory.cli", "check", "--profile", "quick"]
    tmp = tempfile.mkdtemp(prefix="bench_zoo_")
    sides = {
        "seeds alone": ft + ["--only", *SEEDS, "--out", os.path.join(tmp, "seeds.json")],
        "main job (seeds + zoo)": ft + ["--out", os.path.join(tmp, "all.json")],
        "zoo alone": ft + ["--only", *zoo, "--out", os.path.join(tmp, "zoo.json")],
        "zoo --mutants": ft + ["--mutants", "--only", *zoo, "--out", os.path.join(tmp, "mutants.json")],
    }
    load = [os.getloadavg()[0]]
    best = {k: [float("inf"), float("inf"), None] for k in sides}
    for _ in range(repeats):
        for name, cmd in sides.items():
            wall, cpu, rc = timed(cmd)
            b = best[name]
            b[0], b[1], b[2] = min(b[0], wall), min(b[1], cpu), rc
    load.append(os.getloadavg()[0])
    rows = [{"side": k, "wall_s": round(v[0], 2), "cpu_s": round(v[1], 2), "exit_status": v[2]}
            for k, v in best.items()]
    added = {"wall_s": round(best["main job (seeds + zoo)"][0] - best["seeds alone"][0], 2),
             "cpu_s": round(best["main job (seeds + zoo)"][1] - best["seeds alone"][1], 2)}
    summary = (f"the zoo ({len(zoo)} papers) adds {added['wall_s']:.1f} s wall ({added['cpu_s']:.1f} s CPU) to the "
               f"quick profile (budget 10 s); --mutants over the zoo {best['zoo --mutants'][0]:.1f} s wall (budget "
               f"600 s); best of {repeats}, load average {load[0]:.1f} -> {load[1]:.1f} on {os.cpu_count()} cores")
    return {"name": "the zoo's cost (issue 34, section 5)", "zoo": zoo, "repeats": repeats,
            "python": platform.python_version(), "load_average_before_after": [round(x, 2) for x in load],
            "rows": rows, "zoo_adds_to_the_quick_profile": added,
            "budgets": {"zoo_adds_at_most_s": 10, "mutants_at_most_s": 600}, "summary": summary}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "zoo.json"))
    args = ap.parse_args(argv)
    res = run(repeats=args.repeats)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    for r in res["rows"]:
        print(f"{r['side']:26s} {r['wall_s']:8.1f} s wall {r['cpu_s']:8.1f} s CPU  (exit {r['exit_status']})")
    print(res["summary"] + f"; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
