"""Run every benchmarks/bench_*.py and collect their results in benchmarks/results/.

Each bench module defines ``run(quick: bool) -> dict`` returning {"name", "rows": [...], "summary": str};
this script writes results/<name>.json and prints a markdown table per benchmark. Ratios are
measured side by side in one process; timings are never asserted in tests.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the bench modules share benchmarks/_timing.py


def main(argv=None):
    import os

    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")  # as `fedtheory train` does; torch reads it once
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (for a smoke run)")
    ap.add_argument("names", nargs="*", help="only these bench_<name>.py")
    args = ap.parse_args(argv)
    # Only full-size runs land in the tracked results/; smoke runs go to results/quick/ (ignored).
    out_dir = HERE / "results" / "quick" if args.quick else HERE / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem[len("bench_"):]
        if args.names and name not in args.names:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        res = mod.run(quick=args.quick)
        res["quick"] = args.quick
        res["machine"] = {"python": platform.python_version(), "platform": platform.platform(),
                          "processor": platform.processor(), "cpus": __import__("os").cpu_count()}
        (out_dir / f"{name}.json").write_text(json.dumps(res, indent=2))
        print(f"## {res.get('name', name)}\n")
        rows = res.get("rows", [])
        if rows:
            keys = list(rows[0])
            print("| " + " | ".join(keys) + " |")
            print("|" + "---|" * len(keys))
            for r in rows:
                print("| " + " | ".join(f"{r[k]:.4g}" if isinstance(r[k], float) else str(r[k]) for k in keys) + " |")
        print("\n" + res.get("summary", "") + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
