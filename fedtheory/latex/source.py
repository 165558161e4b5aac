"""A LaTeX source as text: its limits, comments, macros, theorem-like environments and math, with positions.

Nothing here parses an expression: this is the preprocessing ``sympy.parsing.latex.parse_latex`` gets its input from.
Every refusal of a hostile input is a :class:`LatexRefused` (a ParameterError on the parameter FILE: exit 2, one
line), raised before any work that grows with the input's nesting or length:

* more than :data:`MAX_BYTES` bytes (a 10 MB file is refused by its size, unread);
* braces nested deeper than :data:`MAX_DEPTH` (a linear scan; 10,000-deep braces are refused at level 65);
* a display longer than :data:`MAX_DISPLAY_CHARS` characters or with more than :data:`MAX_TERMS` terms (a display of
  100,000 terms), more than :data:`MAX_DISPLAYS` displays, more than :data:`MAX_MATH_CHARS` characters of math to
  parse in all;
* a macro expansion that does not end or grows past :data:`MAX_EXPANSIONS` expansions or :data:`MAX_EXPANDED_CHARS`
  characters (``\\def\\a{\\a\\a}``).
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._validation import ParameterError

__all__ = ["Document", "LatexRefused", "Macro", "MathItem", "MAX_BYTES", "MAX_DEPTH", "MAX_DISPLAYS",
           "MAX_DISPLAY_CHARS", "MAX_EXPANDED_CHARS", "MAX_EXPANSIONS", "MAX_MATH_CHARS", "MAX_OUTSIDE_DEFINITIONS",
           "MAX_TERMS", "THEOREM_ENVIRONMENTS", "read_document", "read_latex_file"]

MAX_BYTES = 4 << 20  #: a paper's whole source is rarely above 1 MiB
MAX_DEPTH = 64  #: braces { } nested deeper are refused (the parser's own recursion ends near 100)
MAX_DISPLAY_CHARS = 20_000  #: one display (the longest bound of the seeds is under 1,000)
MAX_TERMS = 400  #: top-level terms of one side of a display
MAX_DISPLAYS = 2_000  #: math items (displays, and inline math inside theorem-like environments)
MAX_MATH_CHARS = 400_000  #: math to parse in all
MAX_EXPANSIONS = 20_000  #: macro expansions in all
#: one math item after expanding the macros: the limit of a display as written (checked as it grows, before a
#: body is copied: ``\newcommand{\q}[1]{#1#1#1#1#1#1#1#1}`` nested 5 deep would make 32,768 copies)
MAX_EXPANDED_CHARS = MAX_DISPLAY_CHARS
#: inline definitions read outside the theorem-like environments (``where $\sigma^2 = ...$``); more are listed
MAX_OUTSIDE_DEFINITIONS = 200

#: environments read as statements (``\\newtheorem`` adds the file's own)
THEOREM_ENVIRONMENTS = ("theorem", "thm", "lemma", "lem", "corollary", "cor", "proposition", "prop", "claim")
_DISPLAY_ENVS = ("equation", "equation*", "align", "align*", "aligned", "gather", "gather*", "multline", "multline*",
                 "eqnarray", "eqnarray*", "flalign", "flalign*", "displaymath", "split", "alignat", "alignat*")


class LatexRefused(ParameterError):
    """A LaTeX input refused before parsing (too large, too deep, an endless macro). ``str()`` is one line naming
    FILE, what was found and the limit.

    A :class:`~fedtheory.validation.ParameterError` whose parameter is ``FILE``: the command line exits with
    status 2.

    Parameters
    ----------
    what : str
        What was found: the file (or ``- (standard input)``), or where in it the limit was passed.
    limit : str
        What is allowed (``"at most 4 MiB of LaTeX"``).
    """

    def __init__(self, what: str, limit: str):
        super().__init__("FILE", what, limit)


@dataclass(frozen=True)
class Macro:
    """A macro of the preamble: ``\\newcommand{\\name}[nargs][default]{body}`` or ``\\def\\name#1#2{body}``."""

    name: str  # without the backslash
    nargs: int
    body: str
    default: str | None = None  # the optional first argument's default (\\newcommand[n][default])
    line: int = 0


@dataclass
class MathItem:
    """One piece of math: a display (``\\[..\\]``, ``$$..$$``, an equation/align environment) or inline math inside a
    theorem-like environment. ``text`` is the math with the macros expanded; ``raw`` as written."""

    raw: str
    text: str
    start: int  # offset of the math in the source (after the opening delimiter)
    line: int
    col: int
    display: bool
    environment: str = ""  # the theorem-like environment around it ('' if none)
    env_index: int = -1  # which theorem-like environment (its order in the file), -1 for none
    env_title: str = ""  # e.g. 'Theorem 2' or the optional [title]
    label: str = ""  # \\label{...} inside the math, else the environment's
    expansion_notes: list[str] = field(default_factory=list)
    context: str = ""  # 'outside': inline math outside the theorem-like environments, read for its definitions


@dataclass
class Document:
    """What :func:`read_document` found: the math items, the macros, the theorem-like environments.

    Parameters
    ----------
    path : str
        The source's name, as given.
    text : str
        The source text, as read.
    macros : dict of str to Macro
        The preamble's macros by name (without the backslash).
    items : list of MathItem
        The math read as statements, in the order of the file, each with its macros expanded.
    theorems : list of tuple of (str, str, str, int)
        Each theorem-like environment: (environment, title, label, line).
    theorem_names : tuple of str
        The environments read as theorems (the built-in ones and the file's ``\\newtheorem`` ones).
    theorem_texts : list of str, optional
        Each theorem-like environment's body, as written.
    assumption_texts : list of str, optional
        The bodies of the file's assumption environments.
    outside : list of tuple of (int, str), optional
        Math not read as statements, each (line, what).
    _lines : list of int, optional
        The offsets at which the lines start (internal: for :meth:`position`).
    """

    path: str
    text: str
    macros: dict[str, Macro]
    items: list[MathItem]
    theorems: list[tuple[str, str, str, int]]  # (environment, title, label, line)
    theorem_names: tuple[str, ...]
    theorem_texts: list[str] = field(default_factory=list)  # each theorem-like environment's body, as written
    assumption_texts: list[str] = field(default_factory=list)  # the bodies of assumption environments in the file
    #: math not read as statements, each (line, what): a display outside the theorem-like environments that none
    #: cites, an inline definition past MAX_OUTSIDE_DEFINITIONS
    outside: list[tuple[int, str]] = field(default_factory=list)
    _lines: list[int] = field(default_factory=list, repr=False)

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both from 1, of an offset into the source."""
        return position(self._lines, offset)


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def position(starts: list[int], offset: int) -> tuple[int, int]:
    i = bisect.bisect_right(starts, offset) - 1
    return i + 1, offset - starts[i] + 1


def read_latex_file(path: str, *, stdin=None) -> str:
    """The text of ``path`` (``-``: standard input), refused over :data:`MAX_BYTES` bytes or when not a regular
    file. Decoded as UTF-8 (undecodable bytes become U+FFFD)."""
    from ..files import FileRefused, read_regular

    if path == "-":
        import sys

        stream = stdin if stdin is not None else sys.stdin
        buf = getattr(stream, "buffer", None)
        data = buf.read(MAX_BYTES + 1) if buf is not None else stream.read(MAX_BYTES + 1)
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        if len(data) > MAX_BYTES:
            raise LatexRefused("- (standard input)", f"at most {MAX_BYTES // (1 << 20)} MiB of LaTeX (more was "
                               "given): paste the theorem, not the paper")
        return data.decode("utf-8", "replace")
    try:
        data = read_regular(path, MAX_BYTES, "LaTeX file")
    except FileRefused as exc:
        raise LatexRefused(path, f"a readable regular file of at most {MAX_BYTES // (1 << 20)} MiB ({exc.why})") \
            from None
    return data.decode("utf-8", "replace")


def _strip_comments(text: str) -> str:
    """``%`` to the end of the line (not ``\\%``) replaced by spaces: offsets keep their lines and columns."""
    if "%" not in text:
        return text
    return re.sub(r"(?<!\\)%[^\n]*", lambda m: " " * len(m.group()), text)


def check_nesting(text: str, where: str, starts: list[int] | None = None) -> None:
    """Refuse braces nested deeper than :data:`MAX_DEPTH` (a linear scan; escaped ``\\{`` does not count)."""
    depth = 0
    for m in re.finditer(r"\\.|[{}]", text):
        c = m.group()
        if c == "{":
            depth += 1
            if depth > MAX_DEPTH:
                line, col = position(starts or _line_starts(text), m.start())
                raise LatexRefused(f"{where} (braces nested deeper than {MAX_DEPTH} at line {line}, column {col})",
                                   f"LaTeX whose braces nest at most {MAX_DEPTH} deep")
        elif c == "}":
            depth = max(0, depth - 1)


def read_group(text: str, i: int) -> tuple[str, int] | None:
    """The balanced ``{...}`` group starting at ``text[i]`` (spaces skipped): (its content, the offset after it);
    a single token when there is no brace (``\\frac12``: ``1``); None at the end of the text."""
    n = len(text)
    while i < n and text[i] in " \t\n":
        i += 1
    if i >= n:
        return None
    if text[i] != "{":
        if text[i] == "\\":
            m = re.match(r"\\([a-zA-Z]+|.)", text[i:])
            return m.group(), i + m.end()
        return text[i], i + 1
    depth, j = 0, i
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
        j += 1
    return None


_MACRO_DEF = re.compile(r"\\(newcommand|renewcommand|providecommand|DeclareRobustCommand)\*?\s*|\\def\s*|"
                        r"\\DeclareMathOperator\*?\s*|\\newtheorem\*?\s*")


def find_macros(text: str, starts: list[int]) -> tuple[dict[str, Macro], list[tuple[str, str]], list[tuple[int, int]]]:
    """The file's macros, its ``\\newtheorem`` environments (name, title) and the spans of the definitions."""
    macros: dict[str, Macro] = {}
    theorems: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    for m in _MACRO_DEF.finditer(text):
        kind = m.group().strip().lstrip("\\").rstrip("*").strip()
        i = m.end()
        line = position(starts, m.start())[0]
        if kind == "newtheorem":
            g = read_group(text, i)
            if g is None:
                continue
            env, i = g
            while i < len(text) and text[i] in " \t":
                i += 1
            if i < len(text) and text[i] == "[":
                j = text.find("]", i)
                i = j + 1 if j > 0 else i
            title = read_group(text, i)
            theorems.append((env.strip(), (title[0] if title else env).strip()))
            continue
        if kind == "def":
            nm = re.match(r"\\([a-zA-Z]+|.)", text[i:])
            if nm is None:
                continue
            name, i = nm.group(1), i + nm.end()
            params = re.match(r"(#\d)*", text[i:])
            nargs, i = len(params.group()) // 2, i + params.end()
            body = read_group(text, i)
            if body is None:
                continue
            macros[name] = Macro(name, nargs, body[0], None, line)
            spans.append((m.start(), body[1]))
            continue
        g = read_group(text, i)
        if g is None:
            continue
        name, i = g
        name = name.strip().lstrip("\\")
        if kind == "DeclareMathOperator":
            body = read_group(text, i)
            if body is None:
                continue
            macros[name] = Macro(name, 0, r"\operatorname{" + body[0] + "}", None, line)
            spans.append((m.start(), body[1]))
            continue
        nargs, default = 0, None
        opt = re.match(r"\s*\[(\d)\]", text[i:])
        if opt:
            nargs, i = int(opt.group(1)), i + opt.end()
            dm = re.match(r"\s*\[([^\]]*)\]", text[i:])
            if dm:
                default, i = dm.group(1), i + dm.end()
        body = read_group(text, i)
        if body is None:
            continue
        if kind == "providecommand" and name in macros:
            continue
        macros[name] = Macro(name, nargs, body[0], default, line)
        spans.append((m.start(), body[1]))
    return macros, theorems, spans


class _Budget:
    def __init__(self):
        self.expansions = 0


def expand_macros(text: str, macros: dict[str, Macro], budget: _Budget, where: str) -> tuple[str, list[str]]:
    """``text`` with the macros expanded (arguments substituted, repeated until none is left). Refused when the
    expansion does not end: more than :data:`MAX_EXPANSIONS` expansions in all or :data:`MAX_EXPANDED_CHARS`
    characters."""
    if not macros:
        return text, []
    notes: list[str] = []
    pattern = re.compile(r"\\([a-zA-Z]+)")
    rounds = 0
    while True:
        changed = False
        out, pos, produced = [], 0, 0
        for m in pattern.finditer(text):
            if m.start() < pos:
                continue
            mac = macros.get(m.group(1))
            if mac is None:
                continue
            budget.expansions += 1
            if budget.expansions > MAX_EXPANSIONS:
                raise LatexRefused(f"{where} (macro expansion: more than {MAX_EXPANSIONS} expansions; is the macro "
                                   f"\"{mac.name}\" recursive?)", f"LaTeX whose macros expand at most "
                                   f"{MAX_EXPANSIONS} times")
            i, args = m.end(), []
            if mac.default is not None:
                om = re.match(r"\s*\[([^\]]*)\]", text[i:])
                if om:
                    args.append(om.group(1))
                    i += om.end()
                else:
                    args.append(mac.default)
            while len(args) < mac.nargs:
                g = read_group(text, i)
                if g is None:
                    break
                args.append(g[0])
                i = g[1]
            grows = len(mac.body) + sum(mac.body.count(f"#{k}") * len(a) for k, a in enumerate(args, 1))
            if produced + (m.start() - pos) + grows + (len(text) - i) > MAX_EXPANDED_CHARS:
                raise LatexRefused(f"{where} (macro expansion grows past {MAX_EXPANDED_CHARS:,} characters, the limit "
                                   f"of a display, at the macro \"{mac.name}\": nested too deep, or is the macro "
                                   f"\"{mac.name}\" recursive?)", f"LaTeX whose math expands to at most "
                                   f"{MAX_EXPANDED_CHARS:,} characters per display")
            body = mac.body
            for k, a in enumerate(args, 1):
                body = body.replace(f"#{k}", a)
            # a control word followed by a letter needs the space that ended it
            tail = text[i:i + 1]
            sep = " " if re.search(r"\\[a-zA-Z]+$", body) and tail[:1].isalpha() else ""
            out.append(text[pos:m.start()])
            out.append(body + sep)
            produced += m.start() - pos + len(body) + len(sep)
            pos = i
            changed = True
            if f"\\{mac.name}" not in notes:
                notes.append(f"\\{mac.name}")
        if not changed:
            return text, notes
        out.append(text[pos:])
        text = "".join(out)
        rounds += 1
        if len(text) > MAX_EXPANDED_CHARS:
            raise LatexRefused(f"{where} (macro expansion grows past {MAX_EXPANDED_CHARS} characters)",
                               f"LaTeX whose math expands to at most {MAX_EXPANDED_CHARS} characters")


_BEGIN = re.compile(r"\\begin\s*\{([a-zA-Z*]+)\}")
#: inline math that may define a symbol: a short left side, then =, :=, \\coloneqq, \\triangleq, \\equiv, or a
#: decorated = (what ``where $\\sigma^2 = ...$`` starts with); the parse decides
_DEFINITION_START = re.compile(r"^[^=<>$]{1,60}?(?::=|\\coloneqq|\\triangleq|\\equiv|\\stackrel\s*\{[^{}]*\}\s*\{=\}|"
                               r"\\overset\s*\{[^{}]*\}\s*\{=\}|(?<![<>!:\\])=)", re.S)


def _find_end(text: str, env: str, i: int) -> int:
    """The offset of the ``\\end{env}`` that closes the environment opened before ``i`` (nesting counted), or -1."""
    pat = re.compile(r"\\(begin|end)\s*\{" + re.escape(env) + r"\}")
    depth = 1
    for m in pat.finditer(text, i):
        depth += 1 if m.group(1) == "begin" else -1
        if depth == 0:
            return m.start()
    return -1


def _math_spans(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, display) of every math item: $$..$$, \\[..\\], display environments, $..$, \\(..\\)."""
    spans: list[tuple[int, int, bool]] = []
    i, n = 0, len(text)
    token = re.compile(r"\\begin\s*\{([a-zA-Z*]+)\}|\$\$|\\\[|\\\(|(?<!\\)\$")
    while i < n:
        m = token.search(text, i)
        if m is None:
            break
        t = m.group()
        if m.group(1) is not None:
            env = m.group(1)
            if env not in _DISPLAY_ENVS:
                i = m.end()
                continue
            end = _find_end(text, env, m.end())
            if end < 0:
                i = m.end()
                continue
            spans.append((m.end(), end, True))
            i = text.find("}", end) + 1
            continue
        close = {"$$": "$$", "\\[": "\\]", "\\(": "\\)", "$": "$"}[t]
        j = m.end()
        while True:
            k = text.find(close, j)
            if k < 0 or text[k - 1:k] != "\\" or close != "$":
                break
            j = k + 1
        if k < 0:
            i = m.end()
            continue
        spans.append((m.end(), k, t in ("$$", "\\[")))
        i = k + len(close)
    return spans


def read_document(text: str, path: str = "<latex>") -> Document:
    """Find the math of a LaTeX source (a file, a paper's Markdown, a pasted display) and expand its macros.

    Inside theorem-like environments (``THEOREM_ENVIRONMENTS`` and the file's ``\\newtheorem`` ones) every display
    and every inline math is taken (an inline relation is a condition of the statement), and so is a labelled display
    outside them that the theorem cites (``\\eqref{X}``, ``\\ref{X}``). Other displays outside them are taken only
    when the file has no theorem-like environment (a pasted display, a text without them).

    Parameters
    ----------
    text : str
        The LaTeX source.
    path : str, default "<latex>"
        How the source is named in messages.

    Returns
    -------
    Document
        The math items and what else was found.

    Raises
    ------
    LatexRefused
        When the source is over the size limit, nested too deep, or a macro does not stop expanding.
    """
    if len(text.encode("utf-8", "replace")) > MAX_BYTES:
        raise LatexRefused(path, f"at most {MAX_BYTES // (1 << 20)} MiB of LaTeX")
    starts = _line_starts(text)
    clean = _strip_comments(text)
    check_nesting(clean, path, starts)
    macros, newtheorems, spans = find_macros(clean, starts)
    names = tuple(dict.fromkeys(list(THEOREM_ENVIRONMENTS) + [e for e, _ in newtheorems]))
    titles = dict(newtheorems)
    body = clean
    for a, b in spans:  # the definitions' bodies are not math of the document
        body = body[:a] + " " * (b - a) + body[b:]
    envs: list[tuple[int, int, str, str, str, int]] = []  # (start, end, env, title, label, line)
    for m in _BEGIN.finditer(body):
        env = m.group(1)
        if env.rstrip("*") not in names:
            continue
        end = _find_end(body, env, m.end())
        if end < 0:
            continue
        i = m.end()
        opt = re.match(r"\s*\[([^\]]*)\]", body[i:])
        title = titles.get(env.rstrip("*"), env.rstrip("*").capitalize())
        if opt:
            title += f" ({opt.group(1).strip()})"
        lab = re.search(r"\\label\s*\{([^}]*)\}", body[m.end():end])
        envs.append((m.end(), end, env, title, lab.group(1) if lab else "", position(starts, m.start())[0]))
    # a display outside the theorem that the theorem cites (\eqref{X}, \ref{X}) belongs to it
    cited: dict[str, int] = {}
    for k, e in enumerate(envs):
        for lab in re.findall(r"\\(?:eqref|ref|cref|Cref|autoref)\s*\{([^}]*)\}", body[e[0]:e[1]]):
            for one in lab.split(","):
                cited.setdefault(one.strip(), k)
    budget = _Budget()
    items: list[MathItem] = []
    total = 0
    outside: list[tuple[int, str]] = []
    outside_defs = 0
    for a, b, display in _math_spans(body):
        inside = next((k for k, e in enumerate(envs) if e[0] <= a < e[1]), -1)
        if inside < 0 and display and envs:
            own = re.search(r"\\label\s*\{([^}]*)\}", body[a:b])
            inside = cited.get(own.group(1).strip(), -1) if own else -1
        context = ""
        if inside < 0 and (envs or not display):
            if display:  # a display of the text or a proof: counted, not read as a statement
                outside.append((position(starts, a)[0], "a display outside the theorem-like environments (no "
                                "theorem cites it): not read as a statement"))
                continue
            if not _DEFINITION_START.match(body[a:b]):
                continue  # inline math of the prose that defines nothing
            outside_defs += 1
            if outside_defs > MAX_OUTSIDE_DEFINITIONS:
                outside.append((position(starts, a)[0], f"an inline definition past the first "
                                f"{MAX_OUTSIDE_DEFINITIONS} outside the theorems: not read"))
                continue
            context = "outside"
        raw = body[a:b]
        line, col = position(starts, a)
        where = f"{path}:{line}:{col}"
        if len(raw) > MAX_DISPLAY_CHARS:
            raise LatexRefused(f"{where} (a math item of {len(raw):,} characters)",
                               f"LaTeX whose displays have at most {MAX_DISPLAY_CHARS:,} characters each")
        if len(items) >= MAX_DISPLAYS:
            raise LatexRefused(f"{path} (more than {MAX_DISPLAYS} math items to read)",
                               f"LaTeX with at most {MAX_DISPLAYS} displays (or inline math in theorems)")
        total += len(raw)
        if total > MAX_MATH_CHARS:
            raise LatexRefused(f"{path} (more than {MAX_MATH_CHARS:,} characters of math to read)",
                               f"LaTeX with at most {MAX_MATH_CHARS:,} characters of math")
        expanded, notes = expand_macros(raw, macros, budget, where)
        check_nesting(expanded, where)
        e = envs[inside] if inside >= 0 else None
        lab = re.search(r"\\label\s*\{([^}]*)\}", raw)
        items.append(MathItem(raw=raw, text=expanded, start=a, line=line, col=col, display=display,
                              environment=e[2] if e else "", env_index=inside, env_title=e[3] if e else "",
                              label=lab.group(1) if lab else (e[4] if e else ""), expansion_notes=notes,
                              context=context))
    assumption_texts = []
    for m in _BEGIN.finditer(body):  # \begin{assumption}, {assumptions}, {assump}, {hypothesis}: the premises
        if re.match(r"(assum|hypothes)", m.group(1).lower()):
            end = _find_end(body, m.group(1), m.end())
            if end > 0:
                assumption_texts.append(body[m.end():end][:MAX_DISPLAY_CHARS])
    doc = Document(path=path, text=text, macros=macros, items=items,
                   theorems=[(e[2], e[3], e[4], e[5]) for e in envs], theorem_names=names,
                   theorem_texts=[body[e[0]:e[1]][:MAX_DISPLAY_CHARS] for e in envs], assumption_texts=assumption_texts,
                   outside=outside)
    doc._lines = starts
    return doc


def read_path(path: str | Path, *, stdin=None) -> Document:
    """:func:`read_document` of a file (``-``: standard input)."""
    return read_document(read_latex_file(str(path), stdin=stdin), str(path))
