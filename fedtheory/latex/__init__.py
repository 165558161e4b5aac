"""From a theorem's LaTeX to a record skeleton: ``fedtheory new-paper NAME --from-latex FILE``.

:func:`read_latex` reads a .tex file (or a pasted display, or a paper's Markdown with ``$$...$$``) into a
:class:`LatexDraft`: theorem-like environments, displays, ``\\label``, the preamble's ``\\newcommand``/``\\def``
macros expanded; each displayed inequality a bound whose right side is parsed by sympy's ``parse_latex`` (the ANTLR
backend: the extra ``fedtheory[latex]``), its left side matched to a simulator measure where the notation is
standard; inline relations of the same theorem its conditions; ``\\mathcal{O}(...)`` its stated order; every
symbol with a dimension from a catalogue of FL notation; and every snippet that did not parse, with the reason and
its position (an unknown macro is named, never guessed). :func:`write_from_latex` writes the plug-in, loads it and
runs its units check at once. Hostile input is refused by :class:`LatexRefused` (exit 2) before any parsing.

This package stands on floor 4 (docs/architecture.md): it drafts records (``theory``), loads the written plug-in
(``plugins``) and runs its units rows (``checks``).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..deprecation import face_aliases

# the names of _MOVED are imported for their deprecated aliases and the face's own use (hence the noqa: F401)
from .draft import (  # noqa: F401
    DraftAssumption,
    DraftBound,
    DraftCondition,
    DraftDefinition,
    DraftSymbol,
    LatexDraft,
    draft_from_latex,
    premises_in_words,
    read_latex,
    records_source,
)
from .expression import (  # noqa: F401
    BACKENDS,
    MAX_PARSE_SECONDS,
    MAX_READ_SECONDS,
    UNICODE_MATH,
    Piece,
    Relation,
    Skipped,
    SymbolUse,
    Unparseable,
    Unparsed,
    parse_item,
    parse_math,
    require_parser,
)
from .notation import NOTATION, LeftSide, Notation, match_left_side  # noqa: F401
from .source import MAX_BYTES, MAX_DEPTH, MAX_DISPLAY_CHARS, MAX_TERMS, Document, LatexRefused, MathItem, read_document  # noqa: F401

__all__ = ["read_latex", "draft_from_latex", "LatexDraft", "records_source", "checks_source", "write_from_latex",
           "import_text", "LatexRefused", "read_document", "Document", "parse_math", "Unparseable"]

_MOVED = {  # not part of the API since 0.2: name -> the module of fedtheory.latex that has it
    **dict.fromkeys(("DraftAssumption", "DraftBound", "DraftCondition", "DraftDefinition", "DraftSymbol",
                     "premises_in_words"), "draft"),
    **dict.fromkeys(("BACKENDS", "MAX_PARSE_SECONDS", "MAX_READ_SECONDS", "UNICODE_MATH", "Piece", "Relation",
                     "Skipped", "SymbolUse", "Unparsed", "parse_item", "require_parser"), "expression"),
    **dict.fromkeys(("NOTATION", "LeftSide", "Notation", "match_left_side"), "notation"),
    **dict.fromkeys(("MAX_BYTES", "MAX_DEPTH", "MAX_DISPLAY_CHARS", "MAX_TERMS", "MathItem"), "source"),
}
__getattr__ = face_aliases(__name__, {
    name: ((lambda n=name, m=module: getattr(sys.modules[f"{__name__}.{m}"], n)),
           f"not part of the API: import it from {__name__}.{module}") for name, module in _MOVED.items()})
for _name in _MOVED:  # imported above for the aliases and the face's own use: without the global, the alias warns
    globals().pop(_name, None)

_CHECKS = '''"""{name}: checks that measure the left sides of the records in ``records.py``.

Drafted from LaTeX: no measured check yet. Every record already has its units check ({name}.units, run by
`fedtheory check --plugin ... --paper {name}`); write one check per bound here (docs/extending.md, section 4). Below,
commented out, a worked check (the skeleton's) pointed at {bound}: adapt its problem, run and values.
"""
from . import records as R  # noqa: F401

'''

_TEST = '''"""Run with pytest: the drafted records load and every units row gives a verdict (no error)."""
import json
import subprocess
import sys
from pathlib import Path

PLUGIN = Path(__file__).resolve().parents[1] / "src" / "{name}"


def test_units_rows():
    out = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", str(PLUGIN), "--paper",
                          "{name}", "--format", "json"], capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    rows = [r for r in json.loads(out.stdout)["results"] if r["id"].endswith(".units")]
    assert rows and all(r["verdict"] != "error" for r in rows)
'''


def checks_source(draft: LatexDraft, name: str) -> str:
    """The drafted ``checks.py``: no check yet, and the skeleton's worked bound check, commented out, pointed at the
    first drafted bound (its record variable and id) for the user to adapt.

    Parameters
    ----------
    draft : LatexDraft
        The draft :func:`read_latex` made.
    name : str
        The paper's name (the plug-in package and the prefix of the ids).

    Returns
    -------
    str
        The text of ``checks.py``.
    """
    from ..skeleton import worked_check

    first = next((b for b in draft.bounds if b.expr is not None), None)
    if first is None:
        return _CHECKS.format(name=name, bound="no bound (none was drafted)")
    var = "R." + first.id.split(".", 1)[1].upper().replace(".", "_")
    body = worked_check(name).split('"""', 2)[2].lstrip("\n")
    body = body.replace("R.THM1", var).replace('f"{R.PAPER}.thm1"', repr(first.id)).replace("def thm1(", "def check_1(")
    # measure the record's own left side (the skeleton's opt_error against a distance bound "held" in silence)
    body = body.replace('measures=("opt_error", "visited_max_dist2")',
                        f'measures=({var}.lhs, "opt_error", "visited_max_dist2")')
    body = body.replace('tr["opt_error"][-1]', f"tr[{var}.lhs][-1]").replace('measures=("opt_error",)',
                                                                            f"measures=({var}.lhs,)")
    return _CHECKS.format(name=name, bound=first.id) + "".join("# " + ln if ln.strip() else "#\n"
                                                                for ln in body.splitlines(keepends=True))


@dataclass
class LatexImport:
    """What :func:`write_from_latex` did: the folder written, the draft, and the units rows of the loaded plug-in
    (``fedtheory.checks.CheckResult``, one per record with a formula)."""

    root: Path
    draft: LatexDraft
    units: list


def write_from_latex(name: str, source: str, directory: str = ".", *, taken: Iterable[str] = (),
                     text: str | None = None, stdin=None) -> LatexImport:
    """Write ``directory/NAME/`` (as ``fedtheory new-paper NAME``) with ``records.py`` drafted from the LaTeX
    ``source`` (a path, ``-`` for standard input, or ``text`` given directly), then load the plug-in and run the
    units check of every drafted record. Nothing is overwritten: an existing ``directory/NAME`` is refused.
    Hostile input raises :class:`LatexRefused` before anything is written.

    This is ``fedtheory new-paper NAME --from-latex FILE``; :func:`import_text` is what it prints. A plug-in that
    does not load is removed again: nothing half-written stays on disk.

    Parameters
    ----------
    name : str
        The paper's name: a lower-case identifier (the package, the prefix of the ids).
    source : str
        The LaTeX file's path, or ``-`` for standard input; with ``text`` only its label (the file name recorded).
    directory : str, default "."
        An existing folder to write ``NAME/`` into.
    taken : iterable of str, optional
        Names already in use (the registered papers), refused for ``name``.
    text : str, optional
        The LaTeX itself, instead of reading ``source``.
    stdin : file-like, optional
        The stream read for ``source == "-"`` (default ``sys.stdin``).

    Returns
    -------
    LatexImport
        The folder written (``root``), the draft, and the units rows of the loaded plug-in (``units``).

    Raises
    ------
    LatexRefused
        For hostile input or a source without math.
    ParameterError
        For a bad ``name`` or ``directory``, or when ``directory/NAME`` exists.
    """
    from ..checks.dimensions import units_rows
    from ..checks.execution import draft_rule
    from ..plugins import load_plugin
    from ..skeleton import check_directory, check_name, write_skeleton

    check_name(name, taken)  # NAME and --dir first: nothing is read for a package that could not be written
    check_directory(directory)
    draft = read_latex(source, name, text=text, stdin=stdin)
    label = "standard input" if source == "-" else Path(source).name
    if not draft.math_items:  # an empty file, empty standard input, a binary file: a package of nothing, refused
        raise LatexRefused("- (standard input)" if source == "-" else str(source),
                           "LaTeX with at least one display (\\[..\\], $$..$$, an equation environment) or a "
                           "theorem-like environment with math: none found, nothing to draft (nothing written)")
    files = {"records": records_source(draft, name, label), "checks": checks_source(draft, name),
             "test": _TEST.format(name=name)}
    root = write_skeleton(name, directory, taken=taken, files=files)
    try:  # a plug-in that does not load is not left behind: nothing half-written stays on disk
        load_plugin(str(root / "src" / name), origin="new-paper --from-latex")
        rows = units_rows(name)
        draft_rule(rows)
    except BaseException:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        raise
    return LatexImport(root, draft, rows)


def import_text(result: LatexImport) -> str:
    """The report ``fedtheory new-paper --from-latex`` prints: records (each with the TODOs that keep it a draft),
    the symbol table, conditions, stated orders, the units rows, what was not drafted and why, what did not parse,
    the undefined macros, and the math outside the theorems that was not read. Text of the file is data: every
    control character it holds is printed escaped (``\\x1b``), never sent to the terminal.

    Parameters
    ----------
    result : LatexImport
        What :func:`write_from_latex` returned.

    Returns
    -------
    str
        The report, lines joined by newlines, ending with the ``fedtheory check`` command to run next.
    """
    from .._validation import printable

    d = result.draft
    out: list[str] = []
    nb = sum(b.expr is not None for b in d.bounds)
    no = sum(b.order is not None for b in d.bounds)
    nc = len({(c.name, b.id) for b in d.bounds for c in b.conditions})
    drafts = [b for b in d.bounds if b.todo]
    out.append(f"read {d.math_items} math item(s) from {d.path}: {nb} bound(s), {no} stated order(s), "
               f"{len(d.definitions)} definition(s), {nc} condition(s); {len(d.unparsed)} snippet(s) did not parse, "
               f"{len(d.not_drafted) + len(d.skipped)} not drafted (reasons below)"
               + (f", {d.without_relation} inline item(s) state no relation" if d.without_relation else "")
               + (f"; macros expanded: {', '.join(chr(92) + m for m in d.macros)}" if d.macros else ""))
    out.append(f"wrote {result.root}/ (records drafted in src/{result.root.name}/records.py)")
    if drafts:
        out.append(f"{len(drafts)} draft record(s): each keeps its TODOs in records.py (todo=...); `check` decides and "
                   "shows their rows but never counts them until the TODOs are resolved and deleted")
    out.append("")
    out.append("records:")
    for b in d.bounds:
        lhs = b.lhs.measure or "TODO"
        what = f"{lhs} <= {b.expr}" if b.expr is not None else f"order O({b.order}) as {b.order_variable} -> oo"
        out.append(f"  {b.id} (line {b.line}{', ' + b.label if b.label else ''}): {what}"[:220]
                   + ("  [draft]" if b.todo else ""))
        if b.lhs.measure:
            out.append(f"      left side: {b.lhs.description[:200]}")
        if not b.lhs.measure and b.lhs_dimension:
            out.append("      left side's dimension from its symbols: "
                       f"{b.lhs_dimension} (units=Units(lhs=...): confirm)")
        if b.order is not None and b.expr is not None:
            out.append(f"      stated order: O({b.order}) as {b.order_variable} -> oo")
        for c in b.conditions:
            out.append(f"      condition {c.name}: {c.relation}  (line {c.line}: {(c.origin or c.latex)[:70]})")
        for df in b.definitions:
            out.append(f"      definition {df.symbol} = {df.expr}")
        if b.expr is not None:
            for a in b.assumptions:
                out.append(f"      assumption {a.reference}  (from the words '{a.words[:70]}': confirm)")
        for t in b.todo:
            out.append(f"      TODO {t[:300]}")
    out.append("")
    out.append("symbols (confirm or edit each dimension in records.py; [f] loss, [w] parameter):")
    rows = [["name", "LaTeX", "dimension", "meaning (catalogue)", "check"]]
    for s in d.symbols.values():
        rows.append([s.name, s.latex[:30], s.dimension or "? (TODO)", s.meaning[:45], s.check[:60]])
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for k, r in enumerate(rows):
        out.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if k == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    out.append("")
    out.append("units (the check " + result.root.name + ".units, run now):")
    for r in result.units:
        out.append(f"  {r.id}  {r.verdict}" + (f" [{r.scope}]" if r.scope != "inside" else "") + f"  {r.detail[:200]}")
    if not result.units:
        out.append("  (no record with a formula)")
    if d.not_drafted or d.skipped:
        out.append("")
        out.append("parsed, not drafted as a record (each with its reason):")
        out += [f"  {x}" for x in d.not_drafted]
        out += [f"  line {x.line}: {x.latex[:100]} -- {x.reason}" for x in d.skipped]
    if d.unparsed:
        out.append("")
        out.append("did not parse (the skeleton loads without them; encode them by hand):")
        for u in d.unparsed:
            out.append(f"  line {u.line}, column {u.col}: {u.reason}")
            out.append(f"      {u.latex[:150]}")
    if d.undefined_macros:
        out.append("")
        out.append("macros the file does not define (define them in the preamble, or confirm the reading):")
        out += [f"  {m}" for m in d.undefined_macros]
    if d.outside:
        lines = sorted({ln for ln, _ in d.outside})
        kinds = sorted({w for _, w in d.outside})
        out.append("")
        out.append(f"not read as statements: {len(d.outside)} math item(s) outside the theorem-like environments "
                   f"(lines {', '.join(map(str, lines[:30]))}{' ...' if len(lines) > 30 else ''}): "
                   + "; ".join(kinds))
    out.append("")
    out.append(f"next: fedtheory check --plugin {result.root}/src/{result.root.name} --paper {result.root.name}")
    return printable("\n".join(out))
