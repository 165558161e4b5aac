"""Running one check in a :class:`~fedtheory.checks.Session` (:func:`run_spec`): what it returned held to the results
schema (:func:`checked_rows`; a check that fails is one 'error' row, never a finding), the rules every row is held to
(self-check by rule, unverified transcription, draft, robustness stated), the versions, simulations and seconds it
ran; one BLAS thread while checks run; how long each check took (:class:`CheckTiming`)."""
from __future__ import annotations

import json
import math
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..signals import raise_if_received
from ..theory.core import MissingValuesError, registry
from .registry import CONTROLLED_KINDS, CheckSpec
from .results import FINDINGS, CheckResult
from .schema import SchemaError, check_record
from .session import Session

__all__ = ["CHECK_BLAS_THREADS", "SELF_CHECK_BY_RULE", "CheckTiming", "check_timings", "checked_rows", "draft_rule",
           "draft_todos", "error_row", "one_blas_thread", "run_spec", "simulation_setting_key", "spec_quantities",
           "summarize_simulations", "uncontrolled_rule", "unverified_rule"]


def simulation_setting_key(sim: Mapping[str, Any]) -> str:
    """What makes two simulation summaries the same setting: every field but the runs and the measures (problem,
    algorithm and its plug-ins' hyperparameters, rounds, local steps, clients, oracle and its parameters, the step
    schedule with its numbers)."""
    return json.dumps({k: v for k, v in sim.items() if k not in ("runs", "measures", "calls")}, sort_keys=True,
                      default=str)


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


def error_row(spec: CheckSpec, detail: str, tb: str = "") -> CheckResult:
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
        return [error_row(spec, f"check {spec.id} returned {what}, not a list of CheckResult")]
    rows = list(out)
    for i, r in enumerate(rows):
        bad = _nan_field(r)
        if bad is not None:
            rows[i] = error_row(spec, f"check {spec.id}: row {i} ({r.verdict}) has {bad} = NaN and records no "
                                       "divergence (extra['diverged_runs']); a NaN is never a measurement")
            continue
        try:  # the results file's schema, which `fedtheory report` reads back: never a file it refuses
            check_record(r.to_json(), f"row {i} ({r.verdict})")
        except SchemaError as exc:
            rows[i] = error_row(spec, f"check {spec.id}: {exc} (fedtheory.checks.schema; docs/results.md)")
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
            # how the statement was read (the report's tightness table)
            r.extra["transcription"] = str(rec.transcription)
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
    from ..sim.engine import versions
    from ..sim.simulation_log import record_simulations

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with record_simulations() as sims:
            out = checked_rows(spec, spec.fn(session))
    except MissingValuesError as exc:  # the check evaluated a record without a value it needs: the check's bug
        out = [error_row(spec, f"{type(exc).__name__}: {exc}".splitlines()[0], traceback.format_exc())]
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a failed check is reported, not hidden; never a finding
        last = (f"{type(exc).__name__}: {exc}".splitlines() or [type(exc).__name__])[0]
        out = [error_row(spec, last, traceback.format_exc())]
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
