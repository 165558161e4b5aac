"""A LaTeX source -> a draft of records: bounds, definitions, conditions, stated orders, the symbol table; and the
``records.py`` of a new plug-in written from it (``fedtheory new-paper NAME --from-latex FILE``)."""
from __future__ import annotations

import hashlib
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp

from ..theory.dimensions import DimensionError, UnknownDimension, dimension_of, format_dimension, parse_dimension
from .expression import Relation, SymbolUse, Unparsed, parse_item
from .notation import LeftSide, dimension_of_use, lookup, match_left_side
from .source import Document, read_document, read_latex_file

__all__ = ["DraftAssumption", "DraftBound", "DraftDefinition", "DraftCondition", "DraftSymbol", "LatexDraft", "draft_from_latex",
           "read_latex", "records_source"]

_ENV_SHORT = {"theorem": "thm", "thm": "thm", "lemma": "lemma", "lem": "lemma", "corollary": "cor", "cor": "cor",
              "proposition": "prop", "prop": "prop", "claim": "claim"}
_RESERVED = {"sp", "S", "PAPER", "SOURCE", "F", "Bound", "Condition", "Definition", "OrderStatement", "StatedOrder",
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
    name: str
    relation: sp.Basic
    latex: str
    line: int


@dataclass
class DraftDefinition:
    id: str
    symbol: str
    expr: sp.Expr
    latex: str
    line: int


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


@dataclass
class LatexDraft:
    """Everything read from one LaTeX source: the records to write, the symbol table, what did not parse."""

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
    return next((v for v in ("T", "R", "K", "t", "tau", "k", "N", "n") if v in names), sorted(names)[0] if names else "T")


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


def draft_from_latex(doc: Document, name: str) -> LatexDraft:
    """The draft of the records of ``doc`` for the paper ``name`` (see :func:`read_latex`)."""
    unparsed: list[Unparsed] = []
    not_drafted: list[str] = []
    per_env: dict[int, list[Relation]] = {}
    for item in doc.items:
        for r in parse_item(item):
            if isinstance(r, Unparsed):
                unparsed.append(r)
            else:
                per_env.setdefault(item.env_index, []).append(r)
    uses: dict[str, SymbolUse] = {}
    bounds: list[DraftBound] = []
    definitions: list[DraftDefinition] = []
    unused_defs: list[DraftDefinition] = []
    counters: dict[str, int] = {}
    eq_count = 0
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
        for r in rels:
            for u in r.symbols.values():
                uses.setdefault(u.name, u)
            single = r.lhs.expr is not None and r.lhs.expr.is_Symbol
            if r.rel in ("eq", "def") and single and r.rhs.expr is not None:
                sym = r.lhs.expr.name
                did = f"{name}.{_py_name(sym)}"
                env_defs.append(DraftDefinition(did, sym, _rename_keywords(r.rhs.expr), r.latex, r.item.line))
                continue
            if r.rhs.order is not None:
                env_orders.append(r)
                continue
            if not r.item.display:
                if r.rel in ("le", "lt", "ge", "gt") and r.lhs.expr is not None and r.rhs.expr is not None:
                    env_conds.append(DraftCondition(f"condition_{len(env_conds) + 1}",
                                                    _relation(r.rel, _rename_keywords(r.lhs.expr),
                                                              _rename_keywords(r.rhs.expr)), r.latex, r.item.line))
                continue
            if r.rel in ("le", "lt") and r.rhs.expr is not None:
                if env < 0:
                    eq_count += 1
                    bid = f"{name}.{_py_name(r.item.label) if r.item.label else f'eq{eq_count}'}"
                    btitle = f"display at line {r.item.line}" + (f" ({r.item.label})" if r.item.label else "")
                else:
                    bid = stem if not env_bounds else f"{stem}_{len(env_bounds) + 1}"
                    btitle = title + (f" ({label})" if label else "")
                lhs = match_left_side(r.lhs, r.symbols)
                env_bounds.append(DraftBound(bid, btitle, r.item.line, r.item.label or label, r.latex, lhs, None,
                                             _rename_keywords(r.rhs.expr), strict=r.rel == "lt", notes=list(r.notes)))
                continue
            if r.item.display:
                what = {"ge": "a lower bound (a Bound is lhs <= expr: rewrite it as one)",
                        "gt": "a lower bound (a Bound is lhs <= expr: rewrite it as one)",
                        "eq": "an equation (an Identity, or a Definition when its left side is one symbol)",
                        "def": "a definition whose left side is not one symbol"}.get(r.rel, r.rel)
                not_drafted.append(f"line {r.item.line}: {r.latex[:100]} -- {what}")
        for o in env_orders:
            target = env_bounds[-1] if env_bounds else None
            expr = _rename_keywords(o.rhs.order)
            if target is None or target.order is not None:
                oid = (stem or f"{name}.eq{eq_count + 1}") + ("_rate" if env_bounds else "")
                if env < 0:
                    eq_count += 1
                lhs = match_left_side(o.lhs, o.symbols)
                target = DraftBound(oid, (title or f"display at line {o.item.line}") + " (stated order)",
                                    o.item.line, o.item.label or label, o.latex, lhs, None, None,
                                    notes=list(o.notes))
                env_bounds.append(target)
            target.order, target.order_up_to_log, target.order_latex = expr, o.rhs.up_to_log, o.latex
            target.order_variable = _order_variable(expr)
        words = doc.theorem_texts[env] if 0 <= env < len(doc.theorem_texts) else ""
        if re.search(r"assumption|hypothes", words, re.I):  # 'Under Assumptions 1-3': the file's assumption texts
            words += "\n" + "\n".join(doc.assumption_texts)
        for b in env_bounds:
            b.conditions = list(env_conds)
            used = set()
            for part in [b.expr, b.order] + [c.relation for c in b.conditions]:
                if part is not None:
                    used |= {s.name for s in part.free_symbols}
            b.definitions = [d for d in env_defs if d.symbol in used]
            b.assumptions = premises_in_words(words, used)
        for d in env_defs:  # a definition no bound uses (a step-size rule 'eta = 1/L') is said, never dropped
            if not any(d in b.definitions for b in env_bounds):
                not_drafted.append(f"line {d.line}: {d.latex[:100]} -- defines {d.symbol}, which no bound of the "
                                   "statement uses: a rule of the theorem (a step size)? Add it as a condition of "
                                   "the bound or set it in the check (records.py has it as a TODO)")
                unused_defs.append(d)
        definitions += env_defs
        bounds += env_bounds
    names_used: set[str] = set()
    for b in bounds:
        for part in [b.expr, b.order] + [c.relation for c in b.conditions] + [d.expr for d in b.definitions]:
            if part is not None:
                names_used |= {s.name for s in part.free_symbols}
        names_used |= {d.symbol for d in b.definitions}
    symbols: dict[str, DraftSymbol] = {}
    for n in sorted(names_used, key=lambda x: (x.lower(), x)):
        u = uses.get(n) or uses.get(n.rstrip("_")) or SymbolUse(n, n)
        note = lookup(u)
        symbols[n] = DraftSymbol(n, u.latex, note.dimension if note else None,
                                 note.meaning if note else ("a sum over an index: measured on the run" if u.kind == "sum"
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
    for df in definitions:  # a defined symbol has its definition's dimension
        if df.symbol in symbols:
            d = _dimension_text(df.expr, known())
            s = symbols[df.symbol]
            s.meaning = f"defined at line {df.line}" + (" (dimension: its definition's)" if d else "")
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
    return LatexDraft(path=doc.path, sha256=hashlib.sha256(doc.text.encode("utf-8", "replace")).hexdigest(),
                      bounds=bounds, definitions=definitions, symbols=symbols, unparsed=unparsed,
                      not_drafted=not_drafted, macros=sorted(doc.macros), math_items=len(doc.items),
                      unused_definitions=unused_defs)


def read_latex(source: str, name: str = "paper", *, text: str | None = None, stdin=None) -> LatexDraft:
    """Read a LaTeX file (``-``: standard input; or ``text`` given directly) into a :class:`LatexDraft` for the
    paper ``name``: each displayed inequality a bound (its right side in sympy, its left side matched to a measure
    where the notation is standard), each inline relation inside the same theorem-like environment a condition,
    each ``X = ...`` with one symbol on the left a definition, each ``\\mathcal{O}(...)`` a stated order; the
    symbols with a dimension from the catalogue of FL notation; what did not parse, with the reason.

    Hostile input (over 4 MiB, braces nested over 64 deep, a display of over 20,000 characters or 400 terms, a
    macro that does not stop expanding) raises :class:`~fedtheory.latex.LatexRefused` (a ParameterError: exit 2 in
    the CLI) before any parsing. Needs the extra ``fedtheory[latex]``."""
    from .expression import require_parser

    require_parser()
    body = text if text is not None else read_latex_file(source, stdin=stdin)
    return draft_from_latex(read_document(body, source), name)


# ------------------------------------------------------------------------------------ records.py


def _q(s: str) -> str:
    return repr(s)


def _comment(s: str) -> str:
    """LaTeX on one comment line."""
    return re.sub(r"\s+", " ", s).strip()


def _expr_text(e: sp.Basic) -> str:
    return sp.sstr(e, order="none")


def records_source(draft: LatexDraft, name: str, source_label: str | None = None) -> str:
    """The text of ``records.py`` for the draft: one SymbolSet with the symbol table, one Bound per displayed
    inequality (with its LaTeX quoted, its conditions, definitions and stated order), TODOs where the user decides."""
    label = source_label or Path(draft.path).name
    strict = all(s.dimension for s in draft.symbols.values())
    lines = [f'"""{name}: records drafted by `fedtheory new-paper {name} --from-latex {label}`.',
             "",
             f"Source: {label} (sha256 {draft.sha256[:16]}). Every right side was parsed from the LaTeX by sympy; every",
             "dimension comes from a catalogue of common FL notation, and every left side was matched by its shape.",
             "Confirm each one (the symbol table below, each record's lhs and its TODOs) before trusting a verdict:",
             "`fedtheory check --plugin <this package> --paper NAME` runs the units check of every record at once.",
             '"""',
             "import sympy as sp",
             "",
             "from fedtheory.theory import Bound, Condition, Definition, OrderStatement, StatedOrder, SymbolSet, Units, register  # noqa: F401",
             "",
             f"PAPER = {_q(name)}",
             f"SOURCE = {_q(label)}",
             ""]
    if strict:
        lines.append("S = SymbolSet(PAPER, strict=True)")
    else:
        unknown = ", ".join(n for n, s in draft.symbols.items() if not s.dimension)
        lines += [f"# TODO dimensions: {unknown} (not in the catalogue). Give each a dim= and make the set strict:",
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
    lines += ["SYMS = {s.name: s for s in (" + ", ".join(_py_name(n) for n in draft.symbols) + ("," if len(draft.symbols) == 1 else "") + ")}",
              "",
              "",
              "def F(text):",
              '    """A formula in the symbols above (sympy syntax)."""',
              "    return sp.sympify(text, locals=SYMS)",
              ""]
    written_defs: dict[str, str] = {}
    for b in draft.bounds:
        for d in b.definitions:
            if d.id in written_defs:
                continue
            var = _py_name("DEF_" + d.symbol)
            written_defs[d.id] = var
            lines += ["", f"# line {d.line}: {_comment(d.latex)}",
                      f"{var} = Definition({_q(d.id)}, PAPER, {_py_name(d.symbol)}, F({_q(_expr_text(d.expr))}), "
                      f"f\"{{SOURCE}}, line {d.line}\", title={_q(d.symbol)})"]
    record_vars = []
    for b in draft.bounds:
        var = _py_name(b.id.split(".", 1)[1].upper())
        record_vars.append(var)
        lines += ["", f"# line {b.line}: {_comment(b.latex)}"]
        todo = [b.lhs.todo] if b.lhs.todo else []
        todo += [f"reading: {n}" for n in b.notes]
        lhs = b.lhs.measure or "TODO"
        units = ""
        if not b.lhs.measure:
            if b.lhs_dimension:
                units = f"    units=Units(lhs={_q(b.lhs_dimension)}),  # TODO confirm: the left side's dimension, " \
                        "from its symbols\n"
            else:
                todo.append("the left side's dimension: units=Units(lhs='...')")
        kind = b.lhs.kind or "none"
        conds = "".join(f"        Condition({_q(c.name)}, F({_q(_expr_text(c.relation))}), "
                        f"f\"{{SOURCE}}, line {c.line}\"),  # {_comment(c.latex)}\n" for c in b.conditions)
        defs = ", ".join(written_defs[d.id] for d in b.definitions)
        order = ""
        if b.order is not None:
            order = (f"    order=StatedOrder(F({_q(_expr_text(b.order))}), {_py_name(b.order_variable)}, "
                     f"up_to_log={b.order_up_to_log}, source=f\"{{SOURCE}}, line {b.line}\"),  # {_comment(b.order_latex)[:80]}\n")
        note = "; ".join(todo)
        source = f"    source=f\"{{SOURCE}}, line {b.line}" + (f" ({b.label})" if b.label else "") + "\", symbols=S,\n"
        if b.expr is None:  # a stated order alone
            lines.append(f"{var} = register(OrderStatement(\n"
                         f"    id={_q(b.id)}, paper=PAPER, title={_q(b.title or b.id)},\n" + source +
                         f"    statement={_q(b.latex[:400])},\n" + order.replace("    order=", "    order=", 1) +
                         f"    note={_q(note)},\n"
                         "))")
            continue
        if b.assumptions:
            refs = ", ".join(_q(a.reference) for a in b.assumptions)
            premises = (f"    # drafted from the theorem's words (confirm each; docs/assumptions.md): "
                        + "; ".join(f"{a.reference}: '{_comment(a.words)[:60]}'" for a in b.assumptions) + "\n"
                        f"    assumptions=({refs},),\n")
        else:
            premises = ("    # TODO assumptions: none found in the theorem's words. Name them (docs/assumptions.md):\n"
                        "    # a run counts only where its problem certifies every one, e.g. assumptions=('L_smooth',),\n")
        lines.append(f"{var} = register(Bound(\n"
                     f"    id={_q(b.id)}, paper=PAPER, title={_q(b.title or b.id)},\n" + source +
                     f"    quote={_q(b.latex[:400])},\n"
                     f"    lhs={_q(lhs)}, lhs_kind={_q(kind)}, lhs_description={_q(b.lhs.description[:300])},\n"
                     + premises + units +
                     f"    expr=F({_q(_expr_text(b.expr))}),\n"
                     + (f"    conditions=(\n{conds}    ),\n" if conds else "")
                     + (f"    definitions=({defs},),\n" if defs else "")
                     + order +
                     f"    note={_q(note)},\n"
                     "))")
    for d_id, var in written_defs.items():
        lines.append(f"register({var})")
    for d in draft.unused_definitions:
        lines += ["", f"# TODO line {d.line}: {_comment(d.latex)}",
                  f"# defines {d.symbol} = {_comment(_expr_text(d.expr))}, which no bound uses: a rule of the theorem "
                  "(a step size)? Add it to the bound's",
                  "# conditions (e.g. Condition('step_rule', F('...')) with the symbol declared above) or set it in "
                  "the check."]
    return "\n".join(lines) + "\n"
