"""``fedtheory report``: one self-contained HTML page per check run, drawn from the results file alone.

The page (inline CSS, inline SVG figures drawn by matplotlib, one small inline script for sorting and filtering
the verdict table; no network, no external file, no JavaScript framework) holds:

* per paper: the verdict counts and the headline findings (the ones the exit code counts, and the ones not
  counted with their scope), and a tightness chart (bound / measured per bound row, log scale, 1 marked);
* a sortable, filterable verdict table of every record, each row linked to its section;
* one section per record: verdict, problem, setting, source (seed file and equation), the quote it tests, the
  detail, the command that reproduces it, and its figure:

  - a per-round bound: measured (mean +- SE over runs) against the bound over rounds, log axes
    (``extra['series']``, stored by ``assess_bound``);
  - a scalar bound swept over a parameter (rows sharing id, problem and setting): measured and bound
    against the swept parameter (beta, eta, E, ... read from ``params``);
  - ``not_applicable``: each failing condition as "required vs actual";
  - a claim: its measured curve(s) (``extra['measurements']``, stored by ``claim_result``) under the claimed
    statement;
  - a measured rate: the measurement against the horizon with the fitted and the stated exponent, and the
    fitted exponent's 95% interval against the stated one.

Why Jinja2: the page is mostly markup with loops over papers and records; an autoescaping template keeps every
string from the results file (details, quotes, conditions with ``<`` and ``&``) escaped without hand-written
escaping at each of ~40 interpolation points, and keeps the markup readable in one file
(``fedtheory/templates/report.html.j2``). It costs no install: torch, a dependency already, requires it.
"""
from __future__ import annotations

import io
import math
import re
import shlex
from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["write_report", "render_report", "check_payload", "tightness_table", "tightness_markdown",
           "load_results", "load_run_curves", "VERDICT_COLORS"]

VERDICT_COLORS = {"holds": "#2e7d32", "claim_supported": "#2e7d32", "rate_consistent": "#2e7d32",
                  "violated": "#c62828", "claim_refuted": "#c62828", "rate_inconsistent": "#c62828",
                  "error": "#6a1b9a", "inconclusive": "#ef8f00", "not_applicable": "#757575",
                  "ambiguous": "#8d6e63", "proof_step_loose": "#5c6bc0"}
_SWEEP_KEYS = ("beta", "eta", "E", "K", "T", "rho", "alpha", "bits", "c", "gamma", "lam", "tau")
_COND_RE = re.compile(r"^(?:(?P<name>[\w.]+):\s*)?(?P<rel>.*?)\s*\((?P<a>[-+]?[\d.]+(?:e[-+]?\d+)?|[-+]?inf|nan) vs "
                      r"(?P<b>[-+]?[\d.]+(?:e[-+]?\d+)?|[-+]?inf|nan)\)\s*$", re.I)


# What one figure draws at most (a results file may be someone else's, or hold a long run): points per line (log-
# spaced where the axis is log, evenly elsewhere; the first, last and marked points kept), lines per claim figure,
# rows of a tightness chart (the tightest kept) and failing conditions per row. A thinned figure says so in its title.
MAX_POINTS = 2000
MAX_LINES = 12
MAX_TIGHTNESS_ROWS = 300
MAX_CONDITIONS = 30
# A results or mutation file `fedtheory report` reads: parsed and drawn, one costs about 13x its size in memory plus
# ~100 MB (measured: 3 MB -> 171 MB peak, 30 MB -> 495 MB; 200 MB once peaked at 3.8 GB under a 512 MiB limit), so
# 64 MiB keeps the peak under ~1 GB. The full profile's file is ~5 MB.
MAX_RESULTS_BYTES = 64 << 20


# ------------------------------------------------------------------------------------ small helpers


def _thin(n: int, cap: int = MAX_POINTS, log: bool = False, keep: Sequence[int] = ()) -> list[int]:
    """At most ``cap`` (+ len(keep)) indices of 0..n-1, in order: all of them when n <= cap, else log-spaced
    (``log``: for a log axis) or evenly spaced, the first, the last and ``keep`` always in."""
    if n <= cap:
        return list(range(n))
    import numpy as np

    if log:
        idx = np.unique(np.round(np.geomspace(1, n, cap)).astype(int) - 1)
    else:
        idx = np.unique(np.round(np.linspace(0, n - 1, cap)).astype(int))
    return sorted({0, n - 1, *idx.tolist(), *[k for k in keep if 0 <= k < n]})


def _drawn(n_all: int, n_drawn: int, how: str) -> str:
    """The note a thinned figure carries (empty when nothing was left out)."""
    return "" if n_drawn >= n_all else f"{n_drawn:,} of {n_all:,} {how} drawn"


def _note(ax, *notes: str) -> None:
    """Write a thinned figure's notes in its lower left corner."""
    text = "; ".join(n for n in notes if n)
    if text:
        ax.text(0.01, 0.01, text, transform=ax.transAxes, fontsize=6.5, color="#444", ha="left", va="bottom",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.5})


def _num(x: Any) -> float | None:
    """A finite float, or None (JSON strings 'inf'/'nan', None, non-numbers)."""
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in x[:6]) + (", ..." if len(x) > 6 else "") + "]"
    if isinstance(x, Mapping):  # values by setting, e.g. {"0.3": -0.095, "0.6": -0.163}
        items = list(x.items())
        return "{" + ", ".join(f"{_short(str(k), 24)}: {_fmt(v)}" for k, v in items[:6]) + \
            (", ..." if len(items) > 6 else "") + "}"
    v = _num(x)
    return f"{v:.3g}" if v is not None else str(x)


def _setting(r: Mapping[str, Any]) -> str:
    """The row's setting in the paper's symbols: params['setting'], then the usual keys, then every param a record
    maps to a tool quantity (``extra['quantities']``), each of those with the quantity it is (K=4 (clients))."""
    p = r.get("params") or {}
    mapped = (r.get("extra") or {}).get("quantities") or {}
    text = str(p["setting"]) if p.get("setting") is not None else ""
    parts = [text] if text else []
    keys = [k for k in ("beta", "eta", "rho", "alpha", "bits", "topology", "E", "K") if k not in mapped]
    keys += [k for k in mapped if k in p]
    for k in keys:
        if k in p and p[k] is not None and not isinstance(p[k], (list, dict)):
            if k in mapped:
                what = str(mapped[k]).split(":", 1)[0].strip().replace("_", " ")
                parts.append(f"{k}={_fmt(p[k])} ({what})")
            else:
                parts.append(f"{k}={_fmt(p[k])}")
    return " ".join(parts)


def _marks(r: Mapping[str, Any]) -> list[str]:
    m = []
    if r.get("vacuous"):
        m.append("vacuous")
    if r.get("self_check"):
        m.append("self-check")
    if r.get("scope", "inside") != "inside":
        m.append(r["scope"])
    return m


def _short(s: str, n: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "\u2026"


# ------------------------------------------------------------------------------------ figures


class _Figures:
    """matplotlib figures to inline SVG: text kept as text (small, searchable), ids made unique per figure,
    no metadata, deterministic output."""

    def __init__(self):
        import matplotlib

        self._rc = {"svg.fonttype": "none", "svg.hashsalt": "fedtheory", "font.size": 8.5, "axes.titlesize": 9,
                    "axes.labelsize": 8.5, "legend.fontsize": 7.5, "xtick.labelsize": 7.5, "ytick.labelsize": 7.5,
                    "font.family": "DejaVu Sans", "axes.spines.top": False, "axes.spines.right": False,
                    "text.parse_math": False}
        self._mpl = matplotlib
        self.count = 0

    def new(self, w: float = 5.6, h: float = 3.0, ncols: int = 1, width_ratios=None, left: float = 0.75,
            nrows: int = 1, sharex: bool = False):
        from matplotlib.figure import Figure

        with self._mpl.rc_context(self._rc):
            fig = Figure(figsize=(w, h))
            axes = fig.subplots(nrows, ncols, sharex=sharex, squeeze=nrows * ncols == 1 or nrows == 1,
                                gridspec_kw={"width_ratios": width_ratios} if width_ratios else None)
        # fixed margins (in inches) instead of bbox_inches='tight', which draws every figure twice
        fig.subplots_adjust(left=left / w, right=1 - 0.15 / w, top=1 - 0.52 / h, bottom=0.48 / h,
                            wspace=0.35 if ncols > 1 else None, hspace=0.28 / max(1.0, (h - 1.0) / nrows)
                            if nrows > 1 else None)
        return fig, (list(axes.ravel()) if nrows > 1 else axes)

    @staticmethod
    def _plain_log_ticks(fig) -> None:
        """Log-axis tick labels as plain text ('1e-05', '0.01'): matplotlib's default mathtext labels are most
        of the drawing time and each becomes a path in the SVG."""
        from matplotlib.ticker import LogFormatter, NullFormatter, ScalarFormatter

        class Plain(LogFormatter):
            def __call__(self, x, pos=None):
                return f"{x:g}" if super().__call__(x, pos) else ""

        for ax in fig.axes:
            for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
                if scale == "log":
                    axis.set_major_formatter(Plain(labelOnlyBase=False))
                    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
                elif scale == "symlog":  # ticks are set by the figure; plain labels, no minor labels
                    axis.set_major_formatter(Plain(labelOnlyBase=False))
                    axis.set_minor_formatter(NullFormatter())
                elif isinstance(axis.get_major_formatter(), ScalarFormatter):
                    axis.get_major_formatter().set_useMathText(False)

    def svg(self, fig) -> str:
        from matplotlib.text import Text

        buf = io.StringIO()
        self._plain_log_ticks(fig)
        for t in fig.findobj(Text):  # text from a results file is shown as written, never parsed as mathtext ($...$)
            t.set_parse_math(False)
        with self._mpl.rc_context(self._rc):
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
        self.count += 1
        s = buf.getvalue()
        s = s[s.index("<svg"):]
        s = re.sub(r"<metadata>.*?</metadata>\s*", "", s, flags=re.S)
        prefix = f"f{self.count}-"
        s = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', s)
        s = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", s)
        s = re.sub(r'xlink:href="#([^"]+)"', lambda m: f'xlink:href="#{prefix}{m.group(1)}"', s)
        s = re.sub(r'href="#([^"]+)"', lambda m: m.group(0) if m.group(1).startswith(prefix) else
                   f'href="#{prefix}{m.group(1)}"', s)
        # coordinates to 2 decimals (1/100 pt): attribute values only, never the text of labels
        s = re.sub(r'(\s(?:d|x|y|x1|x2|y1|y2|width|height|transform|points|style)=")([^"]*)"',
                   lambda m: m.group(1) + re.sub(r"(\d+\.\d\d)\d+", r"\1", m.group(2)) + '"', s)
        s = re.sub(r'<svg ([^>]*?)width="([\d.]+)pt" height="([\d.]+)pt"',
                   lambda m: f'<svg {m.group(1)}width="{m.group(2)}pt" height="{m.group(3)}pt" class="fig" role="img"',
                   s, count=1)
        return s


# ------------------------------------------------------------------------------------ what an axis draws

#: a simulator measure's dimension (``fedtheory list --measures``) in words, for the axes that draw it
_DIMENSION_WORDS = {"f": "loss, [f]", "w": "parameter distance, [w]", "w^2": "squared parameter distance, [w]^2",
                    "f/w": "gradient norm, [f]/[w]", "f^2/w^2": "squared gradient norm, [f]^2/[w]^2",
                    "f/w^2": "curvature, [f]/[w]^2", "w^2/f": "step size, [w]^2/[f]", "1": "dimensionless"}


def _sim_catalogue() -> dict[str, Any]:
    from .sim.measures import measure_catalogue

    return measure_catalogue()


def _unit_of(name: str, declared: Mapping[str, str] | None = None) -> str | None:
    """The unit of a drawn quantity: the claim's own declaration (``Claim.measurement_units``), a column of a training
    run (``fedtheory.empirical.runs.MEASURE_UNITS``), or a simulator measure's dimension; None where none says."""
    from .empirical.runs import MEASURE_UNITS

    if declared and declared.get(name):
        return str(declared[name])
    if name in MEASURE_UNITS:
        return MEASURE_UNITS[name]
    dim = (_sim_catalogue().get(name) or {}).get("dimension")
    if dim:
        return _DIMENSION_WORDS.get(dim, f"[{dim}]")
    for suffix in _SAME_UNIT_SUFFIXES:  # the per-run or final values of a catalogued quantity: its unit
        if name.endswith(suffix) and name[: -len(suffix)] and name[: -len(suffix)] != name:
            return _unit_of(name[: -len(suffix)], declared)
    return None


#: a measurement named QUANTITY + one of these (delta_runs: Delta per run; delta_T: Delta at the last round) has the
#: unit of QUANTITY
_SAME_UNIT_SUFFIXES = ("_runs", "_T", "_final", "_mean")


def _quantity_of(name: str) -> str:
    """A drawn quantity in words where a catalogue has it (a training run's curve, a short simulator definition)."""
    from .empirical.runs import CURVES

    if name in CURVES:
        return f"{CURVES[name]}"
    definition = (_sim_catalogue().get(name) or {}).get("definition") or ""
    return f"{name}: {definition}" if definition and len(definition) <= 40 else name


def _axis_label(names: Sequence[str], declared: Mapping[str, str] | None = None, width: int = 46) -> str:
    """An axis's label: the quantity (one name: in words where known) and its unit, wrapped to ``width``; names
    without a declared unit say so."""
    import textwrap

    units = {n: _unit_of(n, declared) for n in names}
    known = {u for u in units.values() if u}
    what = _quantity_of(names[0]) if len(names) == 1 else ", ".join(names)
    if len(known) == 1 and all(units.values()):
        text = f"{what} ({known.pop()})"
    elif len(names) == 1:
        text = f"{what} (unit not declared)"
    else:
        text = what + " (" + "; ".join(f"{n}: {u or 'unit not declared'}" for n, u in units.items()) + ")"
    return "\n".join(textwrap.wrap(text, width)[:4])


def _log_ok(vals: Sequence[float | None]) -> bool:
    v = [x for x in vals if x is not None]
    return bool(v) and all(x > 0 for x in v)


TITLE_LINES = 5  # a figure's title wraps to at most this many lines (the figure grows to hold them), never cut short
TITLE_CHAR_INCHES = 0.095  # the width of a character of a 9 pt title, with room (DejaVu Sans averages ~0.08 inch)


def _title(ax, r: Mapping[str, Any], what: str) -> None:
    prob = r.get("problem") or "-"
    _wrapped_title(ax, f"{r['id']}: {what} on {prob}" + (f" ({_setting(r)})" if _setting(r) else ""))


def _wrapped_title(ax, text: str, *, suptitle: bool = False) -> None:
    """The title wrapped to the width from the axes' left edge to the figure's right (TITLE_CHAR_INCHES a
    character); the figure grows by the lines beyond two, its top margin made to hold them. Only a title
    longer than TITLE_LINES lines loses its end (marked with an ellipsis)."""
    import textwrap

    fig = ax.figure
    w, h = fig.get_size_inches()
    x0 = 0.0 if suptitle else ax.get_position().x0
    lines = textwrap.wrap(" ".join(str(text).split()), max(20, int((w * (1 - x0) - 0.1) / TITLE_CHAR_INCHES)))
    if len(lines) > TITLE_LINES:
        lines = lines[:TITLE_LINES - 1] + [_short(" ".join(lines[TITLE_LINES - 1:]), len(lines[0]))]
    old_top, old_bottom = (1 - fig.subplotpars.top) * h, fig.subplotpars.bottom * h
    top = 0.2 + 0.16 * len(lines)
    new_h = h - old_top + top
    fig.set_size_inches(w, new_h)
    fig.subplots_adjust(top=1 - top / new_h, bottom=old_bottom / new_h)
    if suptitle:
        fig.suptitle("\n".join(lines), x=0.01, y=1 - 0.08 / new_h, ha="left", va="top", fontsize=9)
    else:
        ax.set_title("\n".join(lines), loc="left")


def _fig_round_series(F: _Figures, r: Mapping[str, Any]) -> str | None:
    s = (r.get("extra") or {}).get("series")
    if not s or not s.get("x"):
        return None
    tr = (r.get("extra") or {}).get("tightest_round")
    n_all = len(s["x"])
    idx = _thin(n_all, log=True, keep=[tr] if isinstance(tr, int) and not isinstance(tr, bool) else [])
    pick = lambda v: [v[i] for i in idx if i < len(v)]  # noqa: E731
    x = pick(s["x"])
    m = [_num(v) for v in pick(s.get("measured") or [])]
    b = [_num(v) for v in pick(s.get("bound") or [])]
    se = [_num(v) or 0.0 for v in pick(s.get("measured_se") or [0.0] * n_all)]
    fig, ax = F.new()
    color = VERDICT_COLORS.get(r["verdict"], "#333")
    pts = [(xi, mi, si) for xi, mi, si in zip(x, m, se) if mi is not None]
    if pts:
        xs, ms, ss = zip(*pts)
        ax.plot(xs, ms, "-", color="#1565c0", lw=1.4, label=f"measured (mean of {s.get('runs', '?')} runs)")
        lo = [max(mi - 2 * si, mi * 1e-3) if mi > 0 else mi - 2 * si for mi, si in zip(ms, ss)]
        ax.fill_between(xs, lo, [mi + 2 * si for mi, si in zip(ms, ss)], color="#1565c0", alpha=0.18, lw=0,
                        label="\u00b1 2 SE")
    bp = [(xi, bi) for xi, bi in zip(x, b) if bi is not None]
    if bp:
        ax.plot(*zip(*bp), "--", color="#e65100", lw=1.4, label="bound (right side)")
    if isinstance(tr, int) and not isinstance(tr, bool):
        ax.axvline(tr + 1, color=color, lw=0.8, ls=":", label=f"tightest round ({tr + 1})")
    ax.set_xscale("log")
    if _log_ok(m + b):
        ax.set_yscale("log")
    ax.set_xlabel(s.get("x_label", "round t") + " (rounds, log)")
    lhs = (r.get("extra") or {}).get("lhs") or "left side"
    ax.set_ylabel(_axis_label([lhs]) + (", log scale" if _log_ok(m + b) else ""))
    _title(ax, r, "measured vs bound over rounds")
    _note(ax, _drawn(n_all, len(idx), "points (log-spaced)"))
    ax.legend(frameon=False, loc="best")
    return F.svg(fig)


def _sweep_key(rows: Sequence[Mapping[str, Any]]) -> str | None:
    def varies(k):
        vals = {(_num((q.get("params") or {}).get(k))) for q in rows}
        return None not in vals and len(vals) > 1

    for k in _SWEEP_KEYS:
        if varies(k):
            return k
    keys = sorted({k for q in rows for k in (q.get("params") or {})})
    return next((k for k in keys if varies(k)), None)


def _fig_sweep(F: _Figures, rows: Sequence[Mapping[str, Any]], key: str) -> str:
    rows = sorted(rows, key=lambda q: _num(q["params"][key]))
    n_all = len(rows)
    rows = [rows[i] for i in _thin(n_all)]
    x = [_num(q["params"][key]) for q in rows]
    m = [_num(q.get("measured")) for q in rows]
    b = [_num(q.get("bound")) for q in rows]
    fig, ax = F.new()
    ax.plot([xi for xi, mi in zip(x, m) if mi is not None], [mi for mi in m if mi is not None], "o-", color="#1565c0",
            lw=1.4, label="measured (mean over runs)")
    ax.plot([xi for xi, bi in zip(x, b) if bi is not None], [bi for bi in b if bi is not None], "s--", color="#e65100",
            lw=1.4, label="bound")
    for xi, q in zip(x, rows):
        if q["verdict"] not in ("holds",):
            ax.annotate(q["verdict"], (xi, _num(q.get("measured")) or _num(q.get("bound")) or 1.0), fontsize=7,
                        color=VERDICT_COLORS.get(q["verdict"], "#333"), xytext=(3, 6), textcoords="offset points")
    if _log_ok(x) and max(x) / min(x) >= 5:
        ax.set_xscale("log")
        ax.set_xlabel(f"{key} (swept parameter, log)")
    else:
        ax.set_xlabel(f"{key} (swept parameter)")
    if _log_ok(m + b):
        ax.set_yscale("log")
    lhs = (rows[0].get("extra") or {}).get("lhs") or "left side"
    ax.set_ylabel(_axis_label([lhs]) + (", log scale" if _log_ok(m + b) else ""))
    r0 = dict(rows[0], params={k: v for k, v in rows[0]["params"].items() if k != key})
    _title(ax, r0, f"measured vs bound over {key}")
    _note(ax, _drawn(n_all, len(rows), "rows (evenly spaced)"))
    ax.legend(frameon=False, loc="best")
    return F.svg(fig)


def parse_condition(text: str) -> dict[str, Any] | None:
    """'name: relation (left vs right)' -> {'name', 'relation', 'actual', 'required'}; None when the text has no
    numbers (e.g. a structural premise)."""
    mt = _COND_RE.match(text.strip())
    if not mt:
        return None
    return {"name": mt.group("name") or mt.group("rel")[:30], "relation": mt.group("rel"),
            "actual": float(mt.group("a")), "required": float(mt.group("b"))}


def _symlog_ticks(vals: Sequence[float], lin: float, most: int = 7) -> list[float]:
    """At most ``most`` ticks of a symmetric-log axis over ``vals`` (with signs): 0 and powers of ten."""
    pos = [v for v in vals if v > 0]
    k0 = math.floor(math.log10(lin))
    k1 = math.ceil(math.log10(max(abs(v) for v in vals))) if vals else k0
    step = max(1, math.ceil((k1 - k0 + 1) / max(1, most // 2)))
    ks = list(range(k1, k0 - 1, -step))[::-1]
    ticks = [10.0 ** k for k in ks]
    return sorted({0.0, *ticks, *[-t for t in ticks]}) if len(pos) < len(vals) else sorted({0.0, *ticks})


def _fig_conditions(F: _Figures, r: Mapping[str, Any]) -> str | None:
    conds = [c for c in (parse_condition(t) for t in r.get("conditions_failed") or []) if c]
    if not conds:
        return None
    n_all = len(conds)
    conds = conds[:MAX_CONDITIONS]
    fig, ax = F.new(7.0, 1.3 + 0.4 * len(conds), left=2.2)
    ys = list(range(len(conds)))[::-1]
    raw = [v for c in conds for v in (c["actual"], c["required"]) if math.isfinite(v)]
    vals = [abs(v) for v in raw if v != 0]
    lin = min(vals) if vals else 1.0
    vals = [v for v in raw if v != 0] or [1.0]
    for y, c in zip(ys, conds):
        a, q = c["actual"], c["required"]
        ax.plot([q, a], [y, y], "-", color="#bbb", lw=3, solid_capstyle="butt", zorder=1)
        ax.plot([q], [y], "|", color="#2e7d32", ms=14, mew=2.2, zorder=2,
                label="required (limit)" if y == ys[0] else None)
        ax.plot([a], [y], "o", color="#c62828", ms=6, zorder=3, label="actual (this run)" if y == ys[0] else None)
        ax.annotate(f"{_fmt(a)} vs {_fmt(q)}", (a, y), xytext=(0, 7), textcoords="offset points", fontsize=7,
                    ha="center", color="#c62828")
    ax.set_yticks(ys, [_short(c["name"], 34) for c in conds])
    ax.set_xscale("symlog", linthresh=lin)
    ax.set_xticks(_symlog_ticks(vals, lin))
    ax.set_xlabel("value of the condition's two sides (symmetric log)")
    ax.set_ylim(-0.7, len(conds) - 0.3)
    _title(ax, r, "failing conditions, required vs actual")
    _note(ax, _drawn(n_all, len(conds), "conditions (the first)"))
    ax.legend(frameon=False, loc="best", fontsize=7)
    return F.svg(fig)


def _fig_claim(F: _Figures, r: Mapping[str, Any]) -> str | None:
    ms = (r.get("extra") or {}).get("measurements") or {}
    series = ms.get("series") or {}
    x = ms.get("x") or []
    declared = ms.get("units") or {}
    series = {k: v for k, v in series.items() if any(_num(t) is not None for t in v.get("y", []))}
    if not series or len(x) < 2:
        return None
    n_lines, n_all = len(series), len(x)
    series = dict(list(series.items())[:MAX_LINES])
    idx = _thin(n_all)
    x = [x[i] for i in idx]
    series = {k: {**v, **{f: [v[f][i] for i in idx if i < len(v[f])] for f in ("y", "se") if v.get(f)}}
              for k, v in series.items()}
    # 'k_se' is drawn as the error bar of 'k'; a 0/1 series (e.g. diverged) goes on its own right-hand axis
    merged = 0
    for k in list(series):
        if k.endswith("_se") and k[:-3] in series and "se" not in series[k[:-3]]:
            series[k[:-3]] = dict(series[k[:-3]], se=series.pop(k)["y"])
            merged += 1
    flags = {k: v for k, v in series.items() if {_num(t) for t in v["y"]} <= {0.0, 1.0, None}}
    series = {k: v for k, v in series.items() if k not in flags}
    # one panel per unit: quantities of different units never share an axis
    groups: "OrderedDict[str, list[str]]" = OrderedDict()
    for k in series:
        groups.setdefault(_unit_of(k, declared) or f"? {k}", []).append(k)
    panels = list(groups.values())[:3]
    left_out = sum(len(g) for g in list(groups.values())[3:])
    fig, axes = F.new(5.6, 3.0 + 1.9 * (len(panels) - 1), nrows=max(1, len(panels)), sharex=True, left=0.95)
    axes = axes if isinstance(axes, list) else [axes]
    if flags:
        fig.subplots_adjust(right=1 - 0.6 / fig.get_figwidth())
        ax_f = axes[0].twinx()
        for j, (k, v) in enumerate(flags.items()):
            pts = [(xi, _num(t)) for xi, t in zip(x, v["y"]) if xi is not None and _num(t) is not None]
            if pts:
                ax_f.step(*zip(*pts), where="mid", color="#9e9e9e", lw=1, ls=(0, (2, 2 + j)), label=f"{k} (0/1, right)")
        ax_f.set_ylim(-0.05, 1.6)
        ax_f.set_yticks([0, 1])
        ax_f.set_ylabel(", ".join(flags) + " (0 or 1)")
        ax_f.legend(frameon=False, loc="center right", fontsize=7)
    colour = 0
    for ax, names in zip(axes, panels):
        allv = []
        for k in names:
            v = series[k]
            y = [_num(t) for t in v["y"]]
            pts = [(xi, yi, _num(si) or 0.0) for xi, yi, si in zip(x, y, v.get("se") or [0.0] * len(y))
                   if yi is not None and xi is not None]
            if not pts:
                continue
            xs, ys_, ss = zip(*pts)
            allv += list(ys_)
            fmt = "o" if len(set(xs)) < len(xs) else "o-" if len(xs) < 25 else "-"  # repeated x: one point per run
            ax.errorbar(xs, ys_, yerr=[2 * s for s in ss] if any(ss) else None, fmt=fmt,
                        ms=3.5, lw=1.2, capsize=2, label=k + (" (\u00b1 2 SE)" if any(ss) else ""), color=f"C{colour}")
            colour += 1
        if _log_ok(allv) and max(allv) / min(allv) > 100:
            ax.set_yscale("log")
        elif (allv and min(allv) >= 0 and max(allv) > 0
              and max(allv) / (min([a for a in allv if a > 0] or [1]) or 1) > 1e3):
            ax.set_yscale("symlog", linthresh=min(a for a in allv if a > 0))  # zeros and a wide range
            ax.set_yticks(_symlog_ticks(allv, min(a for a in allv if a > 0)))
        scale = {"symlog": ", symmetric log scale", "log": ", log scale"}.get(ax.get_yscale(), "")
        ax.set_ylabel(_axis_label(names, declared, width=40) + scale)
        ax.legend(frameon=False, loc="best")
    xl = ms.get("x_label", "index")
    xl_unit = declared.get(xl)
    axes[-1].set_xlabel((xl + (f" ({xl_unit})" if xl_unit else " (the swept setting)")) if xl != "index"
                        else "index of the measurement (as the claim's check gave it)")
    _title(axes[0], r, "measured under the claim")
    _note(axes[-1], _drawn(n_all, len(idx), "points (evenly spaced)"),
          _drawn(n_lines, len(series) + len(flags) + merged, "series (the first)"),
          f"{left_out} series of other units not drawn" if left_out else "")
    return F.svg(fig)


def _fig_rate(F: _Figures, r: Mapping[str, Any]) -> str | None:
    ex = r.get("extra") or {}
    slope, stated = _num(r.get("measured")), _num(r.get("bound"))
    ci = [(_num(v)) for v in (ex.get("ci") or [])]
    if slope is None:
        return None
    grid = (r.get("params") or {}).get("T_grid") or []
    vals = [_num(v) for v in ex.get("values") or []]
    n_grid = len(vals)
    if len(grid) == len(vals) and len(vals) > MAX_POINTS:
        keep = _thin(len(vals), log=True)
        grid, vals = [grid[i] for i in keep], [vals[i] for i in keep]
    have_curve = len(grid) == len(vals) and len(vals) >= 2 and _log_ok(vals) and _log_ok(grid)
    if have_curve:
        fig, (ax, ax2) = F.new(6.4, 2.8, ncols=2, width_ratios=[2.2, 1])
        ax.loglog(grid, vals, "o-", color="#1565c0", label="measured")
        g0 = math.exp(sum(math.log(g) for g in grid) / len(grid))
        v0 = math.exp(sum(math.log(v) for v in vals) / len(vals))
        ax.loglog(grid, [v0 * (g / g0) ** slope for g in grid], "-", color="#1565c0", alpha=0.45, lw=3,
                  label=f"fit T^{slope:.3g}")
        if stated is not None:
            ax.loglog(grid, [v0 * (g / g0) ** stated for g in grid], "--", color="#e65100",
                      label=f"stated T^{stated:.3g}")
        ax.set_xlabel("horizon T (rounds, log)")
        lhs = ex.get("lhs")
        ax.set_ylabel((_axis_label([lhs], width=34) if lhs else "the rate's measured quantity") + ", log scale")
        ax.legend(frameon=False)
        _note(ax, _drawn(n_grid, len(vals), "points (log-spaced)"))
        _title(ax, r, "measured rate")
    else:
        fig, ax2 = F.new(5.6, 1.8)
        _title(ax2, r, "fitted exponent")
    color = VERDICT_COLORS.get(r["verdict"], "#333")
    if len(ci) == 2 and None not in ci:
        ax2.errorbar([slope], [0], xerr=[[slope - ci[0]], [ci[1] - slope]], fmt="o", color=color, capsize=4,
                     label="fitted (95% CI)")
    else:
        ax2.plot([slope], [0], "o", color=color, label="fitted")
    if stated is not None:
        ax2.axvline(stated, color="#e65100", ls="--", label="stated")
    ax2.set_yticks([])
    ax2.set_xlabel("exponent of T")
    lo = min([slope] + [c for c in ci if c is not None] + ([stated] if stated is not None else []))
    hi = max([slope] + [c for c in ci if c is not None] + ([stated] if stated is not None else []))
    pad = max(0.05, 0.2 * (hi - lo))
    ax2.set_xlim(lo - pad, hi + pad)
    ax2.legend(frameon=False, fontsize=6.5, loc="best")
    return F.svg(fig)


def _fig_training(F: _Figures, block: Mapping[str, Any], overlays: Sequence[Mapping[str, Any]] = ()) -> str | None:
    """A training run directory's picture (``fedtheory.empirical.runs.round_curves``): one panel per quantity
    (Delta^t, the generalization gap, the test accuracy) over the rounds, a line per setting (the mean over its
    seeds, a band of +- 2 standard errors), and on a quantity's panel the bound of each row of a check on these runs
    that states one over the rounds (``overlays``: rows whose ``extra.series`` is about that quantity)."""
    settings = list(block.get("settings") or [])
    quantities = dict(block.get("quantities") or {})
    cols = [c for c in quantities if any(c in (st.get("curves") or {}) for st in settings)]
    if not cols:
        return None
    n_set = len(settings)
    settings = settings[:MAX_LINES]
    units = block.get("units") or {}
    fig, axes = F.new(6.4, 1.1 + 2.0 * len(cols), nrows=len(cols), sharex=True, left=1.25)
    axes = axes if isinstance(axes, list) else [axes]
    n_points = 0
    for ax, c in zip(axes, cols):
        for j, st in enumerate(settings):
            cur = (st.get("curves") or {}).get(c)
            if not cur or not cur.get("round"):
                continue
            idx = _thin(len(cur["round"]))
            x = [cur["round"][i] for i in idx]
            y = [_num(cur["mean"][i]) for i in idx]
            se = [_num(cur["se"][i]) if cur.get("se") else None for i in idx]
            n_points = max(n_points, len(cur["round"]))
            div = st.get("diverged") or []
            label = f"{st.get('setting', '?')} ({len(st.get('seeds') or [])} seeds" + \
                (f", {len(div)} diverged)" if div else ")")
            ax.plot([a for a, b in zip(x, y) if b is not None], [b for b in y if b is not None], "-", color=f"C{j}",
                    lw=1.3, label=label)
            band = [(a, b, e) for a, b, e in zip(x, y, se) if b is not None and e is not None]
            if band:
                xs, ys_, es = zip(*band)
                ax.fill_between(xs, [b - 2 * e for b, e in zip(ys_, es)], [b + 2 * e for b, e in zip(ys_, es)],
                                color=f"C{j}", alpha=0.16, lw=0)
        for o in overlays:
            ser = (o.get("extra") or {}).get("series") or {}
            if (o.get("extra") or {}).get("lhs") != c or not ser.get("x"):
                continue
            pts = [(a, _num(b)) for a, b in zip(ser["x"], ser.get("bound") or []) if _num(b) is not None]
            if pts:
                ax.plot(*zip(*pts), "--", color="#e65100", lw=1.4, label=f"bound: {o['id']} ({o['verdict']})")
        ax.set_ylabel(_axis_label([c], units if isinstance(units, Mapping) else None, width=30))
        if c.endswith("_acc"):
            lo, hi = ax.get_ylim()
            ax.set_ylim(max(0.0, lo), min(1.0, hi))
    axes[0].legend(frameon=False, loc="best", fontsize=7)
    axes[-1].set_xlabel("round t (communication rounds; 0 is the initial model)")
    seeds = sorted({len(st.get("seeds") or []) for st in settings})
    names = [str(quantities[c]).split(",")[0] for c in cols]
    _wrapped_title(axes[0], f"{block.get('label', '?')}, {block.get('algorithm', '?')}: "
                            + (", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0])
                            + " over the rounds; mean over "
                            + "/".join(map(str, seeds)) + " seed(s) per setting, band +- 2 standard errors",
                   suptitle=True)
    _note(axes[-1], _drawn(n_points, min(n_points, MAX_POINTS), "rounds (evenly spaced)"),
          _drawn(n_set, len(settings), "settings (the first)"))
    return F.svg(fig)


def _fig_tightness(F: _Figures, rows: Sequence[tuple[int, Mapping[str, Any]]], paper: str) -> str | None:
    pts = []
    for i, r in rows:
        if r.get("kind") != "bound" or r.get("verdict") == "not_applicable":
            continue
        ratio = r.get("ratio")
        v = _num(ratio)
        if v is None and ratio not in ("inf", "Infinity"):
            if r.get("verdict") != "violated":
                continue
        pts.append((i, r, v))
    if not pts:
        return None
    n_all = len(pts)
    if n_all > MAX_TIGHTNESS_ROWS:  # the tightest rows (violations first), in their order
        tight = sorted(range(n_all), key=lambda j: (pts[j][2] is not None and pts[j][2] > 0, pts[j][2] or 0.0))
        pts = [pts[j] for j in sorted(tight[:MAX_TIGHTNESS_ROWS])]
    fig, ax = F.new(8.5, 1.2 + 0.155 * len(pts), left=3.3)
    finite = [v for _, _, v in pts if v is not None and v > 0]
    lo = min(finite + [0.5]) / 2
    hi = max(finite + [2.0]) * 2
    for y, (i, r, v) in enumerate(pts[::-1]):
        c = VERDICT_COLORS.get(r["verdict"], "#333")
        if v is None or v <= 0:
            ax.plot([lo], [y], "x", color=c, ms=6, mew=1.6)
        else:
            ax.plot([lo, v], [y, y], "-", color=c, lw=0.6, alpha=0.4)
            ax.plot([v], [y], "o", color=c, ms=4.5, mfc="white" if r.get("vacuous") else c)
    ax.axvline(1.0, color="#000", lw=1)
    ax.text(1.0, len(pts) - 0.2, " 1: bound = measured", fontsize=7, va="bottom")
    ax.set_xscale("log")
    ax.set_xlim(lo / 1.5, hi)
    ax.set_ylim(-0.8, len(pts) + 0.6)
    labels = [_short(f"{r['id'].split('.', 1)[-1]} \u00b7 {r.get('problem') or '-'} \u00b7 "
                     f"{_setting(r)}", 62) for _, r, _ in pts[::-1]]
    ax.set_yticks(range(len(pts)), labels, fontsize=6.5)
    ax.set_xlabel("bound / measured (log; > 1: the bound holds with that much room; x: diverged or violated at 0;"
                  " open: vacuous)", fontsize=7)
    ax.set_title(f"{paper}: tightness of every compared bound ({len(pts)} rows)" if len(pts) == n_all else
                 f"{paper}: tightness of the {len(pts):,} tightest of {n_all:,} compared bounds", loc="left")
    return F.svg(fig)


# ------------------------------------------------------------------------------------ tightness of a collection


def _ratio_text(v: float | None) -> str:
    """A measured / bound ratio: 3 decimals (1.000: attained), 3 significant digits outside [0.001, 1000); '-'."""
    if v is None:
        return "-"
    return f"{v:.3f}" if 1e-3 <= abs(v) < 1e3 else f"{v:.3g}"


def _inverse(ratio: Any) -> float | None:
    """measured / bound from a row's ``ratio`` (bound / measured): 'inf' (nothing measured) is 0; None where the
    ratio is not a positive number."""
    if ratio in ("inf", "Infinity"):
        return 0.0
    v = _num(ratio)
    return 1.0 / v if v is not None and v > 0 else None


def _worst_ratio(w: Mapping[str, Any]) -> float | None:
    """measured / bound of a worst-case record (``worst_measured`` / ``bound``; else 1 / ``slack``)."""
    m, b = _num(w.get("worst_measured")), _num(w.get("bound"))
    if m is not None and b is not None and b > 0:
        return m / b
    slack = w.get("slack")
    return _inverse(slack)


def tightness_table(payload: Mapping[str, Any], collection: str | None = None) -> list[dict[str, Any]]:
    """The tightness of every bound record of a collection of papers (the zoo: ``payload['collections']``, written by
    ``fedtheory check --out``), one dict per record, in the order of the results file, as JSON values:

    A bound record is one with a row of kind 'bound' in the file or a worst-case record (a record checked by its
    units and rate rows only, e.g. in the quick profile, is not listed: the file does not say it is a bound).

    * ``collection``, ``paper``, ``record`` (the bound's id), ``source`` (its rows' source), ``transcription`` (its
      rows' ``extra.transcription``; 'unverified' where only a row's scope ``unverified_transcription`` says so;
      None where the rows say nothing);
    * ``rows`` (the record's simulation rows: kind bound, its id), ``verdicts`` (verdict -> rows among them),
      ``other`` (the record's other rows, e.g. ``.rate``, ``.units``: id suffix -> verdict);
    * ``simulation``: the tightest measured / bound over the rows that hold (max of 1 / ``ratio``; 1 = attained), with
      the ``problem``, ``setting`` and ``index`` (in ``results``) of the row it was found on; None without such a row;
    * ``worst_case``: the search's tightest measured / bound over the file's ``worst_case`` records of that id
      (``fedtheory check --worst-case``) with its ``verdict``, ``evaluations`` and ``note``; None without one;
    * ``pep``: a worst-case record of method 'pep' (``fedtheory worst --method pep``): its ``value``, ``bound``,
      ``ratio`` (value / bound), ``exact`` and ``verdict``; None without one.

    Nothing is computed that the file does not hold: an absent number is None (shown '-').
    ``collection``: only that collection (default: every collection of the file)."""
    colls = payload.get("collections") or {}
    results = list(payload.get("results") or [])
    worst = [w for w in payload.get("worst_case") or [] if isinstance(w, Mapping)]
    out: list[dict[str, Any]] = []
    for name, c in colls.items():
        if collection is not None and name != collection or not isinstance(c, Mapping):
            continue
        papers = {str(p) for p in c.get("papers") or []}
        ids: "OrderedDict[str, dict[str, Any]]" = OrderedDict()
        for r in results:
            if r.get("paper") in papers and r.get("kind") == "bound":
                ids.setdefault(str(r["id"]), {"paper": r["paper"]})
        for w in worst:  # a bound searched but without a simulation row in the file (its rows: 0)
            paper = str(w.get("id", "")).split(".", 1)[0]
            if paper in papers:
                ids.setdefault(str(w["id"]), {"paper": paper})
        for rid, info in ids.items():
            mine = [(i, r) for i, r in enumerate(results)
                    if r.get("id") == rid or str(r.get("id", "")).startswith(rid + ".")
                    or ((r.get("params") or {}).get("record") == rid)]
            sims = [(i, r) for i, r in mine if r.get("id") == rid and r.get("kind") == "bound"]
            verdicts: dict[str, int] = {}
            for _, r in sims:
                verdicts[str(r.get("verdict"))] = verdicts.get(str(r.get("verdict")), 0) + 1
            other: dict[str, str] = {}
            for _, r in mine:
                if r.get("id") == rid:
                    continue
                key = str(r["id"])[len(rid) + 1:] if str(r["id"]).startswith(rid + ".") else str(r["id"])
                seen = other.get(key, "").split(" / ") if key in other else []
                if str(r.get("verdict")) not in seen:
                    other[key] = " / ".join(seen + [str(r.get("verdict"))])
            transcription = next((str((r.get("extra") or {}).get("transcription")) for _, r in mine
                                  if (r.get("extra") or {}).get("transcription")), None)
            if transcription is None and any(r.get("scope") == "unverified_transcription" for _, r in mine):
                transcription = "unverified"
            source = next((str(r.get("source")) for _, r in sims if r.get("source")), None)
            best = None
            for i, r in sims:
                if r.get("verdict") != "holds":
                    continue
                v = _inverse(r.get("ratio"))
                if v is not None and (best is None or v > best["ratio"]):
                    p = r.get("params") or {}
                    best = {"ratio": v, "problem": r.get("problem"),
                            "setting": str(p["setting"]) if p.get("setting") is not None else _setting(r), "index": i}
            search = None
            for w in worst:
                if w.get("id") != rid or w.get("method", "search") == "pep":
                    continue
                v = _worst_ratio(w)
                if v is not None and (search is None or v > search["ratio"]):
                    search = {"ratio": v, "verdict": w.get("verdict"), "evaluations": w.get("evaluations"),
                              "note": w.get("note")}
            pep = None
            for w in worst:
                if w.get("id") == rid and w.get("method") == "pep" and _num(w.get("worst_measured")) is not None:
                    v = _worst_ratio(w)
                    if pep is None or (v is not None and (pep["ratio"] is None or v > pep["ratio"])):
                        pep = {"value": _num(w.get("worst_measured")), "bound": _num(w.get("bound")), "ratio": v,
                               "exact": w.get("exact"), "verdict": w.get("verdict"),
                               "relation": w.get("class_relation")}
            out.append({"collection": name, "paper": info["paper"], "record": rid, "source": source,
                        "transcription": transcription, "rows": len(sims), "verdicts": dict(sorted(verdicts.items())),
                        "other": other, "simulation": best, "worst_case": search, "pep": pep})
    return out


def _transcription_short(t: str | None) -> str:
    if not t:
        return "-"
    return "unverified" if t.strip().lower().startswith("unverified") else "checked"


def _verdict_text(row: Mapping[str, Any]) -> str:
    parts = [f"{v} {n}" for v, n in row["verdicts"].items()]
    parts += [f"{k}: {v}" for k, v in row["other"].items()]
    return ", ".join(parts) or "-"


def tightness_markdown(payload: Mapping[str, Any], collection: str | None = None) -> str:
    """:func:`tightness_table` as a Markdown table (README's zoo table), one per collection; '-' where the file holds
    no such number. '' when the file has no collection."""
    rows = tightness_table(payload, collection)
    out: list[str] = []
    for name in dict.fromkeys(r["collection"] for r in rows):
        out += [f"### {name}: tightest measured / bound (1 = attained)", "",
                "| paper | record | source | transcription | rows | verdicts | simulation (where) | worst-case search "
                "| PEP |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            if r["collection"] != name:
                continue
            sim = r["simulation"]
            where = "" if sim is None else \
                f" ({sim['problem'] or '-'}" + (f"; {sim['setting']}" if sim["setting"] else "") + ")"
            pep = r["pep"]
            pep_text = "-" if pep is None else _ratio_text(pep["ratio"]) + f" (value {_fmt(pep['value'])}" + \
                (", exact" if pep.get("exact")
                 else ", a subclass: a lower bound" if pep.get("relation") == "lower bound"
                 else ", relaxed class: an upper bound") + ")"
            cells = [r["paper"], f"`{r['record']}`", _short(r["source"] or "-", 60),
                     _transcription_short(r["transcription"]), str(r["rows"]), _verdict_text(r),
                     ("-" if sim is None else f"**{_ratio_text(sim['ratio'])}**" + where),
                     "-" if r["worst_case"] is None else _ratio_text(r["worst_case"]["ratio"]), pep_text]
            out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
        out.append("")
    return "\n".join(out)


def term_tightness_markdown(payload: Mapping[str, Any], collection: str | None = None) -> str:
    """Term-wise tightness (issue 45: ``fedtheory.checks.term_tightness`` over the bound rows of a collection's papers
    in a results file) as a Markdown table: per bound and additive term, the rows where it dominates, the largest
    measured / term there (1 = that term alone is attained; where it dominates, a wrong constant in it shows), the
    largest share of the bound it reached, and the smallest (bound - measured) / term over the rows that hold (the
    relative change of that term some row catches; above 1 none does). '' when the file has no such row."""
    from .checks import CheckResult, term_tightness

    colls = payload.get("collections") or {}
    papers = {str(p) for name, c in colls.items() if isinstance(c, Mapping)
                                                     and (collection is None or name == collection)
              for p in c.get("papers") or []}
    fields = set(CheckResult.__dataclass_fields__)
    rows = [CheckResult(**{k: v for k, v in r.items() if k in fields}) for r in payload.get("results") or []
            if isinstance(r, Mapping) and r.get("paper") in papers and r.get("kind") == "bound"]
    table = term_tightness(rows)
    if not table:
        return ""
    out = ["| record | additive term | rows where it dominates | largest measured / term there (where) | largest "
           "share | smallest (bound - measured) / term |", "| --- | --- | --- | --- | --- | --- |"]
    for e in table:
        m = e["measured_over_term"]
        cells = [f"`{e['record']}`", f"`{e['term']}`", str(e["dominant_rows"]),
                 "none dominates: untested" if m is None else f"{m:.3g} ({_short(e['where'] or '-', 70)})",
                 f"{e['largest_share']:.3g}", "-" if e["slack_over_term"] is None else f"{e['slack_over_term']:.3g}"]
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------ the page


def _check_ids() -> dict[str, str]:
    """record / result id -> the check id that produces it (for the reproducing command); {} when the registry
    cannot load."""
    try:
        from .checks.registry import all_checks

        specs = all_checks()
    except Exception:  # noqa: BLE001 - the report draws from the results file; the registry only helps
        return {}
    out = {}
    for s in specs.values():
        for rec in s.records:
            out.setdefault(rec, s.id)
        out[s.id] = s.id
    return out


def _plugin_args(meta: Mapping[str, Any]) -> list[str]:
    """--plugin arguments that load the run's plug-ins from any folder: ``fedtheory check`` records each one as its
    module name (installed) or its absolute path (``fedtheory.plugins.portable_target``)."""
    out: list[str] = []
    for p in meta.get("plugins") or []:
        out += ["--plugin", str(p)]
    return out


def _plugins_note(meta: Mapping[str, Any]) -> str:
    """Which plug-ins the reproduce lines load, and how each is named ('' without plug-ins)."""
    given = meta.get("plugins_given") or []
    if given:
        return "; ".join(f"{g.get('plugin')} ({g.get('as')}; given as {g.get('given')})" for g in given
                         if isinstance(g, Mapping))
    return ", ".join(f"{p} (as given to --plugin)" for p in meta.get("plugins") or [])


def _reproduce(r: Mapping[str, Any], meta: Mapping[str, Any], checks: Mapping[str, str]) -> str:
    rid = r["id"]
    cid = checks.get(rid)
    if cid is None:  # the longest registered check id that prefixes the result id, else the id itself
        cands = [c for c in checks if rid.startswith(c + ".")]
        cid = max(cands, key=len) if cands else rid
    cmd = ["fedtheory", "check", "--only", cid, "--seed", str(meta.get("seed", r.get("seed", 0)))]
    if meta.get("profile", "quick") != "quick":
        cmd += ["--profile", str(meta["profile"])]
    cmd += _plugin_args(meta)
    orig = list(meta.get("command") or [])
    if "--runs" in orig and orig.index("--runs") + 1 < len(orig):
        cmd += ["--runs", orig[orig.index("--runs") + 1]]
    return shlex.join(cmd)


def check_payload(data: Any) -> None:
    """Raise ValueError naming the record and the field where ``data`` is not a results payload the report can
    draw: the results file's schema, ``fedtheory.checks.schema`` (the one every row of a check is held to)."""
    from .checks.schema import check_payload as check

    check(data)


def _load(payload_or_path: Any) -> dict[str, Any]:
    if isinstance(payload_or_path, Mapping):
        return dict(payload_or_path)
    from ._validation import ParameterError
    from .files import FileRefused, read_json

    path = Path(payload_or_path)
    what = "a results file from `fedtheory check --out`"
    try:
        data = read_json(path, MAX_RESULTS_BYTES, "results file")
    except FileRefused as exc:
        raise ParameterError("RESULTS", str(path), f"{what} ({exc.why})") from None
    try:
        check_payload(data)
    except ValueError as exc:
        raise ParameterError("RESULTS", str(path), f"{what}; {exc}") from None
    return data


def _tightness_block(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """:func:`tightness_table` as the page draws it: per collection, its rows with their cells as text."""
    blocks: "OrderedDict[str, dict[str, Any]]" = OrderedDict()
    for r in tightness_table(payload):
        b = blocks.setdefault(r["collection"], {"name": r["collection"], "rows": []})
        sim, wc, pep = r["simulation"], r["worst_case"], r["pep"]
        b["rows"].append({**r, "transcription_short": _transcription_short(r["transcription"]),
                          "verdicts_text": _verdict_text(r),
                          "sim_text": "-" if sim is None else _ratio_text(sim["ratio"]),
                          "sim_where": "" if sim is None else (sim["problem"] or "-") + (f"; {sim['setting']}"
                                                                                           if sim["setting"] else ""),
                          "worst_text": "-" if wc is None else _ratio_text(wc["ratio"]),
                          "worst_where": "" if wc is None else "; ".join(str(x) for x in (
                              wc.get("verdict"), wc.get("evaluations") and f"{wc['evaluations']} instances",
                              wc.get("note")) if x),
                          "pep_text": "-" if pep is None else _ratio_text(pep["ratio"]),
                          "pep_where": "" if pep is None
                          else f"value {_fmt(pep['value'])} vs bound {_fmt(pep['bound'])}"
                          + ("; exact" if pep.get("exact")
                             else "; a relaxation (upper bound)" if pep.get("exact") is False else "")
                          + (f"; {pep['verdict']}" if pep.get("verdict") else "")})
    return list(blocks.values())


def _mutation_block(m: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A mutation payload (``fedtheory check --mutants --out``) as the page draws it: the overall score, killed by
    layer, a row per record and every survivor with its reason."""
    if m is None:
        return None
    o = m.get("overall") or {}
    score = lambda x: "-" if _num(x) is None else f"{_num(x):.3f}"  # noqa: E731
    recs, survivors = [], []
    for r in m.get("records") or []:
        kb = r.get("killed_by") or {}
        recs.append({**{k: r.get(k, 0) for k in ("mutants", "killed", "weaker", "equivalent", "survived", "undecided")},
                     "record": r.get("record"), "score": score(r.get("score")),
                     "killed_by": ", ".join(f"{k} {v}" for k, v in kb.items()) or "-", "note": r.get("note") or ""})
        for oc in r.get("outcomes") or []:
            if oc.get("status") == "survived":
                survivors.append({"record": r.get("record"), "kind": oc.get("kind", ""), "mutant": oc.get("mutant", ""),
                                  "reason": oc.get("reason") or "-"})
    return {"overall": {**{k: o.get(k, 0) for k in ("records", "mutants", "killed", "survived", "equivalent",
                                                      "weaker", "undecided")}, "score": score(o.get("score"))},
            "killed_by": dict(o.get("killed_by") or {}), "records": recs, "survivors": survivors,
            "command": (shlex.join(map(str, m["command"])) if isinstance(m.get("command"), list)
                        else (m.get("command") or "-")),
            "profile": m.get("profile", "-"), "seed": m.get("seed", "-")}


def _load_mutation(payload_or_path: Any, flag: str = "--mutants") -> dict[str, Any]:
    """A mutation payload, or the path of a mutation file read through the safe reader (a regular file of at most
    MAX_RESULTS_BYTES) and held to ``fedtheory.checks.schema.check_mutation_payload``; a ParameterError naming
    ``flag``, the file and what is wrong otherwise."""
    from ._validation import ParameterError
    from .checks.schema import check_mutation_payload
    from .files import FileRefused, read_json

    what = "a mutation file from `fedtheory check --mutants --out`"
    if isinstance(payload_or_path, Mapping):
        data, name = dict(payload_or_path), "the mutation payload"
    else:
        name = str(payload_or_path)
        try:
            data = read_json(Path(payload_or_path), MAX_RESULTS_BYTES, "mutation file")
        except FileRefused as exc:
            raise ParameterError(flag, name, f"{what} ({exc.why})") from None
    try:
        check_mutation_payload(data)
    except ValueError as exc:
        raise ParameterError(flag, name, f"{what}; {exc}") from None
    return data


def load_results(path: str | Path) -> dict[str, Any]:
    """The results payload in ``path`` (a file of ``fedtheory check --out``), read as ``fedtheory report`` reads it:
    a regular file within MAX_RESULTS_BYTES, held to the results schema; a ParameterError naming it otherwise."""
    return _load(Path(path))


def _row_dirs(r: Mapping[str, Any]) -> set[str]:
    """The run directories a row of a check on logged runs was measured on (``extra.dir``, ``extra.dirs``)."""
    ex = r.get("extra") or {}
    dirs = [ex.get("dir")] + list(ex.get("dirs") or [])
    return {str(d) for d in dirs if isinstance(d, str)}


def render_report(payload: Mapping[str, Any], mutation: Mapping[str, Any] | None = None,
                  runs: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The HTML page of a results payload (``fedtheory.checks.results_payload``) as a string; ``mutation``: a
    mutation payload (``fedtheory check --mutants --out``, ``fedtheory.checks.mutants.mutation_payload``) drawn as
    a section of the same page; ``runs``: training run directories' curves over the rounds
    (``fedtheory.empirical.runs.round_curves``; default: the payload's own ``runs``, which ``fedtheory check --runs
    DIR`` writes), drawn as the section 'Training runs'."""
    from dataclasses import MISSING, fields

    import jinja2

    from .checks.certification import certificate_text
    from .checks.results import CheckResult

    F = _Figures()
    defaults = {f.name: (f.default
                         if f.default is not MISSING else f.default_factory() if f.default_factory is not MISSING
                         else None) for f in fields(CheckResult)}
    results = [{**defaults, **r, "params": r.get("params") or {}, "extra": r.get("extra") or {}}
               for r in payload.get("results") or []]
    checks = _check_ids()
    papers: "OrderedDict[str, list[tuple[int, dict]]]" = OrderedDict()
    for i, r in enumerate(results):
        papers.setdefault(str(r.get("paper", "-")), []).append((i, r))
    # scalar bounds swept over a parameter: one figure per (id, problem, setting), shown at its first row
    groups: "OrderedDict[tuple, list[tuple[int, dict]]]" = OrderedDict()
    for i, r in enumerate(results):
        if r.get("kind") == "bound" and not (r.get("extra")
                                             or {}).get("series") and r.get("verdict") != "not_applicable" \
                and _num(r.get("measured")) is not None and _num(r.get("bound")) is not None:
            groups.setdefault((r["id"], str(r.get("problem")), str((r.get("params") or {}).get("setting"))),
                              []).append((i, r))
    sweep_of: dict[int, dict] = {}
    for key, rows in groups.items():
        k = _sweep_key([r for _, r in rows]) if len(rows) > 1 else None
        if k is None:
            continue
        svg = _fig_sweep(F, [r for _, r in rows], k)
        first = rows[0][0]
        for i, _ in rows:
            sweep_of[i] = {"svg": svg if i == first else None, "first": first, "key": k, "n": len(rows)}
    cards = []
    for i, r in enumerate(results):
        kind, verdict = r.get("kind"), r.get("verdict")
        fig, fig_kind, see = None, None, None
        if kind == "bound" and (r.get("extra") or {}).get("series"):
            fig, fig_kind = _fig_round_series(F, r), "series"
        elif i in sweep_of:
            fig, fig_kind = sweep_of[i]["svg"], "sweep"
            if fig is None:
                see = sweep_of[i]["first"]
        if fig is None and see is None and verdict == "not_applicable":
            fig, fig_kind = _fig_conditions(F, r), "conditions"
        if fig is None and see is None and kind == "claim":
            fig, fig_kind = _fig_claim(F, r), "claim"
        if fig is None and see is None and kind == "rate":
            fig, fig_kind = _fig_rate(F, r), "rate"
        conds = []
        for t in r.get("conditions_failed") or []:
            c = parse_condition(t)
            conds.append({"text": t, **(c or {})})
        ex = r.get("extra") or {}
        cards.append({"i": i, "r": r, "setting": _setting(r), "marks": _marks(r), "fig": fig, "fig_kind": fig_kind,
                      "see": see, "sweep": sweep_of.get(i), "conds": conds, "cmd": _reproduce(r, payload, checks),
                      "explain": shlex.join(["fedtheory", "explain", r["id"], *_plugin_args(payload)]),
                      "color": VERDICT_COLORS.get(verdict, "#333"),
                      "measured": _fmt(r.get("measured")), "bound": _fmt(r.get("bound")), "ratio": _fmt(r.get("ratio")),
                      "statement": ex.get("statement", ""), "title": ex.get("title", ""),
                      "measurement_scalars": (ex.get("measurements") or {}).get("scalars") or {},
                      "decision_rule": ex.get("decision_rule") or {},
                      "certificates": [certificate_text(c) for c in ex.get("certificates") or []
                                       if isinstance(c, Mapping)]})
    training = []
    for b in (runs if runs is not None else payload.get("runs")) or []:
        d = str(b.get("dir"))
        on = [(i, r) for i, r in enumerate(results) if d in _row_dirs(r)]
        overlays = [r for _, r in on if r.get("kind") == "bound" and (r.get("extra") or {}).get("series")]
        training.append({"dir": d, "label": b.get("label") or d, "algorithm": b.get("algorithm") or "-",
                         "status": b.get("status") or "-", "settings": len(b.get("settings") or []),
                         "fig": _fig_training(F, b, overlays),
                         "definitions": {q: (b.get("definitions") or {}).get(c, "") for c, q in
                                         (b.get("quantities") or {}).items()},
                         "rows": [{"i": i, "id": r["id"], "verdict": r["verdict"], "setting": _setting(r),
                                   "color": VERDICT_COLORS.get(r["verdict"], "#333")} for i, r in on]})
    findings = payload.get("findings") or {}
    paper_blocks = []
    for paper, rows in papers.items():
        counts: dict[str, int] = {}
        for _, r in rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        labels_of_paper = lambda labels: [x for x in labels  # noqa: E731
                                          if str(x).split(".", 1)[0] == paper or str(x).startswith(paper + " ")]
        cls_of = {k: c for c, ks in (findings.get("classes") or {}).items() for k in ks}
        rob = findings.get("robustness") or {}
        heads = [{"key": k, "rows": v, "cls": cls_of.get(k, ""), "fragile": k in (findings.get("fragile") or []),
                  "robustness": str((rob.get(k) or {}).get("text", "")) if isinstance(rob.get(k), Mapping) else ""}
                 for k, v in (findings.get("findings") or {}).items()
                 if any(str(x).startswith(paper + ".") or str(x).startswith(paper + " ") for x in v)]
        mine = lambda labels: [x for x in labels if str(x).startswith(paper + ".")]  # noqa: E731
        nc = [{"key": k, "scope": v.get("scope"), "rows": v.get("rows", [])}
              for k, v in (findings.get("not_counted") or {}).items()
              if any(str(x).startswith(paper + ".") for x in v.get("rows", []))]
        paper_blocks.append({"paper": paper, "n": len(rows), "counts": dict(sorted(counts.items())),
                             "findings": heads, "not_counted": nc,
                             "errors": [e for e in (findings.get("errors") or []) if isinstance(e, dict)
                                        and str(e.get("row", "")).startswith(paper + ".")],
                             "ambiguous": mine(findings.get("ambiguous") or []),
                             "proof_step_loose": mine(findings.get("proof_step_loose") or []),
                             "vacuous": labels_of_paper(findings.get("vacuous") or []),
                             "loose": labels_of_paper(findings.get("loose") or []),
                             "tightness": _fig_tightness(F, rows, paper),
                             "cards": [cards[i] for i, _ in rows]})
    env = jinja2.Environment(loader=jinja2.PackageLoader("fedtheory", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    tmpl = env.get_template("report.html.j2")
    cmd = payload.get("command")
    return tmpl.render(meta={"version": payload.get("fedtheory", "?"), "profile": payload.get("profile", "?"),
                             "seed": payload.get("seed", "?"), "elapsed": payload.get("elapsed_s"),
                             "command": shlex.join(map(str, cmd)) if isinstance(cmd, list) else (cmd or "-"),
                             "exit_code": payload.get("exit_code"), "n": len(results),
                             "plugins": _plugins_note(payload),
                             "summary": payload.get("summary") or {}, "n_findings": len(findings.get("findings") or {}),
                             "figures": F.count},
                       papers=paper_blocks, cards=cards, colors=VERDICT_COLORS, training=training,
                       tightness=_tightness_block(payload), mutation=_mutation_block(mutation),
                       verdicts=sorted({r.get("verdict") for r in results}),
                       kinds=sorted({r.get("kind") for r in results}))


def load_run_curves(runs_dir: str | Path, flag: str = "--runs") -> list[dict[str, Any]]:
    """The curves over the rounds of every run directory at or below ``runs_dir``
    (``fedtheory.empirical.runs.round_curves``); a ParameterError naming ``flag`` where it is not a folder, holds
    no run directory, or holds one that cannot be read (named with the reason, as ``fedtheory check --runs``
    refuses it)."""
    from ._validation import ParameterError
    from .empirical.runs import RunDirError, find_runs, round_curves

    errors: list[str] = []
    try:
        logs = find_runs(runs_dir, errors=errors)
    except RunDirError as exc:
        raise ParameterError(flag, str(runs_dir), f"a folder holding run directories of `fedtheory train` ({exc})") \
            from None
    if errors:
        raise ParameterError(flag, str(runs_dir), f"a folder whose run directories can all be read; {errors[0]}"
                             + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""))
    if not logs:
        raise ParameterError(flag, str(runs_dir), "a folder holding run directories of `fedtheory train` "
                             "(manifest.json + metrics.csv); none found at or below it")
    return round_curves(logs)


def write_report(payload_or_path: Any, out_path: str | Path, flag: str = "--out", mutants: Any = None,
                 runs: Any = None) -> Path:
    """Write the self-contained HTML report of a check run and return its path.

    payload_or_path: a results payload (``fedtheory.checks.results_payload``, what ``fedtheory check --out``
    writes) or the path of such a JSON file; None with ``runs``: a page of the training runs alone.
    out_path: the HTML file to write (atomically; folders created).
    The page needs nothing else: figures are inline SVG, styles inline, no network, no external file.
    A file that is not a results file is a ParameterError naming it; an ``out_path`` that cannot be written one
    naming ``flag`` (``fedtheory check --report``: '--report').
    mutants: a mutation payload (``fedtheory check --mutants --out``) or the path of such a file, drawn as the
    page's mutation-score section; one that is not (unreadable, malformed) is a ParameterError naming '--mutants'
    and the file.
    runs: a folder of training run directories (``fedtheory train --out``; found recursively) or their curves
    (``fedtheory.empirical.runs.round_curves``), drawn as the section 'Training runs' (Delta^t, the generalization
    gap and the test accuracy over the rounds); without it, the results file's own (``fedtheory check --runs DIR``
    writes them).
    """
    from ._validation import ParameterError
    from .checks.output import check_writable, write_atomic

    check_writable(str(out_path), flag, force=True)  # before drawing (minutes): a folder, a read-only place, a FIFO
    if payload_or_path is None and runs is None:
        raise ParameterError("RESULTS", None, "a results file of `fedtheory check --out`, or --runs DIR (or both)")
    curves = load_run_curves(runs) if isinstance(runs, (str, Path)) else runs
    payload = _load(payload_or_path) if payload_or_path is not None else \
        {"results": [], "command": ["fedtheory", "report", "--runs", str(runs)] if isinstance(runs, (str, Path))
         else None}
    mutation = _load_mutation(mutants) if mutants is not None else None
    html = render_report(payload, mutation, curves)
    write_atomic(str(out_path), html, flag)
    return Path(out_path)
