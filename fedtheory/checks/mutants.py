"""The mutation score of a statement's checks: would they notice a wrong constant, a dropped term, a wrong exponent,
a swapped symbol, a faster stated rate? (``fedtheory check --mutants``)

For every bound (and every record with a stated order) the mutants that make the statement stronger or change its
rate are generated systematically from its sympy expression:

* ``scale``: the whole bound, and each of its additive terms, times 1/2 and 1/10;
* ``coefficient``: each numeric coefficient times 1/2 and 1/10;
* ``term``: each additive term dropped (every sum in the expression);
* ``exponent``: the dependence on each count (T, K, S, N, ...: integer symbols of dimension 1) and on each step size
  (dimension w^2/f) moved by -1, -1/2, +1/2, +1 (the bound times the symbol to that power), and each explicit
  power of one moved the same way;
* ``swap``: each symbol replaced by another of the same dimension that the bound also uses;
* ``order``: the stated order one half and one power of its variable faster.

A mutant is **run through the record's own checks unchanged**: it stands in for the record wherever a check
evaluates it (``fedtheory.theory.stand_ins``), in a session whose simulations were run once for the statement, so
a mutant costs the evaluations, not the simulations. It is **killed** by the first layer that reports it: the units
row (inconsistent where the statement is consistent), the rate check (an inconsistent rate where the statement's
is consistent), a simulation row (violated where the statement's row is not a finding), or an extra layer passed in
(``layers``: the :class:`MutantLayer` protocol, prepared once per record, then asked about each mutant the rows
leave alive). ``fedtheory check --mutants`` passes the **worst-case** layer (``fedtheory.worst.mutants``, above this
module: a bound with a worst-case declaration is searched once, and a mutant is killed where the search's rule
reports it at one of the kept worst instances); it is absent for a record without a declaration.

Mutants that are not stronger than the statement at any instance the checks (or a layer's search) evaluated it at
(and leave its rate alone) are weaker or equal: discarded (counted). Every survivor gets its measured reason: an
equivalent mutant (sympy proves it equal), or the bound is looser than the mutation's factor on every instance tried
(with the tightest measured/bound ratio found against the mutant's factor, and the tightest worst-case ratio where a
layer searched), or no row decides it.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np
import sympy as sp

from ..theory.core import Bound, Order, OrderStatement, Record, record_evaluations, stand_ins
from ..theory.dimensions import parse_dimension
from .dimensions import units_result
from .execution import run_spec
from .rates import rate_check
from .registry import CheckSpec, select
from .results import FINDINGS, CheckResult
from .session import Session

__all__ = ["KILLING", "TRUTHS", "Mutant", "MutantLayer", "MutantOutcome", "PreparedLayer", "RecordScore", "mutants_of",
           "mutation_payload", "format_mutation_table", "run_mutants", "score_record"]

FACTORS = (sp.Rational(1, 2), sp.Rational(1, 10))
EXPONENT_MOVES = (sp.Integer(-1), sp.Rational(-1, 2), sp.Rational(1, 2), sp.Integer(1))
MAX_PER_KIND = 40  # mutants of one kind per record (the first ones, in a fixed order)
KILLING = ("units", "rate", "simulation", "worst-case", "pep")
TRUTHS = ("provably_false", "provably_true", "undecided")
TRUTH_COUNTS = ("provably_false", "killed", "killed_without_pep", "killed_by_form", "killed_undecided_there",
                "provably_true", "false_alarms", "true_killed_elsewhere_undecided", "true_killed_elsewhere_false",
                "true_killed_by_form", "undecided", "unclassified")
VALUE_LAYERS = ("simulation", "worst-case", "pep")  # the layers that judge a bound's values


@dataclass
class Mutant:
    """One mutant of a record: what changed (``kind``, ``description``), the mutated record (the same id), and the
    factor it multiplies the bound by where that is one number (scale and coefficient mutants)."""

    record_id: str
    kind: str
    description: str
    record: Any
    factor: float | None = None


@dataclass
class MutantOutcome:
    """What became of one mutant: ``status`` killed | survived | equivalent | weaker | undecided (the statement
    itself is reported wherever a row decides it); ``layer`` the layer that killed it; ``reason`` why not (measured)."""

    mutant: Mutant
    status: str
    layer: str = ""
    reason: str = ""
    rows: list[str] = field(default_factory=list)
    truth: str = ""  # provably_false | provably_true | undecided (a layer that classifies, e.g. the PEP's); '' none
    truth_reason: str = ""
    # where a value layer killed it: 'classified' (the setting the truth was decided at: the PEP's), 'other' (a
    # check's or the search's own setting); the truth there (provably_false: a deterministic comparison on an
    # instance that certifies every assumption refutes it there; undecided: a statistical kill, or a setting no PEP
    # decided); why (the settings named)
    kill_setting: str = ""
    kill_truth: str = ""
    kill_note: str = ""
    # a later layer that also reports the mutant, deterministically, where the first kill was statistical: its kill
    # decides the truth above ('layer' stays the first that reported it, as in the by-layer counts)
    decided_by: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = {"kind": self.mutant.kind, "mutant": self.mutant.description, "status": self.status,
               "layer": self.layer, "reason": self.reason, "rows": self.rows[:5]}
        if self.truth:
            out.update(truth=self.truth, truth_reason=self.truth_reason)
        if self.kill_setting:
            out.update(kill_setting=self.kill_setting, kill_truth=self.kill_truth, kill_note=self.kill_note)
        if self.decided_by:
            out.update(decided_by=self.decided_by)
        return out


@dataclass
class RecordScore:
    """A record's mutation score: the outcomes, the killed share of the mutants that are neither equivalent nor
    weaker, and by which layer."""

    record_id: str
    outcomes: list[MutantOutcome]
    seconds: float = 0.0
    note: str = ""

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def scored(self) -> int:
        return self.count("killed") + self.count("survived")

    @property
    def score(self) -> float | None:
        return self.count("killed") / self.scored if self.scored else None

    def by_layer(self) -> dict[str, int]:
        names = list(KILLING) + sorted({o.layer for o in self.outcomes if o.layer and o.layer not in KILLING})
        return {layer: sum(o.status == "killed" and o.layer == layer for o in self.outcomes) for layer in names}

    def power(self) -> dict[str, Any]:
        """The mutants by their truth at the setting a layer decided it (the PEP's), and every value kill by the truth
        at the setting it was made: power = provably false mutants killed where they are provably false (at the PEP's
        setting, or at a check's by a deterministic comparison on a certified instance) or by their form (units, rate:
        at every setting) / provably false; false alarms
        = mutants killed at a setting where they are provably true (must be 0); a kill at a setting where the truth is
        undecided (a statistical kill, a setting no PEP reaches) counts as neither, and is listed."""
        false = [o for o in self.outcomes if o.truth == "provably_false"]
        true = [o for o in self.outcomes if o.truth == "provably_true"]

        def killed(group, truth=None, setting=None, layer=None):
            return sum(o.status == "killed" and o.layer in VALUE_LAYERS and (truth is None or o.kill_truth == truth)
                       and (setting is None or o.kill_setting == setting) and (layer is None or o.layer == layer)
                       for o in group)

        # a kill by form (units, rate: the mutant's dimensions or its order against the statement's) holds at every
        # setting; a value kill counts where the mutant is provably false
        by_form = sum(o.status == "killed" and o.layer in ("units", "rate") for o in false)
        proven = killed(false, "provably_false") + by_form
        without = by_form + sum(o.status == "killed" and o.layer in VALUE_LAYERS and (o.decided_by or o.layer) != "pep"
                                and o.kill_truth == "provably_false" for o in false)
        return {"provably_false": len(false), "killed": proven, "killed_without_pep": without,
                "killed_by_form": by_form, "killed_undecided_there": killed(false, "undecided"),
                "power": proven / len(false) if false else None,
                "power_without_pep": without / len(false) if false else None,
                "provably_true": len(true),
                # false alarms: killed at a setting where the mutant is provably true
                "false_alarms": sum(o.status == "killed" and o.kill_truth == "provably_true" for o in self.outcomes),
                "true_killed_elsewhere_undecided": killed(true, "undecided"),
                "true_killed_elsewhere_false": killed(true, "provably_false", "other"),
                "true_killed_by_form": sum(o.status == "killed" and o.layer in ("units", "rate") for o in true),
                "undecided": sum(o.truth == "undecided" for o in self.outcomes),
                "unclassified": sum(not o.truth for o in self.outcomes)}

    def as_dict(self) -> dict[str, Any]:
        return {"record": self.record_id, "mutants": len(self.outcomes), "killed": self.count("killed"),
                "survived": self.count("survived"), "equivalent": self.count("equivalent"),
                "weaker": self.count("weaker"), "undecided": self.count("undecided"),
                "score_killed_of_stronger": self.score, "score": self.score, "killed_by": self.by_layer(),
                "truth": self.power(), "seconds": round(self.seconds, 2), "note": self.note,
                "outcomes": [o.as_dict() for o in self.outcomes]}


class PreparedLayer(Protocol):
    """A killing layer made ready for one record (``MutantLayer.prepare``): ``decides`` whether it can tell a
    stronger mutant from the statement at all (the statement is not itself reported there); ``points`` the values it
    evaluates the bound at (they join the instances of the checks in telling stronger mutants from weaker ones);
    ``summary`` what it measured for the statement (cited in a survivor's reason and the record's note);
    ``decide(mutant)`` the row text that reports the mutant (killed), or None. A layer that can tell a mutant's
    truth also has ``classify(mutant) -> (truth, why) | None`` (truth one of TRUTHS; the PEP layer's)."""

    decides: bool
    points: Sequence[Mapping[str, Any]]
    summary: str

    def decide(self, mutant: Mutant) -> str | None: ...


class MutantLayer(Protocol):
    """A killing layer beyond the units, rate and simulation rows, asked about every stronger mutant those leave
    alive (e.g. ``fedtheory.worst.mutants.WorstCaseLayer``, the 'worst-case' layer; passed by the command line, since
    this module sits below ``fedtheory.worst``). ``name``: the layer's name in the table and the JSON (KILLING);
    ``prepare(record)``: the layer's work for the statement, done once (None where it has nothing for the record:
    the layer is absent, not an error)."""

    name: str

    def prepare(self, record: Any) -> PreparedLayer | None: ...


# ------------------------------------------------------------------------------------ generating mutants


def _paths(expr: sp.Basic, path: tuple[int, ...] = (), exponent: bool = False):
    """(path, node, in an exponent) for every node, pre-order; path = the indices of the args leading to it."""
    yield path, expr, exponent
    for i, a in enumerate(expr.args):
        yield from _paths(a, path + (i,), exponent or (isinstance(expr, sp.Pow) and i == 1))


def _replace_at(expr: sp.Basic, path: tuple[int, ...], new: sp.Basic) -> sp.Basic:
    if not path:
        return new
    args = list(expr.args)
    args[path[0]] = _replace_at(args[path[0]], path[1:], new)
    return expr.func(*args)


def _dims(record) -> dict[str, Any]:
    out = {}
    for name, info in getattr(record, "symbols").info.items():
        d = getattr(info, "dimension", None)
        if isinstance(d, str):
            try:
                out[name] = parse_dimension(d)
            except Exception:  # noqa: BLE001 - an unparsable dimension: no swap partner
                continue
    return out


def _rate_symbols(record, expr: sp.Expr) -> list[sp.Symbol]:
    """Counts (integer symbols of dimension 1) and step sizes (dimension w^2/f) the expression uses."""
    dims = _dims(record)
    one, step = parse_dimension("1"), parse_dimension("w^2/f")
    out = []
    for s in sorted(expr.free_symbols, key=lambda s: s.name):
        d = dims.get(s.name)
        if d is None:
            continue
        if (d == one and s.is_integer) or d == step:
            out.append(s)
    return out


def _with_expr(record, expr: sp.Expr):
    return dataclasses.replace(record, expr=expr)


def _cap(items, n: int = MAX_PER_KIND) -> list:
    return list(itertools.islice(items, n))


def _fmt_factor(f) -> str:
    return f"x {sp.sstr(f)}"


def _short(e, most: int = 80) -> str:
    """An expression's text, cut to ``most`` characters (a term of a long bound is named by its start)."""
    text = sp.sstr(e)
    return text if len(text) <= most else text[: most - 3] + "..."


def _enclosing_term(expr: sp.Basic, path: tuple[int, ...]) -> sp.Basic | None:
    """The innermost additive term on the way to the node at ``path`` (a node above it that is an argument of a
    sum), or None when no sum encloses it (the whole bound is one term)."""
    term, node = None, expr
    for i in path[:-1]:
        if isinstance(node, sp.Add):
            term = node.args[i]
        node = node.args[i]
    return term


def _coefficient_texts(expr: sp.Basic, places: list[tuple[tuple[int, ...], sp.Basic]]) -> list[str]:
    """'the coefficient 2 of the term 2/(T*eta)' for each (path, number) of ``places`` ('the constant term 2 of T + 2'
    for a number that is itself a term of a sum; 'of the bound ...' where no sum encloses it); a number that occurs
    more than once in the same term is told apart by its order there ('the 2nd coefficient 2 of ...')."""
    texts = []
    for path, node in places:
        parent = expr
        for i in path[:-1]:
            parent = parent.args[i]
        if isinstance(parent, sp.Add):
            texts.append(f"the constant term {sp.sstr(node)} of {_short(parent)}")
            continue
        term = _enclosing_term(expr, path)
        texts.append(f"the coefficient {sp.sstr(node)} of " + (f"the bound {_short(expr)}" if term is None else
                                                                 f"the term {_short(term)}"))
    seen: dict[str, int] = {}
    out = []
    for t in texts:
        seen[t] = seen.get(t, 0) + 1
        n = texts.count(t)
        out.append(t if n == 1 else t.replace("the ", f"the {_ordinal(seen[t])} ", 1))
    return out


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def mutants_of(record) -> list[Mutant]:
    """The mutants of a Bound (its expression and its stated order) or of an OrderStatement (its stated order), in
    a fixed order, at most MAX_PER_KIND of each kind (each kind generated lazily and cut there: a bound of thousands
    of terms costs MAX_PER_KIND mutants a kind, not one per term)."""
    out: list[Mutant] = []
    rid = record.id
    if isinstance(record, Bound):
        expr = sp.sympify(record.expr)
        terms = sp.Add.make_args(expr)

        def scale():
            for f in FACTORS:
                yield Mutant(rid, "scale", f"the whole bound {_fmt_factor(f)}", _with_expr(record, expr * f), float(f))
            if len(terms) > 1:
                for i, t in enumerate(terms):
                    for f in FACTORS:
                        new = sp.Add(*[u * f if j == i else u for j, u in enumerate(terms)])
                        yield Mutant(rid, "scale", f"the term {_short(t)}, {_fmt_factor(f)}", _with_expr(record, new),
                                     None)

        def coefficients():
            places = [(path, node) for path, node, in_exp in _paths(expr)
                      if not in_exp and path and isinstance(node, sp.Number)
                      and node not in (sp.S.One, sp.S.NegativeOne, sp.S.Zero)]
            for (path, node), text in zip(places, _coefficient_texts(expr, places)):
                for f in FACTORS:
                    yield Mutant(rid, "coefficient", f"{text}, {_fmt_factor(f)}",
                                 _with_expr(record, _replace_at(expr, path, node * f)), None)

        def drops():
            for path, node, in_exp in _paths(expr):
                if in_exp or not isinstance(node, sp.Add) or len(node.args) < 2:
                    continue
                for i, t in enumerate(node.args):
                    rest = sp.Add(*[a for j, a in enumerate(node.args) if j != i])
                    yield Mutant(rid, "term", f"the term {_short(t)} dropped",
                                 _with_expr(record, _replace_at(expr, path, rest)))

        def exponents():
            for s in _rate_symbols(record, expr):
                for d in EXPONENT_MOVES:
                    yield Mutant(rid, "exponent", f"the dependence on {s} moved by {sp.sstr(d)} (x {s}^{sp.sstr(d)})",
                                 _with_expr(record, expr * s ** d))
                for path, node, in_exp in _paths(expr):
                    if not in_exp and isinstance(node, sp.Pow) and node.base == s and node.exp.is_number:
                        for d in EXPONENT_MOVES:
                            yield Mutant(rid, "exponent", f"{sp.sstr(node)} -> {s}^{sp.sstr(node.exp + d)}",
                                         _with_expr(record, _replace_at(expr, path, s ** (node.exp + d))))

        def swaps():
            dims = _dims(record)
            used = sorted(expr.free_symbols, key=lambda s: s.name)
            for a in used:
                for b in used:
                    if a != b and a.name in dims and dims.get(b.name) == dims[a.name]:
                        yield Mutant(rid, "swap", f"{a} replaced by {b}", _with_expr(record, expr.xreplace({a: b})))

        for kind in (scale, coefficients, drops, exponents, swaps):
            out += _cap(kind())
    order = getattr(record, "order", None)
    if isinstance(order, Order) and (isinstance(record, Bound) or getattr(record, "explicit", None) is not None):
        for d in (sp.Rational(1, 2), sp.Integer(1)):
            faster = dataclasses.replace(order, expr=order.expr / order.variable ** d)
            out.append(Mutant(rid, "order", f"the stated order O({sp.sstr(order.expr)}) one {sp.sstr(d)} power of "
                                            f"{order.variable} faster", dataclasses.replace(record, order=faster)))
    return out


# ------------------------------------------------------------------------------------ deciding them


def _row_key(r: CheckResult) -> str:
    setting = r.params.get("setting") if isinstance(r.params, dict) else None
    return f"{r.id}|{r.problem}|{setting}|{r.params.get('reading') if isinstance(r.params, dict) else ''}"


def _keyed(rows: Sequence[CheckResult]) -> dict[str, CheckResult]:
    """Rows by their key; a key that repeats (two settings a check labels alike, e.g. a step inside and outside the
    conditions) gets its occurrence number, so the statement's rows and a mutant's pair up in the check's order."""
    out: dict[str, CheckResult] = {}
    seen: dict[str, int] = {}
    for r in rows:
        k = _row_key(r)
        seen[k] = seen.get(k, 0) + 1
        out[k if seen[k] == 1 else f"{k}#{seen[k]}"] = r
    return out


def _is_finding(r: CheckResult) -> bool:
    return r.verdict in FINDINGS


def _evaluate(record, values: Mapping[str, Any]) -> np.ndarray | None:
    try:
        with np.errstate(all="ignore"):
            return np.asarray(record.evaluate(values), dtype=float)
    except Exception:  # noqa: BLE001 - a value the mutant needs that the instance lacks: not comparable there
        return None


def _stronger_somewhere(original, mutant, points: Sequence[Mapping[str, Any]]) -> tuple[bool, float | None]:
    """(whether the mutant's bound is below the statement's at some evaluated instance, the smallest ratio
    mutant/statement over the instances)."""
    ratios = []
    for v in points:
        a, b = _evaluate(original, v), _evaluate(mutant.record, v)
        if a is None or b is None:
            continue
        a, b = np.broadcast_arrays(a, b)
        ok = np.isfinite(a) & np.isfinite(b) & (np.abs(a) > 0)
        if ok.any():
            with np.errstate(over="ignore", divide="ignore"):
                ratios.append(float(np.min(b[ok] / a[ok])))
    if not ratios:
        return False, None
    low = min(ratios)
    return low < 1 - 1e-12, low


def _equivalent(original, mutant) -> bool:
    """Whether sympy proves the mutant equal to the statement. A mutant that differs at a random point (checked
    first, at three points: cheap) is not; only one equal there is handed to sympy's simplify (slow on large
    expressions)."""
    if not isinstance(original, Bound):
        return False
    try:
        a, b = original.expanded(), mutant.record.expanded()
        diff = b - a  # the terms the mutation left alone cancel here: what is left is small for most mutants
        if diff == 0:
            return True
        syms = tuple(sorted(a.free_symbols | b.free_symbols, key=lambda x: x.name))
        rng = np.random.default_rng(0)
        for _ in range(3):  # in floating point (exact rationals of a bound of 5,000 terms took minutes a point)
            point = tuple((x, float(rng.integers(2, 6)) if x.is_integer else float(rng.uniform(0.5, 2.0)))
                          for x in syms)
            u, d = _value(a, point), _value(diff, point)
            if not (np.isfinite(u) and np.isfinite(d)) or abs(d) > 1e-9 * max(abs(u), 1.0):
                return False
        if sp.count_ops(diff) > MAX_SIMPLIFY_OPS:  # equal at three points, too large to prove: not proven
            return False
        return bool(sp.simplify(diff) == 0)
    except Exception:  # noqa: BLE001 - sympy could not decide: not proven equivalent
        return False


MAX_SIMPLIFY_OPS = 2000  #: a difference larger than this is not handed to sympy's simplify (minutes on such sizes)


@functools.lru_cache(maxsize=64)  # the statement's value at each point, shared by its mutants
def _value(expr: sp.Expr, point: tuple[tuple[sp.Symbol, float], ...]) -> complex:
    """``expr`` at ``point`` in floating point (mpmath's evaluation of the tree, no compilation: a lambdified bound of
    5,000 terms took seconds to compile, once per mutant); NaN where it has no finite value."""
    try:
        return complex(sp.sympify(expr).evalf(subs=dict(point)))
    except (TypeError, ValueError, ArithmeticError):
        return complex(float("nan"))


def _rate_changes(original, mutant) -> bool:
    if mutant.kind == "order":
        return True
    order = getattr(original, "order", None)
    if not isinstance(order, Order) or mutant.kind not in ("exponent", "swap"):
        return False
    return order.variable in sp.sympify(mutant.record.expr).free_symbols or mutant.kind == "swap"


def _simulation_rows(specs: Sequence[CheckSpec], session: Session) -> list[CheckResult]:
    rows = []
    for spec in specs:
        rows += run_spec(spec, session)
    return rows


def score_record(record, specs: Sequence[CheckSpec], session: Session, *,
                 mutants: Sequence[Mutant] | None = None, layers: Sequence[MutantLayer] = ()) -> RecordScore:
    """Every mutant of ``record`` decided by the units row, the rate check and the rows of ``specs`` (its simulation
    checks, run once for the statement in ``session`` and then once per mutant on the same simulations), then by each
    of ``layers`` (prepared once for the statement) in turn."""
    t0 = time.perf_counter()
    with record_evaluations() as log:
        base_rows = _simulation_rows(specs, session)
    checked = list(log.get(record.id, []))
    ready: list[tuple[str, PreparedLayer, float]] = []
    for layer in layers:
        t1 = time.perf_counter()
        prepared = layer.prepare(record)
        if prepared is not None:
            ready.append((layer.name, prepared, time.perf_counter() - t1))
    points = checked + [v for _, p, _ in ready for v in p.points]
    deciding = [(name, p) for name, p, _ in ready if p.decides]
    base = _keyed([r for r in base_rows if r.id == record.id])
    holding = [r for r in base.values() if r.verdict in ("holds", "inconclusive")]
    if not holding:  # every row already a finding or not applicable: a stronger mutant cannot be told apart there
        specs = ()
    classifiers = [p for _, p, _ in ready if callable(getattr(p, "classify", None))]
    base_units = units_result(record).verdict
    has_order = isinstance(getattr(record, "order", None), Order) or getattr(record, "explicit", None) is not None
    base_rate = rate_check(record).verdict if has_order and getattr(record, "order", None) is not None else None
    outcomes = []
    for m in (mutants if mutants is not None else mutants_of(record)):
        rate_changed = _rate_changes(record, m)
        # with no evaluated instance a mutant cannot be shown weaker: it goes to the layers (undecided if none can)
        stronger, low = (True, None) if m.kind == "order" or not points else _stronger_somewhere(record, m, points)
        if not stronger and not rate_changed:
            outcomes.append(MutantOutcome(m, "weaker", reason="not below the statement at any instance the checks "
                                                               "(or a layer's search) evaluated"
                                                               + (f" (smallest mutant/statement {low:.3g})"
                                                                  if low is not None else " (none evaluated)")))
            continue
        if m.kind != "order" and (low is None or low >= 1 - 1e-12) and _equivalent(record, m):
            outcomes.append(MutantOutcome(m, "equivalent", reason="sympy proves the mutant equal to the statement"))
            continue
        if m.kind == "order" and base_rate not in ("rate_consistent", "proof_step_loose"):
            outcomes.append(MutantOutcome(m, "undecided", reason=f"the statement's own stated order is reported "
                                                                  f"({base_rate}): a faster one cannot be told apart"))
            continue
        with stand_ins({record.id: m.record}):
            # a number, a dropped term or a symbol of the same dimension cannot change the units of a consistent
            # statement, nor a constant factor or a dropped term its order: those layers are asked only where they can
            # tell (an exponent moved, a symbol swapped, a faster stated order)
            if m.kind == "exponent" and base_units in ("holds", "ambiguous"):
                u = units_result(record)
                if u.verdict == "violated":
                    outcomes.append(MutantOutcome(m, "killed", "units", rows=[u.detail[:200]]))
                    continue
            if base_rate in ("rate_consistent", "proof_step_loose") and m.kind in ("exponent", "swap", "order"):
                rr = rate_check(record)
                if rr.verdict == "rate_inconsistent":
                    outcomes.append(MutantOutcome(m, "killed", "rate", rows=[rr.detail[:200]]))
                    continue
            rows = [r for r in _simulation_rows(specs, session) if r.id == record.id] if specs else []
        killed = [r for k, r in _keyed(rows).items() if k in base and _is_finding(r) and not _is_finding(base[k])]
        if killed:
            o = MutantOutcome(m, "killed", "simulation",
                              rows=[f"{r.problem} ({(r.params or {}).get('setting')}): {r.verdict}" for r in killed],
                              **_row_kill(killed, classifiers))
            if o.kill_truth == "undecided":  # a statistical kill: a later layer's deterministic one decides its truth
                for name, row in _reported_by(deciding, m):
                    where = _kill_where(deciding, name, m)
                    if where["kill_setting"] == "classified" or where["kill_truth"] == "provably_false":
                        o.rows.append(f"{name}: {row}")
                        o.decided_by = name
                        o.kill_setting, o.kill_truth, o.kill_note = (where["kill_setting"], where["kill_truth"],
                                                                     where["kill_note"])
                        break
            outcomes.append(o)
            continue
        by = _decided_by(deciding, m)
        if by is not None:
            outcomes.append(MutantOutcome(m, "killed", by[0], rows=[by[1]], **_kill_where(deciding, by[0], m)))
            continue
        if not holding and not deciding:
            outcomes.append(MutantOutcome(m, "undecided", reason=(
                "the statement itself is reported on every row that decides it (violated or not applicable): a "
                "stronger mutant cannot be told apart by simulation") if base else (
                "no check evaluates the statement on a run, and the units and rate layers do not tell it apart")))
            continue
        reason = _survivor_reason(base, rows, low, holding=bool(holding))
        outcomes.append(MutantOutcome(m, "survived", reason=reason + "".join(f"; {name}: {p.summary}"
                                                                              for name, p in deciding)))
    for o in outcomes:  # the truth of every mutant a layer can classify (its status stays what the checks said)
        if o.status == "equivalent":
            continue
        for c in classifiers:
            got = c.classify(o.mutant)
            if got is not None:
                o.truth, o.truth_reason = got
                break
        if o.kill_setting == "classified":  # killed at the very setting its truth was decided at: that truth
            o.kill_truth = o.truth or "undecided"
    only = "units and rate layers" + "".join(f", {name}" for name, _ in deciding) + " only"
    note = ("" if holding else "no simulation row holds for the statement (each is a finding or not applicable): "
            + only) if checked else "no check evaluated the statement on a run (" + only + ")"
    notes = [note] if note else []
    notes += [f"{name}: {p.summary} ({s:.1f} s)" for name, p, s in ready]
    return RecordScore(record.id, outcomes, time.perf_counter() - t0, note="; ".join(notes))


def _row_kill(killed: Sequence[CheckResult], classifiers: Sequence[Any]) -> dict[str, str]:
    """Where simulation rows killed a mutant and its truth there: at the classifying layer's setting when a row's
    values are that setting's ('classified': the truth decided there applies); elsewhere ('other') provably false
    when a row is deterministic and inside the statement's assumptions (an instance that certifies every assumption
    violates it, without statistics), else undecided (a statistical kill; no PEP decided that setting)."""
    for c in classifiers:
        same = getattr(c, "same_setting", None)
        for r in killed:
            if callable(same) and same(r.params or {}):
                return {"kill_setting": "classified", "kill_truth": "", "kill_note": f"{r.problem}: the PEP's setting"}
    proof = [r for r in killed if (r.extra or {}).get("deterministic") and r.scope == "inside" and not r.self_check]
    r = (proof or list(killed))[0]
    params = {k: v for k, v in (r.params or {}).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    where = (f"{r.problem} ({(r.params or {}).get('setting')}; "
             + ", ".join(f"{k}={v:.4g}" for k, v in params.items()) + ")")
    if proof:
        return {"kill_setting": "other", "kill_truth": "provably_false",
                "kill_note": f"{where}: deterministic, every assumption certified on the instance"}
    return {"kill_setting": "other", "kill_truth": "undecided",
            "kill_note": f"{where}: a statistical decision" + ("" if not classifiers else
                                                               "; no PEP decides that setting")}


def _kill_where(deciding: Sequence[tuple[str, PreparedLayer]], name: str, mutant: Mutant) -> dict[str, str]:
    """Where the layer ``name`` made its kill of ``mutant`` and the mutant's truth there (``kill_setting``,
    ``kill_truth``, ``kill_note``): the layer's own account, or a setting it does not name (undecided)."""
    where = getattr(dict(deciding)[name], "kill_setting", None)
    return (dict(zip(("kill_setting", "kill_truth", "kill_note"), where(mutant)))
            if callable(where) else {"kill_setting": "other", "kill_truth": "undecided",
                                     "kill_note": "a layer that names no setting"})


def _reported_by(deciding: Sequence[tuple[str, PreparedLayer]], mutant: Mutant):
    """(each layer that reports the mutant, its row), in the layers' order; lazily."""
    for name, prepared in deciding:
        row = prepared.decide(mutant)
        if row:
            yield name, row


def _decided_by(deciding: Sequence[tuple[str, PreparedLayer]], mutant: Mutant) -> tuple[str, str] | None:
    """(the first layer that reports the mutant, its row), or None."""
    return next(_reported_by(deciding, mutant), None)


def _survivor_reason(base: Mapping[str, CheckResult], rows: Sequence[CheckResult], low: float | None, *,
                     holding: bool = True) -> str:
    """Why a stronger mutant survived, measured on its own rows: it still holds on every row (the statement's slack
    exceeds what the mutation takes away), or it is below the measurement somewhere without significance, or no row
    decides it."""
    pairs = [(base[k], r) for k, r in _keyed(rows).items() if k in base and base[k].verdict == "holds"]
    factor = (f"; the mutant is {low:.3g}x the statement at the instances the checks evaluated"
              if low is not None else "")
    if not pairs:
        why = ("the record's rows are not applicable, or it has no simulation check" if holding or not base else
               "the statement is itself reported on every row that decides it")
        return f"no simulation row decides it ({why})" + factor
    slack = min((b.ratio for b, _ in pairs if isinstance(b.ratio, (int, float))), default=None)
    still = [r for _, r in pairs if r.verdict == "holds"]
    mut = min((r.ratio for r in still if isinstance(r.ratio, (int, float))), default=None)
    where = (f"the statement's bound is {slack:.3g}x the measurement at its tightest row" if slack is not None
             else "the statement holds")
    if len(still) == len(pairs):
        return (f"looser than the mutation on every instance tried: {where}, and the mutant still holds on all "
                f"{len(pairs)} rows" + (f" (its tightest bound/measured {mut:.3g})"
                                        if mut is not None else "") + factor)
    other = sorted({r.verdict for _, r in pairs if r.verdict != "holds"})
    return (f"not decided against it: {where}; under the mutant {len(pairs) - len(still)} of {len(pairs)} rows are "
            f"{', '.join(other)} (below the measurement without significance)" + factor)


# ------------------------------------------------------------------------------------ running


def mutable_records(paper: str | None = None, only: Iterable[str] | None = None) -> list[Record]:
    """The bounds and the records with a stated order of the selected papers (ids matched as ``--only`` matches
    check ids), in registration order."""
    from ..plugins import records as all_records
    from .registry import id_matches

    pats = list(only or [])
    out = []
    for rid, r in all_records().items():
        if not isinstance(r, (Bound, OrderStatement)):
            continue
        if paper is not None and r.paper != paper:
            continue
        if pats and not any(id_matches(p, rid) for p in pats):
            continue
        if isinstance(r, OrderStatement) and (r.order is None or r.explicit is None):
            continue
        out.append(r)
    return out


def run_mutants(paper: str | None = None, only: Iterable[str] | None = None, profile: str = "quick", seed: int = 0,
                progress: Callable[[str], None] | None = None,
                layers: Sequence[MutantLayer] = ()) -> list[RecordScore]:
    """The mutation score of every selected record (``mutable_records``) with its simulation checks (the checks
    of kind 'bound' that test it) and the extra ``layers`` (``fedtheory check --mutants`` passes the worst-case
    layer), each record in a session of its own."""
    chosen = select(paper, None, profile)  # loads the plug-ins; validates the paper; the profile's checks
    out = []
    for rec in mutable_records(paper, only):
        specs = [s for s in chosen if rec.id in s.records and s.kind == "bound"]
        if progress:
            progress(rec.id)
        out.append(score_record(rec, specs, Session(profile, seed), layers=layers))
    return out


def mutation_payload(scores: Sequence[RecordScore], **meta: Any) -> dict[str, Any]:
    """The JSON document of ``fedtheory check --mutants --out``: per record and overall."""
    killed = sum(s.count("killed") for s in scores)
    scored = sum(s.scored for s in scores)
    names = list(dict.fromkeys(name for s in scores for name in s.by_layer())) or list(KILLING)
    layers = {layer: sum(s.by_layer().get(layer, 0) for s in scores) for layer in names}
    truth = {k: sum(s.power()[k] for s in scores) for k in TRUTH_COUNTS}
    truth["power"] = truth["killed"] / truth["provably_false"] if truth["provably_false"] else None
    truth["power_without_pep"] = (truth["killed_without_pep"] / truth["provably_false"] if truth["provably_false"]
                                  else None)
    from .. import __version__

    return {"fedtheory": __version__, **meta, "overall": {"records": len(scores),
                                                          "mutants": sum(len(s.outcomes) for s in scores),
                                "killed": killed, "survived": scored - killed,
                                "equivalent": sum(s.count("equivalent") for s in scores),
                                "weaker": sum(s.count("weaker") for s in scores),
                                "undecided": sum(s.count("undecided") for s in scores),
                                "score_killed_of_stronger": killed / scored if scored else None,
                                "score": killed / scored if scored else None, "killed_by": layers, "truth": truth},
            "records": [s.as_dict() for s in scores]}


def format_mutation_table(scores: Sequence[RecordScore], verbose: bool = False) -> str:
    """The table ``fedtheory check --mutants`` prints: per record, the mutants, killed by layer, survivors, score;
    then every survivor with its reason (all of them, or with ``verbose`` every outcome)."""
    p = mutation_payload(scores)["overall"]
    names = list(p["killed_by"])
    head = ["record", "mutants", "weaker", "equivalent", "undecided", *(f"killed by {n}" for n in names), "survived",
            "score", "seconds"]
    body = []
    for s in scores:
        b = s.by_layer()
        body.append([s.record_id, str(len(s.outcomes)), str(s.count("weaker")), str(s.count("equivalent")),
                     str(s.count("undecided")), *(str(b.get(n, 0)) for n in names), str(s.count("survived")),
                     "-" if s.score is None else f"{s.score:.2f}", f"{s.seconds:.1f}"])
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(head)]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    fmt2 = lambda r, ws: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, ws)))  # noqa: E731
    lines = [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(r) for r in body]
    lines.append("")
    lines.append(f"{p['records']} records, {p['mutants']} mutants: {p['killed']} killed ("
                 + ", ".join(f"{n} {k}" for n, k in p["killed_by"].items()) + f"), {p['survived']} survived, "
                 f"{p['equivalent']} equivalent, {p['weaker']} weaker (discarded), {p['undecided']} undecided (the "
                 "statement itself reported, or evaluated on no run: no layer tells them apart); mutation score "
                 + ("-" if p["score"] is None else f"{p['score']:.3f}"))
    t = p["truth"]
    if t["provably_false"] or t["provably_true"] or t["undecided"]:
        lines.append("\npower on the mutants a layer classifies, each decided at one setting (the PEP's), each kill "
                     "judged by the truth at the setting it was made:")
        body = [[s.record_id, str(q["provably_false"]), str(q["killed"]), str(q["killed_without_pep"]),
                 str(q["killed_undecided_there"]), "-" if q["power"] is None else f"{q['power']:.2f}",
                 str(q["provably_true"]), str(q["false_alarms"]), str(q["true_killed_elsewhere_undecided"]),
                 str(q["true_killed_elsewhere_false"]), str(q["undecided"])] for s in scores for q in [s.power()]
                if q["provably_false"] or q["provably_true"] or q["undecided"]]
        head = ["record", "provably false", "killed where false", "w/o pep", "killed where undecided", "power",
                "provably true", "false alarms", "true: killed where undecided", "true: killed where false",
                "undecided"]
        widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]
        lines += [fmt2(head, widths), "  ".join("-" * w for w in widths)] + [fmt2(r, widths) for r in body]
        lines.append(f"power = provably false mutants killed at a setting where they are provably false (the PEP's, or "
                     f"a check's by a deterministic certified instance) or by their form (units, rate) / provably "
                     f"false = {t['killed']}/{t['provably_false']}"
                     + ("" if t["power"] is None else f" = {t['power']:.3f}")
                     + f" ({t['killed_without_pep']} without the PEP layer, {t['killed_by_form']} by form; "
                     f"{t['killed_undecided_there']} more killed only where their truth is undecided); false alarms "
                     f"(killed at a setting where provably true): {t['false_alarms']}; provably true at the PEP's "
                     f"setting and killed at another setting: {t['true_killed_elsewhere_undecided']} where the truth "
                     f"there is undecided, {t['true_killed_elsewhere_false']} where they are provably false there, "
                     f"{t['true_killed_by_form']} by the units or rate layer (the record's form); undecided "
                     f"{t['undecided']}")
    notes = [(s.record_id, s.note) for s in scores if s.note]
    if notes:
        lines.append("\nnotes:")
        lines += [f"  {rid}: {note}" for rid, note in notes]
    elsewhere = [(s.record_id, o) for s in scores for o in s.outcomes
                 if o.truth == "provably_true" and o.status == "killed" and o.layer in VALUE_LAYERS]
    if elsewhere:
        lines.append("\nprovably true at the PEP's setting, killed at another (the truth there in brackets):")
        lines += [f"  {rid}: [{o.mutant.kind}] {o.mutant.description}: by {o.layer} at {o.kill_note} "
                  f"[{o.kill_truth.replace('_', ' ')} there]; {o.truth_reason}" for rid, o in elsewhere]
    false_alive = [(s.record_id, o) for s in scores for o in s.outcomes
                   if o.truth == "provably_false" and o.status != "killed"]
    if false_alive:  # the provably false survivors first, with the instance that refutes them
        lines.append("\nprovably false, not killed by the checks:")
        lines += [f"  {rid}: [{o.mutant.kind}] {o.mutant.description}: {o.status} - {o.truth_reason}"
                  for rid, o in false_alive]
    surv = [(s.record_id, o) for s in scores for o in s.outcomes if verbose or o.status == "survived"]
    if surv:
        lines.append("\n" + ("every mutant:" if verbose else "survivors and why:"))
        for rid, o in surv:
            lines.append(f"  {rid}: [{o.mutant.kind}] {o.mutant.description}: {o.status}"
                         + (f" by {o.layer}" if o.layer else "") + (f" - {o.reason}" if o.reason else "")
                         + (f" ({o.rows[0]})" if verbose and o.status == "killed" and o.rows else ""))
    return "\n".join(lines)
