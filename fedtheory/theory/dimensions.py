"""Dimensional analysis ("units") of the records: is every formula like-with-like?

Two base dimensions: the loss [f] and the parameter [w] (``sympy.physics.units`` :data:`LOSS`, :data:`PARAMETER`
in the :class:`~sympy.physics.units.dimensions.DimensionSystem` :data:`DIMENSION_SYSTEM`). Counts and ratios are
dimensionless. Typical declarations (``SymbolSet.add(..., dim=...)``):

==========================================================  ===========
L, mu (smoothness, strong convexity / PL)                   f/w^2
eta, a step-size numerator (w - eta grad f)                 w^2/f
sigma, G, a gradient norm; L_G (Lipschitz loss)             f/w
sigma^2, G^2, ||grad f||^2                                  f^2/w^2
D = f(w^0) - f*, U, a stability gap, Gamma                  f
||w - w*||^2, Delta (divergence)                            w^2
rho (a SAM radius), a weight mean                           w
K, T, N, C, S, beta, B, lambda, kappa                       1
==========================================================  ===========

A dimension is written as text: ``"f^2/w^2"``, ``"w"``, ``"1"`` (``[f]^2/[w]^2`` with brackets also reads), or as
a sympy ``Dimension`` built from :data:`LOSS` and :data:`PARAMETER`. A symbol whose unit the text leaves open
declares its readings, ``dim={"A": "1", "B": "w^2/f"}``; every reading is checked and reported.

The rules (:func:`dimension_of`, :func:`check_formula`): every additive term (and every argument of Max/Min) has
the dimension of the left side; the arguments of exp, log and trigonometric functions and every exponent are
dimensionless; a rational power multiplies the exponents (a sqrt halves them); a power with a symbolic exponent
x gives [d]^x, which must cancel in the end (FedInit Thm 3: (U T K)^(c L) inside (...)^(1/(1 + c L))); a relation
compares like with like; 0 and oo take any dimension. Inside a stated order (``lenient_logs``) the argument of a
log is not checked: log(c x) = log x + O(1), so the O(.) absorbs its constant.

A normalisation ("L = 1") declares that the paper measures in units where a symbol is 1: two dimensions are then
equal when their ratio is a power of that symbol's dimension. With two base dimensions one normalisation leaves
one base dimension, two independent ones leave none (every formula is then consistent: no information).

Why the arithmetic keeps its own exponents: sympy 1.14's ``DimensionSystem.get_dimensional_dependencies`` refuses a
power whose exponent is not a bare Symbol or a number ("The exponent for the power operator must be a Symbol or
dimensionless"), and a dimension such as [f]^(1 + c L), which arises when two symbolic powers meet, fails in it
too ("Only equivalent dimensions can be added or subtracted"). So the walk over an expression keeps the pair
(exponent of [f], exponent of [w]) as sympy expressions (:class:`Dim`); sympy's system is used for the base
dimensions, to read a ``Dimension`` given as a declaration, and for what :func:`dimension_of` returns.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import sympy as sp
from sympy.core.relational import Relational
from sympy.logic.boolalg import Boolean, BooleanAtom
from sympy.physics.units import Dimension
from sympy.physics.units.dimensions import DimensionSystem

from .._validation import FedTheoryError, ParameterError
from .printing import count_nodes, formula_text

__all__ = ["DIMENSION_SYSTEM", "LOSS", "PARAMETER", "Dim", "DimensionError", "Formula", "Issue", "UnknownDimension",
           "Units", "UnitsWarning", "as_expression", "check_formula", "dimension_of", "format_dimension",
           "parse_dimension", "record_formulas"]

LOSS = Dimension("loss", "f")
PARAMETER = Dimension("parameter", "w")
DIMENSION_SYSTEM = DimensionSystem([LOSS, PARAMETER])


class DimensionError(FedTheoryError):
    """A formula that compares unlike with unlike; ``issue`` names the offending term and both dimensions.

    Parameters
    ----------
    issue : Issue
        The offending term: ``issue.text`` (the message) says it in words, ``eta*sigma has [w], the left side
        [f]``.
    """

    def __init__(self, issue: "Issue"):
        self.issue = issue
        super().__init__(issue.text)


class UnknownDimension(FedTheoryError):
    """Symbols (or a left side) without a declared dimension: ``names``.

    Parameters
    ----------
    names : iterable of str
        The symbols without a dimension (kept sorted, without repeats, as ``names``).
    """

    def __init__(self, names: Iterable[str]):
        self.names = sorted(set(names))
        super().__init__("no dimension for: " + ", ".join(self.names))


class UnitsWarning(UserWarning):
    """A user's record uses symbols without a declared dimension: its units verdict is 'unknown'.

    Raised as an error instead in a strict :class:`~fedtheory.theory.SymbolSet`.

    Parameters
    ----------
    *args : object
        The warning's arguments; the first is the message.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)


# ------------------------------------------------------------------------------------ dimensions


@dataclass(frozen=True)
class Dim:
    """[f]^f [w]^w, the exponents sympy numbers or (for symbolic powers) expressions."""

    f: Any = sp.S.Zero
    w: Any = sp.S.Zero

    def __mul__(self, other: "Dim") -> "Dim":
        return Dim(self.f + other.f, self.w + other.w)

    def __truediv__(self, other: "Dim") -> "Dim":
        return Dim(self.f - other.f, self.w - other.w)

    def __pow__(self, e) -> "Dim":
        return Dim(self.f * e, self.w * e)

    @property
    def dimensionless(self) -> bool:
        return _zero(self.f) and _zero(self.w)

    def sympy(self) -> Dimension:
        """As a sympy Dimension of :data:`DIMENSION_SYSTEM`."""
        return LOSS ** _sym(self.f) * PARAMETER ** _sym(self.w)

    def __str__(self) -> str:
        return format_dimension(self)


ONE = Dim()


def _sym(x) -> sp.Basic:
    """An exponent (a sympy object or a Python number) as sympy; a string is never parsed here."""
    return sp.sympify(x, strict=True)


def _zero(x) -> bool:
    if isinstance(x, int):
        return x == 0
    if getattr(x, "is_Number", False):
        return x == 0
    return _zero_symbolic(_sym(x))


#: The largest exponent the walk decides exactly (``sp.cancel(sp.together(x)) == 0``), whose cost grows
#: exponentially with the symbols in it: 8 symbols 0.5 s, 10 symbols 3 s, 12 symbols 15 s, 40 never ends. A larger
#: one is not decided: the formula's units verdict is 'inconclusive', saying so (the built-in records use 2).
MAX_SIMPLIFY_SYMBOLS = 8
MAX_SIMPLIFY_NODES = 400


class TooLargeToDecide(FedTheoryError):
    """An exponent over MAX_SIMPLIFY_SYMBOLS symbols or MAX_SIMPLIFY_NODES nodes: the walk does not decide it."""


@functools.lru_cache(maxsize=4096)
def _zero_symbolic(x) -> bool:
    if x.is_Number:
        return x == 0
    n_symbols, n_nodes = len(x.free_symbols), count_nodes(x, MAX_SIMPLIFY_NODES)
    if n_symbols > MAX_SIMPLIFY_SYMBOLS or n_nodes > MAX_SIMPLIFY_NODES:
        raise TooLargeToDecide(f"an exponent of {n_symbols} symbols" + (f" and over {MAX_SIMPLIFY_NODES} nodes"
                               if n_nodes > MAX_SIMPLIFY_NODES else "") + f" is not simplified (at most "
                               f"{MAX_SIMPLIFY_SYMBOLS} symbols and {MAX_SIMPLIFY_NODES} nodes: "
                               "fedtheory.theory.dimensions.MAX_SIMPLIFY_SYMBOLS)")
    return sp.cancel(sp.together(x)) == 0


def _same(a: Dim, b: Dim, normals: tuple[Dim, ...] = ()) -> bool:
    """a == b, or (normalisations) a / b a rational power of a normalised dimension."""
    d = a / b
    if d.dimensionless:
        return True
    if not normals:
        return False
    basis = [n for n in normals if not n.dimensionless]
    if not basis:
        return False
    p, q = basis[0].f, basis[0].w
    if any(not _zero(n.f * q - n.w * p) for n in basis[1:]):
        return True  # two independent normalisations: no dimension is left
    return _zero(d.f * q - d.w * p) and bool(_sym(d.f).is_number and _sym(d.w).is_number)


def _exp_text(e) -> str:
    e = _sym(e)
    if e.is_Integer:
        return str(e)
    return f"({formula_text(e)})"


def format_dimension(d) -> str:
    """'[f]^2/[w]^2', '[w]^-1', '[f]', '1'; symbolic exponents in parentheses."""
    d = parse_dimension(d) if not isinstance(d, Dim) else d
    parts = [(b, _sym(e)) for b, e in (("[f]", d.f), ("[w]", d.w)) if not _zero(e)]
    if not parts:
        return "1"

    def one(b, e):
        return b if e == 1 else f"{b}^{_exp_text(e)}"

    pos = [(b, e) for b, e in parts if not (e.is_number and e < 0)]
    neg = [(b, -e) for b, e in parts if e.is_number and e < 0]
    if pos and neg:
        num = "*".join(one(b, e) for b, e in pos)
        den = "*".join(one(b, e) for b, e in neg)
        return f"{num}/{den}"
    if pos:
        return "*".join(one(b, e) for b, e in pos)
    return "*".join(f"{b}^-{_exp_text(e)}" for b, e in neg)


#: The longest dimension text read ('f^2/w^2' has 7 characters): a text is parsed by its own grammar, never evaluated.
MAX_DIMENSION_TEXT = 100
_DIM_TEXT = ("a dimension text: a product of powers of f (the loss) and w (the parameter) with numeric exponents, e.g. "
             "'f^2/w^2', 'w', '1', 'f^(1/2)', '[f]/[w]^2'")
_EXPONENT = "a finite real number (e.g. 2, -1, 0.5, (1/2)), not a symbol, oo or I"


def _exponent(node, text: str):
    """An exponent of a dimension text: numbers joined by + - * / (exact rationals), nothing else."""
    import ast

    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        v = node.value
        if isinstance(v, float) and not (v == v and abs(v) != float("inf")):
            raise ParameterError("dim", text, f"{_DIM_TEXT}; an exponent must be {_EXPONENT}")
        return sp.Rational(repr(v)) if isinstance(v, float) else sp.Integer(v)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        e = _exponent(node.operand, text)
        return -e if isinstance(node.op, ast.USub) else e
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        a, b = _exponent(node.left, text), _exponent(node.right, text)
        if isinstance(node.op, ast.Div) and b == 0:
            raise ParameterError("dim", text, f"{_DIM_TEXT}; an exponent must be {_EXPONENT} (it divides by 0)")
        if isinstance(node.op, ast.Div):
            return a / b
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    shown = getattr(node, "id", None) or type(node).__name__
    raise ParameterError("dim", text, f"{_DIM_TEXT}; an exponent must be {_EXPONENT} (found {shown!r})")


def _dim_node(node, text: str) -> Dim:
    import ast

    if isinstance(node, ast.Name) and node.id in ("f", "w"):
        return Dim(sp.S.One, sp.S.Zero) if node.id == "f" else Dim(sp.S.Zero, sp.S.One)
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value == 1:
        return ONE
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        a, b = _dim_node(node.left, text), _dim_node(node.right, text)
        return a * b if isinstance(node.op, ast.Mult) else a / b
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _dim_node(node.left, text) ** _exponent(node.right, text)
    if isinstance(node, ast.Name):
        raise ParameterError("dim", text, f"{_DIM_TEXT} ({node.id!r} is neither f nor w)")
    raise ParameterError("dim", text, f"{_DIM_TEXT} (no coefficient, no sum)")


@functools.lru_cache(maxsize=None)
def _parse_text(text: str) -> Dim:
    """A dimension text by its grammar: ``dim := factor (('*' | '/') factor)*``, ``factor := f | w | 1 | (dim) |
    factor ('^' | '**') exponent``, ``exponent := a number, or numbers joined by + - * / in parentheses``; brackets
    around f and w are dropped. Python's parser reads the text (``ast``, which runs nothing); only these shapes are
    accepted, so no text runs code, and every exponent is a finite rational number."""
    import ast

    if len(text) > MAX_DIMENSION_TEXT:
        raise ParameterError("dim", text, f"{_DIM_TEXT}, of at most {MAX_DIMENSION_TEXT} characters")
    t = text.strip().replace("[", "").replace("]", "").replace("^", "**")
    if t in ("", "1"):
        return ONE
    try:
        tree = ast.parse(t, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ParameterError("dim", text, _DIM_TEXT) from None
    return _dim_node(tree.body, text)


def parse_dimension(d) -> Dim:
    """A declared dimension (text such as 'f^2/w^2', a sympy Dimension of LOSS and PARAMETER, or a Dim) as a Dim."""
    if isinstance(d, Dim):
        return d
    if isinstance(d, Dimension):
        try:
            deps = DIMENSION_SYSTEM.get_dimensional_dependencies(d)
        except (TypeError, ValueError) as exc:
            raise ParameterError("dim", str(d), f"a Dimension built from LOSS and PARAMETER ({exc})") from None
        unknown = [k for k in deps if k not in (LOSS, PARAMETER)]
        if unknown:
            raise ParameterError("dim", str(d), "a Dimension built from fedtheory.theory.dimensions.LOSS and PARAMETER")
        exps = [sp.sympify(deps.get(b, 0), strict=True) for b in (LOSS, PARAMETER)]
        if not all(e.is_Rational for e in exps):
            raise ParameterError("dim", str(d), f"a Dimension whose exponents are each {_EXPONENT}")
        return Dim(*exps)
    if isinstance(d, (int, float)) and not isinstance(d, bool) and d == 1:
        return ONE
    if isinstance(d, str):
        return _parse_text(d)
    raise ParameterError("dim", d, "a dimension text such as 'f^2/w^2', 'w', '1' or a sympy Dimension")


# ------------------------------------------------------------------------------------ the walk


class Issue:
    """One offending term: ``term`` has ``has`` where ``needs`` is needed; ``text`` says it in words (built when
    read: printing sympy expressions is the slow part of the walk)."""

    __slots__ = ("expr", "_has", "_needs", "kind", "other", "part", "_text")

    def __init__(self, kind: str, expr, has, needs, other=None, part: str = ""):
        self.kind, self.expr, self._has, self._needs, self.other, self.part = kind, expr, has, needs, other, part
        self._text = None

    @property
    def term(self) -> str:
        return _term_text(self.expr)

    @property
    def has(self) -> str:
        return format_dimension(self._has)

    @property
    def needs(self) -> str:
        return format_dimension(self._needs)

    @property
    def text(self) -> str:
        if self._text is None:
            k, o = self.kind, self.other
            if k == "lhs":
                t = f"{self.term} has {self.has}, the left side {self.needs}"
            elif k == "scaled":  # o = (the left side, the factor)
                t = (f"{self.term} has {self.has}, where {self.needs} is needed (the left side "
                     f"{format_dimension(o[0])} over its factor {format_dimension(o[1])})")
            elif k == "first":  # o = (the reference term, how many terms share its dimension)
                t = f"{self.term} has {self.has}, " + (f"{o[1]} other terms, e.g. {_term_text(o[0])}, have {self.needs}"
                                                      if o[1] > 1 else f"{_term_text(o[0])} has {self.needs}")
            elif k == "argument":
                t = f"the argument of {o}, {self.term}, has {self.has} (must be dimensionless)"
            elif k == "exponent":
                t = f"the exponent of {formula_text(o)}, {self.term}, has {self.has} (must be dimensionless)"
            elif k == "branch":
                t = f"the branch {self.term} has {self.has}, another branch {self.needs}"
            else:  # relation: o = the other side
                t = f"{self.term} has {self.has}, the other side {_term_text(o)} has {self.needs}"
            self._text = t
        return self._text

    def __repr__(self) -> str:
        return f"Issue({self.text!r})"


def _term_text(e) -> str:
    """A term as sympy prints it, without a leading minus sign (the sign is not the offence)."""
    if isinstance(e, sp.Basic) and e.could_extract_minus_sign():
        e = -e
    return formula_text(e)


class _Any:
    """The dimension of 0 and oo (anything), and of an unknown symbol (so that the walk goes on)."""


ANY = _Any()
_TRANSCENDENTAL = (sp.exp, sp.log, sp.sin, sp.cos, sp.tan, sp.sinh, sp.cosh, sp.tanh, sp.asin, sp.acos, sp.atan,
                   sp.erf, sp.erfc, sp.gamma, sp.LambertW)
_SUMS = (sp.Add, sp.Max, sp.Min)


class _Walk:
    def __init__(self, dims: Mapping[str, Dim], normals: tuple[Dim, ...] = (), lenient_logs: bool = False,
                 part: str = ""):
        self.dims, self.normals, self.lenient, self.part = dims, normals, lenient_logs, part
        self.issues: list[Issue] = []
        self.unknown: set[str] = set()
        self._memo: dict[Any, Any] = {}

    def _issue(self, kind, expr, has, needs, other=None):
        self.issues.append(Issue(kind, expr, has, needs, other, self.part))

    def eq(self, a, b) -> bool:
        return a is ANY or b is ANY or _same(a, b, self.normals)

    # the dimension of an expression (issues recorded on the way, once per sub-expression)
    def dim(self, e):
        out = self._memo.get(e)
        if out is None:
            out = self._memo[e] = self._dim(e)
        return out

    def _dim(self, e):
        if isinstance(e, sp.Symbol):
            d = self.dims.get(e.name)
            if d is None:
                self.unknown.add(e.name)
                return ANY
            return d
        if e.is_Number:
            return ANY if e == 0 or e in (sp.oo, -sp.oo, sp.zoo, sp.nan) else ONE
        if e.is_NumberSymbol or isinstance(e, BooleanAtom) or e in (sp.oo, -sp.oo, sp.zoo):
            return ONE if e.is_NumberSymbol else ANY
        if isinstance(e, _SUMS):
            return self._sum(e.args)
        if isinstance(e, sp.Mul):
            out = ONE
            for a in e.args:
                d = self.dim(a)
                if d is ANY:
                    return ANY
                out = out * d
            return out
        if isinstance(e, sp.Pow):
            return self._pow(e)
        if isinstance(e, (sp.Abs, sp.re, sp.im, sp.floor, sp.ceiling)):
            return self.dim(e.args[0])
        if isinstance(e, sp.sign):
            self.dim(e.args[0])
            return ONE
        if isinstance(e, _TRANSCENDENTAL):
            for a in e.args:
                if isinstance(e, sp.log) and self.lenient:
                    continue
                d = self.dim(a)
                if d is not ANY and not self.eq(d, ONE):
                    self._issue("argument", a, d, ONE, type(e).__name__)
            return ONE
        if isinstance(e, sp.Piecewise):
            out = None
            for ex, cond in e.args:
                self.relation(cond)
                d = self.dim(ex)
                if d is ANY:
                    continue
                if out is None:
                    out = d
                elif not self.eq(d, out):
                    self._issue("branch", ex, d, out)
            return ANY if out is None else out
        if isinstance(e, Boolean):
            self.relation(e)
            return ONE
        name = getattr(getattr(e, "func", None), "__name__", type(e).__name__)
        self.unknown.add(f"{name}(...)")
        return ANY

    def _pow(self, e):
        base, ex = e.args
        dx = self.dim(ex)
        if dx is not ANY and not self.eq(dx, ONE):
            self._issue("exponent", ex, dx, ONE, e)
        db = self.dim(base)
        if db is ANY:
            return ANY
        if db.dimensionless:
            return ONE
        return db ** ex

    def _sum(self, args):
        """All args like each other, without a left side to compare with: the reference is the dimension most terms
        share (on a tie, the first term's), and each term unlike it is named beside a term that has it. Returns the
        reference."""
        dims = [(a, self.dim(a)) for a in args]
        dims = [(a, d) for a, d in dims if d is not ANY]
        if not dims:
            return ANY
        groups: list[list] = []  # [dimension, terms]
        for a, d in dims:
            g = next((g for g in groups if self.eq(d, g[0])), None)
            if g is None:
                groups.append([d, [a]])
            else:
                g[1].append(a)
        ref, terms = max(groups, key=lambda g: len(g[1]))  # max keeps the first on a tie
        for a, d in dims:
            if not self.eq(d, ref):
                self._issue("first", a, d, ref, (terms[0], len(terms)))
        return ref

    def _uniform(self, e) -> bool:
        """The terms of a sum agree with each other. The probe shares the memo, so what it finds inside the terms (a
        dimensional argument of log or exp, an unknown symbol) is kept: a memoized sub-expression is not walked again,
        and its issues would otherwise be lost (the blind spot of issue 36: D (1 + log D)/T called consistent)."""
        probe = _Walk(self.dims, self.normals, self.lenient, self.part)
        probe._memo = self._memo
        ds = [d for d in (probe.dim(a) for a in e.args) if d is not ANY]
        self.issues.extend(probe.issues)
        self.unknown |= probe.unknown
        return all(probe.eq(d, ds[0]) for d in ds[1:])

    # an expression that must have the dimension ``target`` (the left side, or what a factor leaves of it)
    def expect(self, e, target, scale=ONE, lhs=None):
        lhs = target if lhs is None else lhs
        if isinstance(e, _SUMS):
            for a in e.args:
                self.expect(a, target, scale, lhs)
            return
        if isinstance(e, sp.Mul):
            composite = [a for a in e.args if isinstance(a, _SUMS)]
            if len(composite) == 1 and not self._uniform(composite[0]):
                # a sum whose own terms disagree: name the terms unlike the left side, not the product
                rest = ONE
                for a in e.args:
                    if a is composite[0]:
                        continue
                    d = self.dim(a)
                    if d is ANY:
                        return
                    rest = rest * d
                self.expect(composite[0], target / rest, scale * rest, lhs)
                return
        d = self.dim(e)
        if d is ANY or self.eq(d, target):
            return
        if scale.dimensionless:
            self._issue("lhs", e, d, target)
        else:
            self._issue("scaled", e, d, target, (lhs, scale))

    def relation(self, rel):
        if isinstance(rel, BooleanAtom):
            return
        if isinstance(rel, Relational):
            a, b = rel.lhs, rel.rhs
            da, db = self.dim(a), self.dim(b)
            if da is not ANY and db is not ANY and not self.eq(da, db):
                self._issue("relation", a, da, db, b)
            return
        for a in rel.args:  # And / Or / Not
            self.relation(a)

    def sorted_issues(self) -> list[Issue]:
        """The simplest offending term first (sympy orders a sum's terms its own way, not as printed)."""
        return sorted(self.issues, key=lambda i: sp.count_ops(i.expr) if isinstance(i.expr, sp.Basic) else 0)


def symbol_dims(symbols, reading: Mapping[str, str] | None = None) -> dict[str, Dim]:
    """name -> Dim from a SymbolSet (its symbols' declared dimensions) or a mapping name -> dimension."""
    info = getattr(symbols, "info", None)
    if info is None and not isinstance(symbols, Mapping):
        raise ParameterError("symbols", f"a {type(symbols).__name__}", "a SymbolSet or a mapping symbol name -> "
                             "dimension (e.g. {'L': 'f/w^2'})")
    raw = dict(info if info is not None else symbols)
    raw = {n: getattr(d, "dimension", d) for n, d in raw.items()}
    out = {}
    for n, d in raw.items():
        if d is None:
            continue
        if isinstance(d, Mapping):
            key = (reading or {}).get(n)
            if key is None:
                continue  # ambiguous and no reading chosen: unknown
            d = d[key]
        name = str(getattr(n, "name", n))
        try:
            out[name] = parse_dimension(d)
        except ParameterError as exc:  # named by its symbol
            raise ParameterError(f"dim of {name}", exc.value, exc.allowed) from None
    return out


def dimension_of(expr, symbols, *, lhs=None, normalisation: Iterable[str] = ()) -> Dimension:
    """The dimension of ``expr`` (a sympy Dimension of LOSS and PARAMETER) given the symbols' dimensions: the same walk
    as the units row of ``fedtheory check`` (``check_formula``), so a formula that passes here passes there.

    symbols: a :class:`~fedtheory.theory.SymbolSet` (each symbol's ``dim``) or a mapping name -> dimension
    ('f^2/w^2', a Dimension). lhs: the left side the formula bounds, as a dimension ('f', 'f^2/w^2', a Dimension) or
    an expression in the symbols; every additive term must then have it, and a wrong formula of a single term is
    caught too. normalisation: names of symbols the paper sets to 1 ('L = 1'): two dimensions are then equal when
    their ratio is a power of those symbols' dimensions (one normalisation leaves one base dimension; two independent
    ones leave none, and every formula passes).
    Raises :class:`DimensionError` naming an offending term and both dimensions: with ``lhs``, the term that disagrees
    with the left side (``eta*sigma has [w], the left side [f]``); without it, a term unlike the dimension most terms
    share; and :class:`UnknownDimension` listing symbols without one.

    Parameters
    ----------
    expr : sympy.Expr
        The formula (a string is refused, never parsed).
    symbols : SymbolSet or mapping of str to str
        The symbols' dimensions: a symbol set (each symbol's ``dim``) or a mapping name -> dimension text or sympy
        Dimension.
    lhs : str, sympy Dimension or sympy.Expr, optional
        The dimension of the left side the formula bounds, or the left side as an expression in the symbols.
    normalisation : iterable of str, default ()
        Names of symbols the paper sets to 1.

    Returns
    -------
    sympy.physics.units.Dimension
        The formula's dimension, in ``LOSS`` and ``PARAMETER``.

    Raises
    ------
    DimensionError
        When the formula adds or compares unlike dimensions.
    UnknownDimension
        When a symbol has no dimension.
    ParameterError
        For a string ``expr`` or ``normalisation``, or a dimension text that does not read.

    Examples
    --------
    >>> import sympy as sp
    >>> from fedtheory.theory import dimension_of
    >>> from fedtheory.theory.dimensions import DIMENSION_SYSTEM
    >>> L, sigma = sp.symbols("L sigma")
    >>> DIMENSION_SYSTEM.get_dimensional_dependencies(dimension_of(sigma**2 / L, {"L": "f/w^2", "sigma": "f/w"}))
    {Dimension(loss, f): 1}
    """
    expr = as_expression(expr)
    if isinstance(normalisation, str):
        raise ParameterError("normalisation", normalisation, "a list of symbol names, e.g. ('L',)")
    dims = symbol_dims(symbols)
    normals = tuple(dims[n] for n in normalisation if n in dims)
    res = check_formula(Formula("expression", expr, lhs), dims, normals)
    if res.unknown:
        raise UnknownDimension(res.unknown)
    if res.issues:
        raise DimensionError(res.issues[0])
    walk = _Walk(dims, normals)
    d = walk.dim(expr)
    return (ONE if d is ANY else d).sympy()


def as_expression(expr, name: str = "expr") -> sp.Basic:
    """``expr`` as a sympy object: a sympy expression or relation as it is, a finite Python number as a sympy
    number; anything else (a string above all: a string is never evaluated) a ParameterError naming ``name``."""
    if isinstance(expr, sp.Basic):
        return expr
    if isinstance(expr, (int, float)) and not isinstance(expr, bool) and expr == expr and abs(expr) != float("inf"):
        return sp.sympify(expr, strict=True)
    what = "a string (strings are not parsed: build the expression with sympy.Symbol, e.g. L, s = " \
           "sympy.symbols('L sigma'))" if isinstance(expr, str) else \
        ("an " if type(expr).__name__[:1].lower() in "aeiou" else "a ") + type(expr).__name__
    raise ParameterError(name, what, "a sympy expression (or a finite number)")


# ------------------------------------------------------------------------------------ records


@dataclass(frozen=True)
class Units:
    """How a record's units are read (its ``units=`` field).

    lhs: the left side's dimension where the left side is not a measure of the simulator's catalogue
    (``fedtheory list --measures``), e.g. 'f^2/w^2'. normalisation: symbols the paper sets to 1 (it states or
    implies it: ``quote`` says where, seed file and line), e.g. ('L',). alternative: the id of the record that holds
    this statement's consistent form (its derivation, another printing): an inconsistent printed form with a
    consistent alternative is an erratum. finding: that erratum's finding key, shared with the other checks' rows
    (one typo counts once).

    Parameters
    ----------
    lhs : str, default ""
        The left side's dimension text, where the left side is not a catalogue measure.
    normalisation : tuple of str, default ()
        Symbols the paper sets to 1 (needs ``quote``).
    quote : str, default ""
        Where the paper states or implies the normalisation (seed file and line).
    alternative : str, default ""
        The id of the record that holds the statement's consistent form.
    finding : str, default ""
        The erratum's finding key, shared with the other checks' rows.
    note : str, default ""
        Anything else the units verdict should say.

    Raises
    ------
    ParameterError
        For an ``lhs`` that does not read as a dimension, a string ``normalisation``, or a normalisation without a
        ``quote``.
    """

    lhs: str = ""
    normalisation: tuple[str, ...] = ()
    quote: str = ""
    alternative: str = ""
    finding: str = ""
    note: str = ""

    def __post_init__(self):
        if self.lhs:
            parse_dimension(self.lhs)
        if isinstance(self.normalisation, str):
            raise ParameterError("normalisation", self.normalisation, "a tuple of symbol names, e.g. ('L',)")
        if self.normalisation and not self.quote:
            raise ParameterError("quote", self.quote, "where the paper states or implies the normalisation "
                                 f"{', '.join(n + ' = 1' for n in self.normalisation)} (seed file and line)")


@dataclass(frozen=True)
class Formula:
    """One thing a record states: ``rhs`` has the dimension of ``lhs`` (an expression, a dimension text, or None:
    only consistent in itself). ``order``: part of a stated order (log arguments free; a dimensionless order is a
    scaling in counts). ``choice``: a stated choice (symbol -> expression) of a stated order."""

    part: str
    rhs: Any
    lhs: Any = None
    order: bool = False
    choice: bool = False


def _is_zero_expr(e) -> bool:
    return isinstance(e, sp.Basic) and e.is_Number and e == 0


def record_formulas(record, lhs_dimension: str | None = None) -> list[Formula]:
    """The formulas of a record, duck-typed: a Bound (or an identity with ``lhs``/``expr``): its statement, its
    definitions, its conditions and its stated order; a Definition: symbol = expression; an OrderStatement: its
    stated order. Records stated in words (claims, text identities) have none. ``lhs_dimension``: the left side's
    dimension text when known (a catalogued measure's; the record's ``units.lhs`` wins)."""
    out: list[Formula] = []
    units = getattr(record, "units", None)
    lhs_dim = (units.lhs if units is not None and units.lhs else None) or lhs_dimension
    order = getattr(record, "order", None)
    expr = getattr(record, "expr", None)
    if hasattr(record, "symbol") and not hasattr(record, "lhs"):  # a Definition
        if expr is not None:
            out.append(Formula(f"definition {record.symbol}", expr, record.symbol))
        return out
    if expr is not None and hasattr(record, "lhs"):
        out.append(Formula("statement", expr, lhs_dim or _LHS_UNKNOWN(getattr(record, "lhs", ""))))
    for d in getattr(record, "definitions", ()) or ():
        if d.expr is not None:
            out.append(Formula(f"definition {d.symbol}", d.expr, d.symbol))
    for c in getattr(record, "conditions", ()) or ():
        out.append(Formula(f"condition {c.name}", c.relation))
    if order is not None:
        if lhs_dim is None:
            explicit = getattr(record, "explicit", None)
            if explicit is not None:
                eu = getattr(explicit, "units", None)
                lhs_dim = (eu.lhs if eu is not None and eu.lhs else None) or _LHS_UNKNOWN(getattr(explicit, "lhs", ""))
        for k, v in list(order.choice.items()) + list(order.substitute.items()):
            if _is_zero_expr(as_expression(v, f"{getattr(record, 'id', '?')}: stated order")):
                continue
            out.append(Formula(f"stated order: {formula_text(k)} = {formula_text(v)}", v, k, order=True, choice=True))
        out.append(Formula("stated order", order.expr, lhs_dim, order=True))
    return out


@dataclass(frozen=True)
class _LHS_UNKNOWN:
    """A left side whose dimension is not known (not declared, not a catalogued measure)."""

    name: str


def lhs_names(formulas: Iterable[Formula]) -> list[str]:
    """The left sides (by name) whose dimension is unknown."""
    return sorted({f.lhs.name for f in formulas if isinstance(f.lhs, _LHS_UNKNOWN)})


@dataclass
class FormulaResult:
    """The outcome of one formula: its issues (offending terms), the symbols without a dimension, and for a stated
    order the normalisation its stated choices imply (text) and whether it is a pure scaling in counts."""

    formula: Formula
    issues: list[Issue] = field(default_factory=list)
    unknown: set[str] = field(default_factory=set)
    implied: list[str] = field(default_factory=list)
    counts_only: bool = False
    undecided: str = ""  # why the walk could not decide the formula (TooLargeToDecide)


def check_formula(formula: Formula, dims: Mapping[str, Dim], normals: tuple[Dim, ...] = ()) -> FormulaResult:
    """Check one formula under the symbols' dimensions ``dims`` (name -> Dim) and normalisations ``normals``."""
    res = FormulaResult(formula)
    try:
        return _check_formula(formula, dims, normals, res)
    except TooLargeToDecide as exc:
        res.issues, res.undecided = [], str(exc)
        return res


def _check_formula(formula: Formula, dims: Mapping[str, Dim], normals: tuple[Dim, ...], res: FormulaResult):
    walk = _Walk(dims, normals, lenient_logs=formula.order, part=formula.part)
    lhs, rhs = formula.lhs, as_expression(formula.rhs, formula.part)
    if isinstance(lhs, _LHS_UNKNOWN):
        walk.unknown.add(f"left side '{lhs.name}'" if lhs.name else "the left side")
        walk.dim(rhs)
    elif lhs is None:
        walk.dim(rhs)
    else:
        target = (parse_dimension(lhs) if isinstance(lhs, (str, Dimension))
                  else walk.dim(as_expression(lhs, formula.part)))
        if target is ANY:
            walk.dim(rhs)
        elif formula.order and not formula.choice:
            probe = _Walk(dims, normals, lenient_logs=True)
            d = probe.dim(rhs)
            if d is not ANY and not probe.issues and d.dimensionless and not target.dimensionless:
                res.counts_only = True  # O(1/T): the O(.) carries the left side's dimension
                walk.unknown |= probe.unknown
            else:
                walk.expect(rhs, target)
        else:
            walk.expect(rhs, target)
    res.issues, res.unknown = walk.sorted_issues(), walk.unknown
    return res


def implied_normal(formula: Formula, dims: Mapping[str, Dim]) -> Dim | None:
    """For a stated choice k = v whose sides differ in dimension (eta = sqrt(N/(K T)): [w]^2/[f] against 1): the
    ratio the choice sets to 1, else None."""
    if not formula.choice:
        return None
    walk = _Walk(dims, lenient_logs=True)
    try:
        a, b = walk.dim(as_expression(formula.lhs, formula.part)), walk.dim(as_expression(formula.rhs, formula.part))
        if a is ANY or b is ANY or walk.issues:
            return None
        r = a / b
        if r.dimensionless or not (_sym(r.f).is_number and _sym(r.w).is_number):
            return None
    except TooLargeToDecide:  # check_formula reports it
        return None
    return r


def iter_readings(symbols, names: Iterable[str]) -> Iterator[dict[str, str]]:
    """Every combination of the readings of the ambiguous symbols among ``names`` ({} when none is ambiguous)."""
    info = getattr(symbols, "info", symbols)
    amb = [(n, list(info[n].dimension)) for n in sorted(set(names)) if n in info
           and isinstance(info[n].dimension, Mapping)]
    if not amb:
        yield {}
        return
    import itertools

    for combo in itertools.product(*(keys for _, keys in amb)):
        yield {n: k for (n, _), k in zip(amb, combo)}


def free_names(formulas: Iterable[Formula]) -> set[str]:
    names: set[str] = set()
    for f in formulas:
        for side in (f.rhs, f.lhs):
            if isinstance(side, sp.Basic):
                names |= {s.name for s in side.free_symbols}
    return names


def undeclared(record, info: Mapping[str, Any]) -> list[str]:
    """The symbols a record's formulas use that ``info`` (name -> SymbolInfo) gives no dimension."""
    names = free_names(record_formulas(record, lhs_dimension="1"))
    if hasattr(record, "symbol") and not hasattr(record, "lhs"):  # a Definition, also one defined in words
        names.add(record.symbol.name)
    return sorted(n for n in names if n not in info or info[n].dimension is None)
