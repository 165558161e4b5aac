"""The main job and `fedtheory list` against their budgets (issue 42: `make check` at most 20 s, `fedtheory list` at
most 0.5 s; `list` both with the listing the run before kept and with none), at a base revision and at the working
tree, side by side: each command runs in a fresh process, the two trees alternating, best of N per side (a slow spell
of a shared machine hits both alike). The base tree is a `git archive` of BASE put first on PYTHONPATH (the installed
entry points name the same built-in papers).

Run: ``python benchmarks/run_all.py budgets`` (``--quick``: one repeat); FEDTHEORY_BENCH_BASE (default BASE).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "a9ed256"  # main before issue 42's round
EXAMPLES = ["--plugin", "examples/li2020_fedavg/src/li2020_fedavg", "--plugin",
            "examples/stich2019_localsgd/src/stich2019_localsgd"]
COMMANDS = {
    "make check (fedtheory check --profile quick, the two example plug-ins)": ["check", "--profile", "quick",
                                                                               *EXAMPLES, "--no-progress"],
    "fedtheory list": ["list"],
    "fedtheory list, nothing kept (FEDTHEORY_CACHE='': a full load, as the first run)": ["list"],
}
BUDGETS = {"make check (fedtheory check --profile quick, the two example plug-ins)": 20.0, "fedtheory list": 0.5,
           "fedtheory list, nothing kept (FEDTHEORY_CACHE='': a full load, as the first run)": 0.5}
# `fedtheory list` as a user runs it: with the cache folder of the run before (fedtheory/cli/listing.py), warmed by
# one run per side that is not timed; the base revision keeps none, so its side is a full load either way
CACHE_OFF = {"fedtheory list, nothing kept (FEDTHEORY_CACHE='': a full load, as the first run)"}


def _tree_of(rev: str, into: Path) -> Path:
    with tempfile.NamedTemporaryFile(suffix=".tar") as tar:
        subprocess.run(["git", "archive", "-o", tar.name, rev], cwd=ROOT, check=True)
        with tarfile.open(tar.name) as t:
            t.extractall(into, filter="data")
    return into


def _time(tree: Path, argv: list[str], cache: str) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(tree), "FEDTHEORY_CACHE": cache}
    env.pop("FEDTHEORY_PLUGINS", None)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fedtheory.cli", *argv], cwd=tree, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, out.returncode


def run(quick: bool = False) -> dict:
    base = os.environ.get("FEDTHEORY_BENCH_BASE", BASE)
    repeat = 1 if quick else 3
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees = {base: _tree_of(base, Path(tmp) / "base"), "working tree": ROOT}
        for name, argv in COMMANDS.items():
            best = {k: float("inf") for k in trees}
            codes = {}
            caches = {label: "" if name in CACHE_OFF else str(Path(tmp) / f"cache-{i}")
                      for i, label in enumerate(trees)}
            for label, tree in trees.items():
                _time(tree, argv, caches[label])  # not timed: what the run before leaves in the cache
            for _ in range(repeat):
                for label, tree in trees.items():
                    s, codes[label] = _time(tree, argv, caches[label])
                    best[label] = min(best[label], s)
            rows.append({"command": name, "budget_s": BUDGETS[name], f"{base}_s": round(best[base], 2),
                         "working_tree_s": round(best["working tree"], 2),
                         "ratio": round(best["working tree"] / best[base], 3),
                         "within_budget": best["working tree"] <= BUDGETS[name],
                         "exit_codes": codes})
    summary = "; ".join(f"{r['command']}: {r[f'{base}_s']} s at {base} -> {r['working_tree_s']} s "
                        f"(budget {r['budget_s']} s)" for r in rows)
    return {"name": "budgets", "rows": rows, "summary": summary, "base": base}
