"""Claims decided from seeds: the statistics policy (:class:`StatsPolicy`, :class:`Comparison`,
:class:`Equivalence`; docs/verdict-rules.md) and a claim's verdict (:func:`claim_result`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..theory.core import Claim
from .certification import Certification
from .results import CheckResult
from .series import compact_measurements

__all__ = ["Comparison", "Equivalence", "StatsPolicy", "claim_result"]


@dataclass(frozen=True)
class Comparison:
    """One comparison of two sets of per-seed values under a :class:`StatsPolicy`: ``diff`` = mean(B) - mean(A)
    (from the paired differences when paired), its standard error ``se`` over ``n`` seeds, the Student-t critical
    value ``crit`` (n - 1 degrees of freedom, at the family-wise level split over ``family`` comparisons), the scale
    ``max(|mean A|, |mean B|)`` the relative effect is measured against, and the policy's verdict parts."""

    diff: float
    se: float
    n: int
    crit: float
    family: int
    scale: float
    min_effect: float | None
    min_seeds: int

    @property
    def above(self) -> bool:
        """B is significantly above A at the family-wise level."""
        return bool(self.n > 1 and self.se >= 0 and self.diff - self.crit * self.se > 0)

    @property
    def below(self) -> bool:
        """B is significantly below A at the family-wise level."""
        return bool(self.n > 1 and self.se >= 0 and self.diff + self.crit * self.se < 0)

    @property
    def effect(self) -> float:
        """|diff| relative to the scale of the compared means."""
        return abs(self.diff) / self.scale if self.scale > 0 else (math.inf if self.diff else 0.0)

    @property
    def large(self) -> bool:
        """The effect reaches the record's declared minimum effect size (never without one)."""
        return self.min_effect is not None and self.effect >= self.min_effect

    @property
    def enough_seeds(self) -> bool:
        return self.n >= self.min_seeds

    def refutes(self, direction: str) -> bool:
        """Evidence strong enough to refute 'B is not {direction} A': significant in ``direction`` ('above' or
        'below') at the family-wise level, an effect of at least the declared minimum, and at least ``min_seeds``
        seeds. Significant without the effect size or the seeds: :meth:`why_not` says what is missing."""
        sig = self.above if direction == "above" else self.below
        return sig and self.large and self.enough_seeds

    def why_not(self, direction: str) -> str:
        """Why a significant comparison in ``direction`` does not refute ('' when it does or is not significant)."""
        sig = self.above if direction == "above" else self.below
        if not sig or self.refutes(direction):
            return ""
        why = []
        if not self.large:
            why.append("no minimum effect size declared on the record" if self.min_effect is None else
                       f"effect {self.effect:.3g} below the declared minimum {self.min_effect:g}")
        if not self.enough_seeds:
            why.append(f"{self.n} seeds < {self.min_seeds}")
        return "significant but not a refutation: " + ", ".join(why)

    def text(self) -> str:
        return (f"{self.diff:+.3g} +- {self.se:.2g} (n = {self.n}, t crit {self.crit:.2f} over a family of "
                f"{self.family})")


@dataclass(frozen=True)
class Equivalence:
    """Whether per-seed values lie within ``tol`` (an equivalence test): ``within`` when the family-wise t interval
    of the mean lies inside [-tol, tol] (or below tol, one-sided); ``outside`` when it lies wholly beyond tol;
    ``refutes`` additionally needs ``min_seeds`` seeds (the tolerance is the effect size)."""

    mean: float
    se: float
    n: int
    crit: float
    tol: float
    family: int
    min_seeds: int
    absolute: bool = True

    @property
    def within(self) -> bool:
        v = abs(self.mean) if self.absolute else self.mean
        return bool(self.n > 1 and v + self.crit * self.se <= self.tol)

    @property
    def outside(self) -> bool:
        v = abs(self.mean) if self.absolute else self.mean
        return bool(self.n > 1 and v - self.crit * self.se > self.tol)

    @property
    def refutes(self) -> bool:
        return self.outside and self.n >= self.min_seeds

    @property
    def decision(self) -> bool | None:
        """True within, False when refuted, None otherwise."""
        return True if self.within else False if self.refutes else None

    def text(self) -> str:
        extra = f"; beyond tol but {self.n} seeds < {self.min_seeds}" if self.outside and not self.refutes else ""
        return (f"{self.mean:+.3g} +- {self.se:.2g} vs tolerance {self.tol:g} (n = {self.n}, t crit {self.crit:.2f} "
                f"over a family of {self.family}){extra}")


@dataclass(frozen=True)
class StatsPolicy:
    """The one statistics policy for claims decided from seeds (docs/verdict-rules.md, rule 5).

    * Student-t critical values for the seeds a comparison has (n - 1 degrees of freedom), two-sided;
    * a family-wise level ``alpha`` split (Bonferroni) over every comparison of the claim: the ``family`` a
      predicate declares per call times the ``settings`` (rows) the check decides the claim on;
    * a refutation also needs the minimum effect size declared on the record (``Claim.min_effect``, relative to the
      compared means) and at least ``min_seeds`` seeds; a significant contrary result without them is reported
      and left ``inconclusive``.

    :func:`claim_result` hands a policy to a claim's predicate as ``stats`` when the predicate takes that
    argument: ``stats.compare(A, B, paired=True, family=m)``, ``stats.within(values, tol, family=m)``.

    Parameters
    ----------
    alpha : float, default 0.05
        The family-wise level.
    min_seeds : int, default 10
        The seeds a refutation needs.
    settings : int, default 1
        The rows (settings, problems) the claim is decided on: one family.
    min_effect : float, optional
        The smallest relative effect a refutation needs (``Claim.min_effect``; None: no refutation from seeds).
    """

    alpha: float = 0.05
    min_seeds: int = 10
    settings: int = 1
    min_effect: float | None = None

    def critical(self, n: int, family: int = 1) -> float:
        """Two-sided Student-t critical value with n - 1 degrees of freedom at level alpha / (family * settings)."""
        from scipy import stats as st

        m = max(1, int(family)) * max(1, int(self.settings))
        return float(st.t.ppf(1 - self.alpha / (2 * m), max(int(n) - 1, 1)))

    def compare(self, A, B, *, paired: bool, family: int = 1) -> Comparison:
        """Compare per-seed values of two settings (NaN / inf runs left out; paired: the per-seed differences of
        coupled runs, else the two samples' standard errors combined, with the smaller sample's degrees of
        freedom)."""
        A = np.asarray(A, float).ravel()
        B = np.asarray(B, float).ravel()
        fa, fb = np.isfinite(A), np.isfinite(B)
        ma = float(np.mean(A[fa])) if fa.any() else math.nan
        mb = float(np.mean(B[fb])) if fb.any() else math.nan
        if paired and A.shape == B.shape:
            ok = fa & fb
            d = B[ok] - A[ok]
            n = int(d.size)
            diff = float(d.mean()) if n else math.nan
            se = float(np.std(d, ddof=1) / np.sqrt(n)) if n > 1 else math.nan
        else:
            n = int(min(fa.sum(), fb.sum()))
            diff = mb - ma
            sa = [float(np.std(x[f], ddof=1) / np.sqrt(f.sum())) if f.sum() > 1 else math.nan
                  for x, f in ((A, fa), (B, fb))]
            se = float(np.hypot(*sa))
        scale = max(abs(ma), abs(mb)) if np.isfinite([ma, mb]).all() else math.nan
        return Comparison(diff, se, n, self.critical(n, family), max(1, int(family)) * max(1, int(self.settings)),
                          scale, self.min_effect, self.min_seeds)

    def within(self, values, tol: float, *, family: int = 1, absolute: bool = True) -> Equivalence:
        """Are the per-seed ``values`` within ``tol`` (``|mean|`` with absolute, else the signed mean)?"""
        x = np.asarray(values, float).ravel()
        x = x[np.isfinite(x)]
        n = int(x.size)
        mean = float(x.mean()) if n else math.nan
        se = float(np.std(x, ddof=1) / np.sqrt(n)) if n > 1 else math.nan
        return Equivalence(mean, se, n, self.critical(n, family), float(tol),
                           max(1, int(family)) * max(1, int(self.settings)), self.min_seeds, absolute)

    def describe(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "min_seeds": self.min_seeds, "settings": self.settings,
                "min_effect": self.min_effect, "test": "two-sided Student-t, Bonferroni over the claim's family"}


def _takes_stats(fn) -> bool:
    import inspect

    try:
        return "stats" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def claim_result(claim: Claim, measurements: Mapping[str, Any], *, check_id: str | None = None, problem: Any = None,
                 params: Mapping[str, Any] | None = None, detail: str = "", settings: int = 1,
                 seeds: int | None = None, policy: StatsPolicy | None = None,
                 certification: Certification | None = None) -> CheckResult:
    """Evaluate a Claim's predicate on ``measurements``: supported / refuted / inconclusive (None).

    A predicate that takes ``stats`` gets the statistics policy (:class:`StatsPolicy`: Student-t, Bonferroni over
    its comparisons times ``settings``, the record's ``min_effect``, at least ``min_seeds`` seeds to refute).
    settings: how many rows (settings, problems) this check decides the claim on: all of them are one family.
    seeds: the seeds the measurements rest on; a refutation resting on fewer than the policy's ``min_seeds`` is
    reported as ``inconclusive`` whatever the predicate decided (also for predicates that do not take ``stats``).

    Parameters
    ----------
    claim : Claim
        The record.
    measurements : mapping of str to array_like
        The measurements its predicate reads.
    check_id : str, optional
        The row's id (default: the claim's).
    problem : object, optional
        The problem's name.
    params : mapping, optional
        The row's setting.
    detail : str, default ""
        A note appended to the predicate's.
    settings : int, default 1
        The rows this check decides the claim on.
    seeds : int, optional
        The seeds the measurements rest on.
    policy : StatsPolicy, optional
        The statistics policy (default ``StatsPolicy()``; its ``settings`` and ``min_effect`` are set here).
    certification : Certification, optional
        The run's certification of the claim's assumptions (:func:`certify`, as for a bound): a run that does not
        certify every one gives ``not_applicable`` naming each, and the row carries the certificates. Without it,
        a claim that states assumptions is decided with them uncertified, and the row lists them under
        ``extra["assumptions_not_certified"]``.

    Returns
    -------
    CheckResult
        A claim row: ``claim_supported``, ``claim_refuted``, ``inconclusive`` or ``not_applicable``.
    """
    if certification is not None and not certification.applicable:
        failures = certification.failures
        return CheckResult(check_id or claim.id, claim.paper, "claim", "not_applicable", problem=problem,
                           params=dict(params or {}), source=claim.source, conditions_failed=failures,
                           detail="assumption not certified on this run: " + "; ".join(failures)
                           + (f". {detail}" if detail else ""),
                           extra={"statement": claim.statement, "certificates": certification.summary()},
                           quote=claim.quote, seeds=seeds)
    if certification is not None:
        cert_extra = {"certificates": certification.summary()}
        visited = certification.note()
        if visited:
            detail = f"{detail}. {visited}" if detail else visited
    else:
        cert_extra = {"assumptions_not_certified": list(claim.assumptions)} if claim.assumptions else {}
    base = policy or StatsPolicy()
    pol = StatsPolicy(base.alpha, base.min_seeds, settings, getattr(claim, "min_effect", None))
    kw = {"stats": pol} if claim.predicate is not None and _takes_stats(claim.predicate) else {}
    out = claim.evaluate(measurements, **kw)
    verdict = {True: "claim_supported", False: "claim_refuted", None: "inconclusive"}[out.supported]
    note = ""
    if verdict == "claim_refuted" and seeds is not None and seeds < pol.min_seeds:
        verdict = "inconclusive"
        note = (f"not a refutation: rests on {seeds} seeds < {pol.min_seeds} (the statistics policy); the predicate "
                "alone would refute")
    return CheckResult(check_id or claim.id, claim.paper, "claim", verdict, measured=out.measured, problem=problem,
                       params=dict(params or {}), source=claim.source,
                       detail=out.detail + (f". {detail}" if detail else "") + (f". {note}" if note else ""),
                       extra={"decision_rule": claim.parameters, "statement": claim.statement,
                              "measurements": _with_units(compact_measurements(measurements),
                                                          getattr(claim, "measurement_units", None)),
                              **({"stats_policy": pol.describe()} if kw else {}), **cert_extra},
                       quote=claim.quote, seeds=seeds, family_size=settings if kw else None)


def _with_units(compact: dict[str, Any], units: Mapping[str, str] | None) -> dict[str, Any]:
    """The claim's declared unit of each drawn measurement (and of the abscissa) beside the compacted curves."""
    drawn = set(compact.get("series") or {}) | set(compact.get("scalars") or {}) | {compact.get("x_label")}
    declared = {k: str(v) for k, v in (units or {}).items() if k in drawn}
    return {**compact, "units": declared} if declared else compact
