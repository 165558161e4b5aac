"""The assumption catalogue against what the shipped certifiers answer, written once for ``fedtheory list
--assumptions`` and for docs/assumptions.md (``scripts/refresh_assumptions.py``).

Every entry of ``fedtheory.theory.CATALOGUE`` (the built-in ones and those the loaded plug-ins register) is asked of a
small representative of each shipped thing of its subject: the problem families, the oracles (on least squares and
on Huber regression), the topologies, the client samplings and two algorithms (FedAvg, which adds no term to the
local objectives, and FedMRUR, which adds its hyperbolic regularizer). The answers are the certifiers' own
(``fedtheory.sim.certificates``), without a run: a constant certified only on the visited region is ``refused`` here,
naming the measure a run must record. The numbers are the representatives'; the status, kind and region are the
family's.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np

from ..sim.certificates import Certificate, visited_measure
from ..theory import CATALOGUE

__all__ = ["ROUNDING", "assumption_rows", "certificate_cell", "certifiers", "subject_table"]

ROUNDING = 1e-12  #: the representatives' constants are O(1): a value below this is a zero computed in floating point

@functools.lru_cache(maxsize=1)
def certifiers() -> dict[str, dict[str, Callable[[str], Certificate]]]:
    """subject -> {label: ask}, ``ask(name)`` the representative's certificate for the catalogue entry ``name``
    (built once per process; the algorithms after loading the plug-ins, which register FedMRUR)."""
    from ..plugins import algorithms
    from ..sim import (
        AdditiveNoise,
        ClientSampling,
        Exact,
        Minibatch,
        build_algorithm,
        heterogeneous_least_squares,
        huber_regression,
        identical_least_squares,
        least_squares_noise_at_optimum,
        pl_nonconvex,
        synthetic_logistic,
    )
    from ..sim.problems import SeparablePLProblem
    from ..sim.topology import RandomKNeighbour, exponential, fully_connected, grid, ring

    problems = {
        "least squares": heterogeneous_least_squares(5, 4, 20, random_state=1),
        "least squares (rank-deficient)": heterogeneous_least_squares(5, 4, 20, rank=2, random_state=1),
        "identical least squares": identical_least_squares(4, 3, 30, random_state=1),
        "least squares (noise at w* set)": least_squares_noise_at_optimum(4, 3, 12, sigma_star2=0.2),
        "PL non-convex": pl_nonconvex(5, 4, 10, random_state=1),
        "separable PL (a <= 1)": SeparablePLProblem(np.ones(3), np.full(3, 0.5),
                                                     np.array([[1.0, 0, -1], [-1.0, 0, 1]])),
        "logistic + L2": synthetic_logistic(4, 3, 3, 10, random_state=1),
        "Huber": huber_regression(4, 3, 10, random_state=1),
    }
    ls, huber = problems["least squares"], problems["Huber"]
    oracles = {"exact (LS)": (Exact(), ls), "additive 0.3 (LS)": (AdditiveNoise(0.3), ls),
               "minibatch 2 (LS)": (Minibatch(2), ls), "minibatch 2 (Huber)": (Minibatch(2), huber)}
    topologies = {t.label(): t for t in (ring(8), grid(9), exponential(8), fully_connected(8), RandomKNeighbour(8, 3))}
    algorithms()  # the plug-ins' algorithms registered (FedMRUR is the built-in fedmrur paper's)
    algs = {"FedAvg": build_algorithm("FedAvg"), "FedMRUR (hyperbolic regularizer)": build_algorithm("FedMRUR")}
    return {
        "problem": {k: p.certify for k, p in problems.items()},
        "oracle": {k: functools.partial(_ask_oracle, o, p) for k, (o, p) in oracles.items()},
        "topology": {k: t.certify for k, t in topologies.items()},
        "sampling": {"10 of 10": ClientSampling(10).certify, "3 of 10": ClientSampling(10, 3).certify},
        "algorithm": {k: a.certify for k, a in algs.items()},
    }


def _ask_oracle(oracle, problem, name: str) -> Certificate:
    return oracle.certify(name, problem)


def certificate_cell(cert: Certificate) -> str:
    """A certificate in one cell: ``certified: L = 3.02 (exact)`` (a constant below ROUNDING as ``0 (to rounding)``,
    per-run values as ``per run``, a family of admissible values named), ``refused`` or ``unknown``."""
    if cert.status != "certified":
        return cert.status
    parts = []
    for k, v in cert.constants.items():
        a = np.asarray(v, dtype=float)
        if a.ndim:
            parts.append(f"{k} per run")
        elif abs(float(a)) < ROUNDING:  # 0 computed in floating point: its last digits are the machine's
            parts.append(f"{k} = 0 (to rounding)")
        else:
            parts.append(f"{k} = {float(a):.3g}")
    if cert.family is not None:
        parts.append(f"{cert.family[0]}({', '.join(cert.constants)})")
    tag = cert.kind if cert.region == "global" else f"{cert.kind}, {cert.region}"
    return "certified" + (": " + ", ".join(parts) if parts else "") + f" ({tag})"


def _answers(name: str) -> dict[str, Certificate]:
    entry = CATALOGUE[name]
    return {label: ask(name) for label, ask in certifiers().get(entry.subject, {}).items()}


def subject_table(subject: str) -> list[str]:
    """The Markdown table of every catalogue entry about ``subject`` against its representatives (one column each),
    then the reason of every cell that is not certified."""
    things = certifiers()[subject]
    names = sorted(n for n, a in CATALOGUE.items() if a.subject == subject)
    lines = ["| assumption | " + " | ".join(things) + " |", "| --- |" + " --- |" * len(things)]
    notes: dict[str, set] = {}
    for n in names:
        row = []
        for label, cert in _answers(n).items():
            row.append(certificate_cell(cert))
            if cert.status != "certified":
                notes.setdefault(f"{n}: {cert.status}", set()).add(f"{label}: {cert.how}")
        lines.append(f"| `{n}` | " + " | ".join(row) + " |")
    lines.append("")
    lines += [f"* {k}: " + "; ".join(sorted(v)) for k, v in sorted(notes.items())]
    return lines


def assumption_rows() -> list[dict[str, Any]]:
    """One row per catalogue entry (after loading the plug-ins, so theirs too), in catalogue order: ``name``,
    ``subject`` (what answers it), ``statement``, ``constants`` (each: name, dimension in [f] and [w], direction:
    which values it admits once the tightest is certified, meaning), and what the shipped representatives of its
    subject answer: ``certified_by`` (the labels that certify it), ``visited_only`` (each label that certifies it
    only on the region a run visited, with the measure the run must record: refused here, without a run),
    ``refused_by`` (the others that refuse it), ``unknown_by``, and ``answers`` (label -> the certificate's
    ``summary()``)."""
    from ..plugins import load_plugins

    load_plugins()
    out = []
    for name, a in CATALOGUE.items():
        answers = _answers(name)
        visited = {k: visited_measure(c) for k, c in answers.items() if visited_measure(c)}
        out.append({
            "name": name, "subject": a.subject, "statement": a.statement,
            "constants": [{"name": c.name, "dimension": c.dim or "?", "direction": c.direction, "meaning": c.meaning}
                          for c in a.constants],
            "certified_by": [k for k, c in answers.items() if c.status == "certified"],
            "visited_only": [{"by": k, "measure": m} for k, m in visited.items()],
            "refused_by": [k for k, c in answers.items() if c.status == "refused" and k not in visited],
            "unknown_by": [k for k, c in answers.items() if c.status == "unknown"],
            "answers": {k: _plain(c.summary()) for k, c in answers.items()},
        })
    return out


def _plain(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A certificate summary with its constants as JSON numbers (NaN and inf as text)."""
    def num(v):
        if isinstance(v, float) and not np.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {k: num(x) for k, x in v.items()}
        return v
    return {**summary, "constants": {k: num(v) for k, v in summary.get("constants", {}).items()}}
