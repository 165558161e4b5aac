"""The PEP row of every record with a PEP declaration (the zoo's and the seeds'; issue 44, item 2): its PEP at the
constants of today's check, sizes capped by the profile ('quick': seconds a record; 'full': a minute a record; each
declaration's measured sizes, ``fedtheory.worst.pep_sizes``), as a Markdown table on standard output: value, bound,
bound / value, how the PEP's class relates to the record's (exact; relaxed: an upper bound on the worst case; a
subclass: a lower bound), the verdict and the seconds (reference check, build and solve). ``--json``: the records.

``--sizes``: the measurement behind the declarations' sizes instead. For each record, candidate sizes in increasing
order, each solved in a fresh process under the profile's limit (quick 10 s, full 60 s; the solve alone, the
reference's check excluded), until one goes over: the largest that fit, with their seconds, side by side.

    python benchmarks/pep_rows.py [--profile quick|full] [--only ID ...] [--json]
    python benchmarks/pep_rows.py --sizes [--profile quick|full] [--only ID ...]

Not a timed assertion anywhere: the seconds are measured on the shared 2-core machine (its load average printed).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# candidate sizes per record, increasing (the factory's size parameters)
CANDIDATES = {
    "drori2014.thm3_1": [{"N": n} for n in (8, 20, 50, 64)],  # the hand-written PEP: C K T <= 64
    "taylor2018.thm3_1": [{"N": n} for n in (6, 20, 30, 50, 64)],
    "ghadimi2013.thm2_1a": [{"N": n} for n in (8, 20, 30, 50, 64)],
    "ghadimi2013.cor2_2": [{"N": n} for n in (8, 20, 30, 50)],
    "karimireddy2020.scaffold_sc": [{"N": a, "K": b, "T": c} for a, b, c in ((3, 3, 4), (3, 3, 6), (3, 5, 6),
                                                                            (3, 5, 8), (4, 5, 8), (4, 5, 10))],
    "khaled2020.identical": [{"H": 4, "rounds": r} for r in (4, 10, 15, 20, 25)],
    "khaled2020.heterogeneous": [{"M": a, "H": b, "rounds": c} for a, b, c in ((3, 3, 4), (4, 4, 4), (4, 4, 8),
                                                                               (4, 4, 12), (4, 4, 16))],
    "yuan2016.lemma1": [{"n": a, "T": b} for a, b in ((3, 4), (4, 8), (4, 16), (4, 24), (8, 16))],
    "yuan2016.thm1": [{"n": a, "T": b} for a, b in ((3, 4), (4, 8), (4, 16), (8, 16), (8, 30))],
    "yuan2016.thm3": [{"n": a, "T": b} for a, b in ((3, 4), (4, 8), (4, 16), (8, 16))],
    "yu2019.thm1": [{"N": a, "I": b, "rounds": c} for a, b, c in ((3, 4, 3), (3, 4, 4), (3, 4, 6), (4, 4, 6))],
    "fedprox.thm4": [{"N": a, "K": b} for a, b in ((3, 5), (3, 6), (4, 5), (3, 8))],
    "fedshift.lemma3": [{"N": n} for n in (3, 4, 6, 8)],
    **{rid: [{"C": a, "K": b, "T": c} for a, b, c in ((3, 3, 4), (4, 4, 6), (5, 5, 8), (6, 5, 12))]
       for rid in ("fedinit.thm1", "fedinit.thm2")},
    **{rid: [{"C": a, "K": b, "T": c} for a, b, c in ((3, 3, 4), (3, 3, 5), (3, 4, 5), (4, 3, 5), (3, 5, 6))]
       for rid in ("fedinit.thm4", "fedinit.thm4.rederived", "fedinit.thm5")},
}
LIMITS = {"quick": 10.0, "full": 60.0}


def _solve(rid: str, params: dict) -> dict:
    """One PEP at the given factory parameters (no reference: given whole), in this process."""
    import warnings

    from fedtheory.worst.pep import pep_worst_case
    from fedtheory.worst.pep.record import pep_spec

    warnings.simplefilter("ignore")
    spec, _, _ = pep_spec(rid, sets=params, use_reference=False)
    t0 = time.perf_counter()
    out = pep_worst_case(spec)
    return {"value": out["worst_measured"], "bound": out["bound"], "status": out["solver"]["status"],
            "verdict": out["verdict"], "seconds": round(time.perf_counter() - t0, 2)}


def _reference(rid: str, first: dict, seed: int = 0) -> dict:
    """The factory's parameters at today's check's constants, sizes capped at the first candidate."""
    from fedtheory.worst.pep.record import pep_spec

    spec, _, _ = pep_spec(rid, seed=seed, budget=first)
    return {k: v for k, v in spec.params.items() if k != "record_id"}


def sizes(profile: str, only: list[str]) -> list[dict]:
    out = []
    for rid, cands in CANDIDATES.items():
        if only and rid not in only:
            continue
        base = _reference(rid, cands[0])
        best = None
        for c in cands:
            params = {**base, **c}
            if "C" in c and base.get("N") == base.get("C"):  # full participation: N follows C
                params["N"] = c["C"]
            if "N" in c and base.get("S") == base.get("N"):  # SCAFFOLD's S = N (every client each round)
                params["S"] = c["N"]
            load = os.getloadavg()[0]
            cmd = [sys.executable, __file__, "--case", json.dumps([rid, params])]
            t = time.perf_counter()
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMITS[profile])
                row = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {
                    "status": f"error: {(r.stderr.strip().splitlines() or ['?'])[-1]}"}
            except subprocess.TimeoutExpired:
                row = {"status": f"> {LIMITS[profile]:g} s"}
            row.update(record=rid, sizes=c, wall_s=round(time.perf_counter() - t, 2), load=round(load, 2))
            print(json.dumps(row), file=sys.stderr, flush=True)
            if row.get("value") is None:
                break
            best = row
        out.append({"record": rid, "profile": profile, "largest": best})
    return out


def rows(profile: str, only: list[str]) -> list[dict]:
    import warnings

    from fedtheory.worst.pep import run_pep
    from fedtheory.worst.pep.record import pep_entries, pep_sizes

    warnings.simplefilter("ignore")
    out = []
    for rid in sorted(pep_entries()):
        if only and rid not in only:
            continue
        t0 = time.perf_counter()
        try:
            r = run_pep(rid, budget=pep_sizes(rid, profile))
        except Exception as exc:  # noqa: BLE001 - one record failing is named, the table goes on
            out.append({"id": rid, "error": f"{type(exc).__name__}: {exc}"})
            continue
        r["seconds_total"] = round(time.perf_counter() - t0, 2)
        out.append(r)
    return out


def _markdown(records: list[dict], profile: str) -> str:
    lines = [f"PEP rows, profile {profile} (load average {os.getloadavg()[0]:.1f} at the end)", "",
             "| record | sizes | bound / PEP value | PEP value | bound | class | verdict | seconds (solve; with the "
             "check's reference) |", "|---|---|---|---|---|---|---|---|"]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['id']} | - | - | - | - | - | error: {r['error'][:80]} | - |")
            continue
        v, b = r["worst_measured"], r["bound"]
        ratio = "-" if v is None or not v else f"{b / v:.4g}"
        sz = {k: r["params"][k] for k in ("C", "N", "n", "M", "K", "H", "I", "T", "rounds") if k in r["params"]}
        rel = {"exact": "exact", "upper bound": "relaxed: an upper bound",
               "lower bound": "a subclass: a lower bound"}[r["class_relation"]]
        solve = sum((r["solver"].get("times") or {}).values())
        lines.append(f"| {r['id']} | {', '.join(f'{k}={x}' for k, x in sz.items())} | {ratio} | "
                     f"{'-' if v is None else f'{v:.6g}'} | {b:.6g} | {rel} | {r['verdict']} | {solve:.1f} "
                     f"({r['seconds_total']:.1f}) |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=("quick", "full"), default="quick")
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sizes", action="store_true", help="measure the largest sizes within the profile's limit")
    args = ap.parse_args(argv)
    if args.sizes:
        print(json.dumps(sizes(args.profile, args.only), indent=2))
        return 0
    recs = rows(args.profile, args.only)
    print(json.dumps(recs, indent=2, default=str) if args.json else _markdown(recs, args.profile), end="")
    return 0


if __name__ == "__main__":
    if "--case" in sys.argv:
        rid, params = json.loads(sys.argv[sys.argv.index("--case") + 1])
        print(json.dumps(_solve(rid, params)))
    else:
        sys.exit(main())
