"""README's "What it found" table from a results file: ``python scripts/findings_table.py results/check-quick.json``.

One row per paper of the seeds (counted findings by class, each finding's id) and one for the zoo of trusted theorems
(papers, theorems tested, rows, counted findings), from the file's ``findings`` and ``collections`` (what
``fedtheory check --out`` writes), so the table is what the run said, not typed in.
"""
from __future__ import annotations

import sys
from collections import defaultdict

from fedtheory.report import load_results


def findings_table(payload: dict) -> str:
    findings = payload.get("findings") or {}
    classes = findings.get("classes") or {}
    fragile = set(findings.get("fragile") or [])
    zoo = (payload.get("collections") or {}).get("zoo") or {}
    zoo_papers = set(zoo.get("papers") or [])
    by_paper: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for cls, keys in classes.items():
        for key in keys:
            fid = key.split("|")[0]
            paper = fid.split(".")[0]
            if paper not in zoo_papers:
                by_paper[paper][cls].append(f"`{fid}`" + (" (fragile)" if key in fragile else ""))
    lines = ["| paper | counted findings | by class |", "| --- | --- | --- |"]
    for paper in sorted(by_paper):
        per = by_paper[paper]
        n = sum(len(v) for v in per.values())
        text = "; ".join(f"{cls.replace('_', ' ')}: {', '.join(sorted(v))}" for cls, v in sorted(per.items()))
        lines.append(f"| {paper} | {n} | {text} |")
    if zoo:
        lines.append(f"| the zoo ({len(zoo_papers)} papers of trusted theorems, {len(zoo.get('tested') or [])} "
                     f"theorems tested, {zoo.get('rows')} rows) | {zoo.get('counted')} | - |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python scripts/findings_table.py RESULTS.json", file=sys.stderr)
        return 2
    print(findings_table(load_results(argv[0])), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
