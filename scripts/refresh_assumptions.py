"""Write docs/assumptions.md: the assumption catalogue against what every shipped problem family, oracle, topology,
client sampling and algorithm certifies (``python scripts/refresh_assumptions.py``; tests/test_certificates.py fails
when the page is stale). Every cell is computed by ``fedtheory.checks.catalogue`` (what ``fedtheory list
--assumptions`` prints), from the certifiers, on small instances of each family."""
from __future__ import annotations

import sys
from pathlib import Path

from fedtheory.checks.catalogue import subject_table
from fedtheory.theory import CATALOGUE

PAGE = Path(__file__).resolve().parents[1] / "docs" / "assumptions.md"


def render() -> str:
    out = ["# Assumptions: what each problem, oracle, topology, sampling and algorithm certifies", "",
           "Written by `python scripts/refresh_assumptions.py` from the certifiers themselves "
           "(`fedtheory.sim.certificates`);",
           "tests/test_certificates.py fails when this page is stale. "
           "A cell is `certified` with the constants (on small",
           "instances of each family: the numbers are the instances', "
           "the kinds and regions are the family's), `refused`",
           "or `unknown`; below each table, the reason of every cell "
           "that is not certified. `visited`: certified only on the",
           "region the run visited (the cell without a run's measures "
           "is `refused`, naming the measure it needs). How the",
           "rule uses them: docs/extending.md, \"Assumptions: checked, not declared\". `fedtheory list --assumptions`",
           "prints the same catalogue with what certifies each entry (`--format json`: every answer).", "",
           "## The catalogue", "", "| assumption | about | constants | statement |", "| --- | --- | --- | --- |"]
    for n, a in CATALOGUE.items():
        consts = ", ".join(f"{c.name} [{c.dim}] ({c.direction})" for c in a.constants) or "-"
        out.append(f"| `{n}` | {a.subject} | {consts} | {a.statement} |")
    out += ["", "## Problem families (no run: global certificates only)", ""]
    out += subject_table("problem")
    out += ["", "## Oracles (on least squares, and on Huber regression)", ""]
    out += subject_table("oracle")
    out += ["", "## Topologies (8 or 9 agents, Metropolis weights)", ""]
    out += subject_table("topology")
    out += ["", "## Client sampling and algorithms", ""]
    out += subject_table("sampling")
    out += [""]
    out += subject_table("algorithm")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if PAGE.exists() and PAGE.read_text() == text else 1)
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
