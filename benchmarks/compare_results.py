"""Two results files of `fedtheory check --out` (or of `check --controls --out`), record by record:
``python benchmarks/compare_results.py OLD.json NEW.json [--rtol 1e-9] [--out DIFF.json]``.

Every record is matched by its position and must have the same id, problem and setting. Compared field by field,
recursively (``extra`` included): the verdicts, scopes, findings, finding classes, self_check and vacuous flags, the
conditions that failed and every text must be identical; numbers equal within ``--rtol`` (relative, default 1e-9)
or identical when not finite. Left out: what is not a result (each row's ``elapsed_s``, the run's ``elapsed_s``,
``command``, ``timings``, ``load_s``). Prints a summary (records compared, identical records, the largest relative difference
of a number, every difference up to ``--show``) and exits 1 when a verdict field or text differs, 0 otherwise:
a benchmark's evidence that a faster tree gives today's records.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

IGNORED = {"elapsed_s", "command", "timings", "load_s"}
VERDICT_FIELDS = ("verdict", "scope", "finding", "finding_class", "self_check", "vacuous", "conditions_failed", "status",
                  "verdicts", "exit_code", "summary")


def _walk(a, b, path: str, rtol: float, out: list, worst: list) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in IGNORED:
                continue
            if k not in a or k not in b:
                out.append((f"{path}.{k}", "missing on one side", a.get(k, "<absent>"), b.get(k, "<absent>")))
                continue
            _walk(a[k], b[k], f"{path}.{k}", rtol, out, worst)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((path, "length", len(a), len(b)))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", rtol, out, worst)
        return
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool) and not isinstance(b, bool):
        fa, fb = float(a), float(b)
        if not (math.isfinite(fa) and math.isfinite(fb)):
            if not (fa == fb or (math.isnan(fa) and math.isnan(fb))):
                out.append((path, "number", a, b))
            return
        rel = abs(fa - fb) / max(abs(fa), abs(fb), 1e-300) if fa != fb else 0.0
        if rel > 0:
            worst.append((rel, path, a, b))
        if rel > rtol:
            out.append((path, f"number (rel {rel:.2e})", a, b))
        return
    if a != b:
        out.append((path, "value", a, b))


def compare(old: dict, new: dict, rtol: float = 1e-9) -> dict:
    """{'records', 'identical_records', 'differences': [...], 'verdict_differences': [...], 'max_rel': ...}."""
    key = "results" if "results" in old else "controls"
    a, b = old.get(key, []), new.get(key, [])
    diffs, worst = [], []
    _walk({k: v for k, v in old.items() if k != key}, {k: v for k, v in new.items() if k != key}, "run", rtol, diffs,
          worst)
    same = 0
    for i, (x, y) in enumerate(zip(a, b)):
        before = len(diffs)
        _walk(x, y, f"{key}[{i}]<{x.get('id', x.get('check'))}>", rtol, diffs, worst)
        same += len(diffs) == before
    if len(a) != len(b):
        diffs.append((key, "number of records", len(a), len(b)))
    verdict = [d for d in diffs if any(f".{f}" in d[0].rsplit("<", 1)[-1] for f in VERDICT_FIELDS) or d[1] == "value"
               or d[1] in ("length", "missing on one side", "number of records")]
    worst.sort(reverse=True)
    return {"records": min(len(a), len(b)), "identical_records": same, "differences": diffs,
            "verdict_differences": verdict, "max_rel": worst[0][0] if worst else 0.0,
            "max_rel_at": worst[0][1] if worst else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--out", help="also write the comparison as JSON")
    args = ap.parse_args(argv)
    res = compare(json.loads(Path(args.old).read_text()), json.loads(Path(args.new).read_text()), args.rtol)
    print(f"{res['records']} records compared, {res['identical_records']} identical (numbers within rtol "
          f"{args.rtol:g}); largest relative difference of a number {res['max_rel']:.3g}"
          + (f" at {res['max_rel_at']}" if res["max_rel_at"] else ""))
    print(f"{len(res['differences'])} difference(s), {len(res['verdict_differences'])} in a verdict field or a text")
    for path, what, x, y in res["differences"][: args.show]:
        print(f"  {path}: {what}: {str(x)[:120]!s} -> {str(y)[:120]!s}")
    if args.out:
        Path(args.out).write_text(json.dumps({k: v for k, v in res.items()}, indent=1, default=str))
    return 1 if res["verdict_differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
