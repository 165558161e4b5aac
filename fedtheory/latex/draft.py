"""A LaTeX source -> a draft of records: bounds, definitions, conditions, stated orders, the symbol table; and the
``records.py`` of a new plug-in written from it (``fedtheory new-paper NAME --from-latex FILE``)."""
from __future__ import annotations

import dataclasses
import hashlib
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp
from sympy.printing.str import StrPrinter

from .._validation import printable
from ..theory.dimensions import DimensionError, UnknownDimension, dimension_of, format_dimension, parse_dimension
from .expression import (
    GREEK,
    MAX_READ_SECONDS,
    Relation,
    Skipped,
    SymbolUse,
    Unparseable,
    Unparsed,
    parse_item,
    parse_math,
    reading_budget,
    undefined_macros,
)
from .notation import NOTATION, LeftSide, dimension_of_use, lookup, match_left_side
from .source import Document, read_document, read_latex_file

__all__ = ["DraftAssumption", "DraftBound", "DraftDefinition", "DraftCondition", "DraftSymbol", "LatexDraft",
           "draft_from_latex", "read_latex", "records_source"]

_ENV_SHORT = {"theorem": "thm", "thm": "thm", "lemma": "lemma", "lem": "lemma", "corollary": "cor", "cor": "cor",
              "proposition": "prop", "prop": "prop", "claim": "claim"}
_RESERVED = {"sp", "S", "PAPER", "SOURCE", "F", "Bound", "Condition", "Definition", "OrderStatement", "Order",
             "SymbolSet", "Units", "register", "SYMS"}


@dataclass
class DraftSymbol:
    """One row of the symbol table: the name in the records, the LaTeX, the dimension (None: unknown, the user
    gives it), what the catalogue says it is, and what else it may be (``check``)."""

    name: str
    latex: str
    dimension: str | None
    meaning: str
    check: str = ""
    kind: str = "plain"


@dataclass
class DraftCondition:
    """A side condition of the statement (an inline relation, a displayed rule on a step size or a count, a rule
    ``\\eta = \\frac{1}{L}``, a step size in words): runs outside it are ``not_applicable`` naming it."""

    name: str
    relation: sp.Basic
    latex: str
    line: int
    todo: str = ""  # what the user must still decide about it (a reading of words, a schedule in the index t)
    origin: str = ""  # where it comes from when not a relation as written ("the words '...'", "the rule eta = 1/L")


@dataclass
class DraftDefinition:
    id: str
    symbol: str
    expr: sp.Expr
    latex: str
    line: int
    note: str = ""  # a reading (sigma^2 = X read as sigma = sqrt(X))
    outside: bool = False  # defined outside the theorem-like environments (the record carries a TODO to confirm it)


@dataclass
class DraftAssumption:
    """A catalogue assumption (``reference``: NAME or NAME(symbol)) drafted from the words of a theorem or of an
    assumption environment (``words``): the user confirms it."""

    reference: str
    words: str


# the premises a theorem states in words -> the catalogue (docs/assumptions.md). Where the words do not say whether
# each f_i or only their mean satisfies it, the stronger per-client entry is drafted: a run that certifies it
# certifies the weaker one too, so the draft never lets a run count outside the theorem.
_SYM = r"(?:\\?([A-Za-z][A-Za-z0-9_]*)[$\s{}]*-\s*)?"
_PREMISES = (
    (re.compile(_SYM + r"strongly[\s-]+convex", re.I), "strongly_convex_clients", "mu"),
    (re.compile(_SYM + r"(?<!non)(?<!non-)smooth", re.I), "L_smooth", "L"),
    (re.compile(r"lipschitz[\s-]+(?:continuous[\s-]+)?gradient", re.I), "L_smooth", "L"),
    (re.compile(r"(?<![\w-])(?<!non)(?<!non-)(?<!strongly )(?<!strongly-)convex", re.I), "convex", ""),
    (re.compile(_SYM + r"(?:\bPL\b|Polyak|[LŁ]ojasiewicz)", re.I), "PL", "mu"),
    (re.compile(r"variance", re.I), "bounded_variance", "sigma"),
    (re.compile(r"stochastic gradients? (?:are |is )?bounded|bounded stochastic gradient", re.I), "bounded_gradient",
     "G"),
    (re.compile(r"(?<!stochastic )gradients? (?:are |is )?bounded|bounded gradient", re.I), "bounded_grad_norm", "G"),
    (re.compile(r"bounded below|lower[\s-]bounded", re.I), "lower_bounded", "f_star"),
    (re.compile(r"identical data|same data|i\.?i\.?d\.? data", re.I), "identical_data", ""),
)


def premises_in_words(text: str, symbols=()) -> list[DraftAssumption]:
    """The catalogue assumptions that ``text`` (a theorem's or an assumption environment's LaTeX) states in words:
    'L-smooth', '$\\mu$-strongly convex', 'convex', 'PL', 'bounded variance', 'bounded gradients', 'bounded
    below', 'identical data'. A symbol named before the word binds the catalogue's constant (NAME(symbol)) where the
    draft has that symbol (``symbols``); otherwise the constant binds by name. Each with the words that gave it."""
    names = set(symbols)
    flat = re.sub(r"\\(?:mathrm|text|mathit)\s*\{([^}]*)\}", r"\1", text)
    out: dict[str, DraftAssumption] = {}
    for pattern, name, const in _PREMISES:
        m = pattern.search(flat)
        if m is None or name in out or (name == "convex" and "strongly_convex_clients" in out):
            continue  # (mu-strongly convex already says convex)
        sym = m.group(1) if pattern.groups and m.group(1) else ""
        ref = f"{name}({sym})" if sym and const and sym != const and sym in names else name
        a, b = max(0, m.start() - 30), min(len(flat), m.end() + 10)
        out[name] = DraftAssumption(ref, " ".join(flat[a:b].split()))
    return list(out.values())


@dataclass
class DraftBound:
    """A displayed inequality ``lhs <= expr`` (or a stated order alone: ``expr`` None, ``order`` set)."""

    id: str
    title: str
    line: int
    label: str
    latex: str
    lhs: LeftSide
    lhs_dimension: str | None
    expr: sp.Expr | None
    strict: bool = False
    conditions: list[DraftCondition] = field(default_factory=list)
    definitions: list[DraftDefinition] = field(default_factory=list)
    order: sp.Expr | None = None
    order_variable: str = ""
    order_up_to_log: bool = False
    order_latex: str = ""
    notes: list[str] = field(default_factory=list)
    assumptions: list[DraftAssumption] = field(default_factory=list)
    #: what the user must still decide (a left side, a reading, a constant with no assumption, an undefined symbol):
    #: a record with one is a draft, its rows decided and shown, never counted (scope 'draft'), until each is resolved
    todo: list[str] = field(default_factory=list)
    macros: list[str] = field(default_factory=list)  # undefined macros of its display, each '\\name (line l, column c)'


@dataclass
class LatexDraft:
    """Everything read from one LaTeX source: the records to write, the symbol table, what did not parse.

    :func:`read_latex` makes it; :func:`records_source` writes it as ``records.py``. Every math item of the source
    ends in exactly one of ``bounds`` (with their conditions and definitions), ``not_drafted``, ``skipped``,
    ``unparsed``, ``without_relation`` or ``outside``.

    Parameters
    ----------
    path : str
        The source as given (a path, ``-`` or a label).
    sha256 : str
        The SHA-256 of the source text, hexadecimal (``records.py`` quotes it).
    bounds : list of DraftBound
        The drafted records: each displayed inequality (or stated order) with its conditions, definitions,
        assumptions and TODOs.
    definitions : list of DraftDefinition
        The definitions the bounds use.
    symbols : dict of str to DraftSymbol
        The symbol table by name: LaTeX, dimension, the catalogue's meaning.
    unparsed : list of Unparsed
        The snippets that did not parse, each with its position and reason.
    not_drafted : list of str
        Relations that parsed but are no record (a lower bound, an equation), each with its reason.
    macros : list of str
        The names of the macros the preamble defines (expanded before parsing).
    math_items : int
        The number of math items read.
    unused_definitions : list of DraftDefinition, optional
        Definitions that no bound uses.
    skipped : list of Skipped, optional
        Math read but stating nothing to draft (an index range, ``x \\in X``), each with its reason.
    undefined_macros : list of str, optional
        The macros used but not defined, each ``\\name (line l, column c): ...`` once.
    outside : list of tuple of (int, str), optional
        Math outside the theorem-like environments not read as statements: (line, what).
    without_relation : int, default 0
        The number of inline items that state no relation (``$f$``, ``$L$``).
    """

    path: str
    sha256: str
    bounds: list[DraftBound]
    definitions: list[DraftDefinition]
    symbols: dict[str, DraftSymbol]
    unparsed: list[Unparsed]
    not_drafted: list[str]  # relations that parsed but are no record (a lower bound, an equation)
    macros: list[str]
    math_items: int
    unused_definitions: list[DraftDefinition] = field(default_factory=list)  # defined, used by no bound
    skipped: list[Skipped] = field(default_factory=list)  # read, stating nothing to draft (an index range, x in X)
    undefined_macros: list[str] = field(default_factory=list)  # '\\name (line l, column c): ...' each once
    outside: list[tuple[int, str]] = field(default_factory=list)  # math not read as statements (Document.outside)
    without_relation: int = 0  # inline math that states no relation ($f$, $L$): symbols named in words

    @property
    def displays(self) -> int:
        return self.math_items


def _py_name(name: str) -> str:
    n = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not n or n[0].isdigit():
        n = "s_" + n
    if keyword.iskeyword(n) or n in _RESERVED:
        n += "_"
    return n


def _rename_keywords(e: sp.Basic) -> sp.Basic:
    """Symbols named like a Python keyword (lambda) get a trailing underscore: the record's text is sympified."""
    bad = {s: sp.Symbol(s.name + "_") for s in e.free_symbols if keyword.iskeyword(s.name)}
    return e.xreplace(bad) if bad else e


def _relation(rel: str, a: sp.Expr, b: sp.Expr):
    return {"le": sp.Le, "lt": sp.Lt, "ge": sp.Ge, "gt": sp.Gt, "eq": sp.Eq, "def": sp.Eq}[rel](a, b,
                                                                                                 evaluate=False)


def _order_variable(expr: sp.Expr) -> str:
    names = {s.name for s in expr.free_symbols}
    return next((v for v in ("T", "R", "K", "t", "tau", "k", "N", "n") if v in names),
                sorted(names)[0] if names else "T")


def _dimension_text(expr: sp.Expr, dims: dict[str, str]) -> str | None:
    """The dimension of ``expr`` as text, or None when a symbol has none or its terms disagree."""
    try:
        d = dimension_of(expr, dims)
    except (DimensionError, UnknownDimension):
        return None
    return format_dimension(parse_dimension(d)).replace("[", "").replace("]", "")


def _lhs_dimension(rel: Relation, dims: dict[str, str | None]) -> str | None:
    if rel.lhs.expr is None:
        return None
    return _dimension_text(rel.lhs.expr, {k: v for k, v in dims.items() if v})


_INDEX_NAMES = ("t", "k", "s", "i", "j", "tau")
_WORD_STEP = re.compile(r"(?:step[\s-]?sizes?|stepsizes?|learning[\s-]rates?|(?<![\w-])steps?)\s*(?:of|equal\s+to|is|=|:)?"  # noqa: E501 - a regular expression, kept whole
                        r"\s*\$([^$]{1,200})\$", re.I)
_WORD_RANGE = re.compile(r"(?:for|with)\s+(?:all|every|any)\s+([A-Za-z])\s*(>=|≥|>|<=|≤|<)\s*(\d+)(?![\w$])")


def _is_setting(name: str, uses: dict[str, SymbolUse]) -> bool:
    """Whether a symbol is a step size or a count the run sets (the catalogue's ``setting``): a rule for it is a
    condition of the statement, never a definition the bound substitutes."""
    u = uses.get(name) or SymbolUse(name, name, base=name.split("_")[0])
    if u.kind != "plain":
        return False
    note = lookup(u)
    if note is None or not note.setting:
        return False
    # a step size by its letter (eta_t, eta_l); a count by its name alone (S_T = sum_t (a+t)^2 is a weight, not S)
    return note.dimension != "1" or name in NOTATION


def _step_symbol(used: set[str], uses: dict[str, SymbolUse]) -> str:
    """The step-size symbol of a statement: the first the statement uses, else eta."""
    for n in sorted(used):
        note = lookup(uses.get(n) or SymbolUse(n, n, base=n.split("_")[0]))
        if note is not None and note.setting and note.dimension == "w^2/f":
            return n
    return "eta"


def _power_of_symbol(e: sp.Expr | None) -> tuple[str, sp.Expr] | None:
    """(name, k) when ``e`` is a symbol to a positive numeric power k (sigma^2)."""
    if isinstance(e, sp.Pow) and e.base.is_Symbol and e.exp.is_Number and e.exp > 0:
        return e.base.name, e.exp
    return None


def _constants_of(references) -> set[str]:
    """The symbols the record's assumptions bind: NAME(sym, ...) binds its arguments, NAME its constants' names."""
    from ..theory import CATALOGUE

    out: set[str] = set()
    for ref in references:
        m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*", ref)
        if m is None:
            continue
        entry = CATALOGUE.get(m.group(1))
        if m.group(2):
            out |= {a.strip() for a in m.group(2).split(",") if a.strip()}
        elif entry is not None:
            out |= {c.name for c in entry.constants}
    return out


def _assumption_constants() -> dict[str, list[str]]:
    """A catalogue constant's name -> the assumptions that bind it (L -> L_smooth, L_smooth_global)."""
    from ..theory import CATALOGUE

    out: dict[str, list[str]] = {}
    for name, entry in CATALOGUE.items():
        for c in entry.constants:
            out.setdefault(c.name, []).append(name)
    return out


def draft_from_latex(doc: Document, name: str) -> LatexDraft:
    """The draft of the records of ``doc`` for the paper ``name`` (see :func:`read_latex`). Every math item ends in
    exactly one place: drafted (a bound, a condition, a definition, a stated order), listed as not drafted with its
    reason (``not_drafted``, ``skipped``), or listed as not parsed (``unparsed``); inline math that states no relation
    is counted (``without_relation``); math outside the theorems is counted by line (``outside``).

    Parameters
    ----------
    doc : Document
        The math of the source, as :func:`read_document` found it.
    name : str
        The paper's name, the prefix of the drafted ids.

    Returns
    -------
    LatexDraft
        The draft.

    Raises
    ------
    LatexRefused
        When reading the file's math takes longer than the reading budget allows.
    """
    unparsed: list[Unparsed] = []
    skipped: list[Skipped] = []
    not_drafted: list[str] = []
    per_env: dict[int, list[Relation]] = {}
    outside_rels: list[Relation] = []
    item_macros: dict[int, list[str]] = {}
    undefined: dict[str, str] = {}
    without_relation = 0
    with reading_budget(MAX_READ_SECONDS, doc.path):
        for k, item in enumerate(doc.items):
            out = parse_item(item)
            for w, line, col in undefined_macros(item):
                undefined.setdefault(w, f"{w} (line {line}, column {col})")
                item_macros.setdefault(k, []).append(undefined[w])
            if not out:
                if item.display:
                    skipped.append(Skipped(item.text.strip()[:200], item.line, item.col,
                                           "a display with no relation (<=, =, ...): it states nothing to draft"))
                elif item.context != "outside":
                    without_relation += 1
            for r in out:
                if isinstance(r, Unparsed):
                    unparsed.append(r)
                elif isinstance(r, Skipped):
                    skipped.append(r)
                elif item.context == "outside":
                    r.item_key = k
                    outside_rels.append(r)
                else:
                    r.item_key = k
                    per_env.setdefault(item.env_index, []).append(r)
        words_conditions = _conditions_in_words(doc)
    uses: dict[str, SymbolUse] = {}
    bounds: list[DraftBound] = []
    definitions: list[DraftDefinition] = []
    unused_defs: list[DraftDefinition] = []
    counters: dict[str, int] = {}
    eq_count = 0

    def_ids: set[str] = set()

    def as_definition(r: Relation, outside: bool = False) -> DraftDefinition | None:
        if r.rel not in ("eq", "def") or r.rhs.expr is None or r.lhs.expr is None:
            return None
        rhs = _rename_keywords(r.rhs.expr)
        if r.lhs.expr.is_Symbol:
            sym, note = r.lhs.expr.name, ""
        elif _power_of_symbol(r.lhs.expr) is not None:
            sym, k = _power_of_symbol(r.lhs.expr)
            rhs, note = rhs ** (1 / k), f"{r.lhs.expr} = ... read as {sym} = (...)^(1/{k}) ({sym} >= 0)"
        else:
            return None
        did = f"{name}.{_py_name(sym)}"
        n = 1
        while did in def_ids:  # a symbol defined in two statements: each its own Definition, never the first for both
            n += 1
            did = f"{name}.{_py_name(sym)}_{n}"
        def_ids.add(did)
        return DraftDefinition(did, sym, rhs, r.latex, r.item.line, note=note, outside=outside)

    # definitions outside the theorems (where $\sigma^2 = ...$): offered to every statement that uses the symbol
    file_defs: list[DraftDefinition] = []
    for r in outside_rels:
        for u in r.symbols.values():
            uses.setdefault(u.name, u)
        d = as_definition(r, outside=True)
        if d is None:
            skipped.append(Skipped(r.latex, r.item.line, r.item.col, "outside the theorem-like environments, where "
                                   "only a definition of one symbol by a formula is read: not read as a statement"))
        elif _is_setting(d.symbol, r.symbols):
            skipped.append(Skipped(r.latex, r.item.line, r.item.col, f"outside the theorem-like environments: a value "
                                   f"of the setting {d.symbol} in the text, not a condition of the theorems"))
        elif any(f.symbol == d.symbol for f in file_defs):
            first = next(f for f in file_defs if f.symbol == d.symbol)
            skipped.append(Skipped(r.latex, r.item.line, r.item.col, f"defines {d.symbol} again outside the theorems: "
                                   f"the first definition (line {first.line}) is the one offered to the theorems"))
        else:
            file_defs.append(d)
    for env, rels in per_env.items():
        if env >= 0:
            env_name, title, label, line = doc.theorems[env]
            short = _ENV_SHORT.get(env_name.rstrip("*"), re.sub(r"[^a-z0-9]", "", env_name.lower()) or "stmt")
            counters[short] = counters.get(short, 0) + 1
            stem = f"{name}.{short}{counters[short]}"
        else:
            title, label, stem = "", "", ""
        env_defs: list[DraftDefinition] = []
        env_conds: list[DraftCondition] = []
        env_bounds: list[DraftBound] = []
        env_orders: list[Relation] = []
        env_macros: list[str] = []

        def condition(rel: sp.Basic, r: Relation, todo: str = "", origin: str = "") -> None:
            env_conds.append(DraftCondition(f"condition_{len(env_conds) + 1}", rel, r.latex, r.item.line, todo, origin))

        for r in rels:
            env_macros += [m for m in item_macros.get(r.item_key, []) if m not in env_macros]
            for u in r.symbols.values():
                uses.setdefault(u.name, u)
            d = as_definition(r)
            if d is not None:
                # a rule for a step size or a count: a condition, never substituted
                if _is_setting(d.symbol, r.symbols):
                    t = d.expr.free_symbols & {sp.Symbol(i) for i in _INDEX_NAMES}
                    condition(sp.Eq(sp.Symbol(d.symbol), d.expr, evaluate=False), r,
                              (f"the rule for {d.symbol} depends on the index {', '.join(sorted(map(str, t)))}: a step "
                               "schedule; write it in the run's terms (lr, lr_offset, lr_schedule: docs/extending.md, "
                               "'Conditions and requires')") if t else "", f"the rule {d.symbol} = {d.expr}")
                else:
                    env_defs.append(d)
                continue
            if r.rhs.order is not None:
                env_orders.append(r)
                continue
            if r.rel in ("eq", "def"):
                what = ("an equation whose right side did not parse" if r.rhs.expr is None else
                        "an equation (an Identity, or a Definition when its left side is one symbol)")
                not_drafted.append(f"line {r.item.line}: {r.latex[:100]} -- {what}")
                continue
            both = r.lhs.expr is not None and r.rhs.expr is not None
            single = both and r.lhs.expr.is_Symbol and _is_setting(r.lhs.expr.name, r.symbols)
            if not r.item.display or single:  # inline in the statement, or a displayed rule on a setting
                if both:
                    condition(_relation(r.rel, _rename_keywords(r.lhs.expr), _rename_keywords(r.rhs.expr)), r)
                else:
                    not_drafted.append(f"line {r.item.line}: {r.latex[:100]} -- a condition whose left side did "
                                       "not parse (see its reading)")
                continue
            if r.rel in ("le", "lt") and r.rhs.expr is not None:
                if env < 0:
                    eq_count += 1
                    bid = f"{name}.{_py_name(r.item.label)[:60] if r.item.label else f'eq{eq_count}'}"
                    btitle = f"display at line {r.item.line}" + (f" ({r.item.label})" if r.item.label else "")
                else:
                    bid = stem if not env_bounds else f"{stem}_{len(env_bounds) + 1}"
                    btitle = title + (f" ({label})" if label else "")
                lhs = match_left_side(r.lhs, r.symbols)
                b = DraftBound(bid, btitle, r.item.line, r.item.label or label, r.latex, lhs, None,
                               _rename_keywords(r.rhs.expr), strict=r.rel == "lt", notes=list(r.notes),
                               macros=list(item_macros.get(r.item_key, [])))
                env_bounds.append(b)
                for alt in lhs.alternatives:  # another reading of the same left side: its own record, to choose
                    env_bounds.append(dataclasses.replace(b, id=f"{bid}_{len(env_bounds) + 1}", lhs=alt,
                                                          notes=list(b.notes), macros=list(b.macros)))
                continue
            what = {"ge": "a lower bound (a Bound is lhs <= expr: rewrite it as one)",
                    "gt": "a lower bound (a Bound is lhs <= expr: rewrite it as one)"}.get(
                r.rel, "an upper bound whose right side did not parse")
            not_drafted.append(f"line {r.item.line}: {r.latex[:100]} -- {what}")
        for o in env_orders:
            target = env_bounds[-1] if env_bounds else None
            expr = _rename_keywords(o.rhs.order)
            if target is None or target.order is not None:
                oid = (stem or f"{name}.eq{eq_count + 1}") + ("_rate" if env_bounds else "")
                if env < 0:
                    eq_count += 1
                lhs = match_left_side(o.lhs, o.symbols)
                target = DraftBound(oid, (title or f"display at line {o.item.line}") + " (stated order)", o.item.line,
                                    o.item.label or label, o.latex, dataclasses.replace(lhs, alternatives=()), None,
                                    None, notes=list(o.notes), macros=list(item_macros.get(o.item_key, [])))
                env_bounds.append(target)
            target.order, target.order_up_to_log, target.order_latex = expr, o.rhs.up_to_log, o.latex
            target.order_variable = _order_variable(expr)
        words = doc.theorem_texts[env] if 0 <= env < len(doc.theorem_texts) else ""
        if env >= 0 and env_bounds:  # a step size or a range said in words: conditions too
            used = {s.name for b in env_bounds for part in (b.expr, b.order) if part is not None
                    for s in part.free_symbols} | {s.name for c in env_conds for s in c.relation.free_symbols}
            stated = {str(c.relation.lhs) for c in env_conds if isinstance(c.relation, sp.Equality)}
            for kind, latex_or_rel, line, words_text in words_conditions.get(env, []):
                if kind == "step":
                    sym = _step_symbol(used, uses)
                    if sym in stated:
                        continue
                    try:
                        value = parse_math(latex_or_rel, uses=uses).expr
                    except Unparseable as exc:
                        not_drafted.append(f"line {line}: the step size in the words '{words_text}' -- did not "
                                           f"parse ({exc})")
                        continue
                    if value is None or value.is_Symbol:  # 'step size $\\eta$' names the symbol: no rule
                        continue
                    env_conds.append(DraftCondition(
                        f"condition_{len(env_conds) + 1}", sp.Eq(sp.Symbol(sym), _rename_keywords(value),
                                                                 evaluate=False), latex_or_rel, line,
                        f"the step size of the words '{words_text}' is drafted as {sym} = {value}: confirm the symbol",
                        f"the words '{words_text}'"))
                    stated.add(sym)
                else:
                    env_conds.append(DraftCondition(f"condition_{len(env_conds) + 1}", latex_or_rel, words_text, line,
                                                    "", f"the words '{words_text}'"))
        if re.search(r"assumption|hypothes", words, re.I):  # 'Under Assumptions 1-3': the file's assumption texts
            words += "\n" + "\n".join(doc.assumption_texts)
        for b in env_bounds:
            b.conditions = list(env_conds)
            used = set()
            for part in [b.expr, b.order] + [c.relation for c in b.conditions]:
                if part is not None:
                    used |= {s.name for s in part.free_symbols}
            b.definitions = [d for d in env_defs if d.symbol in used]
            known = {d.symbol for d in b.definitions}
            b.definitions += [d for d in file_defs if d.symbol in used and d.symbol not in known]
            b.assumptions = premises_in_words(words, used)
            b.macros = list(dict.fromkeys(b.macros + env_macros))
        if not env_bounds:  # a statement with no bound: its conditions have nothing to hold
            not_drafted += [f"line {c.line}: {c.latex[:100]} -- a condition of a statement with no bound drafted "
                            "(nothing to attach it to)" for c in env_conds]
        for d in env_defs:  # a definition no bound uses is said, never dropped
            if not any(d in b.definitions for b in env_bounds):
                not_drafted.append(f"line {d.line}: {d.latex[:100]} -- defines {d.symbol}, which no bound of the "
                                   "statement uses (records.py lists it as a TODO)")
                unused_defs.append(d)
        definitions += env_defs
        bounds += env_bounds
    for d in file_defs:
        if any(d in b.definitions for b in bounds):
            definitions.append(d)
        else:
            not_drafted.append(f"line {d.line}: {d.latex[:100]} -- defines {d.symbol} outside the theorems, which no "
                               "bound uses")
    names_used: set[str] = set()
    for b in bounds:
        for part in [b.expr, b.order] + [c.relation for c in b.conditions] + [d.expr for d in b.definitions]:
            if part is not None:
                names_used |= {s.name for s in part.free_symbols}
        names_used |= {d.symbol for d in b.definitions}
    symbols: dict[str, DraftSymbol] = {}
    for n in sorted(names_used, key=lambda x: (x.lower(), x)):
        u = (uses.get(n) or uses.get(n.rstrip("_"))
             or SymbolUse(n, ("\\" + n) if n in GREEK else n, base=n.split("_")[0]))
        note = lookup(u)
        symbols[n] = DraftSymbol(n, u.latex, note.dimension if note else None,
                                 note.meaning if note else ("a sum over an index: measured on the run"
                                                            if u.kind == "sum"
                                                            else "not in the catalogue"),
                                 note.check if note else "", u.kind)
    dims = {n: s.dimension for n, s in symbols.items()}
    known = lambda: {k: v for k, v in dims.items() if v}  # noqa: E731
    for n, s in symbols.items():  # a sum has its summand's dimension
        u = uses.get(n)
        if s.kind == "sum" and u is not None and u.summand is not None:
            d = _dimension_text(u.summand, {**known(), **{k: dimension_of_use(v) for k, v in uses.items()
                                                          if dimension_of_use(v)}})
            if d:
                s.dimension, s.meaning = d, s.meaning + " (dimension: its summand's)"
                dims[n] = d
    rules = [(sp.Symbol(c.relation.lhs.name), c.relation.rhs, c.line) for b in bounds for c in b.conditions
             if isinstance(c.relation, sp.Equality) and c.relation.lhs.is_Symbol]
    for df in definitions + [DraftDefinition("", str(s), e, "", ln) for s, e, ln in rules]:
        # a defined symbol (or one a rule sets) has its definition's dimension
        if df.symbol in symbols:
            d = _dimension_text(df.expr, known())
            s = symbols[df.symbol]
            s.meaning = (f"defined at line {df.line}" if df.id else f"set by a rule at line {df.line}") + (
                " (dimension: its definition's)" if d else "")
            if d and d != dims.get(df.symbol):
                s.check = (f"the catalogue says {s.dimension}; " if s.dimension else "") + s.check
                s.dimension = d
                dims[df.symbol] = d
    for b in bounds:
        if not b.lhs.measure:
            rel_lhs = next((r for rels in per_env.values() for r in rels if r.latex == b.latex), None)
            if rel_lhs is not None:
                b.lhs_dimension = _lhs_dimension(rel_lhs, {**dims, **{k: lookup(v).dimension if lookup(v) else None
                                                                      for k, v in rel_lhs.symbols.items()}})
    for k, b in enumerate(bounds):
        b.todo = _todos(b, symbols, uses, [x for x in bounds if x is not b and x.latex == b.latex and x.line == b.line])
    return LatexDraft(path=doc.path, sha256=hashlib.sha256(doc.text.encode("utf-8", "replace")).hexdigest(),
                      bounds=bounds, definitions=definitions, symbols=symbols, unparsed=unparsed,
                      not_drafted=not_drafted, macros=sorted(doc.macros), math_items=len(doc.items),
                      unused_definitions=unused_defs, skipped=skipped,
                      undefined_macros=[v + ": not defined in the file; read as "
                                        + ("an expectation" if v.startswith("\\E ") else "the name it spells")
                                        for v in undefined.values()],
                      outside=list(doc.outside), without_relation=without_relation)


def _conditions_in_words(doc: Document) -> dict[int, list[tuple]]:
    """Per theorem: the step size its words state with an inline value and no relation ('with step size $1/L$':
    ('step', '1/L', line, words)) and the ranges its words state outside math ('for all K >= 1': ('range',
    relation, line, words))."""
    out: dict[int, list[tuple]] = {}
    for env, text in enumerate(doc.theorem_texts):
        start_line = doc.theorems[env][3]
        flat = re.sub(r"\\(?:mathrm|text|mathit)\s*\{([^}]*)\}", r"\1", text)
        for m in _WORD_STEP.finditer(flat):
            value = m.group(1)
            if re.search(r"(?<![<>!:\\])=|\\le|\\ge|<|>|\\in(?![a-zA-Z])", value):
                continue  # a relation ($\eta = 1/L$): read as math already
            line = start_line + flat[:m.start()].count("\n")
            out.setdefault(env, []).append(("step", value, line, " ".join(m.group().split())[:80]))
        plain = re.sub(r"\$[^$]*\$", " ", flat)
        for m in _WORD_RANGE.finditer(plain):
            op = {"≥": ">=", "≤": "<=", ">=": ">=", "<=": "<="}.get(m.group(2), m.group(2))
            rel = {">=": sp.Ge, ">": sp.Gt, "<=": sp.Le, "<": sp.Lt}[op](sp.Symbol(m.group(1)), sp.Integer(m.group(3)),
                                                                        evaluate=False)
            line = start_line + plain[:m.start()].count("\n")
            out.setdefault(env, []).append(("range", rel, line, " ".join(m.group().split())))
    return out


def _todos(b: DraftBound, symbols: dict[str, DraftSymbol], uses: dict[str, SymbolUse],
           siblings: list[DraftBound]) -> list[str]:
    """What the user must still decide before the drafted record is a record (each one line)."""
    todo: list[str] = []
    if b.lhs.alternatives or b.lhs.reading:
        others = ", ".join(f"{x.id} ({x.lhs.reading})" for x in siblings if x.lhs.reading)
        todo.append(f"choose the reading of the left side: this record reads it as {b.lhs.reading}; {others} "
                    "reads it otherwise (the last iterate would be a third). Keep one record, delete the others")
    if b.lhs.todo:
        todo.append("left side: " + b.lhs.todo)
    if not b.lhs.measure and b.expr is not None:
        todo.append("the left side's dimension: confirm units=Units(lhs=...)" if b.lhs_dimension else
                    "the left side's dimension: units=Units(lhs='...')")
    informational = ("sum over ", "a chain of ")
    todo += [f"confirm the reading: {n}" for n in b.notes if not n.startswith(informational)]
    todo += [f"undefined macro {m}" for m in b.macros]
    if b.expr is not None and not b.assumptions:
        todo.append("assumptions: none found in the theorem's words; name them (docs/assumptions.md)")
    todo += [f"condition {c.name}: {c.todo}" for c in b.conditions if c.todo]
    todo += [f"definition of {d.symbol} (line {d.line}) is outside the theorem: confirm it is the theorem's"
             for d in b.definitions if d.outside]
    todo += [f"definition of {d.symbol}: confirm the reading {d.note}" for d in b.definitions if d.note]
    # every symbol of the statement is defined, bound to an assumption, measured, or a setting of the run
    used: set[str] = set()
    for part in [b.expr, b.order] + [c.relation for c in b.conditions] + [d.expr for d in b.definitions]:
        if part is not None:
            used |= {s.name for s in part.free_symbols}
    defined = {d.symbol for d in b.definitions}
    bound = _constants_of(a.reference for a in b.assumptions)
    by_constant = _assumption_constants()
    for n in sorted(used - defined, key=lambda x: (x.lower(), x)):
        s = symbols.get(n)
        u = uses.get(n)
        if s is None or s.kind in ("sum", "norm", "dist", "grad", "loss", "loss_opt") or n in bound:
            continue
        note = lookup(u or SymbolUse(n, n, base=n.split("_")[0]))
        base = u.base if u is not None and u.base else n.split("_")[0]
        assumptions = by_constant.get(n) or by_constant.get(base)
        if s.dimension is None:
            todo.append(f"{n}: undefined (not in the catalogue, no definition): say what it is and give its dimension")
        elif assumptions and not (note is not None and note.setting):
            todo.append(f"{n}: no assumption of the record binds it (the catalogue's {', '.join(assumptions)}); bind "
                        f"it, define it, or confirm it is a setting of the run")
        elif s.check:
            todo.append(f"{n}: read as {s.meaning} ({s.dimension}); it may be: {s.check}. Confirm")
        elif note is None or not note.setting:
            todo.append(f"{n}: not defined in the theorem; the catalogue reads it as {s.meaning} ({s.dimension}): "
                        "define it, bind it to an assumption, or confirm")
    return list(dict.fromkeys(todo))


def read_latex(source: str, name: str = "paper", *, text: str | None = None, stdin=None) -> LatexDraft:
    """Read a LaTeX file (``-``: standard input; or ``text`` given directly) into a :class:`LatexDraft` for the
    paper ``name``: each displayed inequality a bound (its right side in sympy, its left side matched to a measure
    where the notation is standard), each inline relation inside the same theorem-like environment a condition,
    each ``X = ...`` with one symbol on the left a definition, each ``\\mathcal{O}(...)`` a stated order; the
    symbols with a dimension from the catalogue of FL notation; what did not parse, with the reason.

    Hostile input (over 4 MiB, braces nested over 64 deep, a display of over 20,000 characters or 400 terms, a
    macro that does not stop expanding) raises :class:`~fedtheory.latex.LatexRefused` (a ParameterError: exit 2 in
    the CLI) before any parsing. Needs the extra ``fedtheory[latex]``.

    Parameters
    ----------
    source : str
        The path of a ``.tex`` file (or a Markdown file with ``$$...$$``), or ``-`` for standard input; with
        ``text`` only its label.
    name : str, default "paper"
        The paper's name, the prefix of the drafted ids.
    text : str, optional
        The LaTeX itself, instead of reading ``source``.
    stdin : file-like, optional
        The stream read for ``source == "-"`` (default ``sys.stdin``).

    Returns
    -------
    LatexDraft
        The draft of the records.

    Raises
    ------
    LatexRefused
        For hostile input (sizes, nesting, macros) or a file that is not a readable regular file.
    """
    from .expression import require_parser

    require_parser()
    body = text if text is not None else read_latex_file(source, stdin=stdin)
    return draft_from_latex(read_document(body, source), name)


# ------------------------------------------------------------------------------------ records.py
#
# records.py is code generated from a user's file: every string of the file reaches it through repr() (_q), a
# comment or the docstring only escaped (_comment, _doc: one line, control characters as escapes, no quote that
# closes the docstring), and every formula through _expr_text, whose text holds only the draft's symbols, sympy's
# functions, numbers and operators (checked token by token, and read back to the same symbols) before
# ``sp.sympify`` in records.py ever sees it. _check_generated then holds the whole text to that shape.


def _q(s) -> str:
    """A Python string literal of ``s``."""
    return repr(str(s))


def _comment(s) -> str:
    """``s`` on one comment line: runs of white space are one space, control characters escaped (a NUL, a CR, a
    line separator never reach the file)."""
    return printable(re.sub(r"\s+", " ", str(s)).strip(), keep="")


def _doc(s) -> str:
    """``s`` inside the module's docstring: as in a comment, with backslashes and quotes escaped."""
    return _comment(s).replace("\\", "\\\\").replace('"', '\\"')


class _RecordPrinter(StrPrinter):
    """sympy's str printer, with Euler's number written exp(1): 'E' is a symbol of the paper (local epochs)."""

    def _print_Exp1(self, expr):
        return "exp(1)"


_FUNCTIONS = frozenset("exp log sqrt Max Min Abs Sum Product floor ceiling factorial binomial sin cos tan Eq "
                       "Piecewise Rational".split())
_CONSTANTS = frozenset({"pi", "oo"})
_TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\*\*|==|<=|>=|[-+*/(),<>]")


def _expr_text(e: sp.Basic, names=None) -> str:
    """The text of a formula for ``F('...')`` in records.py. Its identifiers are the draft's symbols (``names``), a
    sum's index, sympy's functions and pi, oo; read back with the symbols it is the same formula's symbols (Euler's
    e stays apart from a symbol E). Anything else is a bug of the draft: a RuntimeError, never a file written."""
    text = _RecordPrinter({"order": "none"}).doprint(e)
    names = {s.name for s in e.free_symbols} if names is None else set(names)
    indices = {str(v) for x in e.atoms(sp.Sum, sp.Product) for v in x.variables}
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() != pos:
            break
        tok, pos = m.group(), m.end()
        if tok[0].isalpha() or tok[0] == "_":
            call = text[pos:pos + 1] == "("
            ok = (tok in _FUNCTIONS and tok not in names) if call else (tok in names | indices | _CONSTANTS)
            if not ok:
                raise RuntimeError(f"records.py would hold {tok!r} in the formula {text[:80]!r} (a bug of fedtheory)")
    if pos != len(text):
        raise RuntimeError(f"records.py would hold {text[pos:pos + 20]!r} in a formula (a bug of fedtheory)")
    sides = (e.lhs, e.rhs) if isinstance(e, sp.core.relational.Relational) else (e,)
    for side in sides:
        back = sp.sympify(_RecordPrinter({"order": "none"}).doprint(side),
                          locals={n: sp.Symbol(n) for n in names | indices})
        if ({x.name for x in back.free_symbols} != {x.name for x in side.free_symbols}
                or back.has(sp.E) != side.has(sp.E)):
            raise RuntimeError(f"the formula {text[:80]!r} does not read back as itself (a bug of fedtheory)")
    return text


def _check_generated(text: str) -> None:
    """The generated module's shape: it compiles, its imports are sympy's and fedtheory.theory's, and it calls only
    the names a records.py uses (a payload that escaped a string would be a call to something else)."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:
        raise RuntimeError(f"records.py does not compile ({exc}): a bug of fedtheory") from None
    allowed_calls = {"register", "Bound", "Condition", "Definition", "OrderStatement", "Order", "SymbolSet",
                     "Units", "F", "S.add", "sp.sympify", "sp.Interval"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            if not all(m in ("sympy", "fedtheory.theory") for m in mods):
                raise RuntimeError(f"records.py would import {mods} (a bug of fedtheory)")
        elif isinstance(node, ast.Call):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else (
                f"{f.value.id}.{f.attr}" if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else "?")
            if called not in allowed_calls:
                raise RuntimeError(f"records.py would call {called} (a bug of fedtheory)")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise RuntimeError(f"records.py would reach {node.attr} (a bug of fedtheory)")


def records_source(draft: LatexDraft, name: str, source_label: str | None = None) -> str:
    """The text of ``records.py`` for the draft: one SymbolSet with the symbol table, one Bound per displayed
    inequality (with its LaTeX quoted, its conditions, definitions and stated order), and in ``todo`` what the user
    must still decide (a record with a TODO is a draft: its rows are never counted). Every string of the source
    reaches the text through repr() or escaped in a comment; the text is checked before it is returned
    (``name``: a Python identifier, else a ParameterError).

    Parameters
    ----------
    draft : LatexDraft
        The draft :func:`read_latex` made.
    name : str
        The paper's name: a Python identifier.
    source_label : str, optional
        How ``records.py`` names its source (default: the file name of ``draft.path``).

    Returns
    -------
    str
        The text of ``records.py``.

    Raises
    ------
    ParameterError
        When ``name`` is not a Python identifier.
    """
    from .._validation import ParameterError

    if not (isinstance(name, str) and name.isascii() and name.isidentifier() and not keyword.iskeyword(name)):
        raise ParameterError("name", name, "a Python identifier (the paper's name)")
    label = source_label or Path(draft.path).name
    strict = all(s.dimension for s in draft.symbols.values())
    names = set(draft.symbols)
    lines = [f'"""{name}: records drafted by `fedtheory new-paper {name} --from-latex {_doc(label)}`.',
             "",
             f"Source: {_doc(label)} (sha256 {draft.sha256[:16]}). Every "
             "right side was parsed from the LaTeX by sympy; every",
             "dimension comes from a catalogue of common FL notation, and every left side was matched by its shape.",
             "A record with a `todo` is a draft: `fedtheory check` "
             "decides and shows its rows but never counts them, and",
             "lists its TODOs. Resolve each (confirm or edit what it "
             "names), then delete it; with none left it is a record.",
             "`fedtheory check --plugin <this package> --paper NAME` runs the units check of every record at once.",
             '"""',
             "import sympy as sp",
             "",
             "from fedtheory.theory import Bound, Condition, Definition, "
             "OrderStatement, Order, SymbolSet, Units, register  # noqa: F401",
             "",
             f"PAPER = {_q(name)}",
             f"SOURCE = {_q(label)}",
             ""]
    if strict:
        lines.append("S = SymbolSet(PAPER, strict=True)")
    else:
        unknown = ", ".join(n for n, s in draft.symbols.items() if not s.dimension)
        lines += [f"# TODO dimensions: {_comment(unknown)} (not in the "
                  "catalogue). Give each a dim= and make the set strict:",
                  "# until then the units check says 'unknown' for the records that use them.",
                  "S = SymbolSet(PAPER)"]
    lines.append("# name, description, dimension: [f] loss, [w] parameter (docs/extending.md, 'Dimensions')")
    for n, s in draft.symbols.items():
        desc = f"{s.meaning} [LaTeX: {s.latex}]" + (f" TODO check: {s.check}" if s.check else "")
        dim = f", dim={_q(s.dimension)}" if s.dimension else ""
        # a loss value may be any real (f* = 0 is common); a norm or a sum is >= 0; the rest positive (the default)
        dom = ", sp.Reals" if s.kind in ("loss", "loss_opt") else ", sp.Interval(0, sp.oo)" if s.kind in (
            "norm", "dist", "grad", "sum") else ""
        lines.append(f"{_py_name(n)} = S.add({_q(n)}, {_q(desc)}{dom}{dim})")
    lines += ["SYMS = {s.name: s for s in (" + ", ".join(_py_name(n) for n in draft.symbols)
              + ("," if len(draft.symbols) == 1 else "") + ")}",
              "",
              "",
              "def F(text):",
              '    """A formula in the symbols above (sympy syntax; exp(1) is Euler\'s number)."""',
              "    return sp.sympify(text, locals=SYMS)",
              ""]
    written_defs: dict[str, str] = {}
    for b in draft.bounds:
        for d in b.definitions:
            if d.id in written_defs:
                continue
            var = _py_name("DEF_" + d.id.split(".", 1)[1])
            written_defs[d.id] = var
            lines += ["", f"# line {d.line}: {_comment(d.latex)}" + (f" ({_comment(d.note)})" if d.note else ""),
                      f"{var} = Definition({_q(d.id)}, PAPER, {_py_name(d.symbol)}, "
                      f"F({_q(_expr_text(d.expr, names))}), SOURCE + {_q(f', line {d.line}')}, title={_q(d.symbol)})"]
    for b in draft.bounds:
        var = _py_name(b.id.split(".", 1)[1].upper())
        lines += ["", f"# line {b.line}: {_comment(b.latex)}"]
        lhs = b.lhs.measure or "TODO"
        units = ""
        if b.lhs.dimension:
            units = (f"    units=Units(lhs={_q(b.lhs.dimension)}),  # "
                     f"{_comment(b.lhs.measure)} is computed by the check\n")
        elif not b.lhs.measure and b.lhs_dimension:
            units = f"    units=Units(lhs={_q(b.lhs_dimension)}),  # the left side's dimension, from its symbols\n"
        kind = b.lhs.kind or "none"
        conds = "".join(f"        Condition({_q(c.name)}, F({_q(_expr_text(c.relation, names))}), "
                        f"SOURCE + {_q(f', line {c.line}')}),  # {_comment(c.origin or c.latex)}\n"
                        for c in b.conditions)
        defs = ", ".join(written_defs[d.id] for d in b.definitions)
        order = ""
        if b.order is not None:
            order = (f"    order=Order(F({_q(_expr_text(b.order, names))}), {_py_name(b.order_variable)}, "
                     f"up_to_log={b.order_up_to_log}, source=SOURCE + {_q(f', line {b.line}')}),  "
                     f"# {_comment(b.order_latex)[:80]}\n")
        note = "; ".join(f"reading: {n}" for n in b.notes)
        todo = ""
        if b.todo:
            todo = ("    # a draft until each TODO is resolved (confirm or edit what it names, then delete it): its "
                    "rows are\n    # decided and shown, never counted (docs/extending.md, section 10)\n    todo=(\n"
                    + "".join(f"        {_q(t)},\n" for t in b.todo) + "    ),\n")
        source = (f"    source=SOURCE + {_q(f', line {b.line}' + (f' ({b.label})' if b.label else ''))}, "
                  "symbols=S,\n")
        if b.expr is None:  # a stated order alone
            lines.append(f"{var} = register(OrderStatement(\n"
                         f"    id={_q(b.id)}, paper=PAPER, title={_q(b.title or b.id)},\n" + source +
                         f"    statement={_q(b.latex[:400])},\n" + order + todo +
                         f"    note={_q(note)},\n"
                         "))")
            continue
        if b.assumptions:
            refs = ", ".join(_q(a.reference) for a in b.assumptions)
            premises = ("    # drafted from the theorem's words (confirm each; docs/assumptions.md): "
                        + "; ".join(f"{_comment(a.reference)}: "
                                    f"'{_comment(a.words)[:60]}'" for a in b.assumptions) + "\n"
                        f"    assumptions=({refs},),\n")
        else:
            premises = ("    # TODO assumptions: none found in the theorem's words. Name them (docs/assumptions.md):\n"
                        "    # a run counts only where its problem certifies every one, e.g. "
                        "assumptions=('L_smooth',),\n")
        lines.append(f"{var} = register(Bound(\n"
                     f"    id={_q(b.id)}, paper=PAPER, title={_q(b.title or b.id)},\n" + source +
                     f"    quote={_q(b.latex[:400])},\n"
                     f"    lhs={_q(lhs)}, lhs_kind={_q(kind)}, lhs_description={_q(b.lhs.description[:400])},\n"
                     + premises + units +
                     f"    expr=F({_q(_expr_text(b.expr, names))}),\n"
                     + (f"    conditions=(\n{conds}    ),\n" if conds else "")
                     + (f"    definitions=({defs},),\n" if defs else "")
                     + order + todo +
                     f"    note={_q(note)},\n"
                     "))")
    for d_id, var in written_defs.items():
        lines.append(f"register({var})")
    for d in draft.unused_definitions:
        lines += ["", f"# TODO line {d.line}: {_comment(d.latex)}",
                  f"# defines {_comment(d.symbol)} = {_comment(_expr_text(d.expr))}, which no bound uses: add it to a "
                  "bound's definitions (a Definition) if the bound means it, or delete this note."]
    text = "\n".join(lines) + "\n"
    _check_generated(text)
    return text
