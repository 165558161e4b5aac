"""The join: theorem x measurement -> verdict. Records, registry, sessions, comparison rules."""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .._jsonutil import jsonable
from .._signals import raise_if_received
from .._validation import ParameterError, check_choice
from ..plugins import count_registered, load_plugins
from ..theory.core import MAX_ID_LENGTH, MissingValuesError, check_id, claim_paper, registry
from .schema import SchemaError, check_record

VERDICTS = ("holds", "violated", "not_applicable", "rate_consistent", "rate_inconsistent", "claim_supported",
            "claim_refuted", "inconclusive", "ambiguous", "proof_step_loose", "error")
# Verdicts against the paper. 'error' is not one: a check that raised says nothing about the paper (exit status 3).
# 'ambiguous' (the readings of the text disagree) and 'proof_step_loose' (the stated rate follows from the exact form
# of the bound but not from a loosened step of the proof) are listed apart, never counted.
FINDINGS = {"violated", "rate_inconsistent", "claim_refuted"}
KINDS = ("bound", "rate", "claim", "identity", "symbolic")
PROFILES = ("quick", "full")
# Exit statuses of `fedtheory check`: no counted finding; findings about the papers; bad usage or input; a check
# (or the tool) failed, whatever else was found.
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3
# Where a verdict stands relative to what the paper states. Only 'inside' findings count in the exit code.
#   inside: tested inside the statement's assumptions and conditions, as the paper states it;
#   outside_conditions: a setting where the statement's conditions fail (an observation, not a test of it);
#   extrapolation: a claim about another regime (e.g. a CIFAR/ResNet ablation) tried on a toy problem;
#   units_artifact: a reading of the text under which the statement is dimensionally inconsistent;
#   regime_boundary: the claim fails where the regime the paper's argument assumes does not hold (named);
#   not_reproduced: a stated effect did not appear within the tested horizon (weaker than refuted);
#   by_construction: the measured outcome is fixed by the algorithm's construction, not by the effect claimed.
#   unverified_transcription: a finding on a record whose transcription was not checked against a text;
#   draft: a row of a record that still carries TODOs (Record.todo: what `new-paper --from-latex` left to decide).
# A text with several readings is not a scope: the record declares its readings and the row's verdict is
# 'ambiguous' when they disagree (checks.verdicts.combine_readings).
SCOPES = ("inside", "outside_conditions", "extrapolation", "units_artifact", "regime_boundary", "not_reproduced",
          "by_construction", "unverified_transcription", "draft")
# What kind of finding a counted row is (its severity class; the summary, the JSON and the report group by it):
#   erratum: a printed formula that differs from its own derivation, a table that contradicts its own columns;
#   inconsistent_rate: a stated order that does not follow from the exact bound;
#   false_as_stated: a counterexample inside the stated assumptions;
#   claim_refuted: a qualitative claim refuted by measurement under the statistics policy.
FINDING_CLASSES = ("erratum", "inconsistent_rate", "false_as_stated", "claim_refuted")
DEFAULT_CLASS = {"violated": "false_as_stated", "rate_inconsistent": "inconsistent_rate",
                 "claim_refuted": "claim_refuted"}
# A cause whose rows carry several classes takes the most severe: a counterexample outweighs a misprint (a statement
# inconsistent in units is an erratum, and false as stated where a rescaled run shows it; rule 8).
CLASS_SEVERITY = ("false_as_stated", "claim_refuted", "inconsistent_rate", "erratum")


def finding_class_of(rows: Sequence["CheckResult"]) -> str:
    """The class of a cause (rows sharing a finding key): the most severe of its rows' classes (CLASS_SEVERITY)."""
    classes = {r.finding_class for r in rows if r.finding_class}
    return next((c for c in CLASS_SEVERITY if c in classes), "")


@dataclass
class CheckResult:
    """One verdict. ``ratio`` = bound / measured for bounds (>= 1 holds), else None.

    finding: a cause key; rows that share it are one finding (one typo, one stripped sentence) and count once.
    Empty: the row is its own finding (``finding_key``).
    scope: one of SCOPES; only 'inside' findings count in ``exit_code``.
    self_check: an identity that holds by the simulator's construction or a tautology: an implementation
    self-check, never a finding about the paper (listed apart).
    vacuous: the bound exceeds a trivial bound of its left side (``trivial_bound``: the loss range for a
    stability gap, f(w^0) - f* for an optimization error, the measure's value at t = 0 for a monotone one).
    family_size: how many comparisons the verdict's multiple-testing correction covers (e.g. horizons);
    seeds: how many independent runs (seeds) the verdict rests on.
    quote: the sentence the row tests, with its seed file and line.
    finding_class: one of FINDING_CLASSES for a row with a FINDINGS verdict (default by verdict: DEFAULT_CLASS;
    a check sets 'erratum' where a printed form contradicts its own derivation or columns); '' otherwise.
    """

    id: str
    paper: str
    kind: str
    verdict: str
    measured: Any = None
    bound: Any = None
    ratio: float | None = None
    conditions_failed: list[str] = field(default_factory=list)
    problem: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    source: str = ""
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    elapsed_s: float | None = None
    finding: str = ""
    scope: str = "inside"
    self_check: bool = False
    vacuous: bool = False
    trivial_bound: float | None = None
    family_size: int | None = None
    seeds: int | None = None
    quote: str = ""
    finding_class: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")
        if self.verdict in FINDINGS:
            self.finding_class = self.finding_class or DEFAULT_CLASS[self.verdict]
            if self.finding_class not in FINDING_CLASSES:
                raise ValueError(f"unknown finding class {self.finding_class!r}")
        else:
            self.finding_class = ""
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}")
        if self.scope not in SCOPES:
            raise ValueError(f"unknown scope {self.scope!r}")

    @property
    def finding_key(self) -> str:
        """The cause this row is grouped under: ``finding`` when set, else the row itself
        (id, problem and setting)."""
        if self.finding:
            return self.finding
        setting = self.params.get("setting") if isinstance(self.params, dict) else None
        return "|".join(str(x) for x in (self.id, self.problem, setting) if x is not None)

    @property
    def is_finding(self) -> bool:
        """A verdict against the paper (FINDINGS), tested inside its scope, that is not a self-check."""
        return self.verdict in FINDINGS and self.scope == "inside" and not self.self_check

    def to_json(self) -> dict[str, Any]:
        return jsonable(asdict(self))


# ------------------------------------------------------------------------------------ registry


# Kinds of rows that must show they can fail through a negative control; without one, a check's rows of these kinds
# are implementation self-checks by rule. Bounds show it through their trivial bound (vacuity; checks.verdicts).
CONTROLLED_KINDS = ("identity", "claim", "symbolic", "rate")


@dataclass(frozen=True)
class Control:
    """A negative control of a check: ``fn(session)`` runs the check's own logic under a mutation (a mutated
    simulator, record or setting) and returns its rows, at least one of which must be a finding verdict
    (violated / rate_inconsistent / claim_refuted) of a counted class: in scope ('inside'), not a self-check, so the
    path that makes a counted finding is exercised. ``description`` says what is mutated. ``uncounted``: why the check
    has no counted path (its findings are never counted, e.g. every row is an extrapolation); then a finding verdict
    of any scope suffices. A check declared a self-check by design has no counted path by its ``self_check`` reason.
    ``fedtheory check --controls`` runs them and shows each control's counted row; the test suite runs every
    built-in one."""

    description: str
    fn: Callable[["Session"], list["CheckResult"]]
    uncounted: str = ""


@dataclass(frozen=True)
class CheckSpec:
    """A registered check: ``fn(session) -> list[CheckResult]`` and what it measures.

    measures: the simulator measures (``fedtheory.sim.measure_catalogue()``) the check compares with the
    records' left sides; problems, algorithms: what it runs them on; seeds: how many runs per setting
    (quick / full). ``fedtheory explain RECORD`` prints these with the check's docstring.
    """

    id: str
    paper: str
    kind: str
    fn: Callable[["Session"], list[CheckResult]]
    records: tuple[str, ...]
    cost: str = "sim"  # 'sim' (numerics) or 'symbolic' (sympy; run in a worker process)
    profiles: tuple[str, ...] = PROFILES
    needs_runs: bool = False  # evaluates logged empirical runs (fedtheory check --runs DIR)
    measures: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = ()
    seeds: str = ""
    group: str = ""  # checks of one group share a unit of work on an executor (fedtheory.checks.units)
    control: "Control | None" = None  # the negative control that must make this check fail (see Control)
    self_check: str = ""  # why the check is an implementation self-check by design (no mutation could make it fail)
    # the suffix of the one row per record this check gives, RECORD.SUFFIX (PAPER.units: 'units'): `--only RECORD`
    # (or the row's id) selects that row of it
    record_rows: str = ""

    @property
    def description(self) -> str:
        return " ".join((self.fn.__doc__ or "").split())

    def describe(self) -> str:
        """How this check measures: its docstring and declared measures, problems, algorithms, seeds."""
        lines = [f"check {self.id}  [{self.kind}; profiles {', '.join(self.profiles)}"
                 + ("; needs --runs" if self.needs_runs else "") + "]"]
        if self.description:
            lines.append("  " + self.description)
        for label, vals in (("measures", self.measures), ("problems", self.problems), ("algorithms", self.algorithms)):
            if vals:
                lines.append(f"  {label}: {', '.join(vals)}")
        if self.seeds:
            lines.append(f"  runs: {self.seeds}")
        if self.cost == "symbolic":
            lines.append("  symbolic (sympy), no simulation")
        if self.self_check:
            lines.append(f"  implementation self-check: {self.self_check}")
        if self.control is not None:
            lines.append(f"  negative control: {self.control.description}")
        elif self.kind in CONTROLLED_KINDS:
            lines.append("  no negative control: its rows are implementation self-checks by rule")
        return "\n".join(lines)


_CHECKS: dict[str, CheckSpec] = {}


def check(id: str, paper: str, kind: str, records: Sequence[str] = (), cost: str = "sim",
          profiles: Sequence[str] = PROFILES, needs_runs: bool = False, *, measures: Sequence[str] = (),
          problems: Sequence[str] = (), algorithms: Sequence[str] = (), seeds: str = "", group: str = "",
          control: Control | None = None, self_check: str = ""):
    """Register ``fn(session) -> list[CheckResult]`` as check ``id`` of ``paper``.

    kind: one of KINDS; records: the record ids it tests (default: ``id``); cost 'symbolic' runs it in a
    worker process beside the simulations; profiles: where it runs ('quick', 'full'); measures, problems,
    algorithms, seeds: what ``fedtheory explain`` tells about how the left side is measured; group: checks that
    share memoized simulations (``Session.memo``) under one name run as one unit of work when ``fedtheory check``
    runs on workers (``--workers``; see ``fedtheory.checks.units``), so the simulations are computed once.
    control: a :class:`Control` under which the check must report a finding; a check of a kind in CONTROLLED_KINDS
    without one gives implementation self-checks (never findings), by rule. self_check: why the check cannot fail
    against the paper by design (an identity of the simulator's own construction, a tautology, a property of the
    tool's own objects); its rows are self-checks with that reason, whether or not it declares a control (a control
    then shows that the check's logic can fail on a mutated tool, and the reason says why no row of it is counted).
    ``fn``'s docstring is the check's description (``fedtheory explain``): what is measured, on which problem,
    against which record; a function without one is refused.
    """
    check_id(id, "check id")
    check_id(paper, f"paper of check {id}", paper=True)
    for rid in records:
        check_id(rid, f"records of check {id}")
    check_choice("kind", kind, KINDS)
    check_choice("cost", cost, ("sim", "symbolic"))
    for pr in profiles:
        check_choice("profiles", pr, PROFILES)

    def deco(fn):
        if id in _CHECKS:
            raise ValueError(f"check {id} registered twice")
        for name in dict.fromkeys((paper, id.split(".")[0])):  # a plug-in checks only under its own paper names
            claim_paper(name, f"check {id}")
        if control is not None and not isinstance(control, Control):
            raise ParameterError("control", control, "a fedtheory.checks.Control(description, fn)")
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"check {id} has no description: give its function a docstring saying what it measures, "
                             "on which problem, against which record (`fedtheory explain` shows it)")
        _CHECKS[id] = CheckSpec(id, paper, kind, fn, tuple(records) or (id,), cost, tuple(profiles), needs_runs,
                                tuple(measures), tuple(problems), tuple(algorithms), seeds, group, control, self_check)
        return fn

    return deco


def register_spec(spec: CheckSpec, *, replace: bool = False) -> CheckSpec:
    """Register a CheckSpec built without the decorator (a check generated for a paper, e.g. PAPER.units);
    ``replace`` refreshes an existing one (same id)."""
    check_id(spec.id, "check id")
    if spec.id in _CHECKS and not replace:
        raise ValueError(f"check {spec.id} registered twice")
    _CHECKS[spec.id] = spec
    return spec


def check_spec(check_id: str) -> CheckSpec | None:
    """The registered check with this id, without loading plug-ins (None when there is none)."""
    return _CHECKS.get(check_id)


def registered_check_ids() -> list[str]:
    """The check ids registered so far, without loading plug-ins."""
    return list(_CHECKS)


count_registered("checks", registered_check_ids)  # `fedtheory list --plugins` counts each plug-in's checks


def all_checks() -> dict[str, CheckSpec]:
    """Every registered check, after loading the paper plug-ins (see ``fedtheory.plugins``)."""
    load_plugins()
    return dict(_CHECKS)


def checks_of(record_id: str) -> list[CheckSpec]:
    """The checks that test a record."""
    return [s for s in all_checks().values() if record_id in s.records]


# ------------------------------------------------------------------------------------ session


@dataclass
class Session:
    """One invocation: profile, base seed, a memo of simulation results shared by the checks.

    memo_log: when a list, every ``memo`` call appends {"key": repr(key), "computed": bool, "s": seconds}
    (how ``fedtheory.checks.units`` learns which checks share which simulations)."""

    profile: str = "quick"
    seed: int = 0
    progress: bool = False
    runs_dir: str | None = None
    memo_log: list[dict[str, Any]] | None = None
    _memo: dict[Any, Any] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)  # check id -> CPU seconds of this process (run_spec)

    def __post_init__(self):
        check_choice("profile", self.profile, PROFILES)

    @property
    def quick(self) -> bool:
        return self.profile == "quick"

    def pick(self, table: Mapping[str, Any]) -> Any:
        """The entry of a per-profile table ``{"quick": ..., "full": ...}`` for this session's profile.

        Every paper's checks read their profile-dependent sizes (seeds, rounds, grids) this way, from a module-level
        ``SIZES`` table, e.g. ``R = session.pick(SIZES)["runs"]``, rather than branching on ``session.quick``."""
        missing = [pr for pr in PROFILES if pr not in table]
        if missing:
            raise ParameterError("table", sorted(table), f"a mapping with an entry for every profile {PROFILES}")
        return table[self.profile]

    def initial_point(self, problem: Any, scale: float = 3.0) -> np.ndarray:
        """The checks' common starting point: ``problem.initial_point(self.seed, scale)``, i.e.
        ``w* + scale * z / sqrt(d)`` with ``z`` the standard normal draw of ``np.random.default_rng(self.seed)``
        (every paper's checks start from it, so runs of different checks on one problem share their start)."""
        return problem.initial_point(self.seed, scale=scale)

    def seeds(self, n: int) -> list[int]:
        """n run seeds derived from the session seed (distinct, reproducible)."""
        return [int(s) for s in np.random.SeedSequence(self.seed).generate_state(n, dtype=np.uint32)]

    def memo(self, key, fn: Callable[[], Any]):
        """``fn()`` computed once per session under ``key``; a reuse reports the simulations it ran again, so
        every check that uses a shared run lists it (``CheckResult.extra['simulations']``)."""
        from ..sim.engine import last_simulation, record_simulations, replay_simulations

        t0 = time.perf_counter()
        computed = key not in self._memo
        if computed:
            with record_simulations() as sims:
                value = fn()
                last = last_simulation()
            self._memo[key] = (value, list(sims), last)
        else:
            replay_simulations(self._memo[key][1], self._memo[key][2])
        if self.memo_log is not None:
            self.memo_log.append({"key": repr(key), "computed": computed, "s": time.perf_counter() - t0})
        return self._memo[key][0]


# ------------------------------------------------------------------------------------ comparisons


def compare_mean(lhs_runs: np.ndarray, rhs_runs: np.ndarray | float, z: float = 3.0,
                 rounding_scale: float = 0.0) -> tuple[str, dict]:
    """Decide ``E[lhs] <= E[rhs]`` from per-run samples (both estimated by their mean over runs).

    holds: mean(rhs - lhs) >= 0, or below 0 by no more than the rounding tolerance (equality: ``rounding_tolerance``);
    violated: below minus the tolerance and significantly negative, i.e. below minus the one-sided Student-t
    critical value (n - 1 degrees of freedom) at the level of a z-SE normal test (z = 3: 1.35e-3) times the
    standard error; exact (se = 0, e.g. one deterministic run): any gap beyond the tolerance; inconclusive otherwise.
    rounding_scale: the magnitude of the quantities the measurement was computed from (``rounding_scale_of``: loss
    values, points, gradients of the run); the tolerance is ROUNDING_RTOL times the largest of it, the measurement
    and the bound. A non-finite measurement where the bound is finite is a divergence: 'violated', with which runs,
    and no number (measured and ratio None).
    """
    from scipy import stats

    lhs = np.asarray(lhs_runs, float)
    rhs = np.broadcast_to(np.asarray(rhs_runs, float), lhs.shape)
    diverged = ~np.isfinite(lhs) & np.isfinite(rhs)
    if diverged.any():  # a diverged run contradicts a finite bound: never dropped, never 'holds'
        runs = np.flatnonzero(diverged.ravel())
        nan = int(np.isnan(lhs.ravel()[runs]).sum())
        return "violated", {"measured": None, "bound": float(np.mean(rhs[np.isfinite(rhs)])), "ratio": None,
                            "runs": lhs.size, "diverged_runs": int(runs.size), "diverged_run_index": runs.tolist()[:20],
                            "detail": f"the measurement is non-finite (diverged: {nan} NaN, {runs.size - nan} infinite) "
                                      f"in {runs.size} of {lhs.size} runs (runs {', '.join(map(str, runs[:8]))}"
                                      f"{' ...' if runs.size > 8 else ''}) where the bound is finite"}
    if not np.all(np.isfinite(rhs)):
        return "inconclusive", {"runs": lhs.size, "detail": "the bound is not finite (undefined) at these values"}
    gap = rhs - lhs
    n = gap.size
    mean = float(np.mean(gap))
    se = float(np.std(gap, ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    m_l, m_r = float(np.mean(lhs)), float(np.mean(rhs))
    deterministic = bool(np.all(gap == gap.flat[0]))  # one run, or every run the same: no statistics to do
    crit = float(stats.t.isf(0.5 * math.erfc(z / math.sqrt(2.0)), n - 1)) if n > 1 and not deterministic else z
    info = {"measured": m_l, "measured_se": float(np.std(lhs, ddof=1) / np.sqrt(n)) if n > 1 else 0.0,
            "bound": m_r, "ratio": (m_r / m_l) if m_l > 0 else (math.inf if m_r > 0 else None), "runs": n,
            "t_critical": None if deterministic else crit}
    tol = float(rounding_tolerance(m_l, m_r, rounding_scale))
    if deterministic:
        info["deterministic"] = True
        info["detail"] = (f"deterministic: {'the run' if n == 1 else f'every one of the {n} runs'} gives the same "
                          f"measurement, decided on it without statistics (measured {m_l:.4g} vs bound {m_r:.4g})")
        if mean < -tol:
            return "violated", info
        if mean < 0:
            _equal_to_rounding(info, mean, tol, rounding_scale)
        return "holds", info
    if mean >= 0:
        return "holds", info
    if mean >= -tol:  # a gap no larger than the rounding of what was computed: equality, whatever its spread
        _equal_to_rounding(info, mean, tol, rounding_scale)
        return "holds", info
    if mean + crit * se < 0:
        return "violated", info
    return "inconclusive", info


def holm_reject(pvalues: Sequence[float], alpha: float) -> np.ndarray:
    """Holm-Bonferroni step-down: which of a family of one-sided tests reject at family-wise level ``alpha``."""
    p = np.asarray(pvalues, float)
    m = p.size
    order = np.argsort(p)
    reject = np.zeros(m, bool)
    for rank, i in enumerate(order):
        if p[i] <= alpha / (m - rank):
            reject[i] = True
        else:
            break
    return reject


Z3_ALPHA = 0.5 * math.erfc(3.0 / math.sqrt(2.0))  # one-sided level of a single 3-SE test (~1.35e-3)


def _rounds_text(labels: np.ndarray, rows: np.ndarray, name: str, most: int = 10) -> str:
    shown = ", ".join(f"{float(v):g}" for v in labels[rows[:most]])
    return f"{name} = {shown}" + (f", ... ({rows.size} in all)" if rows.size > most else "")


#: A comparison counts a gap (bound - measured) within ROUNDING_RTOL of the rounding scale as equality: the
#: measurement and the bound are floating-point computations of what can be the same number (a tight theorem attained
#: exactly, e.g. Drori & Teboulle's gradient-descent bound on its Huber instance, misses by ~1e-14 relative either
#: way; a bound that is exactly 0 against a measured f(x_T) - f* of one ulp of f*). The scale is the largest of the
#: measurement, the bound and the magnitude of the quantities the measurement was computed from (the loss values,
#: points and gradients of the run: ``fedtheory.checks.rounding_scale_of``), because a difference such as
#: f(x_T) - f* carries the rounding of its operands, not of its own size. 1e-12 is about 4500 machine epsilons
#: (2.2e-16): room for the rounding a run accumulates, an ulp-sized error in each of thousands of steps along a
#: non-expansive trajectory and sums over samples and clients, and far below any gap a counterexample rests on.
ROUNDING_RTOL = 1e-12


def rounding_tolerance(m_l, m_r, scale=0.0) -> np.ndarray:
    """The largest gap (bound - measured, in absolute value) that counts as equality: ROUNDING_RTOL times the largest
    of the measurement ``m_l``, the bound ``m_r`` and ``scale`` (the magnitude of the quantities the measurement was
    computed from; 0: none known)."""
    return ROUNDING_RTOL * np.maximum(np.maximum(np.abs(m_l), np.abs(m_r)), np.abs(np.asarray(scale, float)))


def _rounding_below(mean, m_l, m_r, scale=0.0) -> np.ndarray:
    """Gaps (bound - measured) below zero by more than the rounding tolerance."""
    return np.asarray(mean) < -rounding_tolerance(m_l, m_r, scale)


def _equal_to_rounding(info: dict, gap: float, tol: float, scale: float) -> None:
    """Say in ``info`` that a negative gap was counted as equality: within the rounding tolerance."""
    info["rounding"] = {"gap": float(gap), "tolerance": float(tol), "scale": float(np.max(scale))}
    text = (f"equal to rounding: the measurement exceeds the bound by {-gap:.3g}, within the rounding tolerance "
            f"{tol:.3g} = {ROUNDING_RTOL:g} x {tol / ROUNDING_RTOL:.4g} (the largest of the measurement, the bound and "
            f"the magnitude of what the run computed)")
    info["detail"] = (info["detail"] + "; " if info.get("detail") else "") + text


def _deterministic_rounds(lhs, rhs, mean, m_l, m_r, ratios, j, index, excluded, n, labels, label,
                          scale=0.0) -> tuple[str, dict]:
    """compare_rounds when every run follows the same trajectory (or there is one): each round is decided on it,
    exactly, without statistics (a gap within the rounding tolerance is equality: attained, not violated); the worst
    round is the one with the largest gap (measured above the bound)."""
    m_fam = int(lhs.shape[0])
    lab = (np.asarray(labels, float)[index] if labels is not None else index + 1.0)
    runs = "the run" if n == 1 else f"every one of the {n} runs (identical at every compared round)"
    over = _rounding_below(mean, m_l, m_r, scale)
    info = {"measured": float(m_l[j]), "bound": float(m_r[j]), "ratio": float(ratios[j]), "tightest_round": int(index[j]),
            "rounds_excluded": excluded, "rounds": m_fam, "runs": n, "rounds_violated": int(np.sum(over)),
            "family_size": m_fam, "correction": "none (deterministic)", "family_alpha": None, "deterministic": True,
            "rounds_significant_uncorrected": int(np.sum(over)), "rounds_significant_holm": int(np.sum(over))}
    below = np.flatnonzero(over)
    info["rounds_below"] = [float(v) for v in lab[below]]
    if below.size == 0:
        _rounds_equal_to_rounding(info, mean, m_l, m_r, scale, lab, label)
        return "holds", info
    w = int(below[np.argmin(mean[below])])
    info["worst_round"] = int(index[w])
    info["runs_violating_at_worst"] = n
    info["rounds_failed"] = [float(v) for v in lab[below]]
    info["detail"] = (f"deterministic: {runs} gives the same trajectory, decided on it without statistics; the "
                      f"measurement is above the bound at {below.size} of {m_fam} compared rounds "
                      f"({_rounds_text(lab, below, label)}); the largest gap at {label} = {float(lab[w]):g}: measured "
                      f"{m_l[w]:.4g} vs bound {m_r[w]:.4g}, gap {mean[w]:.3g}")
    return "violated", info


def _rounds_equal_to_rounding(info: dict, mean, m_l, m_r, scale, lab, label: str) -> np.ndarray:
    """The rounds whose negative gap is within the rounding tolerance (equality); said in ``info`` when there are
    any. Returns their mask."""
    tol = rounding_tolerance(m_l, m_r, scale)
    within = (np.asarray(mean) < 0) & ~(np.asarray(mean) < -tol)
    if np.any(within):
        w = int(np.argmin(np.where(within, mean, np.inf)))
        _equal_to_rounding(info, float(mean[w]), float(np.broadcast_to(tol, np.shape(mean))[w]), scale)
        info["rounding"]["rounds"] = [float(v) for v in lab[np.flatnonzero(within)]][:20]
        info["detail"] = info["detail"].replace("equal to rounding:", f"equal to rounding at {int(within.sum())} "
                                                f"{label}(s) ({_rounds_text(lab, np.flatnonzero(within), label)}):", 1)
    return within


def compare_rounds(lhs: np.ndarray, rhs: np.ndarray, z: float = 3.0, correction: str = "holm",
                   family_alpha: float | None = None, labels: Sequence[float] | None = None,
                   label: str = "round", rounding_scale: float = 0.0) -> tuple[str, dict]:
    """A per-round inequality over (rounds, runs) (e.g. a bound checked at every horizon T' = 1..T).

    holds: every round's mean satisfies it. violated: some round is significantly violated after a
    simultaneous correction over the family of rounds: ``correction='holm'`` (default) runs Holm-Bonferroni
    on the one-sided Student-t p-values (n - 1 degrees of freedom over n runs) of the per-round mean gaps at
    family-wise level ``family_alpha`` (default: the one-sided level of one z-SE normal test, z = 3: 1.35e-3);
    ``'none'`` is the uncorrected per-round z-SE rule. Otherwise inconclusive.
    info: the tightest round's ratio, the family size, the number of rounds significant without and with the
    correction, and at the worst round how many runs (seeds) have a negative gap themselves. A violated or
    inconclusive verdict also gets ``detail``: the rounds whose mean is above the bound (``rounds_failed``: the
    significant ones), the corrected threshold, and the worst round's gap. labels: what each row is called in that
    text, e.g. the paper's T of every compared round (default: row i is round i + 1); label: its name ('T').
    rounding_scale: as in :func:`compare_mean`: a round whose mean gap is within the rounding tolerance is equality,
    never counted against the bound (said in ``info['rounding']``).
    """
    from scipy import stats

    check_choice("correction", correction, ("holm", "none"))
    lhs = np.asarray(lhs, float)
    rhs = np.broadcast_to(np.asarray(rhs, float), lhs.shape)
    rhs_ok = np.all(np.isfinite(rhs), axis=1)
    diverged = ~np.isfinite(lhs) & np.isfinite(rhs)
    if diverged.any():  # non-finite measurements where the bound is finite: a divergence, reported, never dropped
        rounds_d, runs_d = np.nonzero(diverged)
        return "violated", {"measured": None, "bound": float(rhs[rounds_d[0], runs_d[0]]), "ratio": None,
                            "rounds": int(lhs.shape[0]), "runs": int(lhs.shape[1]),
                            "diverged_runs": int(np.unique(runs_d).size), "first_diverged_round": int(rounds_d.min()),
                            "detail": f"the measurement is non-finite (diverged) from round {int(rounds_d.min())} in "
                                      f"{int(np.unique(runs_d).size)} of {lhs.shape[1]} runs, where the bound is finite"}
    index = np.flatnonzero(rhs_ok)  # rounds where the bound is defined; the others are counted, not judged
    excluded = int(lhs.shape[0] - index.size)
    lhs, rhs = lhs[rhs_ok], rhs[rhs_ok]
    if lhs.size == 0:
        return "inconclusive", {"detail": "the bound is not finite at any round", "rounds_excluded": excluded}
    gap = rhs - lhs
    n = gap.shape[1]
    mean = gap.mean(axis=1)
    se = gap.std(axis=1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)
    m_l, m_r = lhs.mean(axis=1), rhs.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(m_l > 0, m_r / m_l, np.inf)
        tstat = np.where(se > 0, mean / se, np.where(mean < 0, -np.inf, np.inf))
    j = int(np.argmin(ratios))
    if bool(np.all(gap == gap[:, :1])):  # one run, or every run the same trajectory: decided on it
        return _deterministic_rounds(lhs, rhs, mean, m_l, m_r, ratios, j, index, excluded, n, labels, label,
                                     rounding_scale)
    alpha = 0.5 * math.erfc(z / math.sqrt(2.0)) if family_alpha is None else float(family_alpha)
    equal = ~_rounding_below(mean, m_l, m_r, rounding_scale)  # at most the rounding below 0: equality, never counted
    naive = ((mean + z * se < 0) & (se > 0) | ((se == 0) & (mean < 0))) & ~equal
    pvals = stats.t.cdf(tstat, df=max(n - 1, 1)) if n > 1 else np.where(mean < 0, 0.0, 1.0)
    pvals = np.where(equal, 1.0, pvals)
    holm = holm_reject(pvals, alpha)
    sig = holm if correction == "holm" else naive
    info = {"measured": float(m_l[j]), "bound": float(m_r[j]), "ratio": float(ratios[j]), "tightest_round": int(index[j]),
            "rounds_excluded": excluded,
            "rounds": int(lhs.shape[0]), "runs": n, "rounds_violated": int(np.sum((mean < 0) & ~equal)),
            "family_size": int(lhs.shape[0]), "correction": correction, "family_alpha": alpha,
            "rounds_significant_uncorrected": int(np.sum(naive)), "rounds_significant_holm": int(np.sum(holm))}
    lab = (np.asarray(labels, float)[index] if labels is not None else index + 1.0)
    if np.all(equal):
        _rounds_equal_to_rounding(info, mean, m_l, m_r, rounding_scale, lab, label)
        return "holds", info
    m_fam = int(lhs.shape[0])
    if correction == "holm":
        first = alpha / m_fam
        tcrit = float(stats.t.isf(first, max(n - 1, 1))) if n > 1 else math.inf
        rule = (f"Holm-Bonferroni over the {m_fam} at family-wise level {alpha:.3g} (a round counts when its "
                f"one-sided Student-t p-value, {n - 1} df, is <= alpha/(m - rank); the first threshold alpha/m = "
                f"{first:.3g} is a mean gap below -{tcrit:.3g} standard errors)")
    else:
        rule = f"the uncorrected rule (a round counts when its mean gap is below -{z:g} standard errors)"
    below = np.flatnonzero((mean < 0) & ~equal)
    info["rounds_below"] = [float(v) for v in lab[below]]
    if np.any(sig):
        rows = np.flatnonzero(sig)
        w = int(rows[np.lexsort((mean[rows], tstat[rows]))[0]])  # the most significant; ties: the largest gap
        info["worst_round"] = int(index[w])
        info["runs_violating_at_worst"] = int(np.sum(gap[w] < 0))
        info["rounds_failed"] = [float(v) for v in lab[rows]]
        info["detail"] = (f"violated at {rows.size} of {m_fam} compared rounds ({_rounds_text(lab, rows, label)}) by "
                          f"{rule}; the worst, {label} = {float(lab[w]):g}: measured {m_l[w]:.4g} vs bound {m_r[w]:.4g}, mean gap "
                          f"{mean[w]:.3g} +- {se[w]:.2g} (t = {tstat[w]:.3g}), {info['runs_violating_at_worst']} of "
                          f"{n} runs above the bound")
        return "violated", info
    j_min = int(np.argmin(pvals)) if np.size(pvals) else 0
    info["rounds_failed"] = []
    info["detail"] = (f"the mean measurement is above the bound at {below.size} of {m_fam} compared rounds "
                      f"({_rounds_text(lab, below, label)}), none significantly by {rule}; the smallest p-value "
                      f"{float(np.atleast_1d(pvals)[j_min]):.3g} ({label} = {float(lab[j_min]):g}, mean gap "
                      f"{mean[j_min]:.3g} +- {se[j_min]:.2g})")
    return "inconclusive", info


# ------------------------------------------------------------------------------------ running


def _symbolic_cache_dir() -> Path | None:
    root = os.environ.get("FEDTHEORY_CACHE")
    if root == "":
        return None
    base = Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fedtheory"
    return base / "symbolic"


SHIPPED_SYMBOLIC = Path(__file__).with_name("symbolic_cache.json")


def symbolic_key(key_parts: Sequence[str]) -> str:
    """sha256 of the rate-check code and the exact sympy text of the inputs."""
    from ..theory import rates

    code = Path(rates.__file__).read_bytes()
    return hashlib.sha256(b"\0".join([code] + [p.encode() for p in key_parts])).hexdigest()


def _shipped() -> dict:
    try:
        return json.loads(SHIPPED_SYMBOLIC.read_text())
    except (OSError, ValueError):
        return {}


_FRESH: dict[str, Any] | None = None  # inside fresh_symbolic(): every result computed anew and collected here
_SYMBOLIC_PARTS: list[Callable[[], Any]] = []


def symbolic_part(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Declare a function that runs a check's symbolic computations (``cached_symbolic``) without its simulations,
    so that the shipped cache holds them (``python -m fedtheory.checks.refresh_symbolic``)."""
    _SYMBOLIC_PARTS.append(fn)
    return fn


def symbolic_parts() -> list[Callable[[], Any]]:
    return list(_SYMBOLIC_PARTS)


class fresh_symbolic:
    """``with fresh_symbolic() as results:``: every ``cached_symbolic`` inside computes anew (no cache read or
    written) and its JSON result is collected in ``results`` under its key (what refresh_symbolic ships)."""

    def __enter__(self) -> dict[str, Any]:
        global _FRESH
        self._outer, _FRESH = _FRESH, {}
        return _FRESH

    def __exit__(self, *exc) -> None:
        global _FRESH
        _FRESH = self._outer


def cached_symbolic(key_parts: Sequence[str], compute: Callable[[], dict]) -> dict:
    """Memoize a symbolic computation, keyed by ``symbolic_key``. Lookup: the user cache
    (~/.cache/fedtheory/symbolic), then the cache shipped with the package (tests recompute every
    entry of it), then compute. FEDTHEORY_CACHE='' disables both caches."""
    key = symbolic_key(key_parts)
    if _FRESH is not None:
        out = json.loads(json.dumps(compute()))
        _FRESH[key] = out
        return out
    d = _symbolic_cache_dir()
    if d is None:
        return compute()
    path = d / f"{key}.json"
    if path.exists():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    out = _shipped().get(key)
    if out is None:
        out = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out))
        os.replace(tmp, path)
    except OSError:
        pass
    return out


def simulation_setting_key(sim: Mapping[str, Any]) -> str:
    """What makes two simulation summaries the same setting: every field but the runs and the measures (problem,
    algorithm and its plug-ins' hyperparameters, rounds, local steps, clients, oracle and its parameters, the step
    schedule with its numbers)."""
    return json.dumps({k: v for k, v in sim.items() if k not in ("runs", "measures", "calls")}, sort_keys=True,
                      default=str)


def expr_from_srepr(text: str):
    """A sympy expression back from its ``sympy.srepr`` text (what ``cached_symbolic`` results store expressions as),
    without eval: only Add, Mul, Pow, Symbol (with its assumptions), Integer, Rational and Float are rebuilt; any
    other text is a ValueError (a cache file is data, never code)."""
    import ast

    import sympy as sp

    calls = {"Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow, "Symbol": sp.Symbol, "Integer": sp.Integer,
             "Rational": sp.Rational, "Float": sp.Float}

    def build(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, str, bool)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, int):
            return -node.operand.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in calls:
            kwargs = {k.arg: build(k.value) for k in node.keywords}
            if node.func.id != "Symbol" and node.func.id != "Float" and kwargs:
                raise ValueError(f"unexpected keywords in {node.func.id}")
            if node.func.id == "Symbol" and not all(isinstance(v, bool) for v in kwargs.values()):
                raise ValueError("a Symbol's assumptions must be True or False")
            return calls[node.func.id](*[build(a) for a in node.args], **kwargs)
        raise ValueError(f"not an expression this reader rebuilds: {ast.dump(node)[:80]}")

    try:
        return build(ast.parse(text, mode="eval").body)
    except (SyntaxError, TypeError, RecursionError) as exc:
        raise ValueError(f"not an srepr expression: {exc}") from None


def summarize_simulations(sims: Sequence[dict[str, Any]], limit: int = 12) -> list[dict[str, Any]]:
    """The distinct simulations of a check (summaries of the same setting, ``simulation_setting_key``, merged: their
    runs added, their measures united; a different step size, schedule offset, noise or hyperparameter is another
    setting), at most ``limit``."""
    merged: dict[str, dict[str, Any]] = {}
    for s in sims:
        key = simulation_setting_key(s)
        if key not in merged:
            merged[key] = {**s, "measures": list(s["measures"]), "calls": 0, "runs": 0}
        m = merged[key]
        m["runs"] += s["runs"]
        m["calls"] += 1
        m["measures"] = sorted(set(m["measures"]) | set(s["measures"]))
    return list(merged.values())[:limit]


def _error_row(spec: CheckSpec, detail: str, tb: str = "") -> CheckResult:
    """The row of a check that failed: verdict 'error', never a finding (``exit_code`` gives EXIT_ERROR)."""
    return CheckResult(spec.id, spec.paper, spec.kind, "error", detail=detail,
                       extra={"traceback": tb[-4000:]} if tb else {})


def _nan_field(r: CheckResult) -> str | None:
    """The first of measured / bound / ratio that is a NaN float, on a row that does not record a divergence."""
    if r.verdict == "error" or "diverged_runs" in r.extra:
        return None
    for name in ("measured", "bound", "ratio"):
        v = getattr(r, name)
        if isinstance(v, (float, np.floating)) and math.isnan(v):
            return name
    return None


def checked_rows(spec: CheckSpec, out: Any) -> list[CheckResult]:
    """What a check returned, as rows: a list (or tuple) of CheckResult. Anything else, or a row whose number is
    NaN without a recorded divergence (a NaN is a divergence, reported with where, or an error: never a number), is
    one 'error' row naming the check and what it returned."""
    if isinstance(out, CheckResult):
        out = [out]
    if not isinstance(out, (list, tuple)) or not all(isinstance(r, CheckResult) for r in out):
        what = type(out).__name__ if not isinstance(out, (list, tuple)) else \
            "a list holding " + ", ".join(sorted({type(r).__name__ for r in out if not isinstance(r, CheckResult)}))
        return [_error_row(spec, f"check {spec.id} returned {what}, not a list of CheckResult")]
    rows = list(out)
    for i, r in enumerate(rows):
        bad = _nan_field(r)
        if bad is not None:
            rows[i] = _error_row(spec, f"check {spec.id}: row {i} ({r.verdict}) has {bad} = NaN and records no "
                                       "divergence (extra['diverged_runs']); a NaN is never a measurement")
            continue
        try:  # the results file's schema, which `fedtheory report` reads back: never a file it refuses
            check_record(r.to_json(), f"row {i} ({r.verdict})")
        except SchemaError as exc:
            rows[i] = _error_row(spec, f"check {spec.id}: {exc} (fedtheory.checks.schema; docs/results.md)")
    return rows


SELF_CHECK_BY_RULE = "implementation self-check by rule: the check declares no negative control that can make it fail"


def unverified_rule(rows: list[CheckResult]) -> None:
    """A finding on a record whose transcription was not checked against a text (``Record.transcription``
    'unverified...') is decided and shown, but listed apart (scope 'unverified_transcription'), never counted. Every row
    of a record with a transcription note carries it as ``extra['transcription']``."""
    known = registry()
    for r in rows:
        rec = known.get(r.id) or known.get(str(r.params.get("record", "")) if isinstance(r.params, dict) else "")
        if rec is not None and getattr(rec, "transcription", "") and "transcription" not in r.extra:
            r.extra["transcription"] = str(rec.transcription)  # how the statement was read (the report's tightness table)
        if rec is None or not getattr(rec, "unverified", False):
            continue
        if r.verdict in FINDINGS and r.scope == "inside":
            r.scope = "unverified_transcription"
            r.detail = (f"not counted: the record's transcription is unverified ({rec.transcription}). "
                        + (r.detail or ""))


def draft_todos(rec: Any, known: Mapping[str, Any] | None = None) -> list[str]:
    """The TODOs that hold a record back (``Record.todo``); a definition is held back by the draft records that use
    it ('used by the draft record X'). Empty for a record that is not a draft."""
    todo = list(getattr(rec, "todo", ()) or ())
    if todo or getattr(rec, "kind", "") != "definition":
        return todo
    users = [r.id for r in (known or registry()).values() if getattr(r, "todo", ()) and any(
        getattr(d, "id", None) == rec.id for d in getattr(r, "definitions", ()) or ())]
    return [f"used by the draft record {rid}" for rid in users]


def draft_rule(rows: list[CheckResult], spec: CheckSpec | None = None) -> None:
    """Every row of a draft record (one with TODOs, ``Record.todo``) is decided and shown, but not counted: scope
    'draft' (where it was 'inside'), the TODOs in ``extra['todo']`` and ``extra['draft_record']``. A row's record is
    the one of its id, of its ``params['record']``, the check's record its id extends (``ID.rate``), or the check's
    only record."""
    known = registry()
    tested = tuple(spec.records) if spec is not None else ()
    for r in rows:
        rid = str(r.params.get("record", "")) if isinstance(r.params, dict) else ""
        extends = [t for t in tested if r.id.startswith(t + ".")]
        rec = known.get(r.id) or known.get(rid) or (known.get(extends[0]) if extends else None) or (
            known.get(tested[0]) if len(tested) == 1 else None)
        todo = draft_todos(rec, known) if rec is not None else []
        if not todo:
            continue
        r.extra["todo"] = todo
        r.extra["draft_record"] = rec.id
        if r.scope == "inside":
            r.scope = "draft"
            r.detail = f"not counted: {rec.id} is a draft ({len(todo)} TODO(s)). " + (r.detail or "")


def uncontrolled_rule(spec: CheckSpec, rows: list[CheckResult]) -> None:
    """Rows of a check declared a self-check by design (``self_check``: it compares the tool with its own
    construction) are implementation self-checks, with or without a control; rows of a kind in CONTROLLED_KINDS from
    a check without a negative control are too (never findings): nothing has shown that the check can fail."""
    if spec.control is not None and not spec.self_check:
        return
    reason = f"implementation self-check: {spec.self_check}" if spec.self_check else SELF_CHECK_BY_RULE
    for r in rows:
        if (spec.self_check or r.kind in CONTROLLED_KINDS) and r.verdict not in ("error", "not_applicable") \
                and not r.self_check:
            r.self_check = True
            r.extra["self_check_reason"] = reason
            r.detail = reason + (f". {r.detail}" if r.detail else "")


def spec_quantities(spec: CheckSpec) -> dict[str, str]:
    """The paper's symbols -> the tool's quantities, from the records the check tests (``Record.quantities``)."""
    reg = registry()
    out: dict[str, str] = {}
    for rid in spec.records:
        out.update(getattr(reg.get(rid), "quantities", None) or {})
    return out


CHECK_BLAS_THREADS = 1  # BLAS/OpenMP threads while checks run (as on --workers: fedtheory.parallel's default)


def one_blas_thread():
    """A context in which BLAS/LAPACK (and OpenMP) use ``CHECK_BLAS_THREADS`` thread(s): the checks' matrices are
    small, and threads only add synchronisation (a 100 x 100 eigvalsh took 35x longer with two threads than with
    one on a loaded 2-core machine); and the numbers do not depend on the host's core count, as on --workers. A
    no-op where threadpoolctl is absent."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn (a dependency) requires it
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=CHECK_BLAS_THREADS)


def run_spec(spec: CheckSpec, session: Session) -> list[CheckResult]:
    """One check's results in ``session``, each with the versions, the simulations it ran and its seconds; a check
    that fails gives one 'error' row (never a finding), a ParameterError raised inside it too (a value the check
    computed, e.g. ``D=nan`` passed to ``assess_bound``: the check's error, not the user's input); the rest of the run
    is kept."""
    from ..sim.engine import record_simulations, versions

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with record_simulations() as sims:
            out = checked_rows(spec, spec.fn(session))
    except MissingValuesError as exc:  # the check evaluated a record without a value it needs: the check's bug
        out = [_error_row(spec, f"{type(exc).__name__}: {exc}".splitlines()[0], traceback.format_exc())]
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a failed check is reported, not hidden; never a finding
        last = (f"{type(exc).__name__}: {exc}".splitlines() or [type(exc).__name__])[0]
        out = [_error_row(spec, last, traceback.format_exc())]
    raise_if_received()  # a signal whose exception a library turned into an error of its own still ends the run
    dt = time.perf_counter() - t0
    session.cpu_s[spec.id] = time.process_time() - c0
    v = versions()
    ran = summarize_simulations(sims)
    uncontrolled_rule(spec, out)
    unverified_rule(out)
    draft_rule(out, spec)
    from .robustness import robustness_rule

    robustness_rule(out)
    names = spec_quantities(spec)
    for r in out:
        r.versions = v
        if names and "quantities" not in r.extra:  # the outputs speak in the paper's symbols
            r.extra["quantities"] = dict(names)
        if ran and "simulations" not in r.extra:
            r.extra["simulations"] = ran
        if r.elapsed_s is None:
            r.elapsed_s = dt / max(len(out), 1)
        if r.seed is None:
            r.seed = session.seed
    return out


ONLY_RULE = ("an exact check id; a dotted prefix, matched by whole parts ('p.thm2' selects p.thm2, p.thm2.rate and "
             "the row p.thm2.units of p.units, not p.thm2_2); or a glob pattern with * ? [...] matched against whole "
             "ids ('p.thm2*' selects p.thm2, p.thm2_2, p.thm2.rate and their units rows; quote it in a shell)")


MAX_ONLY_LENGTH = 2 * MAX_ID_LENGTH  # the longest --only entry (a pattern may be longer than the ids it matches)


def id_matches(pattern: str, check_id: str) -> bool:
    """Whether ``pattern`` (a ``--only`` entry) selects ``check_id``: see ONLY_RULE."""
    import fnmatch

    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(check_id, pattern)
    return check_id == pattern or check_id.startswith(pattern + ".")


def _record_rows(spec: CheckSpec, only: Sequence[str]) -> set[str]:
    """The ids of ``spec``'s per-record rows (RECORD.SUFFIX, ``CheckSpec.record_rows``) that an entry of ``only``
    selects."""
    if not spec.record_rows:
        return set()
    rows = (f"{r}.{spec.record_rows}" for r in spec.records)
    return {row for row in rows if any(id_matches(o, row) for o in only)}


def record_row_filter(specs: Sequence[CheckSpec], only: Iterable[str] | None) -> set[str]:
    """The row ids to leave out of the results of ``specs``: the per-record rows of a check that ``only`` selects
    through some of those rows alone (``--only gdzoo.k4`` runs gdzoo.units for its row gdzoo.k4.units), not the
    selected ones; a check selected by its own id keeps every row."""
    only = list(only or [])
    drop: set[str] = set()
    for s in specs:
        if only and s.record_rows and not any(id_matches(o, s.id) for o in only):
            drop |= {f"{r}.{s.record_rows}" for r in s.records} - _record_rows(s, only)
    return drop


@dataclass(frozen=True)
class CheckTiming:
    """How long one check took: ``seconds`` (wall clock of its own run, where it ran: 'here', 'symbolic worker' or a
    unit of work), ``cpu_seconds`` (the CPU time of the process that ran it, over the same span: less sensitive to
    a loaded machine; None where it ran on an executor), its ``rows`` and its ``simulations`` (``simulate`` calls,
    memoized ones reused from an earlier check included). A simulation shared through ``Session.memo`` is paid by
    the first check that needs it."""

    check: str
    paper: str
    kind: str
    cost: str
    where: str
    rows: int
    seconds: float
    simulations: int
    cpu_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3),
                "cpu_seconds": None if self.cpu_seconds is None else round(self.cpu_seconds, 3)}


def check_timings(specs: Sequence[CheckSpec], rows: dict[str, list[CheckResult]],
                  where: dict[str, str] | None = None, cpu: dict[str, float] | None = None) -> list[CheckTiming]:
    """One CheckTiming per spec (in order) from its rows: ``run_spec`` gives each row an equal share of the
    check's seconds, so their sum is the check's time; ``cpu``: check id -> CPU seconds (``Session.cpu_s``)."""
    out = []
    for s in specs:
        rs = rows.get(s.id, [])
        sims = rs[0].extra.get("simulations", []) if rs else []
        out.append(CheckTiming(s.id, s.paper, s.kind, s.cost, (where or {}).get(s.id, "here"), len(rs),
                               float(sum(r.elapsed_s or 0.0 for r in rs)),
                               int(sum(int(x.get("calls", 1)) for x in sims)), (cpu or {}).get(s.id)))
    return out


def select(paper: str | None = None, only: Iterable[str] | None = None, profile: str = "quick",
           runs: bool = False) -> list[CheckSpec]:
    """The checks to run. ``only``: entries as ONLY_RULE says (exact ids, whole-part dotted prefixes, glob
    patterns), matched against the check ids and against the per-record rows of a check that gives them
    (``CheckSpec.record_rows``: RECORD.units of PAPER.units; ``record_row_filter`` then says which of its rows to
    leave out). With ``runs`` (logged runs given) and no ``only``, just the checks of logged runs; without it, those
    checks are left out (they need runs). An entry that selects no registered check is a ParameterError that says
    what it would have to be, and which ids it nearly matches."""
    specs = all_checks()
    papers = sorted({s.paper for s in specs.values()})
    if paper is not None and paper not in papers:
        raise ParameterError("--paper", paper, "one of " + ", ".join(papers))
    chosen = [s for s in specs.values() if (paper is None or s.paper == paper) and profile in s.profiles]
    if not only:
        chosen = [s for s in chosen if s.needs_runs == runs]
    if only:
        only = list(only)
        for o in only:
            if not isinstance(o, str) or len(o) > MAX_ONLY_LENGTH:  # fnmatch's translation is quadratic in '['
                raise ParameterError("--only", o, f"{ONLY_RULE}; at most {MAX_ONLY_LENGTH} characters (an id has at "
                                     f"most {MAX_ID_LENGTH})")
            if not any(id_matches(o, s.id) or _record_rows(s, [o]) for s in specs.values()):
                near = sorted(s.id for s in specs.values() if s.id.startswith(o))[:6]
                hint = (f"; it is not a whole dotted part of {', '.join(near)}: '{o}*' would select "
                        f"{'them' if len(near) > 1 else 'it'}") if near else " (see `fedtheory list --checks`)"
                raise ParameterError("--only", o, ONLY_RULE + hint)
        chosen = [s for s in chosen if any(id_matches(o, s.id) for o in only) or _record_rows(s, only)]
    return chosen


@dataclass
class ControlOutcome:
    """What a check's negative control gave: 'fails_as_required' (some row is a finding verdict of a counted class,
    ``counted_row``; or, for a check with no counted path, ``no_counted_path`` says why, any finding verdict),
    'fails_uncounted' (finding verdicts only out of scope or as self-checks, and no reason given: the counted path is
    not exercised, a defect of the check), 'did_not_fail' (the check could not fail under the mutation: a defect) or
    'error' (the control raised)."""

    check: str
    paper: str
    description: str
    status: str
    rows: list[CheckResult]
    elapsed_s: float
    counted_row: str = ""
    no_counted_path: str = ""

    @property
    def counted_text(self) -> str:
        """The counted row in words ('id on problem (setting): verdict [class]'), or why there is none."""
        return self.counted_row or (f"none: {self.no_counted_path}" if self.no_counted_path else "none")

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "paper": self.paper, "description": self.description, "status": self.status,
                "counted_row": self.counted_row, "no_counted_path": self.no_counted_path,
                "verdicts": [r.verdict for r in self.rows], "elapsed_s": round(self.elapsed_s, 3),
                "rows": [r.to_json() for r in self.rows]}


def _control_label(r: CheckResult) -> str:
    setting = r.params.get("setting") if isinstance(r.params, dict) else None
    return " ".join(str(x) for x in (r.id, r.problem and f"on {r.problem}", setting and f"({setting})",
                                     f"{r.verdict} [{r.finding_class}]") if x)


def run_control(spec: CheckSpec, session: Session) -> ControlOutcome:
    """Run one check's negative control (``spec.control``) and judge it: it must produce a row of a counted class
    (a finding verdict, scope 'inside', not a self-check), or the check says why it has no counted path (its
    ``self_check`` reason, or the control's ``uncounted``)."""
    if spec.control is None:
        raise ParameterError("check", spec.id, "a check that declares a negative control")
    t0 = time.perf_counter()
    try:
        rows = checked_rows(spec, spec.control.fn(session))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a failing control is reported
        rows = [_error_row(spec, (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0], traceback.format_exc())]
    no_path = (f"a self-check by design ({spec.self_check})" if spec.self_check else spec.control.uncounted)
    counted = [] if spec.self_check else [r for r in rows if r.is_finding]
    if any(r.verdict == "error" for r in rows):
        status = "error"
    elif not any(r.verdict in FINDINGS for r in rows):
        status = "did_not_fail"
    elif counted or no_path:
        status = "fails_as_required"
    else:
        status = "fails_uncounted"
    return ControlOutcome(spec.id, spec.paper, spec.control.description, status, rows, time.perf_counter() - t0,
                          counted_row=_control_label(counted[0]) if counted else "", no_counted_path=no_path)


def run_controls(paper: str | None = None, only: Iterable[str] | None = None, profile: str = "quick",
                 seed: int = 0, runs_dir: str | None = None) -> tuple[list[ControlOutcome], list[CheckSpec]]:
    """The negative controls of the selected checks, in one Session: (their outcomes, the selected checks of a
    kind in CONTROLLED_KINDS that declare none: implementation self-checks by rule). runs_dir: logged runs, for
    the controls of the checks of logged runs (which run on those logs under a mutation)."""
    specs = select(paper, only, profile, runs=runs_dir is not None)
    session = Session(profile=profile, seed=seed, runs_dir=runs_dir)
    with one_blas_thread():
        outcomes = [run_control(s, session) for s in specs if s.control is not None]
    missing = [s for s in specs if s.control is None and s.kind in CONTROLLED_KINDS]
    return outcomes, missing


def group_findings(results: Sequence[CheckResult], *, counted: bool = True) -> dict[str, list[CheckResult]]:
    """Rows grouped by cause (``CheckResult.finding_key``), in first-seen order. counted=True: only the rows
    that count as findings (``is_finding``); False: the FINDINGS-verdict rows that do not count (out of scope,
    self-checks), so that they can be listed apart."""
    out: dict[str, list[CheckResult]] = {}
    for r in results:
        if r.verdict not in FINDINGS:
            continue
        if r.is_finding != counted:
            continue
        out.setdefault(r.finding_key, []).append(r)
    return out


def errors(results: Sequence[CheckResult]) -> list[CheckResult]:
    """The rows of checks that failed (verdict 'error'): never findings about a paper."""
    return [r for r in results if r.verdict == "error"]


def exit_code(results: Sequence[CheckResult]) -> int:
    """EXIT_ERROR (3) when some check failed ('error' rows), whatever else was found; else EXIT_FINDINGS (1) when
    some distinct in-scope finding (``group_findings``) exists; else EXIT_OK (0). Out-of-scope rows (scope other than
    'inside'), implementation self-checks, 'ambiguous' and 'proof_step_loose' rows never set it."""
    if errors(results):
        return EXIT_ERROR
    return EXIT_FINDINGS if group_findings(results) else EXIT_OK
