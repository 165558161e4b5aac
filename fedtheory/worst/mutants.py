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
record's note and decides nothing.

The PEP layer (:class:`PEPLayer`, 'pep', where the extra is installed and the record declares a PEP): the PEP at the
check's constants, sizes capped (``PEP_BUDGET``), solved once; its worst case rebuilt and re-run by the simulator
(``fedtheory.worst.pep.instance``). A mutant is killed where that instance refutes it, and every mutant is classified
(``PreparedPEP.classify``): provably false (the instance refutes it), provably true at the PEP's setting (the SDP's
upper value lies below it there) or undecided; ``check --mutants`` reports the power (killed / provably false) and
the provably true mutants killed (a false alarm, must be 0).
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

__all__ = ["BUDGET", "FINALISTS", "PEPLayer", "PEP_BUDGET", "PreparedPEP", "PreparedWorstCase", "WorstCaseLayer"]

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

    def kill_setting(self, mutant: Mutant) -> tuple[str, str, str]:
        """Where this layer's kill is made and the mutant's truth there: the search's own setting (today's check's
        constants); provably false there for a deterministic search (its instances satisfy every assumption by
        construction, the comparison is exact), undecided for a stochastic one (a statistical decision)."""
        spec = self.spec
        vals = {k: v for k, v in (self.points[0] if self.points else {}).items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}
        where = "the search's instance (" + ", ".join(f"{k}={v:.4g}" for k, v in vals.items()) + ")"
        if spec is not None and not spec.stochastic:
            return "other", "provably_false", f"{where}: deterministic, inside every assumption by construction"
        return "other", "undecided", f"{where}: a statistical decision; no PEP decides that setting"


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


# ------------------------------------------------------------------------------------ the PEP layer

# the default sizes' caps (``PEP_PROFILES['quick']``; a declaration may name its own)
PEP_BUDGET = {"C": 3, "K": 3, "T": 4}
TRUTH_RTOL = 1e-4  # a mutant is true at the PEP's setting when the SDP's upper value is below its bound by this much


@dataclass
class PreparedPEP:
    """The PEP of one statement, kept for its mutants: the spec (class, setting, the values its bound is evaluated
    at), the SDP's upper value (an upper bound on the worst case over the class: exact or relaxed alike), and the
    worst case rebuilt as an instance the simulator re-ran (its measured left side and its own constants)."""

    spec: Any = None
    upper: float | None = None
    instance: Any = None
    summary: str = ""
    seconds: float = 0.0
    value: float | None = None  # the SDP's value (the record's left side): the exact worst case in an exact class

    @property
    def decides(self) -> bool:
        return self.instance is not None and self.instance.in_class

    @property
    def points(self) -> list[Mapping[str, Any]]:
        out = [dict(self.spec.values)] if self.spec is not None else []
        if self.instance is not None:
            out.append(dict(self.instance.values))
        return out

    def _bound(self, mutant: Mutant, values: Mapping[str, Any]) -> float | None:
        try:
            if mutant.record.conditions_failed(dict(values)):
                return None
            with np.errstate(all="ignore"):
                b = float(np.asarray(mutant.record.evaluate(dict(values)), float))
        except Exception:  # noqa: BLE001 - a value the mutant needs that the setting lacks: not comparable there
            return None
        return b if math.isfinite(b) else None

    def refutes(self, mutant: Mutant) -> str | None:
        """The row that refutes ``mutant`` on the rebuilt instance (re-run by the simulator, every assumption
        certified there, the bound at the instance's own constants), or None."""
        cx = self.instance
        if cx is None or not cx.in_class or not isinstance(mutant.record, Bound):
            return None
        b = self._bound(mutant, cx.values)
        if b is None or not cx.measured > b * (1 + TRUTH_RTOL) + 1e-12:
            return None
        return (f"the PEP's worst case rebuilt (d = {cx.dimension}) and re-run by the simulator: measured "
                f"{cx.measured:.6g} > the mutant's bound {b:.6g} at the instance's constants")

    def decide(self, mutant: Mutant) -> str | None:
        return self.refutes(mutant)

    def kill_setting(self, mutant: Mutant) -> tuple[str, str, str]:
        """This layer kills at the setting it classifies at (the truth there is the classification's)."""
        s = self.spec.setting
        return "classified", "", f"the PEP's rebuilt worst case (C={s.C}, K={s.K}, T={s.T})"

    def same_setting(self, params: Mapping[str, Any]) -> bool:
        """Whether a check row's values are this PEP's setting: every number the PEP's bound is evaluated at is in the
        row's params, equal to 1e-9 relative."""
        if self.spec is None:
            return False
        mine = {k: float(v) for k, v in self.spec.values.items()
                if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)}
        if not mine:
            return False
        for k, v in mine.items():
            w = params.get(k)
            if not isinstance(w, (int, float, np.integer, np.floating)) or isinstance(w, bool):
                return False
            if not math.isclose(float(w), v, rel_tol=1e-9, abs_tol=1e-300):
                return False
        return True

    def classify(self, mutant: Mutant) -> tuple[str, str] | None:
        """('provably_false', why): refuted on the rebuilt instance, or (an exact class) the SDP's value is above the
        mutant's bound at the PEP's setting; ('provably_true', why): the SDP's upper value is below the mutant's bound
        at the PEP's setting (it holds over the whole class there); ('undecided', why)."""
        if self.spec is None or not isinstance(mutant.record, Bound):
            return None
        row = self.refutes(mutant)
        if row:
            return "provably_false", row
        b = self._bound(mutant, self.spec.values)
        s = self.spec.setting
        where = f"C={s.C}, K={s.K}, T={s.T}"
        if self.upper is not None and b is not None and self.upper * (1 + TRUTH_RTOL) <= b and not self.spec.subclass:
            return "provably_true", (f"the PEP's upper value {self.upper:.6g} <= the mutant's bound {b:.6g} at the "
                                     f"PEP's setting ({where}; {'exact' if s.exact else 'relaxed'} class)")
        if ((s.exact or self.spec.subclass) and self.value is not None and b is not None
                and self.value > b * (1 + TRUTH_RTOL) + 1e-12):
            return "provably_false", (f"the worst case {self.value:.6g} of the PEP's class (the SDP's value: an exact "
                                      f"class or a subclass of the record's) > the "
                                      f"mutant's bound {b:.6g} at the PEP's setting ({where}); no certified instance "
                                      "was rebuilt for it")
        return "undecided", ("between the rebuilt instance and the PEP's upper value" if b is not None else
                             "the mutant's bound is not evaluable at the PEP's setting") + f" ({where})"


@dataclass
class PEPLayer:
    """The 'pep' killing layer (``fedtheory.checks.mutants.MutantLayer``) and the mutants' classifier: for a record
    with a PEP declaration, the PEP at the check's constants (sizes capped by ``budget``) is solved once and its worst
    case rebuilt; a mutant is killed where that instance refutes it, and classified provably false / provably true /
    undecided (``PreparedPEP.classify``)."""

    budget: Mapping[str, int] | None = None  # the sizes' caps; None: each declaration's 'quick' sizes (pep_sizes)
    seed: int = 0
    name: str = "pep"

    def prepare(self, record: Any) -> PreparedPEP | None:
        from .pep import pep_available

        if not isinstance(record, Bound) or not pep_available():
            return None
        from .pep import solve_pep
        from .pep.instance import counterexample
        from .pep.record import pep_entries, pep_sizes, pep_spec

        if record.id not in pep_entries():
            return None
        t0 = time.perf_counter()
        try:
            budget = self.budget if self.budget is not None else pep_sizes(record.id, "quick")
            spec, _, _ = pep_spec(record.id, seed=self.seed, budget=budget)
            spec = dataclasses.replace(spec, record_override=record)
            pep = spec.build()
            res = solve_pep(pep)
        except FedTheoryError as exc:
            return PreparedPEP(summary=f"no PEP ({exc})", seconds=time.perf_counter() - t0)
        if res.value is None:
            return PreparedPEP(spec, summary=f"the PEP gave no accepted value ({res.status})",
                               seconds=time.perf_counter() - t0)
        upper = spec.lhs(max(res.value, res.dual if res.dual is not None else res.value))
        value = spec.lhs(res.value)
        cx = None
        why = ""
        try:
            cx = counterexample(spec, pep, res, spec.simulated_algorithm())
        except FedTheoryError as exc:
            why = f"; its worst case not rebuilt ({exc})"
        s = spec.setting
        bound = float(np.asarray(record.evaluate(dict(spec.values)), float))
        kind = {"exact": "exact class", "upper bound": "relaxed class", "lower bound": "a subclass"}[spec.relation]
        summary = (f"PEP at C={s.C}, K={s.K}, T={s.T} ({kind}): worst case "
                   f"{value:.4g} against the bound {bound:.4g} (value/bound {value / bound:.3g})" + why)
        if cx is not None:
            summary += (f"; rebuilt in dimension {cx.dimension}, re-run measures {cx.measured:.4g}"
                        + ("" if cx.in_class else f" (not in the record's class: {cx.reason})"))
        return PreparedPEP(spec, upper, cx, summary, time.perf_counter() - t0, value)
