"""The worst-case layer of ``fedtheory check --mutants``: a mutant of a bound is killed where the worst case the
search finds for the statement breaks it.

For a record with a worst-case declaration (``register_worst_case``), :class:`WorstCaseLayer` runs the search once
for the statement (``worst_spec``: the constants of today's check where the declaration has a reference; a small
budget, ``--worst-budget``, 256 instance evaluations by default) and keeps its finalists: the best few instances,
re-evaluated on the final seeds, each with its measured left side (every statement, every seed) and the values the
bound is evaluated at. A stronger mutant that the units, rate and simulation rows leave alive is then evaluated at
those same runs (``rebound``: the same left side, the mutant's right side) and **killed by 'worst-case'** where the
search's own decision rule reports it (``instance_verdict``: deterministic runs, a gap beyond a relative
``ROUNDING_RTOL`` of the bound; stochastic runs, the paired gap beyond ``z_threshold`` standard errors) at an
instance where the statement itself is not reported (holds or inconclusive). A mutant weaker than the worst case
there survives, its reason citing the tightest worst-case ratio found.

The layer is absent (not an error) for a record without a declaration; a search that fails is named in the
record's note and decides nothing. The PEP (an exact worst case where declared) is not consulted here: its solves
take seconds each (``fedtheory worst --method pep``).
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .._validation import FedTheoryError
from ..checks.mutants import Mutant
from ..theory import Bound
from .search import Evaluation, instance_verdict, rebound, worst_case, worst_spec, z_threshold
from .spec import WorstCaseSpec, worst_case_entries

__all__ = ["BUDGET", "FINALISTS", "PreparedWorstCase", "WorstCaseLayer"]

BUDGET = 256  # instance evaluations of the search per record (`check --worst-budget`'s default: 8 generations)
FINALISTS = 4  # the best instances kept (re-evaluated on the final seeds) at which mutants are decided
FINAL_SEEDS = 32  # stochastic declarations: seeds of each kept instance (as `check --worst-case`)


@dataclass
class PreparedWorstCase:
    """The worst-case search of one statement, kept for its mutants: ``kept`` (instance, Evaluation) of the
    finalists; ``deciding`` the indices of those at which the statement is not itself reported."""

    spec: WorstCaseSpec | None
    kept: list[tuple[Any, Evaluation]] = field(default_factory=list)
    deciding: list[int] = field(default_factory=list)
    summary: str = ""
    seconds: float = 0.0

    @property
    def decides(self) -> bool:
        return bool(self.deciding)

    @property
    def points(self) -> list[Mapping[str, Any]]:
        return [dict(self.kept[i][1].values) for i in self.deciding]

    def decide(self, mutant: Mutant) -> str | None:
        """The row that reports ``mutant`` at a kept instance (the first), or None where none does."""
        spec = self.spec
        if spec is None or not isinstance(mutant.record, Bound):
            return None
        mspec = dataclasses.replace(spec, record_override=mutant.record)
        for i in self.deciding:
            _, ev = self.kept[i]
            try:
                with np.errstate(all="ignore"):
                    mev = rebound(spec, ev, mutant.record)
            except Exception:  # noqa: BLE001 - the mutant needs a value the instance lacks: not comparable there
                continue
            verdict, _ = instance_verdict(mspec, mev, 0)
            if verdict == "violated":
                return _row(spec, i, ev, mev)
        return None


def _row(spec: WorstCaseSpec, i: int, ev: Evaluation, mev: Evaluation) -> str:
    j = int(mev.statement[0])
    where = f" (statement {j + 1} of {mev.statements})" if mev.statements > 1 else ""
    text = (f"worst-case instance {i + 1}{where}: measured {float(mev.mean[0]):.4g} > the mutant's bound "
            f"{float(mev.bound[0]):.4g} (the statement's there {float(ev.bound_all[0, j]):.4g})")
    if spec.stochastic:
        gap = mev.gap[0]
        se = float(gap.std(ddof=1) / np.sqrt(gap.size)) if gap.size > 1 else 0.0
        text += (f"; mean gap {float(gap.mean()):.3g} = {float(gap.mean()) / se if se > 0 else math.inf:.3g} SE over "
                 f"{gap.size} runs > {z_threshold(mev.statements, gap.size):.3g}")
    return text


@dataclass
class WorstCaseLayer:
    """The 'worst-case' killing layer (``fedtheory.checks.mutants.MutantLayer``): ``prepare(record)`` searches the
    statement's worst case (``budget`` instance evaluations, search seed ``seed``) and keeps its ``finalists``."""

    budget: int = BUDGET
    seed: int = 0
    finalists: int = FINALISTS
    final_seeds: int = FINAL_SEEDS
    name: str = "worst-case"

    def prepare(self, record: Any) -> PreparedWorstCase | None:
        if not isinstance(record, Bound) or record.id not in worst_case_entries():
            return None
        t0 = time.perf_counter()
        kept: list[tuple[Any, Evaluation]] = []
        try:
            spec, _, _ = worst_spec(record.id, seed=self.seed)
            found = worst_case(spec, budget=self.budget, seed=self.seed, final_seeds=self.final_seeds,
                               finalists=self.finalists, keep=kept)
        except FedTheoryError as exc:
            return PreparedWorstCase(None, summary=f"the search failed ({exc}): decides nothing",
                                     seconds=time.perf_counter() - t0)
        verdicts = [instance_verdict(spec, ev, 0)[0] for _, ev in kept]
        deciding = [i for i, v in enumerate(verdicts) if v in ("holds", "inconclusive")]
        ratios = [float(kept[i][1].ratio[0]) for i in deciding]
        if deciding:
            r = max(ratios)
            summary = (f"the search's tightest kept instance has measured/bound {r:.3g} (slack {1 / r:.3g})"
                       if r > 0 else "measured/bound <= 0 at every kept instance")
            summary += (f" over {len(deciding)} of {len(kept)} kept instances ({found['evaluations']} evaluated, "
                        f"verdict {found['verdict']})")
        else:
            summary = (f"the statement is itself reported at every kept instance ({', '.join(sorted(set(verdicts)))}): "
                       "no mutant can be told apart there")
        return PreparedWorstCase(spec, kept, deciding, summary, time.perf_counter() - t0)
