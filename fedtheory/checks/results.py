"""What a check returns: :class:`CheckResult` (one verdict) and its vocabulary (verdicts, kinds, scopes, finding
classes); how rows group into findings and what the exit status is."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .._jsonutil import jsonable

__all__ = ["CLASS_SEVERITY", "DEFAULT_CLASS", "EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "EXIT_USAGE", "FINDINGS",
           "FINDING_CLASSES", "KINDS", "SCOPES", "VERDICTS", "CheckResult", "errors", "exit_code", "finding_class_of",
           "group_findings", "scalar_params"]

VERDICTS = ("holds", "violated", "not_applicable", "rate_consistent", "rate_inconsistent", "claim_supported",
            "claim_refuted", "inconclusive", "ambiguous", "proof_step_loose", "error")
#: The verdicts that are findings about a paper. A row with one counts in the exit status (1) when its scope is
#: ``inside`` and it is not a self-check. 'error' is not one: a check that raised says nothing about the paper (exit
#: status 3). 'ambiguous' (the readings of the text disagree) and 'proof_step_loose' (the stated rate follows from the
#: exact form of the bound but not from a loosened step of the proof) are listed apart, never counted.
FINDINGS = {"violated", "rate_inconsistent", "claim_refuted"}
KINDS = ("bound", "rate", "claim", "identity", "symbolic")
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
# 'ambiguous' when they disagree (checks.readings.combine_readings).
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

    A check builds its rows with ``assess_bound``, ``claim_result``, ``identity_result`` or ``rate_check`` rather
    than by hand; ``fedtheory check --format json`` writes every field (``docs/results.md``).

    Parameters
    ----------
    id : str
        The row's id: the check's, or ``RECORD.SUFFIX`` for a per-record row.
    paper : str
        The paper's name.
    kind : {"bound", "rate", "claim", "identity", "symbolic"}
        The kind of row.
    verdict : str
        One of ``VERDICTS``: holds, violated, not_applicable, rate_consistent, rate_inconsistent, claim_supported,
        claim_refuted, inconclusive, ambiguous, proof_step_loose, error.
    measured, bound : object, optional
        The measured left side and the bound (numbers, or arrays over rounds).
    ratio : float, optional
        bound / measured for a bound (>= 1 holds).
    conditions_failed : list of str, optional
        The conditions that fail, with their numbers (a ``not_applicable`` row).
    problem : object, optional
        The problem's name.
    params : dict, optional
        The setting of the row (``params["setting"]`` is shown first in the table).
    seed : int, optional
        The session's seed.
    source : str, default ""
        The record's source.
    detail : str, default ""
        A note, printed under a row that does not hold.
    extra : dict, optional
        Everything else (certificates, simulations, series, robustness; ``docs/results.md``).
    versions : dict of str to str, optional
        The versions of fedtheory and its dependencies.
    elapsed_s : float, optional
        Seconds the check took.
    finding : str, default ""
        The cause key rows share to count once.
    scope : str, default "inside"
        One of ``SCOPES``; only ``inside`` findings count.
    self_check : bool, default False
        An implementation self-check, never a finding.
    vacuous : bool, default False
        The bound exceeds a trivial bound of its left side.
    trivial_bound : float, optional
        That trivial bound.
    family_size : int, optional
        How many comparisons the verdict's multiple-testing correction covers.
    seeds : int, optional
        How many independent runs the verdict rests on.
    quote : str, default ""
        The sentence the row tests, with seed file and line.
    finding_class : str, default ""
        One of ``FINDING_CLASSES`` for a finding (set by default from the verdict).

    Raises
    ------
    ValueError
        For an unknown verdict, kind, scope or finding class.
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


def scalar_params(values: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar numeric entries of ``values`` as floats (what a result's ``params`` records)."""
    out = {}
    for k, v in values.items():
        a = np.asarray(v)
        if a.ndim == 0 and np.issubdtype(a.dtype, np.number):
            out[k] = int(a) if np.issubdtype(a.dtype, np.integer) else float(a)
    return out
