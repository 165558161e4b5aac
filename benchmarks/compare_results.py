"""Two results files of `fedtheory check --out` (or of `check --controls --out`), record by record:
``python benchmarks/compare_results.py OLD.json NEW.json [--rtol 1e-9] [--out DIFF.json] [--by-key]``.

Every record is matched by its position and must have the same id, problem and setting (``--by-key``: by id, problem
and setting, for trees whose records differ in number; the records on one side only are listed). Compared field by
field, recursively (``extra`` included): the verdicts, scopes, findings, finding classes, self_check and vacuous flags,
the conditions that failed and every text must be identical; numbers equal within ``--rtol`` (relative, default 1e-9)
or identical when not finite. Left out: what is not a result (each row's ``elapsed_s``, the run's ``elapsed_s``,
``command``, ``timings``, ``load_s``). Prints a summary (records compared, identical records, the largest relative
difference of a number, every difference up to ``--show``) and exits 1 when a verdict field or text differs, 0
otherwise: a benchmark's evidence that a faster tree gives today's records.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

IGNORED = {"elapsed_s", "command", "timings", "load_s"}
VERDICT_FIELDS = ("verdict", "scope", "finding", "finding_class", "self_check", "vacuous", "conditions_failed",
                  "status", "verdicts", "exit_code", "summary")


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


def _keyed(records: list) -> dict:
    """Records by (id, problem, setting), a repeated key numbered in order: two trees whose records differ in number
    (a paper added, a record added) still pair up."""
    out, seen = {}, {}
    for r in records:
        params = r.get("params") or {}
        k = (f"{r.get('id', r.get('check'))}|{r.get('problem')}|"
             f"{params.get('setting', '') if isinstance(params, dict) else ''}")
        seen[k] = seen.get(k, 0) + 1
        out[k if seen[k] == 1 else f"{k}#{seen[k]}"] = r
    return out


def compare(old: dict, new: dict, rtol: float = 1e-9, by_key: bool = False) -> dict:
    """{'records', 'identical_records', 'differences': [...], 'verdict_differences': [...], 'max_rel': ...}; with
    ``by_key`` records are matched by (id, problem, setting) and the ones on one side only are listed ('added',
    'removed') instead of a mismatch."""
    key = "results" if "results" in old else "controls"
    a, b = old.get(key, []), new.get(key, [])
    diffs, worst = [], []
    _walk({k: v for k, v in old.items() if k != key}, {k: v for k, v in new.items() if k != key}, "run", rtol, diffs,
          worst)
    same = 0
    if by_key:
        ka, kb = _keyed(a), _keyed(b)
        pairs = [(k, ka[k], kb[k]) for k in ka if k in kb]
        added, removed = [k for k in kb if k not in ka], [k for k in ka if k not in kb]
    else:
        pairs = [(f"{i}", x, y) for i, (x, y) in enumerate(zip(a, b))]
        added = removed = []
    for k, x, y in pairs:
        before = len(diffs)
        _walk(x, y, f"{key}[{k}]<{x.get('id', x.get('check'))}>", rtol, diffs, worst)
        same += len(diffs) == before
    if not by_key and len(a) != len(b):
        diffs.append((key, "number of records", len(a), len(b)))
    verdict = [d for d in diffs if any(f".{f}" in d[0].rsplit("<", 1)[-1] for f in VERDICT_FIELDS) or d[1] == "value"
               or d[1] in ("length", "missing on one side", "number of records")]
    worst.sort(reverse=True)
    return {"records": len(pairs), "identical_records": same, "differences": diffs, "added": added, "removed": removed,
            "verdict_differences": verdict, "max_rel": worst[0][0] if worst else 0.0,
            "max_rel_at": worst[0][1] if worst else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--show", type=int, default=20)
    ap.add_argument("--out", help="also write the comparison as JSON")
    ap.add_argument("--by-key", action="store_true", help="match records by (id, problem, setting), not by position; "
                    "list the records on one side only")
    args = ap.parse_args(argv)
    res = compare(json.loads(Path(args.old).read_text()), json.loads(Path(args.new).read_text()), args.rtol,
                  by_key=args.by_key)
    print(f"{res['records']} records compared, {res['identical_records']} identical (numbers within rtol "
          f"{args.rtol:g}); largest relative difference of a number {res['max_rel']:.3g}"
          + (f" at {res['max_rel_at']}" if res["max_rel_at"] else ""))
    if args.by_key:
        print(f"{len(res['added'])} record(s) only in NEW, {len(res['removed'])} only in OLD")
        for k in (res["added"] + res["removed"])[: args.show]:
            print(f"  {'+' if k in res['added'] else '-'} {k}")
    print(f"{len(res['differences'])} difference(s), {len(res['verdict_differences'])} in a verdict field or a text")
    for path, what, x, y in res["differences"][: args.show]:
        print(f"  {path}: {what}: {str(x)[:120]!s} -> {str(y)[:120]!s}")
    if args.out:
        Path(args.out).write_text(json.dumps({k: v for k, v in res.items()}, indent=1, default=str))
    return 1 if res["verdict_differences"] else 0


if __name__ == "__main__":
    sys.exit(main())
