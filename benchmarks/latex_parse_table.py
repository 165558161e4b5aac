"""The parse table of issue 35: each displayed bound of the seeds (and of the zoo fixtures) parsed by fedtheory.latex
and compared with the hand-checked record's formula by sympy.

    python benchmarks/latex_parse_table.py [--seeds DIR] [--backend antlr|lark] [--out FILE]

For every fixture of ``tests/data/latex/seed_displays.json`` (LaTeX copied verbatim from a seed line; checked
against ``--seeds`` when that folder exists) and ``tests/data/latex/zoo_displays.json``:

* *parsed*: the tool read a formula (``file`` mode: the whole seed file through ``read_document``/``parse_item``, the
  relation at the cited line; ``display``: the snippets joined as one display; ``relation``/``expression``: inline
  math, through ``parse_item``/``parse_math``);
* *proven equal*: ``sympy.simplify(parsed - record) == 0`` with symbols matched by name ('_' removed, every symbol
  positive), after the fixture's stated renames (``subs``); a condition is compared solved for its left side.

The hand-checked records are looked up by id (``fedtheory.plugins.record``). Prints a Markdown table per paper and
writes the rows to ``benchmarks/results/latex_parse_table.json`` (``--out``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import sympy as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fedtheory.latex import LatexRefused, Unparseable, parse_math, read_document  # noqa: E402
from fedtheory.latex.expression import Skipped, Unparsed, parse_item  # noqa: E402
from fedtheory.plugins import load_plugins, record  # noqa: E402

FIXTURES = ROOT / "tests" / "data" / "latex"


_CMP = "cmp__"  # a prefix no record's symbol has: sympy holds Symbol('T', positive=True) equal to a record's
# Symbol('T', real=True, positive=True) while their srepr differ, and its cache would then hand one for the other to
# later computations (the symbolic cache's keys are srepr texts): the compared symbols must never equal a record's


def canonical(e: sp.Basic) -> sp.Basic:
    """Every symbol renamed without '_' and made positive: B_1 and B1 are one symbol."""
    return e.xreplace({s: sp.Symbol(_CMP + s.name.replace("_", ""), positive=True) for s in e.free_symbols})


def _shown(e: sp.Basic) -> str:
    return sp.sstr(e.xreplace({s: sp.Symbol(s.name.removeprefix(_CMP)) for s in e.free_symbols}))


def record_part(rid: str, part: str):
    """The formula a fixture is compared with: a Bound's expr, a Definition's expr, a condition's relation, the
    stated order."""
    rec = record(rid)
    if part == "expr":
        return rec.expr
    if part == "definition":
        return rec.expr
    if part == "order":
        return rec.order.expr
    if part.startswith("condition:"):
        name = part.split(":", 1)[1]
        return next(c.relation for c in rec.conditions if c.name == name)
    raise ValueError(part)


def substitution(subs: dict[str, str]) -> dict[sp.Symbol, sp.Expr]:
    out = {}
    for k, v in subs.items():
        if v.startswith("@"):
            out[sp.Symbol(k)] = record(v[1:]).expr
        else:
            names = set(re.findall(r"[A-Za-z_]\w*(?!\w*\s*\()", v)) - set(re.findall(r"([A-Za-z_]\w*)\s*\(", v))
            out[sp.Symbol(k)] = sp.sympify(v, locals={n: sp.Symbol(n) for n in names})
    return out


def _plain(e):
    return e.xreplace({s: sp.Symbol(s.name) for s in e.free_symbols})


def equal(parsed: sp.Basic, target: sp.Basic, subs: dict) -> tuple[bool, str]:
    """(proven, how): parsed (after subs) minus the record's formula simplifies to 0; a relation is solved for
    the parsed left side first."""
    parsed = _plain(parsed)
    target = _plain(target)
    if subs:
        parsed = parsed.xreplace({k: _plain(v) for k, v in subs.items()})
        parsed = parsed.xreplace({k: _plain(v) for k, v in subs.items()})  # a rename inside a substituted formula
    if isinstance(parsed, sp.core.relational.Relational):
        a, b = canonical(parsed.lhs), canonical(parsed.rhs)
        tl, tr = canonical(target.lhs), canonical(target.rhs)
        if a.is_Symbol:
            sol = sp.solve(sp.Eq(tl, tr), a)
            if len(sol) == 1:
                ok = sp.simplify(b - sol[0]) == 0
                return ok, f"solved the record's relation for {_shown(a)}: {_shown(sol[0])}" + ("" if ok else
                                                                                                 " (differs)")
        ok = sp.simplify((a - b) - (tl - tr)) == 0
        return ok, "relation sides compared"
    diff = sp.simplify(canonical(parsed) - canonical(target))
    if diff == 0:
        return True, "simplify(parsed - record) = 0"
    return False, f"differs by {_shown(diff)[:160]}"


def seed_text(seeds: Path | None, name: str) -> list[str] | None:
    if seeds is None or not (seeds / name).is_file():
        return None
    return (seeds / name).read_text(encoding="utf-8").splitlines()


def as_display(pieces: list[str]) -> str:
    """The verbatim snippets as one display. ar5iv's text turns the source's line breaks inside a formula into
    '% ' (a TeX comment then a newline): the newline is put back."""
    return "\\[" + "\n".join(p.replace("% ", "%\n") for p in pieces) + "\\]"


def run_fixture(fx: dict, seeds: Path | None, backend: str, file_cache: dict) -> dict:
    row = {k: fx.get(k) for k in ("paper", "record", "part", "seed", "line", "why", "mode")}
    row["renames"] = fx.get("subs", {})
    lines = seed_text(seeds, fx["seed"]) if fx.get("seed", "").endswith(".txt") else None
    if lines is not None and "latex" in fx:
        found = all(any(p in lines[n - 1 + k] for k in range(-5, 8) if 0 <= n - 1 + k < len(lines))
                    for p, n in zip(fx["latex"], [fx["line"]] * len(fx["latex"])))
        found = found and all(d["latex"] in lines[d["line"] - 1] for d in fx.get("definitions", []))
        row["verbatim"] = "verified" if found else "NOT FOUND in the seed"
    else:
        row["verbatim"] = "seed verified by file mode" if fx.get("mode") == "file" and lines else "not verified"
    t0 = time.perf_counter()
    parsed, reason = None, ""
    try:
        if fx["mode"] == "texfile":  # a .tex fixture of this repository, read whole by the tool
            doc = read_document((ROOT / fx["seed"]).read_text(encoding="utf-8"), fx["seed"])
            rels = [r for it in doc.items if it.line == fx["line"] for r in parse_item(it, backend=backend)
                    if not isinstance(r, Skipped)]
            if not rels:
                raise Unparseable("no math item at that line")
            parsed, reason = _side(rels[fx.get("index", 0)], fx.get("compare", "rhs"))
            row["verbatim"] = "written here (not the paper's source)"
        elif fx["mode"] == "file":
            if lines is None:
                raise Unparseable(f"seed {fx['seed']} not found (--seeds)")
            key = fx["seed"]
            if key not in file_cache:
                doc = read_document("\n".join(lines), key)
                file_cache[key] = [(it.line, r) for it in doc.items for r in parse_item(it, backend=backend)
                    if not isinstance(r, Skipped)]
            at = [r for ln, r in file_cache[key] if ln == fx["line"]]
            if not at:
                raise Unparseable("no math item at that line")
            r = at[fx.get("index", 0)]
            parsed, reason = _side(r, fx["compare"])
        elif fx["mode"] in ("display", "relation"):
            text = as_display(fx["latex"]) if fx["mode"] == "display" else "\\[" + fx["latex"][0] + "\\]"
            doc = read_document(text, fx.get("seed", "fixture"))
            rels = [r for it in doc.items for r in parse_item(it, backend=backend)
                    if not isinstance(r, Skipped)]
            if not rels:
                raise Unparseable("no relation found")
            r = rels[0]
            if isinstance(r, Unparsed):
                raise Unparseable(r.reason)
            if fx["mode"] == "relation":
                parsed = sp.core.relational.Relational(r.lhs.expr, r.rhs.expr, {"le": "<=", "lt": "<", "ge": ">=",
                                                                                   "gt": ">", "eq": "=="}[r.rel]) \
                    if r.lhs.expr is not None and r.rhs.expr is not None else None
                reason = "" if parsed is not None else "a side did not parse"
            else:
                parsed, reason = _side(r, fx.get("compare", "rhs"))
        elif fx["mode"] == "expression":
            p = parse_math(fx["latex"][0], backend=backend)
            parsed = p.order if fx["part"] == "order" else p.expr
        else:
            raise ValueError(fx["mode"])
    except (Unparseable, LatexRefused) as exc:
        reason = str(exc)
    row["parse_s"] = round(time.perf_counter() - t0, 3)
    row["parsed"] = parsed is not None
    row["parsed_expr"] = sp.sstr(parsed)[:300] if parsed is not None else ""
    if parsed is None:
        row["equal"], row["reason"] = False, reason or "not parsed"
        return row
    subs = substitution(fx.get("subs", {}))
    for d in fx.get("definitions", []):  # the theorem's own choices, parsed from the seed too
        doc = read_document("\\[" + d["latex"] + "\\]", "definition")
        rel = next(r for it in doc.items for r in parse_item(it) if not isinstance(r, Skipped))
        subs[sp.Symbol(rel.lhs.expr.name)] = rel.rhs.expr
    target = record_part(fx["record"], fx["part"])
    ok, how = equal(parsed, target, subs)
    row["equal"], row["reason"] = ok, how
    return row


def _side(r, compare: str):
    if isinstance(r, Unparsed):
        return None, r.reason
    if compare == "order":
        return r.rhs.order, ("" if r.rhs.order is not None else "no stated order")
    return r.rhs.expr, ("" if r.rhs.expr is not None else "the right side did not parse")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_seeds = os.environ.get("FEDTHEORY_SEEDS") or str(ROOT.parent / "shared" / "seeds")
    ap.add_argument("--seeds", default=default_seeds, help="the seeds folder (default $FEDTHEORY_SEEDS or "
                    "../shared/seeds)")
    ap.add_argument("--backend", default="antlr", choices=("antlr", "lark"), help="sympy's parse_latex backend")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "latex_parse_table.json"))
    args = ap.parse_args(argv)
    seeds = Path(args.seeds) if Path(args.seeds).is_dir() else None
    load_plugins()
    rows = []
    cache: dict = {}
    t0 = time.perf_counter()
    for name in ("seed_displays.json", "zoo_displays.json"):
        path = FIXTURES / name
        if not path.is_file():
            continue
        for fx in json.loads(path.read_text())["displays"]:
            if fx.get("plugin"):
                load_plugins([str(ROOT / fx["plugin"])])
            rows.append({**run_fixture(fx, seeds, args.backend, cache), "fixtures": name})
    papers = sorted({r["paper"] for r in rows}, key=lambda p: [r["paper"] for r in rows].index(p))
    print(f"seeds: {seeds or 'not found (file-mode rows cannot run; snippets not verified)'}; "
          f"{len(rows)} displays in {time.perf_counter() - t0:.1f} s\n")
    print("| paper | displays | parsed | proven equal | fraction |\n| --- | --- | --- | --- | --- |")
    for p in papers:
        rs = [r for r in rows if r["paper"] == p]
        n, a, b = len(rs), sum(r["parsed"] for r in rs), sum(r["equal"] for r in rs)
        print(f"| {p} | {n} | {a} | {b} | {b / n:.0%} |")
    n, b = len(rows), sum(r["equal"] for r in rows)
    print(f"| all | {n} | {sum(r['parsed'] for r in rows)} | {b} | {b / n:.0%} |\n")
    print("| paper | record (part) | seed line | verbatim | parsed | equal | reason / how |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['paper']} | {r['record']} ({r['part']}) | {r['seed']}:{r['line']} | {r['verbatim']} | "
              f"{'yes' if r['parsed'] else 'no'} | {'yes' if r['equal'] else 'no'} | "
              f"{r['reason'][:150].replace('|', '/')} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "seeds": seeds.name if seeds else None,
                                          "backend": args.backend},
                                         indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
