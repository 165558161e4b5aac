"""Records for what papers state: bounds, identities, definitions, stated orders, claims.

Each formula is encoded once, as a sympy expression. Numbers come from it through
``sympy.lambdify`` (numpy-vectorized); nothing re-types a formula in numpy. Records carry
their source (seed file + theorem/equation), the assumptions they need (by catalogue name),
the symbols they use with domains, side conditions, a stated order, and a transcription note.
"""
from __future__ import annotations

import builtins
import functools
import keyword
import re
import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy as sp

from .._validation import FedTheoryError, ParameterError, printable
from .dimensions import Units, UnitsWarning, as_expression, parse_dimension, undeclared
from .printing import formula_text

# ------------------------------------------------------------------------------------ symbols


@dataclass(frozen=True)
class SymbolInfo:
    symbol: sp.Symbol
    description: str
    domain: sp.Set  # allowed numeric values
    dimension: Any = None  # 'f^2/w^2', a sympy Dimension, or {reading: dimension}; None: undeclared (theory.dimensions)

    @property
    def name(self) -> str:
        return self.symbol.name


class SymbolSet:
    """A paper's symbols. Names are what numeric values are passed by.

    Each symbol declares its dimension (``dim``: 'f^2/w^2', 'w', '1', ... in the loss [f] and the parameter [w]; a
    mapping {reading: dimension} where the text leaves it open; see ``fedtheory.theory.dimensions``). strict=True
    (the built-in papers) makes a symbol without one an error when it is added, and a record using a symbol outside
    the set an error when it is registered; otherwise (a user's plug-in) such a record registers with a UnitsWarning
    and its units verdict is 'unknown'.

    Parameters
    ----------
    paper : str
        The paper's name, the first part of its records' ids (``"li2020"``).
    strict : bool, default False
        Refuse a symbol without a dimension when it is added, and a record that uses a symbol outside the set when it
        is registered (what ``fedtheory new-paper`` writes and the built-in papers use).
    """

    def __init__(self, paper: str, *, strict: bool = False):
        self.paper = paper
        self.strict = strict
        self.info: dict[str, SymbolInfo] = {}
        _SYMBOL_SETS.setdefault(paper, []).append(self)

    def add(self, name: str, description: str, domain: sp.Set = sp.Interval.open(0, sp.oo), *, integer: bool = False,
            latex: str | None = None, dim: Any = None) -> sp.Symbol:
        """Declare one symbol of the paper and return it, for use in the records' formulas.

        The sympy symbol is real, and positive, nonnegative or integer as the domain and ``integer`` say, so that
        sympy simplifies with what the paper assumes.

        Parameters
        ----------
        name : str
            The symbol's name: a Python identifier; numeric values are passed under it.
        description : str
            What it is, in the paper's words (``fedtheory explain`` prints it).
        domain : sympy.Set, default Interval.open(0, oo)
            The values it may take; a value outside is a ParameterError when a record is evaluated, never a NaN.
        integer : bool, default False
            Whether it is an integer (a count, an index).
        latex : str, optional
            Its LaTeX, for display.
        dim : str, sympy Dimension or dict, optional
            Its dimension in the loss [f] and the parameter [w] (``"f/w^2"``, ``"1"``), or a mapping reading ->
            dimension where the text leaves it open (each reading is checked).

        Returns
        -------
        sympy.Symbol
            The symbol.

        Raises
        ------
        ParameterError
            For a name that is not an identifier, a domain that is not a sympy Set, or a dimension that does not read.
        FedTheoryError
            For a name declared twice, or a missing dimension in a strict set.
        """
        if not isinstance(name, str) or not name.isidentifier():
            raise ParameterError("name", name, f"a symbol name that is a Python identifier (letters, digits, _), e.g. "
                                 f"'sigma_l' ({self.paper})")
        if not isinstance(domain, sp.Set):
            raise ParameterError("domain", domain, f"a sympy Set, e.g. sympy.Interval(0, sympy.oo) (symbol {name} of "
                                 f"{self.paper})")
        positive = bool(domain.is_subset(sp.Interval.open(0, sp.oo)))
        nonneg = bool(domain.is_subset(sp.Interval(0, sp.oo)))
        kw = {"real": True}
        if integer:
            kw["integer"] = True
        if positive:
            kw["positive"] = True
        elif nonneg:
            kw["nonnegative"] = True
        sym = sp.Symbol(name, **kw)
        if name in self.info:
            raise FedTheoryError(f"{self.paper}: symbol {name} defined twice")
        if dim is None and self.strict:
            raise FedTheoryError(f"{self.paper}: symbol {name} has no dimension: give dim= (e.g. 'f/w^2', '1'; "
                                 "see fedtheory.theory.dimensions)")
        for reading, d in (dim.items() if isinstance(dim, Mapping) else [(None, dim)] if dim is not None else []):
            try:
                parse_dimension(d)
            except ParameterError as exc:  # named by the symbol (and its reading)
                where = f"dim of {name}" + (f" (reading {reading!r})" if reading is not None else "")
                raise ParameterError(where, exc.value, f"{exc.allowed} ({self.paper})") from None
        self.info[name] = SymbolInfo(sym, description, domain, dim)
        return sym

    def table(self, text: str) -> tuple[sp.Symbol, ...]:
        """Declare symbols from a notation table, one ``add`` per line; the symbols in line order.

        Each non-blank line is ``NAME  DIM  DOMAIN  description``: the first three fields are separated by
        whitespace (two or more spaces read best), the description is the rest of the line. DIM is a dimension
        text as ``add`` takes ('f/w^2', '1', 'w^2/f', ...); DOMAIN one of the keywords

        ===============  ===============================  =================================
        ``positive``     (0, oo)                          ``add``'s default
        ``nonnegative``  [0, oo)
        ``real``         ``sympy.Reals``
        ``count``        [1, oo), integer                 e.g. clients, rounds
        ``index``        [0, oo), integer
        ``fraction``     (0, 1]
        ``unit``         [0, 1]
        ===============  ===============================  =================================

        A line gives exactly the symbol the equivalent ``add(NAME, description, domain, integer=..., dim=DIM)``
        gives. A symbol needing anything else (another interval, readings ``dim={...}``, ``latex=``) is an
        ``add`` call next to the table::

            gamma, L, sigma, N = S.table(\"\"\"
                gamma  w^2/f  positive     the step size
                L      f/w^2  positive     smoothness of every f_i (Assumption 1)
                sigma  f/w    nonnegative  E||g - grad f_i||^2 <= sigma^2 (Assumption 2)
                N      1      count        number of clients
            \"\"\")

        A line with fewer than four fields, an unknown DOMAIN keyword, or what ``add`` rejects (a name that is
        not an identifier, a bad DIM, a name declared twice) is an error naming the line (its number in ``text``,
        counted from 1, and its text).
        """
        if not isinstance(text, str):
            raise ParameterError("text", text, "a str, one symbol a line: NAME  DIM  "
                                               f"DOMAIN  description ({self.paper})")
        symbols = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line:
                continue
            where = f"symbol table line {number}: {line!r}"  # add's own errors name the paper
            fields = line.split(None, 3)
            if len(fields) < 4:
                raise ParameterError(f"symbol table line {number}", line, "four fields NAME  DIM  DOMAIN  description, "
                                     f"e.g. 'L  f/w^2  positive  smoothness' ({self.paper})")
            name, dim, keyword_, description = fields
            if keyword_ not in _TABLE_DOMAINS:
                raise ParameterError(f"domain of {name}", keyword_, f"one of the keywords {_TABLE_KEYWORDS} "
                                     f"(any other domain: an add call); {where} ({self.paper})")
            domain, integer = _TABLE_DOMAINS[keyword_]
            try:
                symbols.append(self.add(name, description, domain, integer=integer, dim=dim))
            except ParameterError as exc:
                raise ParameterError(exc.name, exc.value, f"{exc.allowed}; {where}") from None
            except FedTheoryError as exc:
                raise FedTheoryError(f"{exc}; {where}") from None
        return tuple(symbols)

    def __getitem__(self, name: str) -> SymbolInfo:
        """The symbol's record (description, domain); the sympy symbol itself is ``symbol(name)``."""
        return self.info[name]

    def symbol(self, name: str) -> sp.Symbol:
        """The sympy symbol registered as ``name`` (for use in formulas)."""
        return self.info[name].symbol

    def validate(self, name: str, value: Any) -> None:
        """Raise a ParameterError unless every entry of ``value`` lies in the domain of the symbol ``name``.

        Parameters
        ----------
        name : str
            A symbol's name (a name the set does not declare passes).
        value : float or array_like
            The value, or one value per run.

        Raises
        ------
        ParameterError
            Naming the symbol, the first value outside its domain, the domain and the description.
        """
        info = self.info.get(name)
        if info is None:
            return
        arr = np.asarray(value, dtype=float)
        lo, hi, left_open, right_open = _interval(info.domain)
        lo_ok = arr > lo if left_open else arr >= lo
        hi_ok = arr < hi if right_open else arr <= hi
        ok = np.isfinite(arr) & lo_ok & hi_ok
        integer = bool(info.symbol.is_integer)
        if integer:
            ok &= arr == np.round(arr)
        if not np.all(ok):
            bad = arr if arr.ndim == 0 else arr.ravel()[np.argmin(ok.ravel())]
            raise ParameterError(name, float(bad), f"{'an integer ' if integer else ''}in {info.domain} "
                                                   f"({info.description})")


# SymbolSet.table's DOMAIN keywords: keyword -> (domain, integer)
_TABLE_DOMAINS: dict[str, tuple[sp.Set, bool]] = {
    "positive": (sp.Interval.open(0, sp.oo), False),
    "nonnegative": (sp.Interval(0, sp.oo), False),
    "real": (sp.Reals, False),
    "count": (sp.Interval(1, sp.oo), True),
    "index": (sp.Interval(0, sp.oo), True),
    "fraction": (sp.Interval.Lopen(0, 1), False),
    "unit": (sp.Interval(0, 1), False),
}
_TABLE_KEYWORDS = ", ".join(f"{k} ({'integer in ' if i else ''}{d})" for k, (d, i) in _TABLE_DOMAINS.items())


@functools.lru_cache(maxsize=1024)
def _interval(dom: sp.Set) -> tuple[float, float, bool, bool]:
    """A domain's (inf, sup, left open, right open) as Python numbers, read from sympy once per domain."""
    return float(dom.inf), float(dom.sup), bool(dom.left_open), bool(dom.right_open)


# ------------------------------------------------------------------------------------ pieces


_RELATIONS = (sp.LessThan, sp.StrictLessThan, sp.GreaterThan, sp.StrictGreaterThan, sp.Equality)


@dataclass(frozen=True)
class Condition:
    """A side condition on the parameters: ``lhs <= rhs``, ``<``, ``>=``, ``>`` or ``==``, with a name and its source.

    An equality (``sp.Eq(a, b)``) holds when ``|a - b| <= rtol * max(|a|, |b|)``: it is checked both ways,
    never as ``a <= b``. Any other relation (``Ne``, a boolean combination) is rejected when the record is
    built: split a conjunction into several conditions.

    A bound whose condition fails at a run's values is ``not_applicable`` there, naming the condition and both
    sides' numbers.

    Parameters
    ----------
    name : str
        The condition's name, printed when it fails (``"step_numerator"``).
    relation : sympy relational
        ``sp.Le``, ``sp.Lt``, ``sp.Ge``, ``sp.Gt`` or ``sp.Eq`` in the record's symbols (``sp.true`` and
        ``sp.false`` are accepted too).
    source : str, default ""
        Where the paper states it.
    note : str, default ""
        What it means, or how it was read.
    rtol : float, default 1e-9
        The relative tolerance of an equality, in [0, 1).

    Raises
    ------
    FedTheoryError
        For any other relation.
    ParameterError
        For ``rtol`` outside [0, 1).
    """

    name: str
    relation: sp.Basic  # a sympy relational
    source: str = ""
    note: str = ""
    rtol: float = 1e-9  # relative tolerance of an equality

    def __post_init__(self):
        rel = self.relation
        if rel in (sp.true, sp.false):
            return
        if not isinstance(rel, _RELATIONS):
            kind = type(rel).__name__
            raise FedTheoryError(f"condition {self.name!r}: unsupported relation {sp.sstr(rel)} ({kind}); use "
                                 "<=, <, >=, > or Eq (split a conjunction into several conditions)")
        if not (0 <= self.rtol < 1):
            raise ParameterError("rtol", self.rtol, f"in [0, 1) (condition {self.name!r})")

    @property
    def is_equality(self) -> bool:
        return isinstance(self.relation, sp.Equality)


@dataclass(frozen=True)
class Definition:
    """A constant a theorem defines, e.g. kappa_1 = 1300 beta^2/(1 - 72 beta^2) + 17.

    A :class:`Bound` that lists it in ``definitions`` substitutes ``expr`` for ``symbol`` before evaluating;
    registered, it gets its own units row.

    Parameters
    ----------
    id : str
        Its id, the paper's name first (``"li2020.kappa"``).
    paper : str
        The paper's name.
    symbol : sympy.Symbol
        The symbol it defines (from the paper's :class:`SymbolSet`).
    expr : sympy.Expr or None
        What the symbol equals, in the other symbols; ``None`` for a constant defined in words (U = sup f), which is
        supplied as a number.
    source : str
        Where the paper defines it.
    note : str, default ""
        How it was read or re-derived.
    kind : str, default "definition"
        The record kind (leave it).
    title : str, default ""
        A short name, printed by ``fedtheory list``.
    units : Units, optional
        How the units check reads it (e.g. the finding key it shares with an erratum).
    """

    id: str
    paper: str
    symbol: sp.Symbol
    expr: sp.Expr | None  # None: defined in words (e.g. U = sup f), supplied as a number
    source: str
    note: str = ""
    kind: str = "definition"
    title: str = ""
    units: Any = None  # a fedtheory.theory.Units: how the units check reads it (e.g. the finding key it shares)

    def summary(self) -> dict:
        return {"id": self.id, "paper": self.paper, "kind": self.kind, "title": self.title, "source": self.source}

    def explain(self) -> str:
        rhs = formula_text(self.expr) if self.expr is not None else "(defined in words)"
        return "\n".join([f"{self.id}  [definition]  {self.title}", f"source: {self.source}",
                          f"{self.symbol} = {rhs}"] + ([f"note: {self.note}"] if self.note else []))


@dataclass(frozen=True)
class Order:
    """What the paper states as the order, under a stated choice of the step size (or other symbols).

    ``expr`` is a sum of terms (constants dropped). ``choice`` maps symbols to expressions in the
    growth variable (e.g. eta -> sqrt(N/(K T))). ``constant`` lists symbols treated as Theta(1)
    in the check (e.g. lambda, kappa). ``up_to_log`` allows log factors the statement omits.

    ``fedtheory.checks.rate_check`` verifies symbolically that the order covers every term of the explicit bound.

    Parameters
    ----------
    expr : sympy.Expr
        The stated order: a sum of terms in the growth variable (``1/T``, ``1/sqrt(N K T) + 1/T``).
    variable : sympy.Symbol
        The growth variable (``T``).
    choice : mapping of sympy.Symbol to sympy.Expr, optional
        The step size (or other symbols) as the statement chooses them, in the growth variable.
    up_to_log : bool, default False
        Whether the statement omits log factors (an O-tilde).
    source : str, default ""
        Where the paper states the order.
    note : str, default ""
        How it was read.
    substitute : mapping of sympy.Symbol to sympy.Expr, optional
        Symbols replaced before the comparison (a measured sum by its stated order).
    track : tuple of sympy.Symbol, default ()
        Symbols whose exponents must also be covered (N, K, S, ...).
    """

    expr: sp.Expr
    variable: sp.Symbol
    choice: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict)
    up_to_log: bool = False
    source: str = ""
    note: str = ""
    substitute: Mapping[sp.Symbol, sp.Expr] = field(default_factory=dict)  # e.g. a measured sum by its stated order
    track: tuple[sp.Symbol, ...] = ()  # symbols whose exponents must also be covered (N, K, S, ...)


class MissingValuesError(ParameterError):
    """A mapping of values lacks names a record needs; the message names the missing ones first.

    A :class:`~fedtheory.validation.ParameterError`: ``values lacks B: li2020.thm1 needs B, Delta1, E, ... (given:
    ...)``.

    Parameters
    ----------
    name : str
        The mapping's name (``"values"``, ``"measurements"``).
    missing : sequence of str
        The names it lacks.
    needed : sequence of str
        Every name the record needs.
    given : sequence of str
        The names it gives.
    what : str
        What needs them (a record's id).
    """

    def __init__(self, name: str, missing: Sequence[str], needed: Sequence[str], given: Sequence[str], what: str):
        self.missing, self.needed, self.given, self.what = list(missing), list(needed), list(given), what
        self.name, self.value = name, self.given
        self.allowed = f"a mapping that gives {', '.join(needed)}"
        FedTheoryError.__init__(self, f"{name} lacks {', '.join(missing)}: {what} needs {', '.join(needed)} "
                                      f"(given: {', '.join(given) or 'nothing'})")

    def __reduce__(self):
        return (type(self), (self.name, self.missing, self.needed, self.given, self.what))


def check_mapping(values: Any, needed: Sequence[str], what: str, name: str = "values") -> None:
    """Raise a ParameterError when ``values`` is not a mapping that gives every name in ``needed`` (``what``: the
    record that needs them); a missing name is named first: 'values lacks b: p.thm1 needs a, b (given: a, c)'."""
    if not isinstance(values, Mapping):
        raise ParameterError(name, f"a {type(values).__name__}", f"a mapping symbol name -> value for {what} "
                             f"(it needs {', '.join(needed) or 'nothing'})")
    missing = [n for n in needed if n not in values]
    if missing:
        raise MissingValuesError(name, missing, list(needed), sorted(map(str, values)), what)


@functools.lru_cache(maxsize=8192)
def _lambdified(expr: sp.Expr) -> tuple[tuple[str, ...], Callable[..., Any]]:
    """(argument names, numpy function) of ``expr``, lambdified once per process: every Evaluator of an equal
    expression (a record's part evaluated at every grid point, a condition of each copy of a record) shares it, so
    a formula is compiled once and then evaluated on arrays.

    lambdify binds every symbol's name in the generated code's namespace, so a symbol named like what that code
    calls (``pi``, ``e``, ``exp``, ``sqrt``: numpy's and Python's names, a keyword) would shadow the constant or the
    function (``D*pi*sp.pi + e*sp.E`` at D = pi = e = 1 would be 2, not pi + e; a symbol ``exp`` would be called).
    Where a symbol's name is one of those, every symbol is replaced by a dummy (same assumptions) first, an argument
    under a name of lambdify's own; otherwise the expression is compiled as it is (the same code, the same bits)."""
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    names = tuple(s.name for s in syms)
    if not any(n in _CODE_NAMES or not n.isidentifier() for n in names):
        return names, _lambdify_in_slices(syms, expr, dummify=False)
    dummies = [sp.Dummy(s.name, **s.assumptions0) for s in syms]
    safe = expr.xreplace(dict(zip(syms, dummies)))
    return names, _lambdify_in_slices(dummies, safe, dummify=True)


LAMBDIFY_TERMS = 256  #: a sum of more terms is compiled in slices of this many (``_lambdify_in_slices``)


def _lambdify_in_slices(args, expr: sp.Expr, dummify: bool = True) -> Callable[..., Any]:
    """A numpy function of ``args`` (symbols) computing ``expr``: lambdify, in slices of LAMBDIFY_TERMS terms where
    ``expr`` is a longer sum: Python's compiler recurses once per ``+`` of the generated line, and a bound of 5,000
    terms exceeded its depth (RecursionError: the record could not be evaluated at all). The slices' values are added in
    order (a sum of at most LAMBDIFY_TERMS terms compiles to the same code as before, the same bits)."""
    if not isinstance(expr, sp.Add) or len(expr.args) <= LAMBDIFY_TERMS:
        return sp.lambdify(args, expr, modules="numpy", dummify=dummify)
    terms = expr.args
    parts = [_lambdify_in_slices(args, sp.Add(*terms[i:i + LAMBDIFY_TERMS], evaluate=False), dummify)
             for i in range(0, len(terms), LAMBDIFY_TERMS)]

    def total(*values):
        out = parts[0](*values)
        for f in parts[1:]:
            out = out + f(*values)
        return out

    return total


#: The names lambdify's generated code may use: numpy's (its namespace), Python's built-ins and keywords, the
#: modules it imports. A symbol so named is compiled as a dummy (``_lambdified``).
_CODE_NAMES = frozenset(dir(np)) | frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {
    "numpy", "math", "mpmath", "scipy", "sympy", "builtins"}


class Evaluator:
    """Lambdified evaluation with named arguments, validated against the symbol domains.

    The expression is compiled once per process (``sympy.lambdify`` to numpy) and evaluated on arrays; calling the
    evaluator with a mapping name -> value (scalars or arrays that broadcast) returns a float array. A value outside
    its symbol's domain is a ParameterError, a missing one a :class:`MissingValuesError`, and a complex result NaN.

    Parameters
    ----------
    expr : sympy.Expr
        The formula.
    symbols : SymbolSet
        The symbols whose domains the values are checked against.
    what : str
        What is evaluated (a record's id), named in errors.
    """

    def __init__(self, expr: sp.Expr, symbols: SymbolSet, what: str):
        self.expr = expr
        names, self._fn = _lambdified(expr)
        self.names = list(names)
        self.symbols = symbols
        self.what = what

    def __call__(self, values: Mapping[str, Any]) -> np.ndarray:
        check_mapping(values, self.names, self.what)
        for n in self.names:
            self.symbols.validate(n, values[n])
        args = [np.asarray(values[n], dtype=float) for n in self.names]
        with np.errstate(all="ignore"):
            out = np.asarray(self._fn(*args))
            if np.iscomplexobj(out):  # a real value is kept; a complex one is no value (NaN), never its real part
                real = out.real
                out = np.where(np.abs(out.imag) <= 1e-12 * np.maximum(1.0, np.abs(real)), real, np.nan)
        return np.asarray(out, dtype=float)


# ------------------------------------------------------------------------------------ records


#: The simulator's quantities a paper's symbols can stand for (``Record.quantities``), each with what it is in
#: fedtheory's terms. Papers name them differently: Li et al.'s E and FedInit's K are ``local_steps``; Stich's K is
#: ``clients`` and his H ``local_steps``; the outputs (``explain``, ``explain --run``, the check table, the
#: report) use the paper's name where a record maps one.
TOOL_QUANTITIES: dict[str, str] = {
    "clients": "the number of clients (problem.n_clients; every one takes part unless clients_per_round says)",
    "clients_per_round": "the clients taking part in a round (RunConfig.clients_per_round; all when None)",
    "local_steps": "local steps per round, between two communications (RunConfig.local_steps)",
    "rounds": "communication rounds (RunConfig.rounds)",
    "round_index": "the round index t = 0..rounds: row t of a state measure is at the global model w^t",
    "step_index": "the local-step index s = t * local_steps + k = 0..rounds * local_steps: row s of a step measure "
                  "(step_opt_error, avg_*, wavg_*) is at the averaged iterate xbar_s",
    "steps": "a number of local steps taken, s = t * local_steps + k (after t rounds: t * local_steps)",
    "lr": "the step size (RunConfig.lr; with lr_schedule 'inverse_step' the numerator of lr / (tau + lr_offset))",
    "lr_offset": "the offset of the 'inverse_step' schedule (RunConfig.lr_offset; step_origin says where tau starts)",
    "dim": "the model dimension d (problem.dim)",
    "noise_variance": "the oracle's gradient-noise variance (oracle.noise_variance(problem))",
}


def quantity_key(value: str) -> str:
    """The TOOL_QUANTITIES key of a ``Record.quantities`` value ('local_steps' or 'local_steps: a note')."""
    return str(value).split(":", 1)[0].strip()


@functools.lru_cache(maxsize=8192)
def _expanded(expr: sp.Basic, definitions: tuple[Definition, ...]) -> sp.Basic:
    """``expr`` with every definition substituted (innermost last), computed once per (expression, definitions):
    records that share definitions (a re-derived copy, a reading) and repeated calls share the substitution."""
    out = expr
    for _ in range(2):  # definitions may refer to earlier ones
        for d in reversed(definitions):
            if d.expr is not None:
                out = out.subs(d.symbol, d.expr)
    return out


_STAND_INS: ContextVar[Mapping[str, Any]] = ContextVar("fedtheory_stand_ins", default={})


@contextmanager
def stand_ins(records: Mapping[str, Any]):
    """Within the block, each record of ``records`` (record id -> another record object) stands in for the registered
    record of that id wherever a check evaluates it (``Bound.evaluate``, ``expanded``; ``standing_in`` for the
    verdict helpers): how a mutant of a statement is run through the record's own checks unchanged."""
    token = _STAND_INS.set({**_STAND_INS.get(), **dict(records)})
    try:
        yield
    finally:
        _STAND_INS.reset(token)


_EVALUATIONS: ContextVar[dict | None] = ContextVar("fedtheory_evaluations", default=None)
MAX_LOGGED = 64  # evaluations kept per record in record_evaluations (the first ones)


@contextmanager
def record_evaluations():
    """Within the block, every ``Bound.evaluate`` call appends its values to the yielded dict (record id -> list of
    value mappings, the first MAX_LOGGED per record): the instances at which checks evaluated a statement."""
    log: dict[str, list] = {}
    token = _EVALUATIONS.set(log)
    try:
        yield log
    finally:
        _EVALUATIONS.reset(token)


def standing_in(record):
    """The record standing in for ``record`` in this context (``stand_ins``), else ``record`` itself."""
    other = _STAND_INS.get().get(getattr(record, "id", None))
    return record if other is None or other is record else other


# The fields every record has, as numpydoc Parameters: appended to each record class's Parameters section
# (_record_fields_documented), so that the API reference lists them on every record, written once here.
_RECORD_FIELDS = """    id : str
        The record's id: a dotted identifier, the paper's name first (``"li2020.thm1"``), at most 120 characters.
    paper : str
        The paper's name.
    title : str
        A short title, printed by ``fedtheory list``.
    source : str
        Where the statement is: seed file and line, or arXiv id, version and equation.
    symbols : SymbolSet
        The paper's symbols the formulas use.
    assumptions : tuple of str, default ()
        Entries of the assumption catalogue, by name, each optionally binding its constants to the record's symbols
        (``"strongly_convex_clients(mu)"``); a run counts only where every one is certified (a bound's by
        ``assess_bound(certification=...)``, required; a claim's by ``claim_result(certification=...)``).
    note : str, default ""
        What could not be read, or had to be re-derived.
    readings : mapping of str to str, optional
        Where the text admits more than one reading: name -> what that reading takes the text to say.
    units : Units, optional
        How the units check reads the record (the left side's dimension, a normalisation, a consistent
        alternative).
    quantities : mapping of str to str, optional
        The paper's symbols -> the simulator's quantities they stand for (keys of ``TOOL_QUANTITIES``, optionally
        followed by ``": a note"``).
    transcription : str, default ""
        How the formula was transcribed: ``""`` (from the cited source), ``"checked against ..."`` or
        ``"unverified: ..."`` (a finding on an unverified record is listed apart, not counted).
    todo : tuple of str, default ()
        What the author must still decide; a record with a TODO is a draft, its rows never counted.
"""


def _record_fields_documented(cls):
    """Append ``_RECORD_FIELDS`` to the Parameters section that ends ``cls``'s docstring (none under ``python -OO``)."""
    if cls.__doc__:
        cls.__doc__ = cls.__doc__.rstrip() + "\n" + _RECORD_FIELDS.rstrip() + "\n    "
    return cls


@_record_fields_documented
@dataclass
class Record:
    """What every record carries. readings: where the text admits more than one reading (garbled OCR, unstated
    units, an assumption with two readings), name -> what that reading takes the text to say; a check decides the
    record under each, and a finding counts only when every reading gives it (otherwise the row is 'ambiguous').

    quantities: the paper's symbols -> the simulator's quantities they stand for (keys of ``TOOL_QUANTITIES``,
    optionally followed by ': a note'), written once, e.g. {'K': 'clients', 'H': 'local_steps', 't': 'step_index'}
    for a paper whose K counts workers and H local steps. ``fedtheory explain``, ``explain --run``, the check table
    and the report then say K and H where the tool would say clients and local steps.

    The base of :class:`Bound`, :class:`Identity`, :class:`Claim` and :class:`OrderStatement`; a plug-in builds one
    of those.

    Parameters
    ----------
    kind : str, default "record"
        The record kind, set by each record class (leave it).
    """

    id: str
    paper: str
    title: str
    source: str
    symbols: SymbolSet
    assumptions: tuple[str, ...] = ()
    note: str = ""
    kind: str = "record"
    readings: Mapping[str, str] = field(default_factory=dict)
    units: Units | None = None  # the left side's dimension, a stated normalisation, the consistent alternative
    quantities: Mapping[str, str] = field(default_factory=dict)
    # how the formula was transcribed: '' (from the cited source file), 'checked against <text>' (e.g. 'checked
    # against arXiv:1805.09767v3, Thm 2.2 and its proof'), or 'unverified: <why>' (written from memory where no public
    # copy could be read): a finding on an unverified record is listed apart and not counted until checked
    transcription: str = ""
    # what the author of the record must still decide (a left side, a reading, a constant no assumption binds, an
    # undefined symbol: what `new-paper --from-latex` drafts): a record with a TODO is a draft, its rows decided and
    # shown but never counted (scope 'draft'); deleting each once resolved makes it a record
    todo: tuple[str, ...] = ()

    @property
    def unverified(self) -> bool:
        """Whether the record's transcription was not checked against a text (``transcription`` 'unverified...')."""
        return self.transcription.strip().lower().startswith("unverified")

    @property
    def draft(self) -> bool:
        """Whether the record still carries a TODO (``todo``): its rows are never counted."""
        return bool(self.todo)

    def __post_init__(self):
        if not isinstance(self.transcription, str):  # .unverified would raise, read by getattr(..., False) as checked
            raise FedTheoryError(f"record {self.id}: transcription must be a string ('', 'checked against ...' or "
                                 f"'unverified: ...'), not {type(self.transcription).__name__} "
                                 f"{self.transcription!r:.40}")
        if not isinstance(self.todo, (tuple, list)) or not all(isinstance(t, str) and t.strip() for t in self.todo):
            raise FedTheoryError(f"record {self.id}: todo must be a tuple of non-empty strings (one TODO each), not "
                                 f"{type(self.todo).__name__} {self.todo!r:.40}")
        self.todo = tuple(self.todo)
        check_quantities(self)

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "paper": self.paper, "kind": self.kind, "title": self.title, "source": self.source}

    def paper_names(self) -> dict[str, str]:
        """Tool quantity -> the paper's symbol for it (the inverse of ``quantities``)."""
        return {quantity_key(v): k for k, v in self.quantities.items()}

    def quantities_lines(self) -> list[str]:
        """What ``fedtheory explain`` prints about ``quantities`` (nothing when the record maps none)."""
        if not self.quantities:
            return []
        lines = ["the paper's symbols in fedtheory's terms:"]
        for sym, val in self.quantities.items():
            key, _, note = str(val).partition(":")
            lines.append(f"  {sym} -> {key.strip()}: {TOOL_QUANTITIES[key.strip()]}"
                         + (f" ({note.strip()})" if note.strip() else ""))
        return lines


def check_quantities(record: Any) -> None:
    """A FedTheoryError unless ``record.quantities`` maps names to TOOL_QUANTITIES keys, each key at most once."""
    q = getattr(record, "quantities", None) or {}
    if not isinstance(q, Mapping):
        raise FedTheoryError(f"{record.id}: quantities must be a mapping paper "
                             f"symbol -> tool quantity, not {type(q).__name__}")
    seen: dict[str, str] = {}
    for sym, val in q.items():
        key = quantity_key(val)
        if key not in TOOL_QUANTITIES:
            raise FedTheoryError(f"{record.id}: quantities[{sym!r}] = {val!r}: the tool quantity must be one of "
                                 + ", ".join(TOOL_QUANTITIES) + " (optionally followed by ': a note')")
        if key in seen:
            raise FedTheoryError(f"{record.id}: quantities map both {seen[key]!r} and {sym!r} to {key!r}")
        seen[key] = sym


@_record_fields_documented
@dataclass
class Bound(Record):
    """``lhs <= expr`` under ``conditions``: a theorem or lemma inequality.

    lhs: the name of the measured quantity and what it is (e.g. 'avg_grad_norm2').
    lhs_kind: what kind of quantity the left side is, which fixes its trivial bound (the checks' catalogue
    ``fedtheory.checks.TRIVIAL_BOUNDS``: 'opt_error', 'grad_norm2', 'dist2', 'divergence', 'local_path',
    'loss_range', 'contraction', ...; 'none' when it has none, e.g. a right side compared with another).
    definitions: constants the expression uses, substituted before evaluation (in order).
    requires: structural settings the statement presumes (e.g. {'lr_schedule': 'inverse'}).
    exact: the bound before a loosening step of its proof (e.g. a geometric sum kept in closed form); a stated
    order that follows from ``exact`` but not from ``expr`` is a loose proof step, not a wrong rate.

    ``fedtheory.checks.assess_bound`` compares it with a measurement; ``evaluate`` gives its value at given numbers.

    Parameters
    ----------
    lhs : str, default ""
        The left side's name: a measure of the simulator's catalogue (``"opt_error"``), whose dimension it takes.
    lhs_description : str, default ""
        What the left side is in the simulator's terms.
    lhs_kind : str, default ""
        The kind of quantity the left side is, which fixes its trivial bound (``""``: vacuity unknown).
    expr : sympy.Expr, default 0
        The right side, in the paper's symbols (a string is refused, never parsed).
    conditions : tuple of Condition, default ()
        Side conditions on the parameters; a run outside one is ``not_applicable``.
    definitions : tuple of Definition, default ()
        Constants the expression uses, substituted before evaluation.
    order : Order, optional
        The rate the paper states.
    requires : mapping of str to object, optional
        Structural settings the statement presumes, compared by equality with the settings a check passes.
    kind : str, default "bound"
        The record kind (leave it).
    quote : str, default ""
        The sentence or display tested, with seed file and line.
    exact : sympy.Expr, optional
        The bound before a loosening step of its proof.
    exact_note : str, default ""
        Which step of the proof ``expr`` loosens, and where.
    """

    lhs: str = ""
    lhs_description: str = ""
    lhs_kind: str = ""
    expr: sp.Expr = sp.S.Zero
    conditions: tuple[Condition, ...] = ()
    definitions: tuple[Definition, ...] = ()
    order: Order | None = None
    requires: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "bound"
    quote: str = ""  # the sentence or display tested, with seed file and line ('000_...txt:1268: ...')
    exact: sp.Expr | None = None
    exact_note: str = ""  # what step of the proof ``expr`` loosens, and where

    def __post_init__(self):
        super().__post_init__()
        self.expr = as_expression(self.expr, f"{self.id}: expr")  # a string is never evaluated
        if self.exact is not None:
            self.exact = as_expression(self.exact, f"{self.id}: exact")
        self._eval: Evaluator | None = None
        self._cond_eval: dict[str, Evaluator] = {}

    def expanded(self, expr: sp.Expr | None = None) -> sp.Expr:
        """The expression with every definition substituted (innermost last)."""
        stand_in = standing_in(self)
        if stand_in is not self and expr is None:
            return stand_in.expanded()
        return _expanded(self.expr if expr is None else expr, tuple(self.definitions))

    def parameters(self) -> list[str]:
        """Names of the numeric values evaluation needs."""
        names = {s.name for s in self.expanded().free_symbols}
        for c in self.conditions:
            names |= {s.name for s in self.expanded(c.relation).free_symbols}
        return sorted(names)

    def evaluate(self, values: Mapping[str, Any]) -> np.ndarray:
        """The right side at ``values``, definitions substituted, every value checked against its symbol's domain.

        Parameters
        ----------
        values : mapping of str to float or array_like
            A value for every name of :meth:`parameters` that the expression uses; arrays broadcast (one value per
            run, per round).

        Returns
        -------
        numpy.ndarray
            The bound, as float (NaN where it has no real value).

        Raises
        ------
        MissingValuesError
            When a needed value is missing.
        ParameterError
            When a value lies outside its symbol's domain.
        """
        stand_in = standing_in(self)
        if stand_in is not self:  # a mutant stands in for this record (fedtheory.checks.mutants)
            return stand_in.evaluate(values)
        log = _EVALUATIONS.get()
        if log is not None and len(log.setdefault(self.id, [])) < MAX_LOGGED:
            log[self.id].append(dict(values))
        if self._eval is None:
            self._eval = Evaluator(self.expanded(), self.symbols, self.id)
        return self._eval(values)

    def evaluate_expr(self, expr: sp.Expr, values: Mapping[str, Any]) -> np.ndarray:
        """Evaluate a part of this bound (e.g. one of its terms) with the same definitions and domains."""
        return Evaluator(self.expanded(expr), self.symbols, f"{self.id} (part)")(values)

    def definition_values(self, values: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The value of each defined constant at ``values`` (those defined in words are left out).

        Parameters
        ----------
        values : mapping of str to float or array_like
            Values of the symbols the definitions use.

        Returns
        -------
        dict of str to numpy.ndarray
            The defined symbol's name -> its value.
        """
        out = {}
        for d in self.definitions:
            if d.expr is not None:
                out[d.symbol.name] = Evaluator(self.expanded(d.expr), self.symbols, d.id)(values)
        return out

    def conditions_failed(self, values: Mapping[str, Any]) -> list[str]:
        """Names of the conditions that fail (for any entry, if values are arrays), with the numbers."""
        failed = []
        for c in self.conditions:
            rel = self.expanded(c.relation)
            if rel is sp.true or rel == sp.true:
                continue
            if rel is sp.false or rel == sp.false:
                failed.append(f"{c.name}: {c.relation}")
                continue
            diff = rel.rhs - rel.lhs
            ev = self._cond_eval.get(c.name)
            if ev is None:
                ev = self._cond_eval[c.name] = Evaluator(diff, self.symbols, f"{self.id} condition {c.name}")
                ev.lhs = Evaluator(rel.lhs, self.symbols, c.name) if rel.lhs.free_symbols else None
                ev.rhs = Evaluator(rel.rhs, self.symbols, c.name) if rel.rhs.free_symbols else None
                ev.text = formula_text(c.relation)  # printed once: a grid of candidates fails the same condition often
            margin = ev(values)
            if isinstance(rel, sp.Equality):  # both ways, relative to the sides' size
                lhs_v = ev.lhs(values) if ev.lhs else float(rel.lhs)
                rhs_v = ev.rhs(values) if ev.rhs else float(rel.rhs)
                scale = np.maximum(np.abs(lhs_v), np.abs(rhs_v))
                ok = np.abs(margin) <= c.rtol * scale + 1e-300
            elif isinstance(rel, (sp.StrictLessThan, sp.StrictGreaterThan)):
                ok = (-margin if isinstance(rel, sp.StrictGreaterThan) else margin) > 0
            else:
                m = -margin if isinstance(rel, sp.GreaterThan) else margin
                ok = m >= -1e-12 * (1 + np.abs(m))
            ok = ok & np.isfinite(margin)
            if not np.all(ok):
                lhs_v = ev.lhs(values) if ev.lhs else float(rel.lhs)
                rhs_v = ev.rhs(values) if ev.rhs else float(rel.rhs)
                failed.append(f"{c.name}: {ev.text} ({_fmt(lhs_v)} vs {_fmt(rhs_v)})")
        return failed

    def explain(self) -> str:
        from .assumptions import describe

        lines = [f"{self.id}  [{self.kind}]  {self.title}", f"source: {self.source}",
                 "assumptions:" + (" -" if not self.assumptions else "")]
        lines += [f"  {a}: {describe(a)}" for a in self.assumptions]
        described = self.lhs_description or "(no lhs_description: say what the left side is in the simulator's terms)"
        lines += [f"statement: {self.lhs} <= {formula_text(self.expr)}", f"  where {self.lhs} = {described}"
                  + (f"  [lhs_kind {self.lhs_kind}]" if self.lhs_kind else "")]
        for d in self.definitions:
            rhs = formula_text(d.expr) if d.expr is not None else "(in words; see its record)"
            lines.append(f"  {d.symbol} = {rhs}   [{d.id}; {d.source}]")
        if self.conditions:
            lines.append("conditions:")
            lines += [f"  {c.name}: {formula_text(c.relation)}"
                      + (f"   [{c.source}]" if c.source else "") for c in self.conditions]
        if self.requires:
            lines.append("requires: " + ", ".join(f"{k}={v}" for k, v in self.requires.items()))
        if self.order is not None:
            lines.append(f"stated order: O({formula_text(self.order.expr)}) as {self.order.variable} -> oo"
                         + (f" with {', '.join(f'{k} = {formula_text(v)}' for k, v in self.order.choice.items())}"
                            if self.order.choice else "")
                         + (" (log factors omitted)" if self.order.up_to_log else ""))
        lines.append("symbols:")
        names = sorted(set(self.parameters()) | {s.name for s in self.expr.free_symbols})
        for n in names:
            if n in self.symbols.info:
                i = self.symbols.info[n]
                lines.append(f"  {n} in {i.domain}: {i.description}")
        if self.exact is not None:
            lines.append(f"before the loosening step ({self.exact_note or 'exact'}): {self.lhs} <= "
                         f"{formula_text(self.exact)}")
        lines += _readings_lines(self.readings) + _todo_lines(self.todo)
        if self.note:
            lines.append("transcription note: " + self.note)
        return "\n".join(lines)


def _todo_lines(todo: tuple[str, ...]) -> list[str]:
    return (["TODO (a draft: its rows are decided and shown, never counted, until each is resolved and deleted):"]
            + [f"  - {printable(t, keep='')}" for t in todo]) if todo else []  # a TODO may quote the file


def _readings_lines(readings: Mapping[str, str]) -> list[str]:
    return (["readings (a finding counts only when every reading gives it):"]
            + [f"  {k}: {v}" for k, v in readings.items()]) if readings else []


@_record_fields_documented
@dataclass
class Identity(Record):
    """``lhs == rhs`` exactly (an algebraic identity the method satisfies, e.g. seed 000 eq. (15)).

    Its check measures a residual and ``fedtheory.checks.identity_result`` compares it with ``tolerance``.

    Parameters
    ----------
    lhs_text, rhs_text : str, default ""
        The two sides, as text.
    tolerance : float, default 1e-12
        The largest residual (as the check measures it: relative unless it says) that holds.
    kind : str, default "identity"
        The record kind (leave it).
    """

    lhs_text: str = ""
    rhs_text: str = ""
    tolerance: float = 1e-12  # the largest residual (as the check measures it: relative unless it says) that holds
    kind: str = "identity"

    def explain(self) -> str:
        return "\n".join([f"{self.id}  [identity]  {self.title}", f"source: {self.source}",
                          f"statement: {self.lhs_text} = {self.rhs_text}", f"holds when the measured residual <= "
                          f"{self.tolerance:g}"] + ([f"note: {self.note}"] if self.note else []))


@_record_fields_documented
@dataclass
class OrderStatement(Record):
    """A result the paper states only as an order, with the explicit expression (if any) it came from.

    Parameters
    ----------
    statement : str, default ""
        The statement, as the paper writes it.
    order : Order, optional
        The stated order.
    explicit : Bound, optional
        The explicit bound whose order the statement summarises; its rate check compares the two.
    kind : str, default "order"
        The record kind (leave it).
    """

    statement: str = ""
    order: Order | None = None
    explicit: Bound | None = None  # the explicit bound whose order the statement summarises
    kind: str = "order"

    def explain(self) -> str:
        lines = [f"{self.id}  [order]  {self.title}", f"source: {self.source}", f"statement: {self.statement}"]
        if self.order is not None:
            lines.append(f"stated order: O({formula_text(self.order.expr)}) as {self.order.variable} -> oo"
                         + (f" with {', '.join(f'{k} = {formula_text(v)}' for k, v in self.order.choice.items())}"
                            if self.order.choice else ""))
        if self.explicit is not None:
            lines.append(f"checked against the explicit bound {self.explicit.id}")
        lines += _todo_lines(self.todo)
        if self.note:
            lines.append("transcription note: " + self.note)
        return "\n".join(lines)


@dataclass
class ClaimOutcome:
    """What a :class:`Claim`'s predicate decides from the measurements.

    Parameters
    ----------
    supported : bool or None
        True: the measurements support the claim; False: they refute it; None: they cannot decide.
    detail : str
        Why, with the numbers (printed under the row).
    measured : object, optional
        The value the decision rests on, shown as the row's measured value.
    """

    supported: bool | None  # None: the measurement cannot decide
    detail: str
    measured: Any = None


@_record_fields_documented
@dataclass
class Claim(Record):
    """A qualitative statement, checked by a predicate over measurements (plain arrays).

    ``predicate(measurements: dict[str, np.ndarray], **parameters) -> ClaimOutcome``; a predicate that also takes
    ``stats`` gets the checks' statistics policy (Student-t, family-wise correction, min_effect, enough seeds) to
    decide comparisons of per-seed values with. ``parameters`` are the tolerances the predicate uses, stated up
    front; ``min_effect`` the smallest relative effect a refutation needs (none declared: no refutation from seeds);
    ``measurement_units`` the unit of each measurement (name -> words), which the report's axes name.

    ``fedtheory.checks.claim_result`` evaluates it and turns the outcome into a verdict.

    Parameters
    ----------
    statement : str, default ""
        The claim, in the paper's words.
    predicate : callable, optional
        ``predicate(measurements, **parameters) -> ClaimOutcome``; its docstring is printed as the decision rule.
    parameters : mapping of str to object, optional
        The tolerances the predicate uses, stated up front.
    measurements : tuple of str, default ()
        The names of the measurements the predicate reads.
    kind : str, default "claim"
        The record kind (leave it).
    quote : str, default ""
        The sentence tested, with seed file and line.
    min_effect : float, optional
        The smallest effect, relative to the compared means, that a refutation needs (None: no refutation from
        seeds).
    measurement_units : mapping of str to str, optional
        The unit of each measurement, in words (``{"acc": "fraction correct"}``).
    """

    statement: str = ""
    predicate: Callable[..., ClaimOutcome] | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    measurements: tuple[str, ...] = ()
    kind: str = "claim"
    quote: str = ""  # the sentence tested, with seed file and line ('002_...txt:177: "..."')
    min_effect: float | None = None  # smallest effect (relative to the compared means) a refutation needs
    # the unit of each measurement the report draws ({'acc': 'fraction correct', 'gen_gap': 'nats'}): its axes say it
    measurement_units: Mapping[str, str] = field(default_factory=dict)

    def evaluate(self, measurements: Mapping[str, Any], **overrides) -> ClaimOutcome:
        """Decide the claim from ``measurements`` with the predicate.

        Parameters
        ----------
        measurements : mapping of str to array_like
            A value for every name of ``self.measurements``.
        **overrides
            Parameters of the predicate to use instead of ``self.parameters``.

        Returns
        -------
        ClaimOutcome
            The predicate's decision.

        Raises
        ------
        MissingValuesError
            When a measurement is missing.
        """
        check_mapping(measurements, self.measurements, self.id, name="measurements")
        return self.predicate(measurements, **{**self.parameters, **overrides})

    def explain(self) -> str:
        lines = [f"{self.id}  [claim]  {self.title}", f"source: {self.source}", f"statement: {self.statement}",
                 f"measured: {', '.join(self.measurements)}"]
        if self.parameters:
            lines.append("decision rule parameters: " + ", ".join(f"{k}={v}" for k, v in self.parameters.items()))
        lines.append("minimum effect a refutation "
                     "needs: " + (f"{self.min_effect:g} (relative)" if self.min_effect is not None
                                                              else "none declared (no refutation from seeds)"))
        lines += _readings_lines(self.readings)
        if self.predicate is not None and self.predicate.__doc__:
            lines.append("decision rule: " + " ".join(self.predicate.__doc__.split()))
        if self.quote:
            lines.append("quote: " + self.quote)
        if self.note:
            lines.append("note: " + self.note)
        return "\n".join(lines)


def _fmt(v) -> str:
    a = np.asarray(v, dtype=float)
    if a.ndim == 0:
        return f"{float(a):.4g}"
    return f"{np.nanmin(a):.4g}..{np.nanmax(a):.4g}"


# ------------------------------------------------------------------------------------ registry

#: Record, definition and check ids: dotted identifiers, e.g. ``fedinit.thm1``, ``li2020.thm1.rate`` (each part
#: letters, digits and _, not starting with a digit; parts joined by single dots), at most MAX_ID_LENGTH characters.
#: A paper's name is one identifier (``li2020``). Ids are checked when registered: they are printed inside commands
#: (``fedtheory check --only ID``) and file names (``worst_instances/ID.json``).
ID_RULE = "dotted identifiers, e.g. 'mypaper.thm1' (letters, digits and _ in each part, not starting with a digit)"
MAX_ID_LENGTH = 120
_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def check_id(value: Any, what: str = "record id", *, paper: bool = False) -> str:
    """``value`` if it is an id by ID_RULE (``paper``: a single identifier) of at most MAX_ID_LENGTH characters,
    else a ParameterError naming ``what``."""
    rule = "a paper name: one identifier, e.g. 'li2020'" if paper else ID_RULE
    if not isinstance(value, str) or len(value) > MAX_ID_LENGTH or not _ID.fullmatch(value) \
            or (paper and "." in value):
        raise ParameterError(what, value, f"{rule}, of at most {MAX_ID_LENGTH} characters")
    return value


_REGISTRY: dict[str, Record | Definition] = {}
_SYMBOL_SETS: dict[str, list[SymbolSet]] = {}  # paper -> its symbol sets (a Definition finds its symbols here)
_WARNED: set[tuple[str, str]] = set()


def registered(paper: str | None = None) -> list[Record | Definition]:
    """The records registered so far (of one paper), in registration order, without loading plug-ins."""
    return [r for r in _REGISTRY.values() if paper in (None, r.paper)]


def symbol_sets(paper: str) -> list[SymbolSet]:
    """The SymbolSets made for a paper (a Definition's symbols are found in them)."""
    return list(_SYMBOL_SETS.get(paper, []))


def paper_symbols(paper: str) -> dict[str, SymbolInfo]:
    """Every symbol the paper's SymbolSets declare, by name (the first declaration of a name wins)."""
    out: dict[str, SymbolInfo] = {}
    for ss in _SYMBOL_SETS.get(paper, []):
        for n, i in ss.info.items():
            out.setdefault(n, i)
    return out


def _check_dimensions(r) -> None:
    """A strict (built-in) paper: every symbol a record uses has a dimension, else FedTheoryError; a user's: a
    UnitsWarning naming the symbols (once per paper and symbol)."""
    symbols = getattr(r, "symbols", None)
    sets = [symbols] if symbols is not None else _SYMBOL_SETS.get(r.paper, [])
    missing = undeclared(r, paper_symbols(r.paper) if symbols is None else symbols.info)
    if not missing:
        return
    if any(getattr(ss, "strict", False) for ss in sets):
        raise FedTheoryError(f"{r.paper}: record {r.id} uses {', '.join(missing)} without a dimension "
                             "(declare it with SymbolSet.add(..., dim=...))")
    new = [m for m in missing if (r.paper, m) not in _WARNED]
    if new:
        _WARNED.update((r.paper, m) for m in new)
        warnings.warn(f"{r.paper}: no dimension declared for {', '.join(new)} (record {r.id}): its units verdict is "
                      "'unknown'; declare them with SymbolSet.add(..., dim=...) (docs/extending.md)", UnitsWarning,
                      stacklevel=3)


def _own_assumptions(r) -> None:
    """A record of a plug-in (of the previous release) that assumes its own assumption named like a catalogue entry
    assumes it under its paper's name (``assumptions.local_assumption``, with a deprecation warning)."""
    from .assumptions import LOCAL_ASSUMPTIONS, local_assumption, parse_reference

    given = getattr(r, "assumptions", ()) or ()
    if not LOCAL_ASSUMPTIONS or isinstance(given, str):
        return
    out = []
    for text in given:
        name = parse_reference(text).name
        scoped = local_assumption(r.paper, name)
        out.append(text if scoped is None else scoped + str(text).strip()[len(name):])
    object.__setattr__(r, "assumptions", tuple(out))  # the record is being registered: nothing has read it yet


def _check_assumptions(r) -> None:
    """Every assumption a record names parses (NAME or NAME(symbol, ...)); in a strict (built-in) paper it is in the
    catalogue and binds only the record's own symbols, else FedTheoryError."""
    from .assumptions import CATALOGUE, bind, parse_reference

    given = getattr(r, "assumptions", ()) or ()
    if isinstance(given, str):  # ("L_smooth") without its comma: iterated letter by letter
        raise FedTheoryError(f"{r.paper}: record {r.id}'s assumptions must be a tuple of references, not the string "
                             f"{given!r} (write ({given!r},))")
    refs = [parse_reference(a) for a in given]
    symbols = getattr(r, "symbols", None)
    if symbols is None or not getattr(symbols, "strict", False):
        return
    for ref in refs:
        if ref.name not in CATALOGUE:
            raise FedTheoryError(f"{r.paper}: record {r.id} assumes {ref.text!r}, which is not in the assumption "
                                 "catalogue (fedtheory.theory.CATALOGUE; register_assumption adds one)")
        unknown = sorted(sym for sym in ref.binding.values() if sym not in symbols.info)
        if unknown:
            raise FedTheoryError(f"{r.paper}: record {r.id}'s assumption {ref.text!r} binds {', '.join(unknown)}, "
                                 "which the record's symbols do not declare")
        for cname, sym in bind(ref, symbols.info).items():
            _check_binding_dimension(r, ref, CATALOGUE[ref.name].constant(cname), symbols.info[sym])


def _check_binding_dimension(r, ref, constant, info) -> None:
    """A catalogue constant bound to a record's symbol of another dimension (``L_smooth(T)``: L is f/w^2, T is 1)
    is a FedTheoryError; a symbol with readings passes when one of them has the constant's dimension."""
    declared = info.dimension
    if declared is None:
        return
    readings = list(declared.values()) if isinstance(declared, Mapping) else [declared]
    try:
        want = parse_dimension(constant.dim)
        if any((parse_dimension(d) / want).dimensionless for d in readings):
            return
    except (ParameterError, TypeError):
        return  # a dimension this comparison cannot read: the units check says what it can
    raise FedTheoryError(f"{r.paper}: record {r.id}'s assumption {ref.text!r} binds its constant {constant.name} "
                         f"(dimension {constant.dim}) to {info.name}, of dimension "
                         f"{' or '.join(str(d) for d in readings)}")


@dataclass(frozen=True)
class PaperInfo:
    """What a plug-in says about one of its papers: ``collection`` ('' for a paper under review, 'zoo' for a
    trusted theorem the tool must stay quiet on, or a name of the plug-in's own), the ``citation`` (arXiv id,
    version, venue) and a ``title``."""

    paper: str
    collection: str = ""
    citation: str = ""
    title: str = ""


_PAPERS: dict[str, PaperInfo] = {}
_PAPER_OWNERS: dict[str, str] = {}  # paper name -> the plug-in that registered under it first


@contextmanager
def registering_for(plugin: str):
    """While the block runs, whatever is registered belongs to the plug-in ``plugin``: the first plug-in to register
    a paper's records, checks or information owns that paper's name, and another plug-in registering under it is
    refused (:func:`claim_paper`). ``fedtheory.plugins.load_plugin`` wraps each plug-in's import in it."""
    from .assumptions import LOADING as _LOADING, LOCAL_ASSUMPTIONS

    _LOADING.append(plugin)
    try:
        yield
    finally:
        _LOADING.pop()
        LOCAL_ASSUMPTIONS.clear()


_OUTSIDE_PLUGINS = ""  # the owner of a paper name registered outside a plug-in's import


def claim_paper(paper: str, what: str) -> None:
    """Register ``what`` (a record or check id, 'the paper's information') under ``paper`` for the plug-in being
    loaded: a FedTheoryError if another plug-in owns the name (a user's ``fedinit.thm7`` would be counted under the
    built-in FedInit). Outside a plug-in's import (a test, a direct import) nothing is refused, and the name is
    claimed for that import: a plug-in loaded later may not register under it."""
    from .assumptions import LOADING as _LOADING

    if not _LOADING:  # a direct import (a built-in paper imported by a script or a test) owns the name too
        _PAPER_OWNERS.setdefault(paper, _OUTSIDE_PLUGINS)
        return
    owner = _PAPER_OWNERS.setdefault(paper, _LOADING[-1])
    if owner != _LOADING[-1]:
        whose = ("a module imported outside any plug-in load (a paper imported directly)" if owner == _OUTSIDE_PLUGINS
                 else f"the plug-in {owner!r}")
        raise FedTheoryError(f"{what}: the paper name {paper!r} belongs to {whose}; a plug-in registers "
                             f"only under its own paper names (rename it, e.g. {f'my_{paper}'!r})")


def register_paper(paper: str, *, collection: str = "", citation: str = "", title: str = "") -> PaperInfo:
    """Say what a paper is (``PaperInfo``); the summary of ``fedtheory check`` groups the papers of a collection
    ('zoo': trusted theorems, whose counted findings it states in one line).

    Parameters
    ----------
    paper : str
        The paper's name.
    collection : str, default ""
        ``""`` for a paper under review, ``"zoo"`` for a trusted theorem the tool must stay quiet on, or a name of
        the plug-in's own.
    citation : str, default ""
        The arXiv id and version, or the venue.
    title : str, default ""
        The paper's title.

    Returns
    -------
    PaperInfo
        What was registered.

    Raises
    ------
    FedTheoryError
        For a field that is not a string, a paper registered twice with other information, or a paper name another
        plug-in owns.
    """
    if not isinstance(paper, str) or not paper:
        raise FedTheoryError(f"register_paper: the paper's name must be a non-empty string, not {paper!r}")
    for name, value in (("collection", collection), ("citation", citation), ("title", title)):
        if not isinstance(value, str):  # collection=['zoo'] was the collection "['zoo']"
            raise FedTheoryError(f"register_paper({paper!r}): {name} must be a string, not {type(value).__name__} "
                                 f"{value!r:.40}")
    claim_paper(paper, f"register_paper({paper!r})")
    info = PaperInfo(paper, collection, citation, title)
    old = _PAPERS.get(paper)
    if old is not None and old != info:
        raise FedTheoryError(f"paper {paper!r} registered twice with different information")
    _PAPERS[paper] = info
    return info


def paper_info(paper: str) -> PaperInfo:
    """The registered ``PaperInfo`` of ``paper`` (an empty one when the plug-in said nothing).

    Parameters
    ----------
    paper : str
        The paper's name.

    Returns
    -------
    PaperInfo
        Its collection, citation and title.
    """
    return _PAPERS.get(paper, PaperInfo(paper))


def register(*records):
    """Register records (and definitions) by id, so that ``fedtheory list``/``explain``/``check`` find them.

    Returns the record (or the tuple of records). Registering the same object twice is a no-op; another
    object under a registered id is an error.

    Each is checked when registered: its id (``ID_RULE``), its paper's name (owned by the plug-in being loaded),
    its ``quantities``, the dimensions of its symbols and the assumptions it names (in a strict symbol set: in the
    catalogue, bound to symbols of the constant's dimension).

    Parameters
    ----------
    *records : Record or Definition
        The records and definitions to register.

    Returns
    -------
    Record, Definition or tuple
        The record when one was given, else the tuple of them.

    Raises
    ------
    FedTheoryError
        For anything that is not a record, an id registered twice with another object, or a check above that fails.
    ParameterError
        For an id or a paper name that breaks ``ID_RULE``.
    """
    for r in records:
        if not isinstance(r, (Record, Definition)):
            raise FedTheoryError("register() takes records (Bound, Identity, Claim, ...) or definitions, not "
                                 f"{type(r).__name__}")
        check_id(r.id, f"{type(r).__name__} id")
        check_id(r.paper, f"paper of {r.id}", paper=True)
        if r.id not in _REGISTRY:
            for name in dict.fromkeys((r.paper, r.id.split(".")[0])):  # its paper and the first part of its id
                claim_paper(name, f"record {r.id}")
        if isinstance(r, Record):
            check_quantities(r)
        if r.id in _REGISTRY and _REGISTRY[r.id] is not r:
            raise FedTheoryError(f"record id {r.id} registered twice")
        if r.id not in _REGISTRY:
            _own_assumptions(r)
            _check_dimensions(r)
            _check_assumptions(r)
        _REGISTRY[r.id] = r
    return records[0] if len(records) == 1 else records


def registered_ids() -> list[str]:
    """The ids registered so far."""
    return list(_REGISTRY)


def registry() -> dict[str, Record | Definition]:
    """Every record registered so far: the papers imported in this process. ``fedtheory.plugins.records()`` loads
    the paper plug-ins first (the theory layer imports nothing that finds them)."""
    return dict(_REGISTRY)


def get(record_id: str):
    """The registered record with this id, or a ParameterError that suggests close ids (``fedtheory.plugins.record``
    loads the paper plug-ins first)."""
    reg = registry()
    if record_id not in reg:
        close = [k for k in reg if record_id.split(".")[0] in k][:8]
        raise ParameterError("ID", record_id, "a registered record id"
                             + (f", e.g. {', '.join(close)}" if close else
                                " (see `fedtheory list`; a plug-in's records need --plugin or $FEDTHEORY_PLUGINS)"))
    return reg[record_id]
