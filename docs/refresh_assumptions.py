"""Write docs/assumptions.md: the assumption catalogue against what every shipped problem family, oracle, topology,
client sampling and algorithm certifies (``python docs/refresh_assumptions.py``; tests/test_certificates.py fails
when the page is stale). Every cell is computed here, from the certifiers, on small instances of each family."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fedtheory.sim import (AdditiveNoise, ClientSampling, Exact, Minibatch, fedavg, heterogeneous_least_squares,
                           huber_regression, identical_least_squares, least_squares_noise_at_optimum, pl_nonconvex,
                           synthetic_logistic)
from fedtheory.sim.problems import SeparablePLProblem
from fedtheory.sim.topology import RandomKNeighbour, exponential, fully_connected, grid, ring
from fedtheory.papers.fedmrur.algorithms import fedmrur
from fedtheory.theory import CATALOGUE

PAGE = Path(__file__).with_name("assumptions.md")

PROBLEMS = {
    "least squares": lambda: heterogeneous_least_squares(5, 4, 20, random_state=1),
    "least squares, rank-deficient": lambda: heterogeneous_least_squares(5, 4, 20, rank=2, random_state=1),
    "identical least squares": lambda: identical_least_squares(4, 3, 30, random_state=1),
    "least squares, noise at w* set": lambda: least_squares_noise_at_optimum(4, 3, 12, sigma_star2=0.2),
    "PL non-convex": lambda: pl_nonconvex(5, 4, 10, random_state=1),
    "separable PL (a <= 1)": lambda: SeparablePLProblem(np.ones(3), np.full(3, 0.5),
                                                        np.array([[1.0, 0, -1], [-1.0, 0, 1]])),
    "logistic + L2": lambda: synthetic_logistic(4, 3, 3, 10, random_state=1),
    "Huber": lambda: huber_regression(4, 3, 10, random_state=1),
}


ROUNDING = 1e-12  # the instances' constants are O(1): a value below this is a zero computed in floating point


def _cell(cert) -> str:
    if cert.status != "certified":
        return cert.status
    parts = []
    for k, v in cert.constants.items():
        a = np.asarray(v, dtype=float)
        if a.ndim:
            parts.append(f"{k} per run")
        elif abs(float(a)) < ROUNDING:  # 0 computed in floating point: its last digits are the machine's, not the page's
            parts.append(f"{k} = 0 (to rounding)")
        else:
            parts.append(f"{k} = {float(a):.3g}")
    if cert.family is not None:
        parts.append(f"{cert.family[0]}({', '.join(cert.constants)})")
    tag = cert.kind if cert.region == "global" else f"{cert.kind}, {cert.region}"
    return "certified" + (": " + ", ".join(parts) if parts else "") + f" ({tag})"


def _table(subject: str, things: dict, answer) -> list[str]:
    names = sorted(n for n, a in CATALOGUE.items() if a.subject == subject)
    lines = ["| assumption | " + " | ".join(things) + " |", "| --- |" + " --- |" * len(things)]
    notes: dict[str, set] = {}
    for n in names:
        row = []
        for label, thing in things.items():
            cert = answer(thing, n)
            row.append(_cell(cert))
            if cert.status != "certified":
                notes.setdefault(f"{n}: {cert.status}", set()).add(f"{label}: {cert.how}")
        lines.append(f"| `{n}` | " + " | ".join(row) + " |")
    lines.append("")
    lines += [f"* {k}: " + "; ".join(sorted(v)) for k, v in sorted(notes.items())]
    return lines


def render() -> str:
    problems = {k: f() for k, f in PROBLEMS.items()}
    ls = problems["least squares"]
    out = ["# Assumptions: what each problem, oracle, topology, sampling and algorithm certifies", "",
           "Written by `python docs/refresh_assumptions.py` from the certifiers themselves (`fedtheory.sim.certificates`);",
           "tests/test_certificates.py fails when this page is stale. A cell is `certified` with the constants (on small",
           "instances of each family: the numbers are the instances', the kinds and regions are the family's), `refused`",
           "or `unknown`; below each table, the reason of every cell that is not certified. `visited`: certified only on the",
           "region the run visited (the cell without a run's measures is `refused`, naming the measure it needs). How the",
           "rule uses them: docs/extending.md, \"Assumptions: checked, not declared\".", "",
           "## The catalogue", "", "| assumption | about | constants | statement |", "| --- | --- | --- | --- |"]
    for n, a in CATALOGUE.items():
        consts = ", ".join(f"{c.name} [{c.dim}] ({c.direction})" for c in a.constants) or "-"
        out.append(f"| `{n}` | {a.subject} | {consts} | {a.statement} |")
    out += ["", "## Problem families (no run: global certificates only)", ""]
    out += _table("problem", problems, lambda p, n: p.certify(n))
    out += ["", "## Oracles (on least squares, and on Huber regression)", ""]
    oracles = {"exact (LS)": (Exact(), ls), "additive 0.3 (LS)": (AdditiveNoise(0.3), ls),
               "minibatch 2 (LS)": (Minibatch(2), ls), "minibatch 2 (Huber)": (Minibatch(2), problems["Huber"])}
    out += _table("oracle", oracles, lambda t, n: t[0].certify(n, t[1]))
    out += ["", "## Topologies (8 or 9 agents, Metropolis weights)", ""]
    tops = {t.label(): t for t in (ring(8), grid(9), exponential(8), fully_connected(8), RandomKNeighbour(8, 3))}
    out += _table("topology", tops, lambda t, n: t.certify(n))
    out += ["", "## Client sampling and algorithms", ""]
    out += _table("sampling", {"10 of 10": ClientSampling(10), "3 of 10": ClientSampling(10, 3)},
                  lambda s, n: s.certify(n))
    out += [""]
    out += _table("algorithm", {"FedAvg": fedavg(), "FedMRUR (hyperbolic regularizer)": fedmrur()},
                  lambda a, n: a.certify(n))
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if PAGE.exists() and PAGE.read_text() == text else 1)
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
