"""The units check: every record's formulas, dimension by dimension, without running anything.

Every paper gets the check ``PAPER.units`` for free (registered through ``fedtheory.plugins.on_records_registered``
when a plug-in registers records of that paper; its negative control: ``units_control_rows``): one row per record that
has a formula, id ``RECORD.units`` (kind 'symbolic'); a claim or a statement in words has none and gets no row. The
rules and the dimensions are ``fedtheory.theory.dimensions``; the left side of a bound is a measure of the simulator's
catalogue (its declared dimension) unless the record's ``units.lhs`` says otherwise. The verdicts:

* holds: every formula is consistent ("consistent"; "consistent under L = 1" with the normalisation the record
  declares, quoted; a stated order "consistent under" the step-size choice it states, e.g. eta = sqrt(N/(K T))
  sets [w]^2/[f] = 1: the Theta hides a constant with units);
* violated, finding_class 'erratum', counted: an inconsistent printed form whose consistent form another record
  holds (``units.alternative``: its derivation, another printing); ``finding`` is ``units.finding`` (the key the
  other checks give the same erratum, so one typo counts once);
* violated, counted (rule 8 of docs/verdict-rules.md): inconsistent under every reading, with no stated normalisation
  that makes it consistent and no consistent alternative: wrong as printed whatever the reading. Class 'erratum' (no
  reading makes the printed formula right), finding ``units.finding`` or RECORD.units; a measured check of the bound
  escalates it to 'false_as_stated' under the same key (the cause then takes that class) only where the bound fails on
  the run as measured, or on the run rescaled so that the inconsistent terms shrink inside rule 8's regime (every
  value of the statement within a factor ``RESCALE_REGIME`` of the run's: ``assess_bound``,
  ``units_consequence``, ``rescaled_values``); a consistent repair the paper's derivation supports is a record of its
  own (``units.alternative``), decided by its own rows;
* violated, scope 'units_artifact', not counted: a stated order (an OrderStatement) inconsistent as printed: its O(.)
  may drop constants that carry units, so a consistent reading (the hidden constant's) exists;
* ambiguous (listed apart, not counted): a symbol's readings (``dim={"A": ..., "B": ...}``) disagree on it;
* inconclusive: "units: unknown (no dimension for: ...)", a user's record with undeclared dimensions (its
  registration warned); for a built-in (strict) paper the same is an 'error' row.

Each verdict names the first offending term and both dimensions, e.g. ``2*m_t/m_t1**2 has [w]^-1, the left side
[w]^2``. Results are cached per record: the pass over every record takes well under a second.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Mapping

import numpy as np
import sympy as sp

from ..plugins import on_records_registered
from ..sim.measures import measure_catalogue, registered_measures
from ..theory.core import paper_symbols, registered, standing_in, symbol_sets
from ..theory.dimensions import (
    Dim,
    FormulaResult,
    check_formula,
    format_dimension,
    free_names,
    implied_normal,
    iter_readings,
    parse_dimension,
    record_formulas,
    symbol_dims,
)
from .registry import CheckSpec, Control, check_spec, register_spec
from .results import CheckResult

__all__ = ["RESCALE_REGIME", "measure_dimensions", "regime_text", "register_units_checks", "rescaled_values",
           "shrink_direction", "units_analysis", "units_consequence", "units_result", "units_rows", "units_symbols"]

# Rule 8's regime (docs/verdict-rules.md): a rescaled instance is evidence only where every value the statement is
# evaluated at (its symbols with a dimension, the values the check derives from them again, e.g. FedMRUR's C = C_max)
# and the left side stay within a factor RESCALE_REGIME of the run's. Farther, the instance leaves the regime the
# theorem is about (before this bound: a loss x 3e-17, C_max = 1387) and proves only the misprint again.
RESCALE_REGIME = 10.0


def regime_text(factor: float = RESCALE_REGIME) -> str:
    """Rule 8's regime in words (every row decided on a rescaled instance prints it)."""
    return (f"rule 8's regime: a rescaled instance counts only where every value of the statement, every value the "
            f"check derives from them again, and the left side stay within a factor {factor:g} of the run's")


MAX_PARTS = 5  # offending formulas named per reading (each by its first offending term)


@functools.lru_cache(maxsize=1)
def _catalogue_dimensions() -> dict[str, str]:
    return {k: v.get("dimension", "") for k, v in measure_catalogue().items()}


def measure_dimensions() -> dict[str, str]:
    """Measure name -> declared dimension, from the simulator's catalogue (``fedtheory list --measures``) and the
    measures plug-ins declared with ``fedtheory.sim.register_measure`` (read at every call: a plug-in may declare one
    after the catalogue was first read)."""
    return {**_catalogue_dimensions(), **{k: v["dimension"] for k, v in registered_measures().items()}}


def _symbols_of(record) -> dict[str, Any]:
    symbols = getattr(record, "symbols", None)
    return dict(symbols.info) if symbols is not None else paper_symbols(record.paper)


def _strict(record) -> bool:
    symbols = getattr(record, "symbols", None)
    sets = [symbols] if symbols is not None else symbol_sets(record.paper)
    return any(getattr(s, "strict", False) for s in sets)


def _reading_text(reading: Mapping[str, str], info: Mapping[str, Any]) -> str:
    return ", ".join(f"reading {k} ({n}: {format_dimension(parse_dimension(info[n].dimension[k]))})"
                     for n, k in reading.items())


def _normal_text(d: Dim, dims: Mapping[str, Dim], used: set[str]) -> str:
    """'L = 1' for the symbols of dimension d (or d^-1) the record uses; else '[f]/[w]^2 = 1'."""
    like = [n for n in dims if not dims[n].dimensionless
                               and ((dims[n] / d).dimensionless or (dims[n] * d).dimensionless)]
    names = sorted(n for n in like if n in used) or sorted(like)
    dt = format_dimension(d)
    return (" or ".join(f"{n} = 1" for n in names[:3]) + f" ({dt} = 1)") if names else f"{dt} = 1"


@dataclasses.dataclass
class _Reading:
    reading: dict[str, str]
    results: list[FormulaResult]
    unknown: set[str]
    bad: list[FormulaResult]  # statement / definitions / conditions still inconsistent
    order_bad: list[FormulaResult]  # the stated order inconsistent even under its stated choice
    notes: list[str]  # "consistent under ..." parts
    needs: str = ""  # the normalisation that would make the bad formulas consistent
    order_needs: str = ""  # the same for the stated order of a bound

    @property
    def ok(self) -> bool:
        """Statement, definitions and conditions consistent (a bound's stated order is reported, not judged: its
        O(.) may drop constants that carry units)."""
        return not self.unknown and not self.bad


def _analyse_reading(record, formulas, info, reading) -> _Reading:
    dims = symbol_dims(info, reading)
    units = getattr(record, "units", None)
    declared = tuple(dims[n] for n in (units.normalisation if units is not None else ()) if n in dims)
    results, unknown, bad, order_bad, notes = [], set(), [], [], []
    implied: list[tuple[Dim, str]] = []
    for f in formulas:
        if f.choice:
            r = check_formula(f, dims)
            unknown |= r.unknown
            d = implied_normal(f, dims)
            if d is not None:
                implied.append((d, f.part.split(": ", 1)[1]))
            results.append(r)
    used = free_names(formulas)
    for f in formulas:
        if f.choice:
            continue
        r = check_formula(f, dims)
        unknown |= r.unknown
        if r.issues and declared:
            r2 = check_formula(f, dims, declared)
            if not r2.issues:
                notes.append(f"{f.part} consistent under " + ", ".join(f"{n} = 1" for n in units.normalisation)
                             + (f" ({units.quote})" if units.quote else ""))
                r = r2
        if r.issues and f.order and implied:
            normals = declared + tuple(d for d, _ in implied)
            r2 = check_formula(f, dims, normals)
            if not r2.issues:
                notes.append("stated order consistent under the stated choice "
                             + "; ".join(f"{txt} ({format_dimension(d)} = 1)" for d, txt in implied))
                r = r2
        if r.counts_only:
            notes.append("stated order a scaling in counts (the O(.) carries the left side's dimension)")
        results.append(r)
        if r.issues:
            (order_bad if f.order else bad).append(r)
    if order_bad and all(f.order for f in formulas):  # an OrderStatement: the order is all it states
        bad, order_bad = order_bad, []
    out = _Reading(dict(reading), results, unknown, bad, order_bad, notes)
    if not unknown:
        if bad:
            out.needs = _would_need(bad, dims, used, declared)
        if order_bad:
            out.order_needs = _would_need(order_bad, dims, used, declared)
    return out


def _would_need(bad: list[FormulaResult], dims: Mapping[str, Dim], used: set[str], declared) -> str:
    """The single normalisation (one symbol's dimension set to 1) that makes every bad formula consistent."""
    cands: list[Dim] = []
    for n in sorted(used) + sorted(set(dims) - set(used)):  # the formula's own symbols first, then the paper's
        d = dims.get(n)
        if d is None or d.dimensionless:
            continue
        if not any((d / c).dimensionless or (d * c).dimensionless for c in cands):
            cands.append(d)
    fixes = [c for c in cands if all(not check_formula(r.formula, dims, declared + (c,)).issues for r in bad)]
    if not fixes:
        return "no single normalisation makes it consistent (only dimensionless units would)"
    return ("would need " + "; or ".join(_normal_text(c, dims, used) for c in fixes)
            + (" (besides the declared one)" if declared else " (the record declares none)"))


MAX_LISTED = 2  # further offending terms of a formula named in its text; beyond that, counted


def _more_text(issues) -> str:
    """The offending terms after the first: ' (and 1 more term: X has ..., the left side ...)'; beyond MAX_LISTED,
    the first MAX_LISTED and how many more."""
    more = issues[1:]
    if not more:
        return ""
    shown = "; ".join(i.text for i in more[:MAX_LISTED])
    rest = f"; and {len(more) - MAX_LISTED} more" if len(more) > MAX_LISTED else ""
    return f" (and {len(more)} more term{'s' * (len(more) > 1)}: {shown}{rest})"


def _issues_text(rs: list[FormulaResult]) -> str:
    """Per offending formula its first (simplest) offending term, then the others (``_more_text``)."""
    parts = []
    for r in rs[:MAX_PARTS]:
        parts.append(f"{r.formula.part}: {r.issues[0].text}" + _more_text(r.issues))
    if len(rs) > MAX_PARTS:
        parts.append(f"and {len(rs) - MAX_PARTS} more formula(s)")
    return "; ".join(parts)


def _no_formula_text(record) -> str:
    kind = getattr(record, "kind", "")
    if hasattr(record, "symbol") and getattr(record, "expr", 0) is None:
        info = _symbols_of(record).get(str(record.symbol))
        dim = getattr(info, "dimension", None)
        return "defined in words" + (f" ({record.symbol}: {format_dimension(parse_dimension(dim))})"
                                     if isinstance(dim, str) else "")
    if kind == "claim":
        return "a claim checked on measurements: no formula"
    if kind == "order":
        return "no formula survives (stated in words)"
    return "stated in words: no sympy formula"


@functools.lru_cache(maxsize=None)
def _analysis_cached(rid: str, oid: int) -> dict[str, Any]:
    return _analyse(_LIVE[(rid, oid)])


_LIVE: dict[tuple[str, int], Any] = {}


def units_analysis(record) -> dict[str, Any]:
    """The units analysis of one record: {'verdict', 'detail', 'scope', 'finding', 'finding_class', 'readings',
    'first'} ('first': the first offending term's text; 'readings': per reading, its status and text). Cached."""
    key = (record.id, id(record))
    _LIVE[key] = record
    return _analysis_cached(*key)


def _analyse(record) -> dict[str, Any]:
    info = _symbols_of(record)
    lhs_name = getattr(record, "lhs", None)
    lhs_dim = measure_dimensions().get(lhs_name) or None if isinstance(lhs_name, str) else None
    formulas = record_formulas(record, lhs_dim)
    if not formulas:
        return {"verdict": "not_applicable", "detail": "units: " + _no_formula_text(record), "scope": "inside",
                "summary": _no_formula_text(record),
                "finding": "", "finding_class": "", "readings": {}, "first": "", "formulas": 0}
    readings = [_analyse_reading(record, formulas, info, rd) for rd in iter_readings(info, free_names(formulas))]
    units = getattr(record, "units", None)
    out: dict[str, Any] = {"scope": "inside", "finding": "", "finding_class": "", "first": "",
                           "formulas": len(formulas), "readings": {}}
    unknown = sorted(set().union(*(r.unknown for r in readings)))
    if unknown:
        lhs_only = all("left side" in u for u in unknown)
        # an undeclared symbol of a strict (built-in) paper is a bug of the encoding; a left side whose measure
        # declares no dimension is the user's to declare (register_measure, or Units(lhs=...)): not decided
        out["verdict"] = "error" if _strict(record) and not lhs_only else "inconclusive"
        out["detail"] = out["summary"] = f"units: unknown (no dimension for: {', '.join(unknown)})" + (
            f"; declare the measure's dimension with fedtheory.sim.register_measure({lhs_name!r}, DIMENSION) or the "
            "record's Units(lhs=...)" if lhs_only else "")
        return out
    undecided = list(dict.fromkeys(f"{x.formula.part}: {x.undecided}" for r in readings for x in r.results
                                   if x.undecided))
    if undecided:  # bounded work (TooLargeToDecide): said, never guessed
        out["verdict"] = "inconclusive"
        out["detail"] = out["summary"] = "units: not decided (" + "; ".join(undecided[:MAX_PARTS]) + ")"
        return out

    def text(r: _Reading, needs: bool = True) -> str:
        order = ""
        if r.order_bad:
            order = ("; the stated order as printed (its O(.) drops constants that carry units, not judged): "
                     + _issues_text(r.order_bad) + (f"; {r.order_needs}" if r.order_needs else ""))
        if r.ok:
            return "consistent" + ("; " + "; ".join(dict.fromkeys(r.notes)) if r.notes else "") + order
        return _issues_text(r.bad) + (f"; {r.needs}" if r.needs and needs else "") + order

    def short(r: _Reading) -> str:
        if r.ok:
            notes = [n for n in dict.fromkeys(r.notes) if not n.startswith("stated order a scaling")]
            return "consistent" + ("; " + "; ".join(notes) if notes else "") + (
                "; stated order not comparable (drops constants with units)" if r.order_bad else "")
        n = sum(len(x.issues) for x in r.bad)
        return f"{r.bad[0].formula.part}: {r.bad[0].issues[0].text}" + (f" (+{n - 1} more)" if n > 1 else "")

    for r in readings:
        out["readings"][_reading_text(r.reading, info) or "as declared"] = {"ok": r.ok, "text": text(r)}
    multi = len(readings) > 1
    label = (lambda r: _reading_text(r.reading, info) + ": ") if multi else (lambda r: "")
    out["summary"] = "; ".join(label(r) + short(r) for r in readings)
    oks = [r for r in readings if r.ok]
    bads = [r for r in readings if not r.ok]
    first = next((rs.issues[0].text for r in bads for rs in r.bad), "")
    out["first"] = first
    if not bads:
        out["verdict"] = "holds"
        out["detail"] = "; ".join(label(r) + text(r) for r in readings)
        return out
    if oks:
        out["verdict"] = "ambiguous"
        out["detail"] = "units differ between readings: " + "; ".join(label(r) + text(r) for r in readings)
        return out
    alt_ok = False
    if units is not None and units.alternative:
        alt = next((r for r in registered() if r.id == units.alternative), None)
        alt_ok = alt is not None and units_analysis(alt)["verdict"] == "holds"
    out["verdict"] = "violated"
    if alt_ok:
        out["finding_class"] = "erratum"
        out["finding"] = units.finding or f"{record.id}.units"
        detail = "; ".join(label(r) + text(r, needs=False) for r in readings)
        out["detail"] = f"units: {detail}; its consistent form is {units.alternative} (erratum)"
    elif getattr(record, "kind", "") == "order":
        out["scope"] = "units_artifact"
        out["detail"] = ("units artifact, not counted (a stated order: its O(.) may drop constants that carry units, "
                         "so a consistent reading exists, the hidden constant's; the rule for statements inconsistent "
                         "under every reading does not apply): " + "; ".join(label(r) + text(r) for r in readings))
    else:
        # inconsistent under every reading, no consistent alternative, no normalisation that fixes it: wrong as printed
        # whatever the reading (docs/verdict-rules.md, rule 8). Counted: an erratum (no reading makes the printed
        # formula right), unless a measured check shows it false on the run as measured or on a rescaled instance
        # inside rule 8's regime (false_as_stated, decided by assess_bound on the same finding key).
        out["finding_class"] = "erratum"
        out["finding"] = (units.finding if units is not None and units.finding else "") or f"{record.id}.units"
        out["inconsistent_everywhere"] = True
        shrink = {_reading_text(r.reading, info) or "as declared": _shrink_text(shrink_direction(r)) for r in readings}
        out["rescale"] = {k: v for k, v in shrink.items()}
        out["detail"] = ("units: " + "; ".join(label(r) + text(r) for r in readings)
                         + ". Inconsistent under every reading, with no stated normalisation that makes it "
                         "consistent and no consistent form encoded: wrong as printed whatever the reading (counted, "
                         "rule 8 of docs/verdict-rules.md; an erratum unless a measured check finds the bound false on "
                         "the run as measured, or on the run rescaled so that the inconsistent terms shrink inside "
                         f"rule 8's regime: every value of the statement within a factor {RESCALE_REGIME:g} of the "
                         "run's). Rescaling that shrinks the statement's inconsistent terms: "
                         + "; ".join((f"{k}: " if multi else "") + v for k, v in shrink.items()))
    return out


def shrink_direction(reading) -> tuple[float, float] | None:
    """For one reading's analysis of a record (``_Reading``): the direction (x, y) such that rescaling the loss by
    c = 10^(x t) and the parameters by s = 10^(y t) shrinks every inconsistent term of the statement relative to the
    left side by at least 10^t (a term of dimension d where the left side has d0 scales by c^(d.f - d0.f)
    s^(d.w - d0.w) against it). None when the statement has no inconsistent additive term (its slips are in the
    definitions, conditions, or inside a log or exp) or when no direction shrinks them all."""
    diffs = []
    for res in reading.bad:
        if res.formula.part != "statement":
            continue
        for i in res.issues:
            if i.kind not in ("lhs", "scaled"):
                return None
            e = i._has / i._needs
            f, w = sp.sympify(e.f), sp.sympify(e.w)
            if not (f.is_number and w.is_number):
                return None
            diffs.append((float(f), float(w)))
    if not diffs:
        return None
    angles = np.linspace(0.0, 2 * np.pi, 3600, endpoint=False)
    u = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    rate = np.min(-(u @ np.asarray(diffs).T), axis=1)  # the slowest shrink along each direction
    k = int(np.argmax(rate))
    if rate[k] <= 1e-9:
        return None
    x, y = u[k] / rate[k]  # the slowest term shrinks by exactly 10 per unit step
    return float(round(x, 6)), float(round(y, 6))


def _shrink_text(direction) -> str:
    if direction is None:
        return "none (no rescaling of loss and parameters shrinks every inconsistent term of the statement)"
    x, y = direction
    return (f"loss x 10^({x:.3g} t), parameters x 10^({y:.3g} t): each inconsistent term shrinks by at least 10^t "
            "against the left side")


def units_consequence(record, reading: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """What rule 8 needs to test a record on a rescaled instance (``_units_consequence``); cached per record and
    reading."""
    key = (record.id, id(record), tuple(sorted((reading or {}).items())))
    _LIVE[key[:2]] = record
    return _consequence_cached(*key)


@functools.lru_cache(maxsize=None)
def _consequence_cached(rid: str, oid: int, reading: tuple) -> dict[str, Any] | None:
    return _units_consequence(_LIVE[(rid, oid)], dict(reading) or None)


def _units_consequence(record, reading: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """What rule 8 (a statement inconsistent in units under every reading) needs to test a record on a rescaled
    instance: None when the record is not such a statement; else {'finding': its units finding key, 'dims': symbol ->
    Dim under the reading, 'lhs': the left side's Dim, 'direction': ``shrink_direction`` (or None), 'reading': the
    reading used}. A record whose symbols have several unit readings needs ``reading`` (symbol -> reading key, the one
    the run realises); without it the result is {'finding', 'needs_reading': [those symbols]}."""
    a = units_analysis(record)
    if not a.get("inconsistent_everywhere"):
        return None
    info = _symbols_of(record)
    lhs_name = getattr(record, "lhs", None)
    lhs_dim = measure_dimensions().get(lhs_name) or None if isinstance(lhs_name, str) else None
    formulas = record_formulas(record, lhs_dim)
    names = free_names(formulas)
    ambiguous = [n for n in sorted(names) if n in info and isinstance(info[n].dimension, Mapping)]
    if ambiguous and not all(n in (reading or {}) for n in ambiguous):
        return {"finding": a["finding"], "needs_reading": ambiguous}
    rd = {n: (reading or {})[n] for n in ambiguous}
    r = _analyse_reading(record, formulas, info, rd)
    dims = symbol_dims(info, rd)
    stmt = next((f for f in formulas if f.part == "statement"), None)
    lhs = None
    if stmt is not None and isinstance(stmt.lhs, str):
        lhs = parse_dimension(stmt.lhs)
    return {"finding": a["finding"], "dims": dims, "lhs": lhs, "direction": shrink_direction(r), "reading": rd}


def rescaled_values(values: Mapping[str, Any], dims: Mapping[str, Dim], c: float, s: float) -> dict[str, Any]:
    """``values`` in other units: the loss measured in units 1/c and the parameters in units 1/s, i.e. every value of
    a symbol of dimension [f]^a [w]^b times c^a s^b (a step size [w]^2/[f] by s^2/c, a smoothness [f]/[w]^2 by c/s^2,
    a radius [w] by s; counts unchanged). The rescaled problem x -> s x, f -> c f(x/s) run with the rescaled step
    sizes visits the rescaled points exactly: the same run, in other units."""
    out = dict(values)
    for k, v in values.items():
        d = dims.get(k)
        if d is None or d.dimensionless:
            continue
        f, w = sp.sympify(d.f), sp.sympify(d.w)
        if not (f.is_number and w.is_number):
            continue
        try:
            out[k] = np.asarray(v, float) * (float(c) ** float(f) * float(s) ** float(w))
        except (TypeError, ValueError):
            continue
        if np.ndim(out[k]) == 0:
            out[k] = float(out[k])
    return out


UNITS_EXACT = ("a dimension: the printed formula's units differ from its left side's whatever the values of its "
               "symbols, so no constant, problem or horizon can remove it")


def units_result(record) -> CheckResult:
    """The units row of one record, id RECORD.units (for ``fedtheory explain`` and the per-paper check)."""
    record = standing_in(record)  # a mutant of the statement, when one stands in (fedtheory.checks.mutants)
    from .robustness import robustness

    a = units_analysis(record)
    extra = {"units": {"readings": a["readings"], "first": a["first"]}}
    if a["finding_class"] and a["scope"] == "inside":
        extra["robustness"] = robustness(margin_text="exact (a unit mismatch)", exact=UNITS_EXACT)
    return CheckResult(f"{record.id}.units", record.paper, "symbolic", a["verdict"],
                       source=getattr(record, "source", ""), detail=a["detail"], finding=a["finding"], scope=a["scope"],
                       finding_class=a["finding_class"], params={"record": record.id}, extra=extra)


def units_symbols(record) -> dict[str, str]:
    """The dimension of every symbol the record's formulas use ('?' undeclared; readings joined by ' | ')."""
    info = _symbols_of(record)
    out = {}
    for n in sorted(free_names(record_formulas(record, "1")), key=lambda n: (n.lower(), n)):  # C before c, always
        d = getattr(info.get(n), "dimension", None)
        if d is None:
            out[n] = "?"
        elif isinstance(d, Mapping):
            out[n] = " | ".join(f"{k}: {format_dimension(parse_dimension(v))}" for k, v in d.items())
        else:
            out[n] = format_dimension(parse_dimension(d))
    return out


def _records_of(paper: str) -> list:
    return registered(paper)


def units_rows(paper: str) -> list[CheckResult]:
    """The units rows of every registered record of ``paper`` that has a formula, in registration order."""
    return [units_result(r) for r in _records_of(paper) if record_formulas(r, "1")]


def _mutant(record):
    """A consistent record of the paper with its statement multiplied by a symbol that has a dimension (every term
    then has the left side's dimension times that symbol's): the units check must say 'violated'. None when the
    paper has no such record. An order statement (no explicit bound, no left side to compare with) has one term of its
    stated order multiplied instead."""
    expr = getattr(record, "expr", None)
    order = getattr(record, "order", None) if getattr(record, "kind", "") == "order" else None
    if order is not None and isinstance(order.expr, sp.Basic):
        expr = order.expr
    if not isinstance(expr, sp.Basic) or expr.is_zero is True:
        return None
    dims = symbol_dims(_symbols_of(record))
    names = sorted(n for n, d in dims.items() if not d.dimensionless)
    if not names:
        return None
    sym = next(s for s in _symbols_of(record).values() if str(getattr(s, "name", "")) == names[0]).symbol
    if order is not None:
        terms = sp.Add.make_args(sp.expand(expr))
        if len(terms) < 2:
            return None
        return dataclasses.replace(record, id=f"{record.id}~times_{names[0]}",
                                   order=dataclasses.replace(order, expr=terms[0] * sym + sp.Add(*terms[1:])))
    return dataclasses.replace(record, id=f"{record.id}~times_{names[0]}", expr=expr * sym)


def units_control_rows(paper: str) -> list[CheckResult]:
    """The negative control of PAPER.units: the first explicit record of the paper that the check finds consistent,
    its statement multiplied by a symbol with a dimension; the row must be 'violated', counted. A paper with no
    consistent explicit record to mutate (FedMRUR: every explicit formula is inconsistent under some reading) shows it
    differently: the check already reports counted violations on the paper's own records, and those rows are
    returned. A paper of stated orders only (Koloskova et al.) has a stated order mutated: a units artifact by rule 8,
    the check's control declared uncounted."""
    consistent = [r for r in _records_of(paper) if record_formulas(r, "1") and units_analysis(r)["verdict"] == "holds"]
    # an explicit statement first: a mutated stated order is a units artifact by rule 8, never on the counted path
    for r in sorted(consistent, key=lambda r: getattr(r, "kind", "") == "order"):
        m = _mutant(r)
        if m is not None and (getattr(r, "kind", "") != "order" or not _counted_violations(paper)):
            return [units_result(m)]
    return _counted_violations(paper) or [row for row in units_rows(paper) if row.verdict == "violated"]


def _counted_violations(paper: str) -> list[CheckResult]:
    return [row for row in units_rows(paper) if row.verdict == "violated" and row.scope == "inside"]


def register_units_checks(record_ids) -> list[str]:
    """Register (or refresh) the check PAPER.units of the papers of these records (called through
    ``fedtheory.plugins.on_records_registered`` after a plug-in registered them). Returns the check ids registered
    anew."""
    new = []
    wanted = set(record_ids)
    papers = [r.paper for r in registered() if r.id in wanted]
    for paper in dict.fromkeys(papers):
        cid = f"{paper}.units"
        recs = [r for r in _records_of(paper) if record_formulas(r, "1")]
        ids = tuple(r.id for r in recs)
        if not ids:
            continue
        # a paper whose formulas are all stated orders has no counted path: an order's units slip is a units artifact
        # by rule 8 (its O(.) may hide constants with units), so its control shows the check fail, uncounted
        uncounted = ("every formula of the paper is a stated order, whose units slips are units artifacts by rule 8 "
                     "(an O(.) may hide constants with units)") if all(getattr(r, "kind", "") == "order"
                                                                        for r in recs) else ""
        spec = check_spec(cid)
        if spec is not None:
            register_spec(dataclasses.replace(spec, records=ids,
                                              control=dataclasses.replace(spec.control, uncounted=uncounted)),
                          replace=True)
            continue

        def fn(session, paper=paper):
            return units_rows(paper)

        fn.__doc__ = (f"Units: every formula of {paper}'s records (statement, definitions, conditions, stated order) "
                      "compares like with like in the loss [f] and the parameter [w] (fedtheory.theory.dimensions); "
                      "one row per record, no simulation.")
        control = Control("a consistent record's statement multiplied by a symbol that has a dimension (a term's "
                          "dimension changed, as a dropped or doubled constant changes it)",
                          lambda session, paper=paper: units_control_rows(paper), uncounted=uncounted)
        register_spec(CheckSpec(cid, paper, "symbolic", fn, ids, cost="symbolic", control=control, record_rows="units"))
        new.append(cid)
    return new


_SEEN: set[str] = set()  # record ids whose paper has been given its units check


def _on_records(record_ids) -> None:
    new = set(record_ids) - _SEEN
    if new:
        _SEEN.update(new)
        register_units_checks(sorted(new))


on_records_registered(_on_records)  # every paper a plug-in registers records of gets PAPER.units


def units_table(records=None) -> str:
    """The markdown table of every record's units verdict (docs/units.md): id, verdict, and per reading its outcome
    (the first offending term, or 'consistent' with the normalisation it rests on). Sorted by paper and id: the
    registration order depends on what was imported first."""
    if records is None:
        records = registered()
    records = sorted(records, key=lambda r: (r.paper, r.id))
    lines = ["| record | verdict | units |", "| --- | --- | --- |"]
    for r in records:
        a = units_analysis(r)
        v = a["verdict"]
        if a["finding_class"]:
            v += f" ({a['finding_class']}: `{a['finding']}`)"
        elif a["scope"] != "inside":
            v += f" [{a['scope']}]"
        text = a["summary"].replace("|", "\\|").replace("`", "'")
        lines.append(f"| `{r.id}` | {v} | `{text}` |")
    return "\n".join(lines)


def symbols_table(paper: str) -> str:
    """One line per symbol of the paper: its name, dimension and description (docs/units.md)."""
    lines = ["| symbol | dimension | what it is |", "| --- | --- | --- |"]
    for n, i in paper_symbols(paper).items():
        d = i.dimension
        dt = ("?" if d is None else " / ".join(f"{k}: {format_dimension(parse_dimension(v))}" for k, v in d.items())
              if isinstance(d, Mapping) else format_dimension(parse_dimension(d)))
        lines.append(f"| `{n}` | {dt} | {i.description.replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m fedtheory.checks.dimensions [PAPER ...]: the tables of docs/units.md
    import sys

    from ..plugins import load_plugins

    load_plugins()
    papers = sys.argv[1:]
    print(units_table([r for r in registered() if not papers or r.paper in papers]))
    for p in papers:
        print(f"\n{p}:\n" + symbols_table(p))
