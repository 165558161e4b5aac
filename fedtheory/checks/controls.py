"""Negative controls: a check's :class:`~fedtheory.checks.Control` run and judged (:func:`run_control`: it must make
a counted finding, or the check says why it has no counted path); ``fedtheory check --controls``."""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any, Iterable

from .._validation import ParameterError
from .execution import checked_rows, error_row, one_blas_thread
from .registry import CONTROLLED_KINDS, CheckSpec, select
from .results import FINDINGS, CheckResult
from .session import Session

__all__ = ["ControlOutcome", "run_control", "run_controls"]


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
    ``self_check`` reason, or the control's ``uncounted``).

    Parameters
    ----------
    spec : CheckSpec
        A registered check with a control (``all_checks()[ID]``).
    session : Session
        The session to run it in.

    Returns
    -------
    ControlOutcome
        ``status`` (``fails_as_required``, ``fails_uncounted``, ``did_not_fail`` or ``error``), the rows, the
        counted row.

    Raises
    ------
    ParameterError
        When the check declares no control.
    """
    if spec.control is None:
        raise ParameterError("check", spec.id, "a check that declares a negative control")
    t0 = time.perf_counter()
    try:
        rows = checked_rows(spec, spec.control.fn(session))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a failing control is reported
        rows = [error_row(spec, (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0], traceback.format_exc())]
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
