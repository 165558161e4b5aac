"""One math item -> relations in sympy, through ``sympy.parsing.latex.parse_latex`` (the ANTLR backend).

The parser reads expressions; what it cannot read in FL notation is rewritten first, never parsed here:

* the display's frame: ``\\label``, ``\\tag``, ``\\displaystyle``, spacing, ``\\underbrace{X}_{...}``, ``\\stackrel``,
  align rows (``&``, ``\\\\``: a row with nothing before its ``&`` continues the previous one), text, trailing
  punctuation and equation numbers; top-level commas split a display into pieces (``B, \\quad t \\ge 1``);
* relations at the top level (``\\le``, ``<``, ``=``, ``:=``, ...): a chain ``A \\le B \\le C`` is read as ``A <= C``;
* ``\\mathcal{O}(...)``, ``\\tilde{\\mathcal{O}}``, ``O(...)``, ``\\Theta``: a side made of them is a stated order;
* an expectation ``\\mathbb{E}[...]`` / ``E\\|...\\|`` is dropped (the left side's description keeps it);
* norms ``\\|x\\|``, ``\\lVert x\\rVert``, ``||x||`` and loss values ``f(x)``, ``F(w^t)`` become one symbol each
  (``norm_x_0_x_star``, ``f_at_x_0``); ``\\max\\{a, b\\}`` becomes ``\\max(a, b)``;
* a symbol with decorations, subscripts or an index superscript becomes one symbol: ``\\eta_l`` -> ``eta_l``,
  ``\\overline{\\mathbf{w}}_\\tau`` -> ``wbar_tau``, ``F^*`` -> ``F_star``, ``m^{t+1}`` -> ``m_t1`` (a superscript
  that is an index, ``*``, ``\\star``, ``0``, is a label, never a power; every such reading is listed);
* ``^23`` is ``^{2}3`` (TeX reads one token), ``x^a_b`` is ``x_b^a``.

A control word that is none of these, nor a Greek letter, nor one the parser knows, is an *unknown macro*: the
item is not parsed, and the macro is named with its line and column. The parser's own failures are listed with
their LaTeX; nothing is guessed.
"""
from __future__ import annotations

import contextlib
import contextvars
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import sympy as sp

from .source import MAX_TERMS, LatexRefused, MathItem, read_group

__all__ = ["BACKENDS", "MAX_PARSE_SECONDS", "MAX_READ_SECONDS", "Piece", "Relation", "Skipped", "SymbolUse",
           "Unparseable", "Unparsed", "known_words", "parse_item", "parse_math", "reading_budget", "require_parser"]

GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi varpi rho "
    "varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi "
    "Omega ell".split())
#: control words the parser reads (after the rewriting)
PARSER_WORDS = frozenset(
    "frac dfrac tfrac sqrt cdot times div sum prod log ln exp max min binom dbinom tbinom mathit infty "
    "sin cos tan lg".split()) | GREEK
DECORATIONS = {"bar": "bar", "overline": "bar", "hat": "hat", "widehat": "hat", "tilde": "tilde",
               "widetilde": "tilde", "check": "check", "breve": "breve", "dot": "dot", "ddot": "ddot",
               "underline": "ul", "vec": "", "mathbf": "", "boldsymbol": "", "bm": "", "mathrm": "", "mathsf": "",
               "mathcal": "cal", "mathscr": "scr", "mathfrak": "frak", "mathbb": "bb", "pmb": ""}
#: the names of loss functions: ``f(x)`` is a loss value, ``f^*`` the optimal one
LOSS_FUNCTIONS = frozenset({"f", "F", "ell", "l", "R", "L_D"})
_INDEX = r"(?:t|k|i|j|s|r|\\tau|\\ell)"
_INDEX_SUP = re.compile(r"^\(?\s*" + _INDEX + r"(?:\s*[+-]\s*\d+)?(?:\s*,\s*" + _INDEX + r"(?:\s*[+-]\s*\d+)?)*\s*\)?$")
_LABEL_SUPS = {"*": "star", "\\star": "star", "\\ast": "star", "\\prime": "prime", "'": "prime", "\\top": "T",
               "\\intercal": "T", "\\dagger": "dagger", "\\circ": "circ", "\\sharp": "sharp"}
_REL = [(r"\\leqslant|\\leq|\\le(?![a-zA-Z])|\\lesssim", "le"), (r"\\geqslant|\\geq|\\ge(?![a-zA-Z])|\\gtrsim", "ge"),
        (r":=|\\coloneqq|\\triangleq|\\eqqcolon|\\equiv|\\stackrel\{\\mathrm\{def\}\}\{=\}", "def"),
        (r"(?<![<>:!\\])=", "eq"), (r"<(?!=)|\\lt(?![a-zA-Z])", "lt"), (r">(?!=)|\\gt(?![a-zA-Z])", "gt"),
        (r"\\approx|\\sim(?![a-zA-Z])|\\simeq|\\neq|\\ne(?![a-zA-Z])|\\to(?![a-zA-Z])|\\rightarrow|\\in(?![a-zA-Z])|"
         r"\\ll(?![a-zA-Z])|\\gg|\\propto|\\subset|\\subseteq|\\mapsto|\\Rightarrow|\\implies|\\iff|\\notin", "other")]
_REL_RE = re.compile("|".join(f"(?P<r{k}>{p})" for k, (p, _) in enumerate(_REL)))
_ORDER_RE = re.compile(r"\\widetilde\s*\{\s*\\mathcal\s*\{\s*O\s*\}\s*\}|\\tilde\s*\{\s*\\mathcal\s*\{\s*O\s*\}\s*\}|"
                       r"\\tilde\s*\\mathcal\s*\{\s*O\s*\}|\\mathcal\s*\{\s*\\tilde\s*\{?\s*O\s*\}?\s*\}|"
                       r"\\mathcal\s*\{\s*\\widetilde\s*\{\s*O\s*\}\s*\}|\\widetilde\s*\{\s*O\s*\}|\\tilde\s*\{\s*O\s*\}|"
                       r"\\tilde\s*O|\\mathcal\s*\{\s*O\s*\}|\\mathcal\s*O|\\operatorname\s*\{\s*O\s*\}|\\Theta|"
                       r"\\mathcal\s*\{\s*\\Theta\s*\}|(?<![a-zA-Z\\])O(?=\s*(?:\\left|\\big|\\Big|\\bigg)?\s*[(\[{])")


#: control words the rewriting reads or drops (besides PARSER_WORDS, GREEK and DECORATIONS): any other one left after
#: the file's macros are expanded is an undefined macro, listed with its position
_FRAME_WORDS = frozenset(
    "label tag hspace vspace intertext nonumber notag displaystyle textstyle scriptstyle limits nolimits qedhere "
    "allowbreak smallskip medskip bigskip noindent centering thinspace enspace medspace thickspace negthinspace begin "
    "end left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr Biggl Biggr bigm Bigm biggm Biggm middle "
    "underbrace overbrace underset overset stackrel quad qquad text textrm textit textbf mbox hbox forall cr "
    "le leq leqslant lesssim ge geq geqslant gtrsim coloneqq triangleq eqqcolon equiv lt gt approx sim simeq neq ne "
    "to rightarrow in ll gg propto subset subseteq mapsto Rightarrow implies iff notin def mathcal widetilde tilde "
    "operatorname Theta lVert rVert Vert lbrace rbrace langle rangle nabla mathop mathds star ast prime top "
    "intercal dagger circ sharp dots ldots cdots dotsc dotsb vdots rm bf mathnormal".split())


def known_words() -> frozenset[str]:
    """Every control word the reading of a side knows (the parser's, the Greek letters, the decorations, the frame
    it drops): any other one in a math item is an undefined macro."""
    return PARSER_WORDS | GREEK | frozenset(DECORATIONS) | _FRAME_WORDS


_GREEK_CHARS = dict(zip("αβγδεϵζηθϑικλμµνξπϖρϱσςτυφϕχψωΓΔΘΛΞΠΣΥΦΨΩ",
                        "alpha beta gamma delta varepsilon epsilon zeta eta theta vartheta iota kappa lambda mu mu nu "
                        "xi pi varpi rho varrho sigma varsigma tau upsilon varphi phi chi psi omega Gamma Delta Theta "
                        "Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split()))
#: Unicode that math written outside TeX uses -> its LaTeX (``≤`` is ``\le``); any other character beyond ASCII in a
#: side is named, never dropped
UNICODE_MATH = {"≤": r"\le ", "⩽": r"\le ", "≥": r"\ge ", "⩾": r"\ge ", "≠": r"\ne ", "≈": r"\approx ", "∼": r"\sim ",
                "≔": ":=", "≡": r"\equiv ", "×": r"\times ", "·": r"\cdot ", "⋅": r"\cdot ", "∗": "*", "−": "-",
                "–": "-", "∑": r"\sum ", "∏": r"\prod ", "√": r"\sqrt ", "∞": r"\infty ", "∇": r"\nabla ",
                "⋆": r"\star ", "★": r"\star ", "…": r"\dots ", "⋯": r"\cdots ", "∈": r"\in ", "→": r"\to ",
                "⟨": r"\langle ", "⟩": r"\rangle ", "′": "'", "ℓ": r"\ell ", "∀": r"\forall ", "𝔼": r"\mathbb{E} ",
                "‖": "‖", "∥": "∥", "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2002": " ", "\u2003": " ",
                **{k: "\\" + v + " " for k, v in _GREEK_CHARS.items()},
                **{c: "^{" + d + "}" for c, d in zip("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")},
                **{c: "_{" + d + "}" for c, d in zip("₀₁₂₃₄₅₆₇₈₉", "0123456789")}}
_TEXT_GROUP = re.compile(r"\\(?:text|textrm|textit|textbf|mbox|hbox)\s*\{[^{}]*\}")


def _unicode_to_latex(text: str) -> str:
    """``text`` with the Unicode of UNICODE_MATH written in LaTeX (inside ``\\text{..}`` any character is words);
    :class:`Unparseable` naming the first other character beyond ASCII."""
    if text.isascii():
        return text
    words = {k for m in _TEXT_GROUP.finditer(text) for k in range(m.start(), m.end())}
    out = []
    for k, c in enumerate(text):
        if c.isascii() or k in words:
            out.append(c if c.isascii() else " ")
        elif c in UNICODE_MATH:
            out.append(UNICODE_MATH[c])
        else:
            import unicodedata

            raise Unparseable(f"the character {c!r} (U+{ord(c):04X}, {unicodedata.name(c, 'unnamed')}) is not read: "
                              "write it in LaTeX")
    return "".join(out)


class Unparseable(Exception):
    """A part of a math item the parser cannot read; the message says why (and where, when known).

    The draft lists such a part under "did not parse", with its line and column; the rest of the file is read.

    Parameters
    ----------
    *args : object
        The exception's arguments; the first is the message.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)


@dataclass
class SymbolUse:
    """A symbol of a parsed expression: its name, the LaTeX it came from, and what kind of thing it is: 'plain', 'norm'
    (of a difference: kind 'dist' when from an optimum, 'grad' of a gradient), 'loss' (a loss value f(x)),
    'loss_opt' (f^*), 'sum' (a sum over an index the constants do not give: measured)."""

    name: str
    latex: str
    kind: str = "plain"
    base: str = ""  # the letter or Greek name it is built on ('eta' for eta_l)
    decorations: tuple[str, ...] = ()
    index_label: str = ""  # a superscript read as a label ('t1' for m^{t+1})
    summand: Any = None  # a 'sum': the expression summed (its dimension is the sum's)


@dataclass
class Unparsed:
    """A snippet that did not become a formula, with its position in the source and the reason."""

    latex: str
    line: int
    col: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"latex": self.latex, "line": self.line, "col": self.col, "reason": self.reason}


@dataclass
class Skipped:
    """A piece of math that was read but states nothing to draft (an index range ``m = 1, \\dots, M``, an inline
    ``x \\in X``): listed with the reason, never dropped silently."""

    latex: str
    line: int
    col: int
    reason: str


@dataclass
class Piece:
    """One side of a relation: an explicit expression or a stated order (``order``; ``up_to_log`` for a tilde)."""

    latex: str
    expr: sp.Expr | None = None
    order: sp.Expr | None = None
    up_to_log: bool = False
    raw: sp.Expr | None = None  # before sums over an index became symbols (the left side's shape)
    expectation: bool = False


@dataclass
class Relation:
    """``lhs REL rhs`` read from a math item. rel: 'le', 'lt', 'ge', 'gt', 'eq', 'def' (``:=``)."""

    lhs: Piece
    rel: str
    rhs: Piece
    latex: str
    item: MathItem
    symbols: dict[str, SymbolUse] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    chain: int = 1  # relations in the chain it was read from (A <= B <= C: 2)
    item_key: int = -1  # the math item's position among the document's items (set by the draft)


_PARSER = None
BACKENDS = ("antlr", "lark")


def require_parser(backend: str = "antlr"):
    """``sympy.parsing.latex.parse_latex`` with its ANTLR runtime (``backend='lark'``: with lark, for comparison),
    or a FedTheoryError naming the extra to install."""
    global _PARSER
    from .._validation import FedTheoryError, ParameterError

    if backend not in BACKENDS:
        raise ParameterError("backend", backend, "one of " + ", ".join(BACKENDS))
    if backend == "lark":
        try:
            import lark  # noqa: F401
            from sympy.parsing.latex import parse_latex
        except ImportError as exc:
            raise FedTheoryError(f"the lark backend needs the package lark ({exc})") from None
        return lambda s, strict=True: parse_latex(s, strict=strict, backend="lark")
    if _PARSER is not None:
        return _PARSER

    try:
        import antlr4  # noqa: F401
        from sympy.parsing.latex import parse_latex
    except ImportError as exc:
        raise FedTheoryError("reading LaTeX needs the optional extra fedtheory[latex] (sympy's LaTeX parser and its "
                             "ANTLR runtime 4.11): pip install 'fedtheory[latex]'" f" ({exc})") from None
    version = getattr(antlr4, "__version__", None)
    try:
        from importlib.metadata import version as _v

        version = version or _v("antlr4-python3-runtime")
    except Exception:  # noqa: BLE001 - the version check below only needs it when known
        pass
    if version and not str(version).startswith("4.11"):
        raise FedTheoryError(f"reading LaTeX needs antlr4-python3-runtime 4.11 (sympy's grammar is generated with "
                             f"it); {version} is installed: pip install 'fedtheory[latex]'")
    _PARSER = parse_latex
    return parse_latex


# ------------------------------------------------------------------------------------ the frame


def _depth_scan(s: str, brackets: bool = True):
    """Yield (index, token, depth) with depth counting { } (and ( ) [ ] \\{ \\} when ``brackets``)."""
    depth, i, n = 0, 0, len(s)
    opens, closes = ("{([", "})]") if brackets else ("{", "}")
    while i < n:
        c = s[i]
        if c == "\\":
            m = re.match(r"\\([a-zA-Z]+|.)", s[i:])
            tok = m.group()
            if brackets and tok in ("\\{", "\\lbrace", "\\langle"):
                depth += 1
            elif brackets and tok in ("\\}", "\\rbrace", "\\rangle"):
                depth = max(0, depth - 1)
            yield i, tok, depth
            i += len(tok)
            continue
        if c in opens:
            depth += 1
        elif c in closes:
            depth = max(0, depth - 1)
        yield i, c, depth
        i += 1


def _strip_wrappers(s: str) -> str:
    """Drop what carries no mathematics: labels, tags, spacing, style, braces-with-notes."""
    s = re.sub(r"\\(label|tag\*?|hspace\*?|vspace\*?|intertext)\s*\{[^{}]*\}", " ", s)
    s = re.sub(r"\\(nonumber|notag|displaystyle|textstyle|scriptstyle|limits|nolimits|qedhere|allowbreak|"
               r"smallskip|medskip|bigskip|noindent|centering)(?![a-zA-Z])", " ", s)
    s = re.sub(r"(?<!\\)\\[,;:! ]|~|\\(thinspace|enspace|medspace|thickspace|negthinspace)(?![a-zA-Z])", " ", s)
    s = re.sub(r"\\(begin|end)\s*\{(aligned|split|gathered|alignedat|array)\}(\[[^\]]*\])?(\{[^{}]*\})?", " ", s)
    s = re.sub(r"\\(left|right)\s*\.", " ", s)
    s = re.sub(r"\\(big|Big|bigg|Bigg)[lrm]?\s*\{\s*(\\?[()\[\]|.{}]|\\[a-zA-Z]+)\s*\}", lambda m: " " + m.group(2), s)
    s = re.sub(r"\\(big|Big|bigg|Bigg)[lrm]?(?![a-zA-Z])", " ", s)
    s = s.replace("\\middle", " ")
    # \underbrace{X}_{note}, \overbrace{X}^{note}, \underset{a}{X}, \overset{a}{X}, \stackrel{a}{X}
    for cmd, keep in (("underbrace", 0), ("overbrace", 0), ("underset", 1), ("overset", 1), ("stackrel", 1)):
        while True:
            m = re.search(r"\\" + cmd + r"(?![a-zA-Z])", s)
            if m is None:
                break
            g1 = read_group(s, m.end())
            if g1 is None:
                break
            if cmd in ("underbrace", "overbrace"):
                rest, j = g1[1], g1[1]
                sm = re.match(r"\s*[_^]", s[j:])
                if sm:
                    g2 = read_group(s, j + sm.end())
                    rest = g2[1] if g2 else j
                s = s[:m.start()] + "{" + g1[0] + "}" + s[rest:]
            else:
                g2 = read_group(s, g1[1])
                if g2 is None:
                    break
                s = s[:m.start()] + "{" + (g2[0] if keep else g1[0]) + "}" + s[g2[1]:]
    return s


def _split_top(s: str, seps: re.Pattern, brackets: bool = True) -> list[str]:
    """Split ``s`` at the matches of ``seps`` found at depth 0 (braces; and brackets when ``brackets``)."""
    cut, parts, last = [], [], 0
    depth_at = {i: d for i, _, d in _depth_scan(s, brackets)}
    for m in seps.finditer(s):
        if depth_at.get(m.start(), 1) == 0:
            cut.append((m.start(), m.end()))
    for a, b in cut:
        parts.append(s[last:a])
        last = b
    parts.append(s[last:])
    return parts


_SEPS = re.compile(r",|;|\\quad(?![a-zA-Z])|\\qquad(?![a-zA-Z])|\\(?:text|textrm|textit|textbf|mbox|hbox)"
                   r"\s*\{\s*(?:[a-zA-Z .,;:'-]{2,}|[.,;])\s*\}|\\forall(?![a-zA-Z])|\\text\{\s*\}")


def _statements(text: str) -> list[str]:
    """The statements of a display: align rows joined (a row with nothing before its & continues the last one)."""
    rows = _split_top(text, re.compile(r"\\\\(\[[^\]]*\])?|\\cr(?![a-zA-Z])"), brackets=False)
    out: list[str] = []
    for row in rows:
        if not row.strip():
            continue
        head = row.split("&")
        if out and (not head[0].strip() or _REL_RE.match(head[0].strip())):
            out[-1] += " " + " ".join(head)
        else:
            out.append(" ".join(head))
    return out


def _pieces(statement: str) -> list[str]:
    out = []
    for p in _split_top(statement, _SEPS):
        p = p.strip().rstrip(".").strip()
        if not p or re.fullmatch(r"\(\s*[\w.*]+\s*\)|\.|\\text\s*\{[^{}]*\}", p):
            continue
        out.append(p)
    return out


# ------------------------------------------------------------------------------------ atoms and names


def _slug(s: str) -> str:
    for _ in range(3):  # \overline{\mathbf{w}} -> wbar
        s = re.sub(r"\\(mathbf|boldsymbol|bm|vec|mathrm|mathsf|pmb)\s*\{([^{}]*)\}", r"\2", s)
        s = re.sub(r"\\(bar|overline|hat|widehat|tilde|widetilde)\s*\{([^{}]*)\}",
                   lambda m: m.group(2) + DECORATIONS[m.group(1)], s)
    s = re.sub(r"\\(text|mathrm|mathit|textrm|operatorname|mathbf|mathsf|rm|bf)\s*", "", s)
    s = s.replace("\\star", "star").replace("\\ast", "star").replace("*", "star").replace("\\prime", "prime")
    s = s.replace("'", "prime").replace("\\infty", "inf")
    s = re.sub(r"\\([a-zA-Z]+)", r"\1", s)
    return re.sub(r"[^A-Za-z0-9]", "", s)


_PLACEHOLDER_LETTERS = "abcefghijklmnopqrstuvwxyz"


class _Namer:
    """Placeholder symbols for the parser (``\\mathit{zq..}``) and the names they stand for."""

    def __init__(self):
        self.uses: dict[str, SymbolUse] = {}  # placeholder -> use
        self.by_latex: dict[str, str] = {}

    def placeholder(self, use: SymbolUse) -> str:
        key = f"{use.kind}:{use.latex}"
        if key in self.by_latex:
            return self.by_latex[key]
        n, letters = len(self.uses), ""
        while True:  # no 'd': the parser reads d followed by a letter as a differential (zqda: Invalid LaTeX)
            letters = _PLACEHOLDER_LETTERS[n % 25] + letters
            n //= 25
            if n == 0:
                break
        ph = "zq" + letters
        self.uses[ph] = use
        self.by_latex[key] = ph
        return ph


def _read_script(s: str, i: int) -> tuple[str, int] | None:
    g = read_group(s, i)
    return g


def _read_atom(s: str, i: int):
    """A symbol with its decorations and scripts at ``s[i]``: (end, base, decorations, subscripts, superscripts) or
    None. Decorations nest (``\\overline{\\mathbf{w}}``)."""
    decorations: list[str] = []
    j = i
    m = re.match(r"\\([a-zA-Z]+)", s[j:])
    base = None
    if m and m.group(1) in DECORATIONS:
        g = read_group(s, j + m.end())
        if g is None:
            return None
        inner = g[0].strip()
        sub = _read_atom(inner, 0) if inner else None
        if sub is not None and sub[0] == len(inner) and not sub[3] and not sub[4]:
            base, decorations = sub[1], list(sub[2]) + [DECORATIONS[m.group(1)]]
        elif re.fullmatch(r"[A-Za-z]+|[0-9]", inner) and m.group(1) in ("mathrm", "mathcal", "mathbb", "mathsf",
                                                                     "mathbf", "bm", "boldsymbol", "mathscr",
                                                                     "mathfrak"):
            base, decorations = inner, [DECORATIONS[m.group(1)]]
        else:
            return None
        j = g[1]
    elif m and m.group(1) in GREEK:
        base = m.group(1)
        j += m.end()
    elif j < len(s) and s[j].isalpha() and s[j].isascii():
        base = s[j]
        j += 1
    else:
        return None
    subs, sups = [], []
    while j < len(s):
        k = j
        while k < len(s) and s[k] == " ":
            k += 1
        if k < len(s) and s[k] in "_^":
            g = _read_script(s, k + 1)
            if g is None:
                break
            (subs if s[k] == "_" else sups).append(g[0].strip())
            j = g[1]
        elif k < len(s) and s[k] == "'":
            sups.append("'")
            j = k + 1
        else:
            break
    return j, base, tuple(d for d in decorations if d), subs, sups


def _is_label_sup(c: str) -> str | None:
    c = c.strip()
    if c in _LABEL_SUPS:
        return _LABEL_SUPS[c]
    if c == "0" or re.fullmatch(r"\(\s*\d+\s*\)", c):
        return _slug(c)
    if _INDEX_SUP.match(c):
        return _slug(c)
    return None


def _atom_name(base: str, decorations: tuple[str, ...], subs: list[str], labels: list[str]) -> str:
    name = base + "".join(decorations)
    parts = [_slug(x) for x in subs] + labels
    parts = [p for p in parts if p]
    return name + ("_" + "_".join(parts) if parts else "")


# ------------------------------------------------------------------------------------ rewriting


def _balanced(s: str, i: int, open_: str, close: str) -> int:
    """The offset of the ``close`` matching the ``open_`` at ``s[i]``, or -1."""
    depth = 0
    for k in range(i, len(s)):
        c = s[k]
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return k
    return -1


_LIMITLESS_SUM = re.compile(r"\\(sum|prod)\s*_\s*(?:\{\s*([A-Za-z]|\\[a-zA-Z]+)\s*(?:\\in\s*([^{}]*|\{[^{}]*\}[^{}]*))?\}|"  # noqa: E501 - a regular expression, kept whole
                            r"([A-Za-z]))(?!\s*\^)")


def _limitless_sums(s: str, namer: "_Namer", notes: list[str]) -> str:
    """``\\sum_i X`` and ``\\sum_{i \\in S} X`` (no limits: the parser needs them) as a sum over i = 1..n_i, with n_i
    a symbol the notes name (the sum is measured when X carries i; otherwise n_i is a symbol to define)."""
    def one(m):
        idx = (m.group(2) or m.group(4)).lstrip("\\")
        over = (m.group(3) or "").strip()
        name = f"n_{idx}"
        ph = namer.placeholder(SymbolUse(name, f"|{over}|" if over else f"the number of values of {idx}", "plain",
                                         base="n"))
        notes.append(f"\\{m.group(1)} over {idx}" + (f" in {over}" if over else "") + f" (no limits) read as {idx} = "
                     f"1..{name}")
        return "\\" + m.group(1) + "_{" + ("\\" if m.group(2) and m.group(2).startswith("\\") else "") + idx + \
            "=1}^{\\mathit{" + ph + "}}"

    return _LIMITLESS_SUM.sub(one, s)


def _rewrite(s: str, namer: _Namer, notes: list[str], flags: dict[str, bool]) -> str:
    """The side ``s`` rewritten into what the parser reads (see the module docstring)."""
    s = re.sub(r"\\left\s*\\\||\\right\s*\\\||\\left\s*\\lVert|\\right\s*\\rVert|\\left\s*\\Vert|\\right\s*\\Vert|"
               r"\\lVert|\\rVert|\\Vert|\\\||\|\||‖|∥", "\u2016", s)
    s = re.sub(r"\\left\s*\\\{|\\left\s*\\lbrace", r"\\{", s)
    s = re.sub(r"\\right\s*\\\}|\\right\s*\\rbrace", r"\\}", s)
    s = re.sub(r"\\left\s*(?=[(\[|])|\\right\s*(?=[)\]|])", "", s)
    s = re.sub(r"\\left\s*\\langle|\\right\s*\\rangle", lambda m: m.group().split()[-1].replace("\\left", "")
               .replace("\\right", ""), s)
    # expectation: \mathbb{E}, \mathbf{E}, \operatorname{\mathbb{E}}, E[...], E||...||, with an optional subscript
    exp_re = re.compile(r"(\\mathop\s*\{\s*)?(\\operatorname\s*\{\s*)?\\(mathbb|mathbf|mathrm|mathsf|mathds|bm)\s*\{\s*E\s*\}"  # noqa: E501 - a regular expression, kept whole
                        r"(\s*\})?(\s*\})?|\\operatorname\s*\{\s*E\s*\}|\\E(?![a-zA-Z])|(?<![A-Za-z\\{_^])E(?=\s*[\[\u2016])")
    while True:
        m = exp_re.search(s)
        if m is None:
            break
        j = m.end()
        sm = re.match(r"\s*_", s[j:])
        if sm:
            g = read_group(s, j + sm.end())
            j = g[1] if g else j
        s = s[:m.start()] + " " + s[j:]
        flags["expectation"] = True
    s = _limitless_sums(s, namer, notes)
    s = re.sub(r"\\(sqrt)\s*\[", r"\\\1<<", s)
    s = s.replace("[", "(").replace("]", ")")
    s = s.replace("\\sqrt<<", "\\sqrt[")
    s = re.sub(r"\\sqrt\[([^\]()]*)\)", r"\\sqrt[\1]", s)
    s = re.sub(r"\\\{|\\lbrace(?![a-zA-Z])", "(", s)
    s = re.sub(r"\\\}|\\rbrace(?![a-zA-Z])", ")", s)
    s = re.sub(r"([\^_])\s*(\d)(\d+)", r"\1{\2}\3", s)  # ^23 is ^{2}3
    s = re.sub(r"\\operatorname\s*\{\s*(max|min|log|exp)\s*\}", r"\\\1", s)
    if re.search(r"\\(max|min)\s*_", s):
        raise Unparseable("a max or min over an index (\\max_{...}): write the quantity as one symbol")
    # norms: pair the delimiters left to right
    while "\u2016" in s:
        a = s.index("\u2016")
        b = s.find("\u2016", a + 1)
        if b < 0:
            raise Unparseable("a norm delimiter without its pair")
        inner = s[a + 1:b].strip()
        j = b + 1
        sm = re.match(r"\s*_", s[j:])
        if sm:  # ||x||_2, ||x||_{\mathcal{L}}
            g = read_group(s, j + sm.end())
            if g is not None:
                notes.append(f"the norm's subscript _{{{g[0]}}} dropped")
                j = g[1]
        kind = "grad" if inner.startswith("\\nabla") else (
            "dist" if re.search(r"-.*(\^\s*\{?\s*(\*|\\star|\\ast)|_\s*\{?\s*(\*|\\star))", inner) else "norm")
        name = "norm_" + (_slug(inner.replace("\\nabla", "grad ")) or "x")
        ph = namer.placeholder(SymbolUse(name, "\\|" + inner + "\\|", kind))
        s = s[:a] + " \\mathit{" + ph + "} " + s[j:]
    s = re.sub(r"\\nabla(?![a-zA-Z])", lambda m: " \\nabla ", s)
    # loss values f(x), F_k(w^t), \ell(w; z)
    loss_re = re.compile(r"(?<![A-Za-z\\_^])(\\ell|[fFR])(\s*_\s*(\{[^{}]*\}|[A-Za-z0-9]))?(\s*\^\s*(\{[^{}]*\}|\S))?\s*\(")  # noqa: E501 - a regular expression, kept whole
    pos = 0
    while True:
        m = loss_re.search(s, pos)
        if m is None:
            break
        before = s[max(0, m.start() - 8):m.start()]
        if re.search(r"[_^]\s*\{\s*$", before):
            pos = m.end()
            continue
        if before.rstrip().endswith("\\nabla"):
            # \nabla f(x) outside a norm: a vector, not a number
            raise Unparseable("a gradient outside a norm (\\nabla f(...))")
        close = _balanced(s, m.end() - 1, "(", ")")
        if close < 0:
            break
        fname = m.group(1).lstrip("\\")
        arg = s[m.end():close].strip()
        latex = s[m.start():close + 1]
        sub = (m.group(3) or "").strip("{}")
        name = fname + (("_" + _slug(sub)) if sub else "") + "_at_" + (_slug(arg) or "x")
        kind = "loss_opt" if re.search(r"\^\s*\{?\s*(\*|\\star|\\ast)", arg) and "-" not in arg else "loss"
        ph = namer.placeholder(SymbolUse(name, latex, kind, base=fname))
        s = s[:m.start()] + " \\mathit{" + ph + "} " + s[close + 1:]
        pos = m.start()
    if "\\nabla" in s:
        raise Unparseable("a gradient outside a norm (\\nabla ...)")
    # decorated, subscripted or labelled symbols
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and s.startswith("\\mathit{zq", i):
            j = s.index("}", i) + 1
            out.append(s[i:j])
            i = j
            continue
        at = _read_atom(s, i) if c == "\\" or (c.isalpha() and c.isascii()) else None
        if at is None:
            if c == "\\":
                m = re.match(r"\\([a-zA-Z]+|.)", s[i:])
                out.append(m.group())
                i += m.end()
            else:
                out.append(c)
                i += 1
            continue
        end, base, decorations, subs, sups = at
        labels, powers = [], []
        for sup in sups:
            lab = _is_label_sup(sup)
            (labels if lab is not None else powers).append(lab if lab is not None else sup)
        latex = re.sub(r"\^\s*(\{[^{}]*\}|[^{\s])\s*$", "", s[i:end].strip()) if powers else s[i:end].strip()
        script = "".join(out).rstrip().endswith(("^", "_"))  # x^d: the script is this one symbol
        if decorations or subs or labels:
            if base == "e" and not decorations and not subs:
                base = "e"
            name = _atom_name(base, decorations, subs, labels)
            kind = "loss_opt" if base in LOSS_FUNCTIONS and ("star" in labels or any(
                _slug(x) in ("star", "min", "inf", "opt") for x in subs)) else "plain"
            for lab, sup in zip(labels, [x for x in sups if _is_label_sup(x) is not None]):
                if lab not in ("star", "prime", "T", "dagger"):
                    notes.append(f"read {base}^{{{sup}}} as a label ({name}), not a power")
            ph = namer.placeholder(SymbolUse(name, latex, kind, base=base, decorations=decorations,
                                             index_label="_".join(labels)))
            token = "\\mathit{" + ph + "}"
        else:
            token = ("\\" + base) if base in GREEK else base
        if script and not powers:
            out.append("{" + token + "}")
        else:
            out.append(" " + token + "".join("^{" + p + "}" for p in powers) + " ")
        i = end
        # K(L+r)^2 is K * (L+r)^2: the parser would read a function K applied to (L+r), then squared
        nxt = re.match(r"\s*\(", s[i:])
        if nxt and not script:
            out.append(" \\cdot ")
    s = "".join(out)
    unknown = [w for w in re.findall(r"\\([a-zA-Z]+)", s) if w not in PARSER_WORDS]
    if unknown:
        raise Unparseable(f"unknown macro \\{unknown[0]}")
    return s


def _check_brackets(s: str) -> None:
    """Raise :class:`Unparseable` naming the first bracket that is closed by the wrong one or never closed."""
    pairs = {")": "(", "]": "[", "\\}": "\\{"}
    stack: list[tuple[str, int]] = []
    for m in re.finditer(r"\\sqrt\s*\[|\\[{}]|\\[a-zA-Z]+|\\.|[()\[\]]", s):
        t = m.group()
        if t.startswith("\\sqrt") and t.endswith("["):
            stack.append(("[", m.start()))
        elif t in ("(", "[", "\\{"):
            stack.append((t, m.start()))
        elif t in pairs:
            if not stack or stack[-1][0] != pairs[t]:
                where = f"'{stack[-1][0]}' before '{s[stack[-1][1] + 1:stack[-1][1] + 25].strip()}...'" if stack \
                    else "nothing"
                raise Unparseable(f"unbalanced brackets: '{t}' after '...{s[max(0, m.start() - 20):m.start()].strip()}'"
                                  f" closes {where}")
            stack.pop()
    if stack:
        t, k = stack[-1]
        raise Unparseable(f"unbalanced brackets: '{t}' before '{s[k + 1:k + 25].strip()}...' is never closed")


def _order_side(s: str) -> tuple[list[str], bool] | None:
    """If the side is a sum of order terms (O(..), \\tilde{\\mathcal{O}}(..), \\Theta(..)): their insides and
    whether a tilde hides logs; None if it has none. Raises when it mixes them with explicit terms."""
    if not _ORDER_RE.search(s):
        return None
    inners, tilde, rest, i = [], False, [], 0
    for m in _ORDER_RE.finditer(s):
        if m.start() < i:
            continue
        rest.append(s[i:m.start()])
        j = m.end()
        jm = re.match(r"\s*(\\left|\\big|\\Big|\\bigg|\\Bigg)?\s*", s[j:])
        j += jm.end()
        if j >= len(s) or s[j] not in "([{":
            raise Unparseable("an order symbol without its argument")
        if s[j] == "{":
            g = read_group(s, j)
            inner, end = g[0], g[1]
        else:
            close = {"(": ")", "[": "]"}[s[j]]
            k = _balanced(s, j, s[j], close)
            if k < 0:
                raise Unparseable("an order symbol's bracket is not closed")
            inner, end = s[j + 1:k], k + 1
            inner = re.sub(r"\\right\s*$", "", inner)
        inners.append(inner)
        tilde = tilde or "tilde" in m.group()
        i = end
    rest.append(s[i:])
    leftover = re.sub(r"[\s+]|\\right|\\left", "", "".join(rest))
    if leftover:
        raise Unparseable(f"explicit terms next to O(.) ('{leftover[:40]}'): state the bound or the order")
    return inners, tilde


# ------------------------------------------------------------------------------------ parsing


def _rebuild(e):
    """The expression rebuilt bottom-up, so that sympy evaluates what the parser left unevaluated."""
    if not isinstance(e, sp.Basic) or not e.args or isinstance(e, (sp.Sum, sp.Product)):
        if isinstance(e, (sp.Sum, sp.Product)):
            return e.func(_rebuild(e.function), *[tuple(_rebuild(x) for x in lim) for lim in e.limits])
        return e
    args = [_rebuild(a) for a in e.args]
    _guard(e.func, tuple(args))
    return e.func(*args)


#: a number written in a side has at most this many digits
MAX_DIGITS = 64
#: a number of a side has at most this many bits (about 1,200 digits: a constant of a bound is never near it)
MAX_NUMBER_BITS = 4096
#: the largest numeric argument of n!, binomial(n, k), ... and the longest numeric range of a sum worked out
MAX_COMBINATORIAL = 1000
_COMBINATORIAL = (sp.factorial, sp.factorial2, sp.subfactorial, sp.binomial, sp.RisingFactorial,
                  sp.FallingFactorial, sp.harmonic, sp.fibonacci, sp.lucas, sp.bell, sp.catalan, sp.gamma)


def _bits(x) -> int:
    """Bits of a rational number's numerator or denominator, whichever is larger (0 for other numbers)."""
    if isinstance(x, sp.Rational):
        return max(abs(int(x.p)).bit_length(), int(x.q).bit_length())
    return 0


def _guard(func, args: tuple) -> None:
    """Refuse, before sympy evaluates ``func(*args)``, what would not end or not fit: a numeric power whose value
    has more than :data:`MAX_NUMBER_BITS` bits (``10^{10^{10}}``), n! or binomial(n, k) of a numeric n above
    :data:`MAX_COMBINATORIAL` (``(10^9)!``)."""
    if func is sp.Pow and len(args) == 2:
        base, ex = args
        if isinstance(base, sp.Rational) and isinstance(ex, sp.Rational) and base not in (0, 1, -1):
            if abs(ex) * max(1, _bits(base)) > MAX_NUMBER_BITS or _bits(ex) > 64:
                raise Unparseable(f"a numeric power too large to work out ({sp.sstr(base)[:20]}^"
                                  f"{sp.sstr(ex)[:20]}: more than {MAX_NUMBER_BITS} bits); write it as a symbol")
    elif isinstance(func, type) and issubclass(func, _COMBINATORIAL):
        if any(a.is_Number and abs(a) > MAX_COMBINATORIAL for a in args):
            raise Unparseable(f"{func.__name__} of a number above {MAX_COMBINATORIAL}: too large to work out; write "
                              "it as a symbol")


def _refuse_undefined(expr: sp.Expr) -> None:
    """A side that is not a real number's expression: a division by zero (zoo), nan, the imaginary unit, an
    unevaluated derivative, integral or limit, a number of more than :data:`MAX_NUMBER_BITS` bits."""
    if expr.has(sp.zoo) or expr.has(sp.nan):
        raise Unparseable("a division by zero (the side is undefined)")
    if expr.has(sp.I) or any(p.is_number and p.is_extended_real is False for p in expr.atoms(sp.Pow)):
        raise Unparseable("an imaginary number (a bound's side is real)")
    for kind in (sp.Derivative, sp.Integral, sp.Limit):
        if expr.has(kind):
            raise Unparseable(f"a {kind.__name__.lower()}: not a term a bound's check can evaluate; work it out")
    if any(_bits(a) > MAX_NUMBER_BITS for a in expr.atoms(sp.Rational)):
        raise Unparseable(f"a number of more than {MAX_NUMBER_BITS} bits; write it as a symbol")


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _carries(use: SymbolUse | None, index: str) -> bool:
    """Whether a symbol's LaTeX carries ``index`` in a subscript or superscript (``\\nabla f_m(x^\\star)`` carries
    m, ``x_{t,i}`` carries t and i)."""
    if use is None or not use.latex:
        return False
    tok = re.escape("\\" + index if index in GREEK else index)
    return re.search(r"[_^]\s*(?:\{[^{}]*(?<![A-Za-z\\])" + tok + r"(?![A-Za-z])[^{}]*\}|" + tok + r"(?![A-Za-z]))",
                     use.latex) is not None


def _finish(expr: sp.Expr, namer: _Namer, uses: dict[str, SymbolUse], notes: list[str]) -> tuple[sp.Expr, sp.Expr]:
    """Placeholders -> named symbols; ``L(S-1)`` (an unknown function of one argument) -> a product; ``e`` -> E;
    sums over an index that a symbol carries -> one measured symbol. Returns (expr, raw: before the sums)."""
    from sympy.core.function import AppliedUndef

    def fix(e):
        if isinstance(e, sp.Symbol):
            use = namer.uses.get(e.name)
            if use is not None:
                uses[use.name] = use
                return sp.Symbol(use.name)
            if e.name == "e":
                notes.append("e read as Euler's number (a symbol e would be \\mathit{e}: rename it)")
                return sp.E
            if not _NAME.fullmatch(e.name):  # \mathit{a b}: a name records.py could not write as a symbol
                raise Unparseable(f"a symbol named {e.name!r}: not an identifier (write it as one, e.g. a_b)")
            uses.setdefault(e.name, SymbolUse(e.name, ("\\" + e.name) if e.name in GREEK else e.name, "plain",
                                              base=e.name))
            return sp.Symbol(e.name)
        if isinstance(e, AppliedUndef):
            name = e.func.__name__
            if name in ("max", "min"):
                return (sp.Max if name == "max" else sp.Min)(*[fix(a) for a in e.args])
            if len(e.args) != 1:
                raise Unparseable(f"{name}(...) with {len(e.args)} arguments: not a product, not a known function")
            notes.append(f"read {name}(...) as the product {name} * (...)")
            return fix(sp.Symbol(name)) * fix(e.args[0])
        if isinstance(e, sp.log) and len(e.args) == 2 and e.args[1] == sp.E:
            return sp.log(fix(e.args[0]))
        if not e.args or isinstance(e, (sp.Sum, sp.Product)):
            if isinstance(e, (sp.Sum, sp.Product)):
                return e.func(fix(e.function), *[(lim[0],) + tuple(fix(x) for x in lim[1:]) for lim in e.limits])
            return e
        args = [fix(a) for a in e.args]
        _guard(e.func, tuple(args))
        return e.func(*args)

    raw = _rebuild(fix(expr))
    _refuse_undefined(raw)

    def measured_sums(e):
        if isinstance(e, sp.Sum):
            idx = {lim[0].name for lim in e.limits}
            carried = [s for s in e.function.free_symbols if s.name not in idx and any(
                re.search(rf"(^|_){re.escape(i)}(_|$|\d)", s.name.split("_", 1)[1] if "_" in s.name else "")
                or _carries(uses.get(s.name), i) for i in idx)]
            span = [lim[2] - lim[1] for lim in e.limits if len(lim) == 3]
            if any(d.is_Number and d.is_finite and abs(d) > MAX_COMBINATORIAL for d in span):
                raise Unparseable(f"a sum over more than {MAX_COMBINATORIAL} numeric terms: write its closed form")
            if not carried:
                done = e.doit()
                if not done.has(sp.Sum):
                    return done
            name = "sum_" + (re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", sp.sstr(e.function))).strip("_") or "x")
            lim = ", ".join(f"{l[0]}={sp.sstr(l[1])}..{sp.sstr(l[2])}" for l in e.limits)
            uses[name] = SymbolUse(name, f"\\sum_{{{lim}}} {sp.sstr(e.function)}", "sum", summand=e.function)
            notes.append(f"sum over {lim} of {sp.sstr(e.function)} is the measured symbol {name}")
            return sp.Symbol(name)
        if not e.args:
            return e
        return e.func(*[measured_sums(a) for a in e.args])

    return _rebuild(measured_sums(raw)), raw


#: one side's reading (sympy's parse_latex and the working out) stops after this many seconds, a reason: the ANTLR
#: parser's time grows with the square of a product's length (a display of 9,400 juxtaposed symbols, 19,000
#: characters, took 43 s; one of 1,000 takes 0.5 s)
MAX_PARSE_SECONDS = 5.0
#: reading all the math of one file stops after this many seconds: the file is refused (LatexRefused)
MAX_READ_SECONDS = 60.0
_FILE_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("fedtheory_latex_deadline", default=None)
_TIMED: contextvars.ContextVar[bool] = contextvars.ContextVar("fedtheory_latex_timed", default=False)
_WHERE: contextvars.ContextVar[str] = contextvars.ContextVar("fedtheory_latex_where", default="the LaTeX")


class _OutOfTime(BaseException):
    """Raised by the timer inside a side's parse (a BaseException: no ``except Exception`` of the parser keeps it)."""


@contextlib.contextmanager
def reading_budget(seconds: float | None = MAX_READ_SECONDS, where: str = "the LaTeX"):
    """Within this context, reading math stops after ``seconds`` in all (``None``: no limit but each side's):
    a side started after that is refused (:class:`LatexRefused`, naming ``where``), and each side gets at most
    :data:`MAX_PARSE_SECONDS`. ``draft_from_latex`` reads a file inside one."""
    token = _FILE_DEADLINE.set(None if seconds is None else time.monotonic() + seconds)
    token_where = _WHERE.set(where)
    try:
        yield
    finally:
        _FILE_DEADLINE.reset(token)
        _WHERE.reset(token_where)


def _refuse_file_time() -> LatexRefused:
    return LatexRefused(f"{_WHERE.get()} (reading its math took over {MAX_READ_SECONDS:g} s)",
                        f"LaTeX whose math is read within {MAX_READ_SECONDS:g} s (paste the theorems, not the paper)")


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raise :class:`_OutOfTime` in the body after ``seconds`` (SIGALRM: in the main thread of a POSIX process;
    elsewhere the body runs unbounded, under the structural limits alone). An outer interval timer is restored."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = [True]

    def ring(signum, frame):
        if armed[0]:
            armed[0] = False
            raise _OutOfTime()

    t0 = time.monotonic()
    previous = signal.signal(signal.SIGALRM, ring)
    outer = signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        try:
            yield
        finally:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
        if outer[0] > 0:  # a timer someone else set: it goes on, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(outer[0] - (time.monotonic() - t0), 1e-3), outer[1])


def parse_math(latex: str, *, backend: str = "antlr", _namer: _Namer | None = None,
               uses: dict[str, SymbolUse] | None = None, notes: list[str] | None = None) -> Piece:
    """One side (an expression, or a sum of O(.) terms) as a ``Piece``; :class:`Unparseable` with the reason
    when it cannot be read, among them a side whose reading takes over ``MAX_PARSE_SECONDS``.

    Norms, sums over an index, a loss value f(x) and f^* become named symbols (recorded in ``uses``); readings the
    parser made (Euler's e, a superscript read as a label) are appended to ``notes``.

    Parameters
    ----------
    latex : str
        One side of a relation, its macros expanded.
    backend : {"antlr", "lark"}, default "antlr"
        sympy's ``parse_latex`` backend.
    _namer : optional
        Internal: the placeholder names shared by the sides of one math item. Leave it out.
    uses : dict of str to SymbolUse, optional
        Filled with each symbol of the result: its name, its LaTeX and what kind of thing it is.
    notes : list of str, optional
        Appended with the readings made.

    Returns
    -------
    Piece
        The side: ``expr`` (a sympy expression) or ``order`` (the argument of a stated O(.)), with its LaTeX.

    Raises
    ------
    Unparseable
        When the side cannot be read, or reading it takes over ``MAX_PARSE_SECONDS``.
    """
    if _TIMED.get():  # a stated order's terms: inside their side's time
        return _parse_side(latex, backend=backend, _namer=_namer, uses=uses, notes=notes)
    deadline = _FILE_DEADLINE.get()
    limit = MAX_PARSE_SECONDS
    if deadline is not None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _refuse_file_time()
        limit = min(limit, left)
    token = _TIMED.set(True)
    try:
        with _time_limit(limit):
            return _parse_side(latex, backend=backend, _namer=_namer, uses=uses, notes=notes)
    except _OutOfTime:
        if deadline is not None and time.monotonic() >= deadline:
            raise _refuse_file_time() from None
        raise Unparseable(f"reading this side took over {MAX_PARSE_SECONDS:g} s ({len(latex):,} characters; sympy's "
                          "parser is slow on long products): split it, or write it in records.py by hand") from None
    finally:
        _TIMED.reset(token)


def _parse_side(latex: str, *, backend: str = "antlr", _namer: _Namer | None = None,
                uses: dict[str, SymbolUse] | None = None, notes: list[str] | None = None) -> Piece:
    parse = require_parser(backend)
    namer = _namer or _Namer()
    uses = {} if uses is None else uses
    notes = [] if notes is None else notes
    text = re.sub(r"\\q?quad(?![a-zA-Z])", " ", _strip_wrappers(latex)).strip()  # spacing inside a side
    if not text:
        raise Unparseable("an empty side")
    _check_brackets(text)
    order = _order_side(text)
    if order is not None:
        inners, tilde = order
        exprs = [_parse_side(x, backend=backend, _namer=namer, uses=uses, notes=notes).expr for x in inners]
        return Piece(latex, order=sp.Add(*exprs), up_to_log=tilde)
    flags: dict[str, bool] = {}
    s = _rewrite(text, namer, notes, flags)
    terms = len(_split_top(s, re.compile(r"(?<![\^_{(])[+-]")))
    if terms > MAX_TERMS:
        raise LatexRefused(f"a display side with {terms:,} terms", f"LaTeX whose displays have at most {MAX_TERMS} "
                           "terms per side")
    long_number = re.search(r"\d{%d,}" % (MAX_DIGITS + 1), s)
    if long_number:  # the parser's time grows with the square of a number's digits (5,000 digits: minutes)
        raise Unparseable(f"a number of {len(long_number.group()):,} digits (at most {MAX_DIGITS}): write it as a "
                          "symbol")
    from sympy.parsing.latex.errors import LaTeXParsingError

    try:
        expr = parse(s, strict=True)
    except LaTeXParsingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "the parser did not accept it"
        raise Unparseable(f"sympy's parse_latex: {first}") from None
    except ImportError:
        raise
    except RecursionError:
        raise Unparseable("nested too deep for sympy's parse_latex") from None
    except Exception as exc:  # noqa: BLE001 - the parser's own failures (TypeError on odd input) are reasons
        first = (str(exc).strip().splitlines() or [""])[0]
        raise Unparseable(f"sympy's parse_latex: {type(exc).__name__}: {first}") from None
    if not isinstance(expr, sp.Basic):  # the lark backend returns a tree when the grammar is ambiguous
        raise Unparseable(f"sympy's parse_latex ({backend}): an ambiguous parse ({type(expr).__name__})")
    if isinstance(expr, (sp.core.relational.Relational, sp.logic.boolalg.BooleanFunction)):
        raise Unparseable("a relation inside a side")
    try:
        final, raw = _finish(expr, namer, uses, notes)
        _refuse_undefined(final)
    except (ValueError, OverflowError, RecursionError) as exc:  # sympy's own limits (int digits, recursion)
        if isinstance(exc, LatexRefused):
            raise
        first = (str(exc).strip().splitlines() or [""])[0]
        raise Unparseable(f"sympy could not work the side out: {type(exc).__name__}: {first[:80]}") from None
    return Piece(latex, expr=final, raw=raw, expectation=bool(flags.get("expectation")))


def _relations(piece: str) -> list[tuple[str, str]]:
    """[(text, rel), ...]: the piece cut at its top-level relations; the first entry's rel is ''."""
    depth_of = {i: d for i, _, d in _depth_scan(piece)}
    parts, last, rel = [], 0, ""
    for m in _REL_RE.finditer(piece):
        if depth_of.get(m.start(), 0) != 0:
            continue
        kind = next(_REL[int(k[1:])][1] for k, v in m.groupdict().items() if v is not None)
        parts.append((piece[last:m.start()], rel))
        rel, last = (kind if kind != "other" else "other:" + m.group()), m.end()
    parts.append((piece[last:], rel))
    return parts


def _where(item: MathItem, needle: str) -> tuple[int, int]:
    """Line and column of ``needle`` inside the item's source text (the item's start if not found)."""
    k = item.raw.find(needle)
    if k < 0:
        return item.line, item.col
    before = item.raw[:k]
    line = item.line + before.count("\n")
    col = (k - before.rfind("\n")) if "\n" in before else item.col + k
    return line, col


_REL_TEXT = {"le": "\\le", "lt": "<", "ge": "\\ge", "gt": ">", "eq": "=", "def": ":="}
_DOTS = re.compile(r"\s*(?:\\(?:l|c)?dots[a-z]*|\.\.\.)\s*")
_RANGE_START = re.compile(r"^\s*(?:[A-Za-z]|\\[a-zA-Z]+)(?:\s*_\s*(?:\{[^{}]*\}|\w))?\s*=\s*[^=<>]+$")


def _index_ranges(pieces: list[str]) -> tuple[list[str], list[str]]:
    """The pieces of a statement without its index ranges (``m = 1, \\dots, M``, ``t = 0, 1, \\dots, T - 1``: an
    index and its values, never the definition m = 1), and those ranges as text."""
    out, ranges, k = [], [], 0
    while k < len(pieces):
        dots = next((j for j in range(k + 1, min(k + 4, len(pieces))) if _DOTS.fullmatch(pieces[j])), None)
        if dots is not None and _RANGE_START.match(pieces[k]) and all(
                "=" not in pieces[j] and not _REL_RE.search(pieces[j]) for j in range(k + 1, dots)):
            last = dots + 1 if dots + 1 < len(pieces) and not _REL_RE.search(pieces[dots + 1]) else dots
            ranges.append(", ".join(p.strip() for p in pieces[k:last + 1]))
            k = last + 1
            continue
        out.append(pieces[k])
        k += 1
    return out, ranges


def undefined_macros(item: MathItem) -> list[tuple[str, int, int]]:
    """The control words of a math item (after the file's macros are expanded) that are neither the file's nor known
    to the reading (:func:`known_words`): (\\name, line, column), each once."""
    known = known_words()
    out: dict[str, tuple[str, int, int]] = {}
    for m in re.finditer(r"\\([a-zA-Z]+)", item.text):
        w = m.group(1)
        if w not in known and w not in out:
            line, col = _where(item, "\\" + w)
            out[w] = ("\\" + w, line, col)
    return list(out.values())


def parse_item(item: MathItem, *, backend: str = "antlr") -> list[Relation | Unparsed | Skipped]:
    """Every relation of a math item, the snippets that did not parse (:class:`Unparsed`, with the reason) and the
    pieces that state nothing to draft (:class:`Skipped`: an index range, an inline ``x \\in X``, with the reason).
    Unicode math (``≤``) is read as its LaTeX; any other character beyond ASCII is named. A chain ``A \\le B \\le C``
    is read as ``A <= C`` in a display, and as each adjacent pair inline (``0 < \\eta \\le 1/L``: two conditions).
    ``backend``: sympy's parse_latex backend ('antlr', the default; 'lark')."""
    results: list[Relation | Unparsed | Skipped] = []
    try:
        text = _unicode_to_latex(_strip_wrappers(item.text))  # a \\label may hold any character
    except Unparseable as exc:
        return [Unparsed(item.text.strip()[:400], item.line, item.col, str(exc))]
    for statement in _statements(text):
        pieces, ranges = _index_ranges(_pieces(statement))
        results += [Skipped(r, item.line, item.col, "an index range (an index and its values, not a definition)")
                    for r in ranges]
        for piece in pieces:
            parts = _relations(piece)
            if len(parts) == 1:
                continue  # no relation: nothing is stated
            rels = [r for _, r in parts[1:]]
            other = [r for r in rels if r.startswith("other:")]
            if other:
                why = f"relation {other[0][6:]} is not a bound, a definition or an equation"
                results.append(Unparsed(piece.strip(), item.line, item.col, why) if item.display else
                               Skipped(piece.strip(), item.line, item.col, why))
                continue
            kinds = {"le" if r in ("le", "lt") else "ge" if r in ("ge", "gt") else "eq" for r in rels}
            if len(kinds - {"eq"}) > 1:
                results.append(Unparsed(piece.strip(), item.line, item.col, "a chain with both <= and >="))
                continue
            pairwise = len(parts) > 2 and (not item.display or re.fullmatch(r"\s*[\d.]+\s*", parts[0][0]))
            links = ([(parts[k][0], parts[k + 1][1], parts[k + 1][0]) for k in range(len(parts) - 1)] if pairwise else
                     [(parts[0][0], next((r for r in rels if r not in ("eq", "def")), rels[0]), parts[-1][0])])
            for lhs_text, strongest, rhs_text in links:
                text = (f"{lhs_text.strip()} {_REL_TEXT[strongest]} {rhs_text.strip()}" if pairwise else
                        piece.strip())
                results += _relation(item, piece, lhs_text, strongest, rhs_text, backend,
                                     len(parts) - 1 if not pairwise else 1, text)
    return results


def _relation(item: MathItem, piece: str, lhs_text: str, rel: str, rhs_text: str, backend: str,
              chain: int, text: str) -> list[Relation | Unparsed]:
    uses: dict[str, SymbolUse] = {}
    notes: list[str] = []
    namer = _Namer()
    try:
        rhs = parse_math(rhs_text, backend=backend, _namer=namer, uses=uses, notes=notes)
    except LatexRefused as exc:
        raise LatexRefused(f"line {item.line}, column {item.col} ({exc.value})", exc.allowed) from None
    except Unparseable as exc:
        return [_unparsed(item, piece, rhs_text, str(exc))]
    try:
        lhs = parse_math(lhs_text, backend=backend, _namer=namer, uses=uses, notes=notes)
    except LatexRefused as exc:
        raise LatexRefused(f"line {item.line}, column {item.col} ({exc.value})", exc.allowed) from None
    except Unparseable as exc:
        lhs = Piece(lhs_text)
        notes.append(f"left side not parsed ({exc})")
    if chain > 1:
        notes.append(f"a chain of {chain} relations: read as the first side against the last")
    return [Relation(lhs, rel, rhs, text, item, uses, list(dict.fromkeys(notes)), chain=chain)]


def _unparsed(item: MathItem, piece: str, side: str, reason: str) -> Unparsed:
    m = re.match(r"unknown macro (\\[a-zA-Z]+)", reason)
    if m:
        line, col = _where(item, m.group(1))
        if m.group(1) not in item.raw:
            reason += " (from the expansion of " + ", ".join(item.expansion_notes) + ")" if item.expansion_notes \
                else ""
        reason = reason.replace(m.group(0), f"{m.group(0)} at line {line}, column {col}")
        return Unparsed(piece.strip(), line, col, reason)
    return Unparsed(piece.strip(), item.line, item.col, reason)
